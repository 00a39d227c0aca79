// Checks and tiling of the intra-chunk kernel's C entry point (flaNpuChunkIntra,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from chunk_intra.op.py by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "chunk_intra_entry.h"

namespace fla_npu {
namespace chunk_intra {

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* beta, const FlaNpuTensor* g,
                    int32_t qk_l2norm, float scale, int32_t akk_beta, const FlaNpuTensor* aqk, const FlaNpuTensor* akk,
                    const FlaNpuTensor* q_scale, const FlaNpuTensor* k_scale, EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes, the attributes and the tiling: TilingFromShapes,
    // the operator package's hook.
    if (!CheckDtype(kEntry, "q", q, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (k->dtype != q->dtype) return InvalidArgument(kEntry, "`q` and `k` must have one dtype");
    for (const FlaNpuTensor* x : {beta, g, q_scale, k_scale})
        if (x->dtype != FLA_NPU_FLOAT32) return InvalidArgument(kEntry, "`beta`, `g`, `q_scale` and `k_scale` must be float32");
    for (const FlaNpuTensor* x : {aqk, akk})
        if (x->dtype != FLA_NPU_FLOAT32 && x->dtype != q->dtype)
            return InvalidArgument(kEntry, "`aqk` and `akk` must each be float32 or the dtype of `q`");
    return CheckStridesAndTile(kEntry, kTensorNames, call->t, kTensors,
                               [call, qk_l2norm, scale, akk_beta](const ShapeArg* a, const DeviceFacts& dev) {
                                   return TilingFromShapes(a, qk_l2norm, scale, akk_beta, dev, &call->tiling);
                               });
}

}  // namespace chunk_intra
}  // namespace fla_npu
