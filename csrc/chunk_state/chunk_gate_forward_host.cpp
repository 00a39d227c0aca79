// Checks and tiling of KDA's one-launch forward's C entry point (flaNpuChunkGateForward,
// include/fla_npu/kernels.h). The entry points around them are generated from chunk_gate_forward.op.py
// by csrc/tools/gen_op_entry.py.
#include "chunk_gate_forward_entry.h"
#include "forward_host_checks.h"

namespace fla_npu {
namespace chunk_gate_forward {

namespace {
int Invalid(const char* msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* g,
                    const FlaNpuTensor* beta, const FlaNpuTensor* a_log, const FlaNpuTensor* dt_bias,
                    const FlaNpuTensor* chunk_len, const FlaNpuTensor* chunk_offsets, const FlaNpuTensor* h0, int32_t gate_form,
                    float lower_bound, int32_t qk_l2norm, float scale, const FlaNpuTensor* o, const FlaNpuTensor* final,
                    int32_t state_v_first, EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes, the attributes and the tiling: TilingFromShapes,
    // the operator package's hook.
    if (const int rc = chunk_state::CheckForwardCubeArgs(kEntry, q, k, v, o, state_v_first)) return rc;
    if (g->dtype != FLA_NPU_FLOAT32 && g->dtype != k->dtype) return Invalid("`g` must be float32 or the dtype of `k`");
    for (const FlaNpuTensor* x : {beta, final})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`beta` and `final` must be float32");
    for (const FlaNpuTensor* x : {a_log, dt_bias, h0})
        if (x != nullptr && x->dtype != FLA_NPU_FLOAT32) return Invalid("`a_log`, `dt_bias` and `h0` must be float32");
    if (chunk_len->dtype != FLA_NPU_INT32 || chunk_offsets->dtype != FLA_NPU_INT32)
        return Invalid("`chunk_len` and `chunk_offsets` must be int32");
    const int rc = CheckStridesAndTile(
        kEntry, kTensorNames, call->t, kTensors,
        [call, gate_form, lower_bound, qk_l2norm, scale, state_v_first](const ShapeArg* a, const DeviceFacts& dev) {
            return TilingFromShapes(a, gate_form, lower_bound, qk_l2norm, scale, state_v_first, dev, &call->tiling);
        });
    // The kernel reads a_log and dt_bias only when the tiling says so (none: no a_log).
    if (rc == FLA_NPU_OK && !call->tiling.has_a_log) call->t[5] = nullptr;
    return rc;
}

}  // namespace chunk_gate_forward
}  // namespace fla_npu
