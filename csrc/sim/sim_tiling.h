// fla-npu host simulation of Ascend C — what an operator-package (OPP) kernel entry receives besides
// its tensors: the tiling data and the workspace, both as GM addresses.
//
//   extern "C" __global__ __aicore__ void op(GM_ADDR x, ..., GM_ADDR workspace, GM_ADDR tiling) {
//       REGISTER_TILING_DEFAULT(MyTiling);        // a POD struct the host tiling filled
//       GET_TILING_DATA(t, tiling);               // MyTiling t, read from GM
//       GM_ADDR ws = AscendC::GetUserWorkspace(workspace);
//
// The OPP runtime copies the host tiling's bytes into GM and passes their address; the simulation's
// GET_TILING_DATA reads them back (a fault when the address is null). The workspace the runtime
// passes starts with the system workspace (GetLibApiWorkSpaceSize() bytes on the host; the simulation
// reserves kSysWorkspaceBytes, CANN's RESERVED_WORKSPACE on 2201 and 3510) and GetUserWorkspace
// returns the address after it: a test gives the kernel sys + user bytes and can check that the
// system part stays untouched. Tiling keys (TILING_KEY_IS) are not simulated.
#pragma once

#include <cstring>
#include <type_traits>

#include "sim_base.h"

namespace AscendC {
namespace sim {

constexpr uint64_t kSysWorkspaceBytes = 16ull * 1024 * 1024;

// The tiling struct at `tiling` (GM), copied as the device's GET_TILING_DATA does.
template <class T>
T ReadTiling(const uint8_t* tiling, const char* api) {
    static_assert(std::is_trivially_copyable<T>::value && std::is_standard_layout<T>::value,
                  "fla-npu sim: a tiling struct must be a POD (standard-layout, trivially copyable)");
    BeginOp(PIPE_S, api);
    if (tiling == nullptr) Fail("tiling data", std::string(api) + ": the tiling address is null");
    T t;
    std::memcpy(&t, tiling, sizeof(T));
    return t;
}

}  // namespace sim

inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    return workspace == nullptr ? nullptr : workspace + sim::kSysWorkspaceBytes;
}

}  // namespace AscendC

// REGISTER_TILING_DEFAULT names the struct GET_TILING_DATA reads (a local alias: one per kernel
// entry, as the registration is per entry on the device).
#define REGISTER_TILING_DEFAULT(TILING_STRUCT) using FlaSimDefaultTiling_ = TILING_STRUCT
#define GET_TILING_DATA(tiling_data, tiling_arg) \
    FlaSimDefaultTiling_ tiling_data = ::AscendC::sim::ReadTiling<FlaSimDefaultTiling_>(tiling_arg, "GET_TILING_DATA")
#define GET_TILING_DATA_WITH_STRUCT(struct_name, tiling_data, tiling_arg) \
    struct_name tiling_data = ::AscendC::sim::ReadTiling<struct_name>(tiling_arg, "GET_TILING_DATA_WITH_STRUCT")
