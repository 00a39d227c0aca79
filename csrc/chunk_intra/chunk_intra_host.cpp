// Checks and tiling of the intra-chunk kernel's C entry point (flaNpuChunkIntra,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from chunk_intra.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "chunk_intra_entry.h"

namespace fla_npu {
namespace chunk_intra {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* beta, const FlaNpuTensor* g,
                    const FlaNpuTensor* aqk, const FlaNpuTensor* l, EntryCall* call) {
    for (int i = 0; i < kTensors; ++i)  // q, k, beta, g, aqk, l
        if (!CheckPresent(kEntry, kTensorNames[i], call->t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes: the checks an operator package's tiling shares (ChunkIntraArgs), with this entry
    // point's descriptor checks (dtypes, strides) in between.
    ChunkIntraArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q->ndim, k->ndim, beta->ndim, g->ndim, aqk->ndim, l->ndim))) return Invalid(bad);
    if (q->dtype != FLA_NPU_FLOAT16 && q->dtype != FLA_NPU_BFLOAT16 && q->dtype != FLA_NPU_FLOAT32)
        return Invalid(std::string("`q` must be float16, bfloat16 or float32, got ") + DtypeName(q->dtype));
    if (k->dtype != q->dtype) return Invalid("`q` and `k` must have one dtype");
    if (beta->dtype != FLA_NPU_FLOAT32 || g->dtype != FLA_NPU_FLOAT32) return Invalid("`beta` and `g` must be float32");
    if (aqk->dtype != l->dtype || (aqk->dtype != FLA_NPU_FLOAT32 && aqk->dtype != q->dtype))
        return Invalid("`aqk` and `l` must have one dtype, float32 or the dtype of `q`");
    if ((bad = checked.SetShapes(q->shape, k->shape, beta->shape, g->shape, aqk->shape, l->shape))) return Invalid(bad);
    for (int i = 0; i < kTensors; ++i)
        if (!CheckContiguous(kEntry, kTensorNames[i], call->t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const ChunkIntraProblem p =
        checked.Problem(q->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, q->dtype == FLA_NPU_FLOAT16, aqk->dtype == FLA_NPU_FLOAT32,
                        TargetCubeTakesFp32(), MixedLaunchAiCoreNum(), TargetUbBytes(), TargetL0cBytes());

    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    return FLA_NPU_OK;
}

}  // namespace chunk_intra
}  // namespace fla_npu
