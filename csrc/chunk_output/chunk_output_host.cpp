// Checks and tiling of the chunk output kernel's C entry point (flaNpuChunkOutput, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from chunk_output.op.py by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "chunk_output_entry.h"

namespace fla_npu {
namespace chunk_output {

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* g, const FlaNpuTensor* s, const FlaNpuTensor* aqk,
                    const FlaNpuTensor* v_new, const FlaNpuTensor* out, EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes and the tiling:
    // TilingFromShapes, the operator package's hook.
    if (!CheckDtype(kEntry, "q", q, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (s->dtype != q->dtype || aqk->dtype != q->dtype || v_new->dtype != q->dtype)
        return InvalidArgument(kEntry, "`q`, `s`, `aqk` and `v_new` must have one dtype");
    if (g->dtype != FLA_NPU_FLOAT32) return InvalidArgument(kEntry, "`g` must be float32");
    if (out->dtype != FLA_NPU_FLOAT32 && out->dtype != q->dtype)
        return InvalidArgument(kEntry, "`out` must be float32 or the dtype of `q`");
    return TileCall(kEntry, kTensorNames, kTensors, call);
}

}  // namespace chunk_output
}  // namespace fla_npu
