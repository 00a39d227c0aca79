// The sim flavour's side of the C entry points (generated <stage>_entry.cpp, sim section): a kernel launch on the
// host simulation with its exceptions turned into the C API's errors, and the GM address of a
// descriptor. Included by the sim sections only (kernel_operator.h is the simulation's).
#ifndef FLA_NPU_SIM_LAUNCH_GUARD_H
#define FLA_NPU_SIM_LAUNCH_GUARD_H

#include <exception>
#include <string>

#include "api_common.h"
#include "kernel_operator.h"  // the simulation's: GM_ADDR, AscendC::sim::LaunchError

namespace fla_npu {

// Runs `launch` (one AscendC::sim::Launch): a kernel fault is FLA_NPU_ERR_KERNEL with the
// simulation's message, any other exception FLA_NPU_ERR_RUNTIME "<op>: ...".
template <typename LaunchFn>
int GuardedSimLaunch(const char* op, LaunchFn&& launch) {
    try {
        launch();
    } catch (const AscendC::sim::LaunchError& e) {
        return SetError(FLA_NPU_ERR_KERNEL, e.what());
    } catch (const std::exception& e) { return SetError(FLA_NPU_ERR_RUNTIME, std::string(op) + ": " + e.what()); }
    return FLA_NPU_OK;
}

// The kernel's GM address of a descriptor (nullptr for an absent optional input).
inline GM_ADDR SimAddr(const FlaNpuTensor* t) { return t == nullptr ? nullptr : static_cast<GM_ADDR>(t->data); }

}  // namespace fla_npu

#endif
