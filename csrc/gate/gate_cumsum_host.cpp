// Checks and tiling of the gate + chunk-local cumsum kernel's C entry point (flaNpuGateChunkCumsum,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from gate_cumsum.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "gate_cumsum_entry.h"

namespace fla_npu {
namespace gate {

namespace {
int Invalid(const std::string& msg) { return InvalidArgument(kEntry, msg); }
}  // namespace

int ValidateAndTile(const FlaNpuTensor* g, const FlaNpuTensor* a_log, const FlaNpuTensor* dt_bias, const FlaNpuTensor* cu_seqlens,
                    const FlaNpuTensor* chunk_indices, int32_t chunk_size, int32_t gate_form, float lower_bound, float scale,
                    const FlaNpuTensor* out, EntryCall* call) {
    // Shapes and attributes: the checks the operator package's tiling shares (GateCumsumArgs),
    // with this entry point's descriptor checks (dtypes, strides) in between.
    GateCumsumArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetG(g->ndim, g->shape))) return Invalid(bad);
    if (!CheckDtype(kEntry, "g", g, {FLA_NPU_FLOAT32, FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (!CheckContiguous(kEntry, "g", g)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (out->dtype != FLA_NPU_FLOAT32) return Invalid("`out` must be float32");
    if ((bad = checked.CheckOut(out->ndim, out->shape))) return Invalid(bad);
    if (!CheckContiguous(kEntry, "out", out)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.SetGateForm(gate_form, a_log != nullptr))) return Invalid(bad);
    if (a_log != nullptr && checked.UsesALog()) {
        if (!CheckPresent(kEntry, "a_log", a_log) || !CheckContiguous(kEntry, "a_log", a_log))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (a_log->dtype != FLA_NPU_FLOAT32) return Invalid("`a_log` must be float32");
        if ((bad = checked.SetALog(Numel(a_log)))) return Invalid(bad);
    }
    if (dt_bias != nullptr) {
        if (!CheckPresent(kEntry, "dt_bias", dt_bias) || !CheckContiguous(kEntry, "dt_bias", dt_bias))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (dt_bias->dtype != FLA_NPU_FLOAT32) return Invalid("`dt_bias` must be float32");
        if ((bad = checked.SetDtBias(Numel(dt_bias)))) return Invalid(bad);
    }
    if ((bad = GateCumsumArgs::CheckVarlenPair(cu_seqlens != nullptr, chunk_indices != nullptr))) return Invalid(bad);
    if (cu_seqlens != nullptr) {
        if (!CheckPresent(kEntry, "cu_seqlens", cu_seqlens) || !CheckPresent(kEntry, "chunk_indices", chunk_indices))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (cu_seqlens->dtype != FLA_NPU_INT32 || chunk_indices->dtype != FLA_NPU_INT32)
            return Invalid("`cu_seqlens` and `chunk_indices` must be int32");
        if ((bad = checked.SetVarlenShapes(cu_seqlens->ndim, cu_seqlens->shape, chunk_indices->ndim, chunk_indices->shape)))
            return Invalid(bad);
        if (!CheckContiguous(kEntry, "cu_seqlens", cu_seqlens) || !CheckContiguous(kEntry, "chunk_indices", chunk_indices))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if ((bad = checked.SetVarlenBatch())) return Invalid(bad);
    }
    const GateCumsumProblem p = checked.Problem(chunk_size, g->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, lower_bound, scale,
                                                static_cast<uint32_t>(flaNpuVectorCoreNum()), TargetUbBytes());

    const char* err = "";
    if (ComputeTiling(p, &call->tiling, &err) != 0) return Invalid(err);
    // The kernel reads a_log, dt_bias and the varlen pair only when the tiling says so.
    if (!p.has_a_log) call->t[1] = nullptr;
    if (!p.has_dt_bias) call->t[2] = nullptr;
    if (!p.varlen) call->t[3] = call->t[4] = nullptr;
    return FLA_NPU_OK;
}

}  // namespace gate
}  // namespace fla_npu
