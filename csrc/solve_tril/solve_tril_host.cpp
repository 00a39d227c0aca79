// Checks and tiling of the triangular-inverse kernel's C entry point (flaNpuSolveTril,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from solve_tril.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "solve_tril_entry.h"

namespace fla_npu {
namespace solve_tril {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* l, const FlaNpuTensor* akk, EntryCall* call) {
    const FlaNpuTensor* const* t = call->t;  // l, akk
    for (int i = 0; i < kTensors; ++i)
        if (!CheckPresent(kEntry, kTensorNames[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    SolveTrilArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(l->ndim, akk->ndim))) return Invalid(bad);
    if (l->dtype != FLA_NPU_FLOAT32)
        return Invalid(std::string("`l` must be float32 (the Cube reads it as it is), got ") + DtypeName(l->dtype));
    uint32_t out_kind = 0;
    switch (akk->dtype) {
    case FLA_NPU_FLOAT32: out_kind = kOutFloat32; break;
    case FLA_NPU_FLOAT16: out_kind = kOutFloat16; break;
    case FLA_NPU_BFLOAT16: out_kind = kOutBfloat16; break;
    default: return Invalid(std::string("`akk` must be float32, float16 or bfloat16, got ") + DtypeName(akk->dtype));
    }
    if ((bad = checked.SetShapes(l->shape, akk->shape))) return Invalid(bad);
    for (int i = 0; i < kTensors; ++i)
        if (!CheckContiguous(kEntry, kTensorNames[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const SolveTrilProblem p =
        checked.Problem(4u, out_kind, TargetCubeTakesFp32(), MixedLaunchAiCoreNum(), TargetUbBytes(), TargetL0cBytes());

    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    return FLA_NPU_OK;
}

}  // namespace solve_tril
}  // namespace fla_npu
