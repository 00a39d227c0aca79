// C entry points of the gate + chunk-local cumsum kernel (include/fla_npu/kernels.h): validation
// and tiling (every flavour), then the kernel: gate_cumsum_kernel.cpp launched on the host
// simulation (sim flavour), or the operator package's aclnnFlaNpuGateChunkCumsum pair (NPU
// flavours, through common/aclnn_bridge.h; the kernel is built into the package by csrc/opp/).
#include <string>

#include "../common/api_common.h"
#include "gate_cumsum_tiling.h"

#if defined(FLA_NPU_TARGET_SIM)
#include "../common/sim_launch_guard.h"  // and the simulation's kernel_operator.h: GM_ADDR, sim::Launch
#else
#include "../common/aclnn_bridge.h"
#endif

using fla_npu::gate::GateCumsumTiling;

namespace {

constexpr const char* kOp = "flaNpuGateChunkCumsum";
thread_local GateCumsumTiling g_last_tiling{};

int Invalid(const std::string& msg) { return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(kOp) + ": " + msg); }

// A validated call: the tiling, and the tensors the kernel reads (null when it does not: an absent
// optional input, or a_log with gate form 0).
struct Request {
    GateCumsumTiling tiling;
    int32_t dtype;
    const FlaNpuTensor* g;
    const FlaNpuTensor* a_log;
    const FlaNpuTensor* dt_bias;
    const FlaNpuTensor* cu_seqlens;
    const FlaNpuTensor* chunk_indices;
    int32_t chunk_size;
    int32_t gate_form;
    float lower_bound;
    float scale;
    const FlaNpuTensor* out;
};

// The flavour's executor for a validated call (below): FLA_NPU_OK and `*executor`, or an error.
int MakeExecutor(const Request& call, FlaNpuExecutor** executor);

}  // namespace

#if defined(FLA_NPU_TARGET_SIM)
// ---- sim flavour: the kernel on the host simulation ------------------------------------------------

// Kernel entries (gate_cumsum_kernel.cpp).
#define FLA_NPU_DECLARE_KERNEL(NAME) \
    extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GateCumsumTiling);
FLA_NPU_DECLARE_KERNEL(fla_gate_chunk_cumsum_f32)
FLA_NPU_DECLARE_KERNEL(fla_gate_chunk_cumsum_f16)
FLA_NPU_DECLARE_KERNEL(fla_gate_chunk_cumsum_bf16)

namespace {

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

int Launch(const Args& a) {
    const uint32_t blocks = a.tiling.block_dim;
    if (blocks == 0) return FLA_NPU_OK;  // no token: nothing to do
    return fla_npu::GuardedSimLaunch(kOp, [&] {
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
    });
}

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    Args args{};
    args.tiling = call.tiling;
    args.dtype = call.dtype;
    args.g = fla_npu::SimAddr(call.g);
    args.a_log = fla_npu::SimAddr(call.a_log);
    args.dt_bias = fla_npu::SimAddr(call.dt_bias);
    args.cu = fla_npu::SimAddr(call.cu_seqlens);
    args.chunks = fla_npu::SimAddr(call.chunk_indices);
    args.out = fla_npu::SimAddr(call.out);
    *executor = fla_npu::NewExecutor(kOp, 0, [args](void*, uint64_t, void*) { return Launch(args); });  // synchronous; no stream
    return FLA_NPU_OK;
}

}  // namespace

#else
// ---- NPU flavours: the operator package's aclnn pair ----------------------------------------------

namespace {

namespace aclnn = fla_npu::aclnn;

// aclnnFlaNpuGateChunkCumsumGetWorkspaceSize(g, aLogOptional, dtBiasOptional, cuSeqlensOptional,
//     chunkIndicesOptional, chunkSize, gateForm, lowerBound, scale, out, workspaceSize, executor)
using GetWorkspaceSizeFn = aclnn::Status (*)(const aclnn::AclTensor*, const aclnn::AclTensor*, const aclnn::AclTensor*,
                                             const aclnn::AclTensor*, const aclnn::AclTensor*, int64_t, int64_t,
                                             aclnn::FloatAttr, aclnn::FloatAttr, const aclnn::AclTensor*, uint64_t*,
                                             aclnn::AclOpExecutor**);
const aclnn::Op g_aclnn("aclnnFlaNpuGateChunkCumsum");

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    const FlaNpuTensor* const tensors[] = {call.g, call.a_log, call.dt_bias, call.cu_seqlens, call.chunk_indices, call.out};
    const char* const names[] = {"g", "a_log", "dt_bias", "cu_seqlens", "chunk_indices", "out"};
    return aclnn::ForwardToPackage(
        g_aclnn, kOp, call.tiling.block_dim == 0 /* no token: nothing to call */, tensors, names,
        [&call](aclnn::Call& c, const aclnn::AclTensor* const* t) {
            return c.GetWorkspaceSize<GetWorkspaceSizeFn>(t[0], t[1], t[2], t[3], t[4], int64_t(call.chunk_size),
                                                          int64_t(call.gate_form), aclnn::FloatAttr(call.lower_bound),
                                                          aclnn::FloatAttr(call.scale), t[5]);
        },
        executor);
}

}  // namespace
#endif

