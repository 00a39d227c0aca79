// What every op's tiling header (csrc/<op>/<stage>_tiling.h) builds on: the per-SoC facts, the split
// of units over cores, and the types of the operator package's tiling hook (TilingFromShapes).
#ifndef FLA_NPU_OP_TILING_H
#define FLA_NPU_OP_TILING_H

#include <cstdint>

#include "aicore.h"
#include "core_split.h"
#include "soc_facts.h"

namespace fla_npu {

struct ShapeArg;  // common/shape_args.h: one tensor of a call, as the hook sees it
struct DeviceFacts;

// The opening of every ComputeTiling: *t all zeros (what the tiling leaves unset reads as 0) and
// *err "" (static, as every message is).
template <typename Tiling>
void BeginTiling(Tiling* t, const char** err) {
    static const char* kOk = "";
    *err = kOk;
    *t = Tiling{};
}

// Bytes rounded up to whole 32-byte UB blocks (every tiling's sum of UB buffers).
inline uint64_t Pad32(uint64_t x) { return (x + 31) / 32 * 32; }

// A tiling's refusal: *err = `message` (static), and the tilings' error code.
inline int Refuse(const char** err, const char* message) {
    *err = message;
    return -1;
}

// A tiling's refusal when the Cube buffers it uses (its l1_bytes_used, l0a_bytes_used, l0b_bytes_used,
// l0c_bytes_used) exceed the device's: L1 soc::kL1Bytes, L0A and L0B soc::kL0abBytes each, L0C
// `l0c_bytes` (the device's). 0, or Refuse's code.
template <typename Tiling>
int CheckCubeBuffers(const Tiling& t, uint32_t l0c_bytes, const char** err) {
    if (t.l1_bytes_used > soc::kL1Bytes) return Refuse(err, "L1 too small");
    if (t.l0a_bytes_used > soc::kL0abBytes || t.l0b_bytes_used > soc::kL0abBytes) return Refuse(err, "L0A / L0B too small");
    if (t.l0c_bytes_used > l0c_bytes) return Refuse(err, "L0C too small");
    return 0;
}

}  // namespace fla_npu

#endif
