// Checks and tiling of the chunk output kernel's C entry point (flaNpuChunkOutput, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from chunk_output.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "chunk_output_entry.h"

namespace fla_npu {
namespace chunk_output {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* e_row, const FlaNpuTensor* s, const FlaNpuTensor* aqk,
                    const FlaNpuTensor* v_new, const FlaNpuTensor* out, EntryCall* call) {
    for (int i = 0; i < kTensors; ++i)  // q, e_row, s, aqk, v_new, out
        if (!CheckPresent(kEntry, kTensorNames[i], call->t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes: the checks the operator package's tiling shares (ChunkOutputArgs), with
    // this entry point's descriptor checks (dtypes, strides) in between.
    ChunkOutputArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q->ndim, e_row->ndim, s->ndim, aqk->ndim, v_new->ndim, out->ndim))) return Invalid(bad);
    if (q->dtype != FLA_NPU_FLOAT16 && q->dtype != FLA_NPU_BFLOAT16 && q->dtype != FLA_NPU_FLOAT32)
        return Invalid(std::string("`q` must be float16, bfloat16 or float32, got ") + DtypeName(q->dtype));
    if (aqk->dtype != q->dtype || v_new->dtype != q->dtype) return Invalid("`q`, `aqk` and `v_new` must have one dtype");
    if (e_row->dtype != FLA_NPU_FLOAT32 || s->dtype != FLA_NPU_FLOAT32 || out->dtype != FLA_NPU_FLOAT32)
        return Invalid("`e_row`, `s` and `out` must be float32");
    if ((bad = checked.SetShapes(q->shape, e_row->shape, s->shape, aqk->shape, v_new->shape, out->shape))) return Invalid(bad);
    for (int i = 0; i < kTensors; ++i)
        if (!CheckContiguous(kEntry, kTensorNames[i], call->t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const ChunkOutputProblem p =
        checked.Problem(q->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, TargetCubeTakesFp32(), MixedLaunchAiCoreNum(), TargetUbBytes(),
                        TargetL0cBytes());

    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    return FLA_NPU_OK;
}

}  // namespace chunk_output
}  // namespace fla_npu
