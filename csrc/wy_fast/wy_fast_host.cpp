// Checks and tiling of the WY kernel's C entry point (flaNpuWyFast, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from wy_fast.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "wy_fast_entry.h"

namespace fla_npu {
namespace wy_fast {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* beta, const FlaNpuTensor* akk,
                    const FlaNpuTensor* e_row, const FlaNpuTensor* e_tail, const FlaNpuTensor* w, const FlaNpuTensor* u,
                    const FlaNpuTensor* kg, EntryCall* call) {
    const FlaNpuTensor* const* t = call->t;  // k, v, beta, akk, e_row, e_tail, w, u, kg
    for (int i = 0; i < kTensors; ++i)
        if (!CheckPresent(kEntry, kTensorNames[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes: the checks the operator package's tiling shares (WyFastArgs), with this entry
    // point's descriptor checks (dtypes, strides) in between.
    WyFastArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(k->ndim, v->ndim, beta->ndim, akk->ndim, e_row->ndim, e_tail->ndim, w->ndim, u->ndim, kg->ndim)))
        return Invalid(bad);
    if (k->dtype != FLA_NPU_FLOAT16 && k->dtype != FLA_NPU_BFLOAT16 && k->dtype != FLA_NPU_FLOAT32)
        return Invalid(std::string("`k` must be float16, bfloat16 or float32, got ") + DtypeName(k->dtype));
    if (v->dtype != k->dtype || akk->dtype != k->dtype) return Invalid("`k`, `v` and `akk` must have one dtype");
    for (const FlaNpuTensor* x : {beta, e_row, e_tail, w, u, kg})
        if (x->dtype != FLA_NPU_FLOAT32) return Invalid("`beta`, `e_row`, `e_tail`, `w`, `u` and `kg` must be float32");
    if ((bad = checked.SetShapes(k->shape, v->shape, beta->shape, akk->shape, e_row->shape, e_tail->shape, w->shape, u->shape,
                                 kg->shape)))
        return Invalid(bad);
    for (int i = 0; i < kTensors; ++i)
        if (!CheckContiguous(kEntry, kTensorNames[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const WyFastProblem p =
        checked.Problem(k->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, TargetCubeTakesFp32(), MixedLaunchAiCoreNum(), TargetUbBytes(),
                        TargetL0cBytes());

    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    return FLA_NPU_OK;
}

}  // namespace wy_fast
}  // namespace fla_npu
