// Checks and tiling of the inter-chunk state kernel's C entry point (flaNpuChunkState,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from chunk_state.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "chunk_state_entry.h"

namespace fla_npu {
namespace chunk_state {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
bool Is16(int32_t d) { return d == FLA_NPU_FLOAT16 || d == FLA_NPU_BFLOAT16; }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* w, const FlaNpuTensor* u, const FlaNpuTensor* kg, const FlaNpuTensor* e_last,
                    const FlaNpuTensor* chunk_offsets, const FlaNpuTensor* h0, const FlaNpuTensor* h,
                    const FlaNpuTensor* v_new, const FlaNpuTensor* final, int32_t state_v_first, EntryCall* call) {
    const FlaNpuTensor* const* t = call->t;  // w, u, kg, e_last, chunk_offsets, h0, h, v_new, final
    for (int i = 0; i < kTensors; ++i)
        if (i != 5 && !CheckPresent(kEntry, kTensorNames[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (h0 != nullptr && !CheckPresent(kEntry, "h0", h0)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (state_v_first != 0 && state_v_first != 1) return Invalid("`state_v_first` must be 0 or 1");
    ChunkStateArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(w->ndim, u->ndim, kg->ndim, e_last->ndim, chunk_offsets->ndim, h0 ? h0->ndim : -1, h->ndim,
                                v_new->ndim, final->ndim)))
        return Invalid(bad);
    if (w->dtype == FLA_NPU_FLOAT32)
        return Invalid("float32 `w` and `kg` are not supported: the Cube reads them as float16 or bfloat16 (its transposing "
                       "load of kg exists for 2-byte types only); round them once to the Cube dtype");
    if (!Is16(w->dtype)) return Invalid(std::string("`w` must be float16 or bfloat16, got ") + DtypeName(w->dtype));
    if (kg->dtype != w->dtype) return Invalid("`w` and `kg` must have one dtype");
    for (const FlaNpuTensor* x : {u, e_last, final})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`u`, `e_last` and `final` must be float32");
    if (h0 != nullptr && h0->dtype != FLA_NPU_FLOAT32) return Invalid("`h0` must be float32");
    if (chunk_offsets->dtype != FLA_NPU_INT32) return Invalid("`chunk_offsets` must be int32");
    for (const FlaNpuTensor* x : {h, v_new})
        if (x->dtype != FLA_NPU_FLOAT32 && x->dtype != w->dtype)
            return Invalid("`h` and `v_new` must be float32 or the dtype of `w`");
    if ((bad = checked.SetShapes(w->shape, u->shape, kg->shape, e_last->shape, chunk_offsets->shape, h0 ? h0->shape : nullptr,
                                 h->shape, v_new->shape, final->shape, state_v_first != 0)))
        return Invalid(bad);
    for (int i = 0; i < kTensors; ++i)
        if (t[i] != nullptr && !CheckContiguous(kEntry, kTensorNames[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const ChunkStateProblem p = checked.Problem(2, h->dtype == FLA_NPU_FLOAT32, v_new->dtype == FLA_NPU_FLOAT32,
                                                MixedLaunchAiCoreNum(), TargetUbBytes(), TargetL0cBytes());
    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    return FLA_NPU_OK;
}

}  // namespace chunk_state
}  // namespace fla_npu
