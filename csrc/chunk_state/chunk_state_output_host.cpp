// Checks and tiling of the fused WY + state + output kernel's C entry point (flaNpuChunkStateOutput,
// include/fla_npu/kernels.h). The entry points around them are generated from
// chunk_state_output.op.py by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "chunk_state_output_entry.h"

namespace fla_npu {
namespace chunk_state_output {

namespace {
int Invalid(const char* msg) { return InvalidArgument(kEntry, msg); }
constexpr const char* kFloat32Message =
    "float32 Cube inputs are not supported: q, k, v, akk and aqk must be float16 or bfloat16 (the Cube's "
    "transposing loads of k e_row, v and kg exist for 2-byte types only)";
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* g,
                    const FlaNpuTensor* akk, const FlaNpuTensor* aqk, const FlaNpuTensor* e_last,
                    const FlaNpuTensor* chunk_offsets, const FlaNpuTensor* h0, const FlaNpuTensor* q_scale,
                    const FlaNpuTensor* k_scale, const FlaNpuTensor* o, const FlaNpuTensor* final, int32_t state_v_first,
                    EntryCall* call) {
    if (state_v_first != 0 && state_v_first != 1) return Invalid("`state_v_first` must be 0 or 1");
    // The descriptor's dtypes here; strides, shapes and the tiling: TilingFromShapes, the operator
    // package's hook (called by name: its signature is the state op's, in its own namespace).
    if (k->dtype == FLA_NPU_FLOAT32) return Invalid(kFloat32Message);
    if (!CheckDtype(kEntry, "k", k, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    for (const FlaNpuTensor* x : {q, v, akk, aqk, o})
        if (x->dtype != k->dtype) return Invalid("`q`, `k`, `v`, `akk`, `aqk` and `o` must have one dtype");
    for (const FlaNpuTensor* x : {g, e_last, final})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`g`, `e_last` and `final` must be float32");
    for (const FlaNpuTensor* x : {h0, q_scale, k_scale})
        if (x != nullptr && x->dtype != FLA_NPU_FLOAT32) return Invalid("`h0`, `q_scale` and `k_scale` must be float32");
    if (chunk_offsets->dtype != FLA_NPU_INT32) return Invalid("`chunk_offsets` must be int32");
    return CheckStridesAndTile(kEntry, kTensorNames, call->t, kTensors,
                               [call, state_v_first](const ShapeArg* a, const DeviceFacts& dev) {
                                   return chunk_state_output::TilingFromShapes(a, state_v_first, dev, &call->tiling);
                               });
}

}  // namespace chunk_state_output
}  // namespace fla_npu
