// Checks and tiling of the WY kernel's C entry point (flaNpuWyFast, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from wy_fast.op.py by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "wy_fast_entry.h"

namespace fla_npu {
namespace wy_fast {

int ValidateAndTile(const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* beta, const FlaNpuTensor* akk,
                    const FlaNpuTensor* g, const FlaNpuTensor* w, const FlaNpuTensor* u, const FlaNpuTensor* kg,
                    EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes and the tiling:
    // TilingFromShapes, the operator package's hook.
    if (!CheckDtype(kEntry, "k", k, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (v->dtype != k->dtype || akk->dtype != k->dtype) return InvalidArgument(kEntry, "`k`, `v` and `akk` must have one dtype");
    for (const FlaNpuTensor* x : {beta, g, u})
        if (x->dtype != FLA_NPU_FLOAT32) return InvalidArgument(kEntry, "`beta`, `g` and `u` must be float32");
    if (kg->dtype != w->dtype || (w->dtype != FLA_NPU_FLOAT32 && w->dtype != k->dtype))
        return InvalidArgument(kEntry, "`w` and `kg` must have one dtype, float32 or the dtype of `k`");
    return TileCall(kEntry, kTensorNames, kTensors, call);
}

}  // namespace wy_fast
}  // namespace fla_npu
