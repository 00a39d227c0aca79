// Checks and tiling of the inter-chunk state kernel's C entry point (flaNpuChunkState,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from chunk_state.op.py by csrc/tools/gen_op_entry.py.
#include "../common/api_common.h"
#include "chunk_state_entry.h"

namespace fla_npu {
namespace chunk_state {

namespace {
int Invalid(const char* msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* w, const FlaNpuTensor* u, const FlaNpuTensor* kg, const FlaNpuTensor* e_last,
                    const FlaNpuTensor* chunk_offsets, const FlaNpuTensor* h0, const FlaNpuTensor* h, const FlaNpuTensor* v_new,
                    const FlaNpuTensor* final, int32_t state_v_first, EntryCall* call) {
    // w, u, kg, e_last, chunk_offsets, h0 (optional), h, v_new, final
    if (state_v_first != 0 && state_v_first != 1) return Invalid("`state_v_first` must be 0 or 1");
    // The descriptors' dtypes here; strides, shapes and the tiling: TilingFromShapes, the operator
    // package's hook.
    if (w->dtype == FLA_NPU_FLOAT32) return Invalid(kFloat32CubeMessage);
    if (!CheckDtype(kEntry, "w", w, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (kg->dtype != w->dtype) return Invalid("`w` and `kg` must have one dtype");
    for (const FlaNpuTensor* x : {u, e_last, final})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`u`, `e_last` and `final` must be float32");
    if (h0 != nullptr && h0->dtype != FLA_NPU_FLOAT32) return Invalid("`h0` must be float32");
    if (chunk_offsets->dtype != FLA_NPU_INT32) return Invalid("`chunk_offsets` must be int32");
    for (const FlaNpuTensor* x : {h, v_new})
        if (x->dtype != FLA_NPU_FLOAT32 && x->dtype != w->dtype)
            return Invalid("`h` and `v_new` must be float32 or the dtype of `w`");
    return TileCall(kEntry, kTensorNames, kTensors, call, state_v_first);
}

}  // namespace chunk_state
}  // namespace fla_npu
