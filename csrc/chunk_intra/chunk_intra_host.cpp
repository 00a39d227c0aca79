// Checks and tiling of the intra-chunk kernel's C entry point (flaNpuChunkIntra,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from chunk_intra.op.py by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "chunk_intra_entry.h"

namespace fla_npu {
namespace chunk_intra {

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* beta, const FlaNpuTensor* g,
                    const FlaNpuTensor* q_scale, const FlaNpuTensor* k_scale, const FlaNpuTensor* aqk, const FlaNpuTensor* l,
                    EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes and the tiling:
    // TilingFromShapes, the operator package's hook.
    if (!CheckDtype(kEntry, "q", q, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (k->dtype != q->dtype) return InvalidArgument(kEntry, "`q` and `k` must have one dtype");
    if (beta->dtype != FLA_NPU_FLOAT32 || g->dtype != FLA_NPU_FLOAT32)
        return InvalidArgument(kEntry, "`beta` and `g` must be float32");
    for (const FlaNpuTensor* x : {q_scale, k_scale})
        if (x != nullptr && x->dtype != FLA_NPU_FLOAT32)
            return InvalidArgument(kEntry, "`q_scale` and `k_scale` must be float32");
    for (const FlaNpuTensor* x : {aqk, l})
        if (x->dtype != FLA_NPU_FLOAT32 && x->dtype != q->dtype)
            return InvalidArgument(kEntry, "`aqk` and `l` must each be float32 or the dtype of `q`");
    return TileCall(kEntry, kTensorNames, kTensors, call);
}

}  // namespace chunk_intra
}  // namespace fla_npu
