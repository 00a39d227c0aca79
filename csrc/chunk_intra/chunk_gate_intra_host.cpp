// Checks and tiling of the intra-chunk kernel with the gate in its launch (flaNpuChunkGateIntra,
// include/fla_npu/kernels.h). The entry points around them are generated from chunk_gate_intra.op.py
// by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "chunk_gate_intra_entry.h"

namespace fla_npu {
namespace chunk_gate_intra {

namespace {
int Invalid(const char* msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* beta, const FlaNpuTensor* g,
                    const FlaNpuTensor* a_log, const FlaNpuTensor* dt_bias, const FlaNpuTensor* chunk_len, int32_t gate_form,
                    float lower_bound, int32_t qk_l2norm, float scale, int32_t akk_beta, const FlaNpuTensor* aqk,
                    const FlaNpuTensor* akk, const FlaNpuTensor* q_scale, const FlaNpuTensor* k_scale, const FlaNpuTensor* gate,
                    const FlaNpuTensor* e_last, EntryCall* call) {
    // The descriptor's dtypes here; strides, shapes, the attributes and the tiling: TilingFromShapes,
    // the operator package's hook.
    if (!CheckDtype(kEntry, "q", q, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    for (const FlaNpuTensor* x : {k, aqk, akk})
        if (x->dtype != q->dtype) return Invalid("`q`, `k`, `aqk` and `akk` must have one dtype");
    if (g->dtype != FLA_NPU_FLOAT32 && g->dtype != q->dtype) return Invalid("`g` must be float32 or the dtype of `q`");
    for (const FlaNpuTensor* x : {beta, q_scale, k_scale, gate, e_last})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`beta`, `q_scale`, `k_scale`, `gate` and `e_last` must be float32");
    for (const FlaNpuTensor* x : {a_log, dt_bias})
        if (x != nullptr && x->dtype != FLA_NPU_FLOAT32) return Invalid("`a_log` and `dt_bias` must be float32");
    if (chunk_len->dtype != FLA_NPU_INT32) return Invalid("`chunk_len` must be int32");
    const int rc = CheckStridesAndTile(
        kEntry, kTensorNames, call->t, kTensors,
        [call, gate_form, lower_bound, qk_l2norm, scale, akk_beta](const ShapeArg* a, const DeviceFacts& dev) {
            return TilingFromShapes(a, gate_form, lower_bound, qk_l2norm, scale, akk_beta, dev, &call->tiling);
        });
    // The kernel reads a_log and dt_bias only when the tiling says so (none: no a_log).
    if (rc == FLA_NPU_OK && !call->tiling.has_a_log) call->t[4] = nullptr;
    return rc;
}

}  // namespace chunk_gate_intra
}  // namespace fla_npu
