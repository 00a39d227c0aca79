// C entry points of the gate + chunk-local cumsum kernel (include/fla_npu/kernels.h):
// validation, tiling, and the launch of gate_cumsum_kernel.cpp on the flavour's device
// (the host simulation under FLA_NPU_TARGET_SIM, the NPU otherwise).
#include <cstring>
#include <string>

#include "../common/api_common.h"
#include "gate_cumsum_tiling.h"

#if defined(FLA_NPU_TARGET_SIM)
#include "kernel_operator.h"  // the simulation's: GM_ADDR, AscendC::sim::Launch
#else
#include "acl/acl.h"
#include "kernel_operator.h"  // CANN's (this file is compiled as Ascend C for the <<<>>> launch)
#endif

using fla_npu::gate::GateCumsumTiling;

// Kernel entries (gate_cumsum_kernel.cpp).
#if defined(FLA_NPU_TARGET_SIM)
#define FLA_NPU_DECLARE_KERNEL(NAME) \
    extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GateCumsumTiling);
#else
#define FLA_NPU_DECLARE_KERNEL(NAME) \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GateCumsumTiling);
#endif
FLA_NPU_DECLARE_KERNEL(fla_gate_chunk_cumsum_f32)
FLA_NPU_DECLARE_KERNEL(fla_gate_chunk_cumsum_f16)
FLA_NPU_DECLARE_KERNEL(fla_gate_chunk_cumsum_bf16)

namespace {

constexpr const char* kOp = "flaNpuGateChunkCumsum";
thread_local GateCumsumTiling g_last_tiling{};

struct Args {
    int32_t dtype;
    GM_ADDR g;  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR a_log;
    GM_ADDR dt_bias;
    GM_ADDR cu;
    GM_ADDR chunks;
    GM_ADDR out;
    GateCumsumTiling tiling;
};

int Launch(const Args& a, void* stream) {
    const uint32_t blocks = a.tiling.block_dim;
    if (blocks == 0) return FLA_NPU_OK;  // no token: nothing to do
#if defined(FLA_NPU_TARGET_SIM)
    (void)stream;
    try {
        switch (a.dtype) {
        case FLA_NPU_FLOAT32:
            AscendC::sim::Launch("fla_gate_chunk_cumsum_f32", KERNEL_TYPE_AIV_ONLY, blocks, fla_gate_chunk_cumsum_f32,
                                 a.g, a.a_log, a.dt_bias, a.cu, a.chunks, a.out, a.tiling);
            break;
        case FLA_NPU_FLOAT16:
            AscendC::sim::Launch("fla_gate_chunk_cumsum_f16", KERNEL_TYPE_AIV_ONLY, blocks, fla_gate_chunk_cumsum_f16,
                                 a.g, a.a_log, a.dt_bias, a.cu, a.chunks, a.out, a.tiling);
            break;
        default:
            AscendC::sim::Launch("fla_gate_chunk_cumsum_bf16", KERNEL_TYPE_AIV_ONLY, blocks, fla_gate_chunk_cumsum_bf16,
                                 a.g, a.a_log, a.dt_bias, a.cu, a.chunks, a.out, a.tiling);
            break;
        }
    } catch (const AscendC::sim::LaunchError& e) {
        return fla_npu::SetError(FLA_NPU_ERR_KERNEL, e.what());
    } catch (const std::exception& e) {
        return fla_npu::SetError(FLA_NPU_ERR_RUNTIME, std::string(kOp) + ": " + e.what());
    }
    return FLA_NPU_OK;
#else
    // Not buildable here (no CANN). Asynchronous on `stream`; launch errors surface at the next
    // synchronising ACL call.
    auto s = static_cast<aclrtStream>(stream);
    switch (a.dtype) {
    case FLA_NPU_FLOAT32:
        fla_gate_chunk_cumsum_f32<<<blocks, nullptr, s>>>(a.g, a.a_log, a.dt_bias, a.cu, a.chunks, a.out, a.tiling);
        break;
    case FLA_NPU_FLOAT16:
        fla_gate_chunk_cumsum_f16<<<blocks, nullptr, s>>>(a.g, a.a_log, a.dt_bias, a.cu, a.chunks, a.out, a.tiling);
        break;
    default:
        fla_gate_chunk_cumsum_bf16<<<blocks, nullptr, s>>>(a.g, a.a_log, a.dt_bias, a.cu, a.chunks, a.out, a.tiling);
        break;
    }
    return FLA_NPU_OK;
#endif
}

int Invalid(const std::string& msg) { return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(kOp) + ": " + msg); }

GM_ADDR Addr(const FlaNpuTensor* t) { return t == nullptr ? nullptr : static_cast<GM_ADDR>(t->data); }

}  // namespace

