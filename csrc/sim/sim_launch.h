// fla-npu host simulation of Ascend C — launching a kernel on simulated cores.
//
//   AscendC::sim::Launch("name", KERNEL_TYPE_MIX_AIC_1_2, numBlocks, kernel, args...);
//   FLA_SIM_LAUNCH(kernel, KERNEL_TYPE_AIV_ONLY, numBlocks, args...);   // name = #kernel
//
// Each simulated core is a host thread: numBlocks AIV threads (vector-only), numBlocks AIC threads
// (cube-only), or numBlocks AIC + 2*numBlocks AIV threads (mixed 1:2). The kernel function runs once
// per core. A simulated-device fault on any core stops the others and the launch throws
// AscendC::sim::LaunchError whose what() names kernel, core and rule; the same message and the
// counters are readable afterwards through sim_api.h.
#pragma once

#include <functional>

#include "sim_base.h"

namespace AscendC {
namespace sim {

void RunLaunch(const char* name, KernelMetaType type, uint32_t numBlocks, const SocProfile& prof,
               const std::function<void()>& body);

template <class F, class... Args>
void Launch(const char* name, KernelMetaType type, uint32_t numBlocks, F&& kernel, Args... args) {
    RunLaunch(name, type, numBlocks, kSoc, [&] { kernel(args...); });
}

// Same, but returns false instead of throwing (the message is fla_sim_last_error()).
template <class F, class... Args>
bool TryLaunch(const char* name, KernelMetaType type, uint32_t numBlocks, F&& kernel, Args... args) {
    try {
        RunLaunch(name, type, numBlocks, kSoc, [&] { kernel(args...); });
        return true;
    } catch (const LaunchError&) { return false; }
}

}  // namespace sim
}  // namespace AscendC

#define FLA_SIM_LAUNCH(kernel, type, numBlocks, ...) ::AscendC::sim::Launch(#kernel, type, numBlocks, kernel, ##__VA_ARGS__)
