// Checks and tiling of the chunk output kernel's C entry point (flaNpuChunkOutput, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from chunk_output.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "chunk_output_entry.h"

namespace fla_npu {
namespace chunk_output {

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* e_row, const FlaNpuTensor* s, const FlaNpuTensor* aqk,
                    const FlaNpuTensor* v_new, const FlaNpuTensor* out, EntryCall* call) {
    const FlaNpuTensor* const* t = call->t;  // q, e_row, s, aqk, v_new, out
    if (!CheckAllPresent(kEntry, kTensorNames, t, kTensors)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // The descriptors' dtypes here; strides, shapes and the tiling: TilingFromShapes, the operator
    // package's hook.
    if (q->dtype != FLA_NPU_FLOAT16 && q->dtype != FLA_NPU_BFLOAT16 && q->dtype != FLA_NPU_FLOAT32)
        return InvalidArgument(kEntry, std::string("`q` must be float16, bfloat16 or float32, got ") + DtypeName(q->dtype));
    if (aqk->dtype != q->dtype || v_new->dtype != q->dtype)
        return InvalidArgument(kEntry, "`q`, `aqk` and `v_new` must have one dtype");
    if (e_row->dtype != FLA_NPU_FLOAT32 || s->dtype != FLA_NPU_FLOAT32 || out->dtype != FLA_NPU_FLOAT32)
        return InvalidArgument(kEntry, "`e_row`, `s` and `out` must be float32");
    return CheckStridesAndTile(kEntry, kTensorNames, t, kTensors, [call](const ShapeArg* a, const DeviceFacts& dev) {
        return TilingFromShapes(a, dev, &call->tiling);
    });
}

}  // namespace chunk_output
}  // namespace fla_npu