extern "C" {

int flaNpuGateChunkCumsumGetWorkspaceSize(const FlaNpuTensor* g, const FlaNpuTensor* a_log, const FlaNpuTensor* dt_bias,
                                          const FlaNpuTensor* cu_seqlens, const FlaNpuTensor* chunk_indices,
                                          int32_t chunk_size, int32_t gate_form, float lower_bound, float scale,
                                          const FlaNpuTensor* out, uint64_t* workspace_size, FlaNpuExecutor** executor) {
    using namespace fla_npu;
    ClearError();
    if (workspace_size == nullptr || executor == nullptr) return Invalid("`workspace_size` and `executor` must not be null");
    *executor = nullptr;
    *workspace_size = 0;
    if (!CheckPresent(kOp, "g", g) || !CheckPresent(kOp, "out", out)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (g->ndim != 3 && g->ndim != 4) return Invalid("`g` must be [B, T, H] or [B, T, H, K]");
    if (g->dtype != FLA_NPU_FLOAT32 && g->dtype != FLA_NPU_FLOAT16 && g->dtype != FLA_NPU_BFLOAT16)
        return Invalid(std::string("`g` must be float32, float16 or bfloat16, got ") + DtypeName(g->dtype));
    if (!CheckContiguous(kOp, "g", g)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (out->dtype != FLA_NPU_FLOAT32) return Invalid("`out` must be float32");
    if (out->ndim != g->ndim || std::memcmp(out->shape, g->shape, sizeof(int64_t) * g->ndim) != 0)
        return Invalid("`out` must have the shape of `g`");
    if (!CheckContiguous(kOp, "out", out)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (gate_form < 0 || gate_form > 2) return Invalid("`gate_form` must be 0 (none), 1 (softplus) or 2 (lower-bound sigmoid)");

    gate::GateCumsumProblem p;
    p.B = static_cast<uint32_t>(g->shape[0]);
    p.T = static_cast<uint32_t>(g->shape[1]);
    p.H = static_cast<uint32_t>(g->shape[2]);
    p.D = g->ndim == 4 ? static_cast<uint32_t>(g->shape[3]) : 1u;
    if (g->shape[0] > 0x7FFFFFFF || g->shape[1] > 0x7FFFFFFF || g->shape[2] > 0x7FFFFFFF || (g->ndim == 4 && g->shape[3] > 0x7FFFFFFF))
        return Invalid("`g` is too large");
    const int64_t HD = int64_t(p.H) * p.D;

    if (gate_form == gate::kGateSoftplus && a_log == nullptr) return Invalid("the softplus gate (gate_form 1) needs `a_log`");
    if (a_log != nullptr && gate_form != gate::kGateNone) {
        if (!CheckPresent(kOp, "a_log", a_log) || !CheckContiguous(kOp, "a_log", a_log)) return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (a_log->dtype != FLA_NPU_FLOAT32) return Invalid("`a_log` must be float32");
        if (Numel(a_log) != int64_t(p.H)) return Invalid("`a_log` must have H elements");
        p.has_a_log = true;
    }
    if (dt_bias != nullptr) {
        if (!CheckPresent(kOp, "dt_bias", dt_bias) || !CheckContiguous(kOp, "dt_bias", dt_bias)) return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (dt_bias->dtype != FLA_NPU_FLOAT32) return Invalid("`dt_bias` must be float32");
        if (Numel(dt_bias) != HD) return Invalid("`dt_bias` must have H * K elements (H for [B, T, H] gates)");
        p.has_dt_bias = true;
    }
    if ((cu_seqlens == nullptr) != (chunk_indices == nullptr)) return Invalid("`cu_seqlens` and `chunk_indices` go together");
    if (cu_seqlens != nullptr) {
        if (!CheckPresent(kOp, "cu_seqlens", cu_seqlens) || !CheckPresent(kOp, "chunk_indices", chunk_indices))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (cu_seqlens->dtype != FLA_NPU_INT32 || chunk_indices->dtype != FLA_NPU_INT32)
            return Invalid("`cu_seqlens` and `chunk_indices` must be int32");
        if (cu_seqlens->ndim != 1 || cu_seqlens->shape[0] < 2) return Invalid("`cu_seqlens` must be 1-D with at least 2 entries");
        if (chunk_indices->ndim != 2 || chunk_indices->shape[1] != 2) return Invalid("`chunk_indices` must be [NC, 2]");
        if (!CheckContiguous(kOp, "cu_seqlens", cu_seqlens) || !CheckContiguous(kOp, "chunk_indices", chunk_indices))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (p.B != 1) return Invalid("the batch size must be 1 when `cu_seqlens` is given");
        if (chunk_indices->shape[0] > 0x7FFFFFFF) return Invalid("too many chunks");
        p.varlen = true;
        p.num_chunks = static_cast<uint32_t>(chunk_indices->shape[0]);
    }
    p.chunk_size = chunk_size > 0 ? static_cast<uint32_t>(chunk_size) : 0u;
    p.gate_form = static_cast<uint32_t>(gate_form);
    p.in_elem_bytes = g->dtype == FLA_NPU_FLOAT32 ? 4u : 2u;
    p.lower_bound = lower_bound;
    p.scale = scale;
    p.core_num = static_cast<uint32_t>(flaNpuVectorCoreNum());
    p.ub_bytes = TargetUbBytes();

    Args args{};
    const char* err = "";
    if (gate::ComputeTiling(p, &args.tiling, &err) != 0) return Invalid(err);
    g_last_tiling = args.tiling;
    args.dtype = g->dtype;
    args.g = Addr(g);
    args.a_log = p.has_a_log ? Addr(a_log) : nullptr;
    args.dt_bias = p.has_dt_bias ? Addr(dt_bias) : nullptr;
    args.cu = p.varlen ? Addr(cu_seqlens) : nullptr;
    args.chunks = p.varlen ? Addr(chunk_indices) : nullptr;
    args.out = Addr(out);

    auto* ex = new FlaNpuExecutor;
    ex->op = kOp;
    ex->workspace_size = 0;
    ex->launch = [args](void*, uint64_t, void* stream) { return Launch(args, stream); };
    *executor = ex;
    *workspace_size = ex->workspace_size;
    return FLA_NPU_OK;
}

int flaNpuGateChunkCumsum(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream) {
    return fla_npu::RunExecutor(kOp, "flaNpuGateChunkCumsumGetWorkspaceSize", workspace, workspace_size, executor, stream);
}

int32_t flaNpuGateChunkCumsumLastTiling(uint32_t* words, int32_t capacity) {
    return fla_npu::CopyTiling(g_last_tiling, words, capacity);
}

}  // extern "C"
