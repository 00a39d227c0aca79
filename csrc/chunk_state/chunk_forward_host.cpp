// Checks and tiling of the one-launch forward's C entry point (flaNpuChunkForward,
// include/fla_npu/kernels.h). The entry points around them are generated from chunk_forward.op.py by
// csrc/tools/gen_op_entry.py.
#include "chunk_forward_entry.h"
#include "forward_host_checks.h"

namespace fla_npu {
namespace chunk_forward {

namespace {
int Invalid(const char* msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* g,
                    const FlaNpuTensor* beta, const FlaNpuTensor* e_last, const FlaNpuTensor* chunk_offsets,
                    const FlaNpuTensor* h0, int32_t qk_l2norm, float scale, const FlaNpuTensor* o, const FlaNpuTensor* final,
                    int32_t state_v_first, EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes and the tiling: TilingFromShapes, the operator
    // package's hook.
    if (const int rc = chunk_state::CheckForwardCubeArgs(kEntry, q, k, v, o, state_v_first)) return rc;
    for (const FlaNpuTensor* x : {g, beta, e_last, final})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`g`, `beta`, `e_last` and `final` must be float32");
    if (h0 != nullptr && h0->dtype != FLA_NPU_FLOAT32) return Invalid("`h0` must be float32");
    if (chunk_offsets->dtype != FLA_NPU_INT32) return Invalid("`chunk_offsets` must be int32");
    return CheckStridesAndTile(kEntry, kTensorNames, call->t, kTensors,
                               [call, qk_l2norm, scale, state_v_first](const ShapeArg* a, const DeviceFacts& dev) {
                                   return TilingFromShapes(a, qk_l2norm, scale, state_v_first, dev, &call->tiling);
                               });
}

}  // namespace chunk_forward
}  // namespace fla_npu