extern "C" {

int flaNpuGateChunkCumsumGetWorkspaceSize(const FlaNpuTensor* g, const FlaNpuTensor* a_log, const FlaNpuTensor* dt_bias,
                                          const FlaNpuTensor* cu_seqlens, const FlaNpuTensor* chunk_indices,
                                          int32_t chunk_size, int32_t gate_form, float lower_bound, float scale,
                                          const FlaNpuTensor* out, uint64_t* workspace_size, FlaNpuExecutor** executor) {
    using namespace fla_npu;
    if (!BeginGetWorkspaceSize(kOp, workspace_size, executor)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (!CheckPresent(kOp, "g", g) || !CheckPresent(kOp, "out", out)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes and attributes: the checks the operator package's tiling shares (gate::GateCumsumArgs),
    // with this entry point's descriptor checks (dtypes, strides) in between.
    gate::GateCumsumArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetG(g->ndim, g->shape))) return Invalid(bad);
    if (g->dtype != FLA_NPU_FLOAT32 && g->dtype != FLA_NPU_FLOAT16 && g->dtype != FLA_NPU_BFLOAT16)
        return Invalid(std::string("`g` must be float32, float16 or bfloat16, got ") + DtypeName(g->dtype));
    if (!CheckContiguous(kOp, "g", g)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (out->dtype != FLA_NPU_FLOAT32) return Invalid("`out` must be float32");
    if ((bad = checked.CheckOut(out->ndim, out->shape))) return Invalid(bad);
    if (!CheckContiguous(kOp, "out", out)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.SetGateForm(gate_form, a_log != nullptr))) return Invalid(bad);
    if (a_log != nullptr && checked.UsesALog()) {
        if (!CheckPresent(kOp, "a_log", a_log) || !CheckContiguous(kOp, "a_log", a_log)) return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (a_log->dtype != FLA_NPU_FLOAT32) return Invalid("`a_log` must be float32");
        if ((bad = checked.SetALog(Numel(a_log)))) return Invalid(bad);
    }
    if (dt_bias != nullptr) {
        if (!CheckPresent(kOp, "dt_bias", dt_bias) || !CheckContiguous(kOp, "dt_bias", dt_bias)) return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (dt_bias->dtype != FLA_NPU_FLOAT32) return Invalid("`dt_bias` must be float32");
        if ((bad = checked.SetDtBias(Numel(dt_bias)))) return Invalid(bad);
    }
    if ((bad = gate::GateCumsumArgs::CheckVarlenPair(cu_seqlens != nullptr, chunk_indices != nullptr))) return Invalid(bad);
    if (cu_seqlens != nullptr) {
        if (!CheckPresent(kOp, "cu_seqlens", cu_seqlens) || !CheckPresent(kOp, "chunk_indices", chunk_indices))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if (cu_seqlens->dtype != FLA_NPU_INT32 || chunk_indices->dtype != FLA_NPU_INT32)
            return Invalid("`cu_seqlens` and `chunk_indices` must be int32");
        if ((bad = checked.SetVarlenShapes(cu_seqlens->ndim, cu_seqlens->shape, chunk_indices->ndim, chunk_indices->shape)))
            return Invalid(bad);
        if (!CheckContiguous(kOp, "cu_seqlens", cu_seqlens) || !CheckContiguous(kOp, "chunk_indices", chunk_indices))
            return FLA_NPU_ERR_INVALID_ARGUMENT;
        if ((bad = checked.SetVarlenBatch())) return Invalid(bad);
    }
    const gate::GateCumsumProblem p = checked.Problem(chunk_size, g->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, lower_bound, scale,
                                                      static_cast<uint32_t>(flaNpuVectorCoreNum()), TargetUbBytes());

    Request call{};
    const char* err = "";
    if (gate::ComputeTiling(p, &call.tiling, &err) != 0) return Invalid(err);
    g_last_tiling = call.tiling;
    call.dtype = g->dtype;
    call.g = g;
    call.a_log = p.has_a_log ? a_log : nullptr;
    call.dt_bias = p.has_dt_bias ? dt_bias : nullptr;
    call.cu_seqlens = p.varlen ? cu_seqlens : nullptr;
    call.chunk_indices = p.varlen ? chunk_indices : nullptr;
    call.chunk_size = chunk_size;
    call.gate_form = gate_form;
    call.lower_bound = lower_bound;
    call.scale = scale;
    call.out = out;

    return FinishGetWorkspaceSize(MakeExecutor(call, executor), executor, workspace_size);
}

int flaNpuGateChunkCumsum(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream) {
    return fla_npu::RunExecutor(kOp, "flaNpuGateChunkCumsumGetWorkspaceSize", workspace, workspace_size, executor, stream);
}

int32_t flaNpuGateChunkCumsumLastTiling(uint32_t* words, int32_t capacity) {
    return fla_npu::CopyTiling(g_last_tiling, words, capacity);
}

}  // extern "C"
