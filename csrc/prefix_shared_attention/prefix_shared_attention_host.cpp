// Checks and tiling of the prefix-shared attention forward kernel's C entry point
// (flaNpuPrefixSharedAttention, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from prefix_shared_attention.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "prefix_shared_attention_entry.h"

namespace fla_npu {
namespace psa {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v, float scale, const FlaNpuTensor* out,
                    EntryCall* call) {
    // Shapes: the checks the operator package's tiling shares (PsaArgs), with this entry
    // point's descriptor checks (dtypes, strides) in between.
    PsaArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q->ndim, k->ndim, v->ndim))) return Invalid(bad);
    if (!CheckDtype(kEntry, "q", q, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (k->dtype != q->dtype || v->dtype != q->dtype || out->dtype != q->dtype)
        return Invalid("`q`, `k`, `v` and `out` must have one dtype");
    if ((bad = checked.SetShapes(q->shape, k->shape, v->shape, out->ndim, out->shape))) return Invalid(bad);
    for (int i = 0; i < kTensors; ++i)
        if (!CheckContiguous(kEntry, kTensorNames[i], call->t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const PsaProblem p = checked.Problem(scale, MixedLaunchAiCoreNum(), TargetUbBytes(), TargetL0cBytes());

    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    return FLA_NPU_OK;
}

}  // namespace psa
}  // namespace fla_npu
