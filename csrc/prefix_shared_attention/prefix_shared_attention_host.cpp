// C entry points of the prefix-shared attention forward kernel (include/fla_npu/kernels.h):
// validation, tiling and workspace size (every flavour), then the kernel:
// prefix_shared_attention_kernel.cpp launched on the host simulation (sim flavour), or the operator
// package's aclnnFlaNpuPrefixSharedAttention pair (NPU flavours, through common/aclnn_bridge.h; the
// kernel is built into the package by csrc/opp/).
#include <string>

#include "../common/api_common.h"
#include "prefix_shared_attention_tiling.h"

#if defined(FLA_NPU_TARGET_SIM)
#include "../common/sim_launch_guard.h"  // and the simulation's kernel_operator.h: GM_ADDR, sim::Launch
#else
#include "../common/aclnn_bridge.h"
#endif

using fla_npu::psa::PsaTiling;

namespace {

constexpr const char* kOp = "flaNpuPrefixSharedAttention";
thread_local PsaTiling g_last_tiling{};

int Invalid(const std::string& msg) { return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(kOp) + ": " + msg); }

// A validated call.
struct Request {
    PsaTiling tiling;
    int32_t dtype;
    const FlaNpuTensor* q;
    const FlaNpuTensor* k;
    const FlaNpuTensor* v;
    float scale;
    const FlaNpuTensor* out;
};

// The flavour's executor for a validated call (below): FLA_NPU_OK and `*executor`, or an error.
int MakeExecutor(const Request& call, FlaNpuExecutor** executor);

}  // namespace

#if defined(FLA_NPU_TARGET_SIM)
// ---- sim flavour: the kernel on the host simulation ------------------------------------------------

#define FLA_NPU_DECLARE_PSA_KERNEL(NAME) extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, PsaTiling);
FLA_NPU_DECLARE_PSA_KERNEL(fla_prefix_shared_attention_f16)
FLA_NPU_DECLARE_PSA_KERNEL(fla_prefix_shared_attention_bf16)

namespace {

struct Args {
    int32_t dtype;
    GM_ADDR q;  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR k;
    GM_ADDR v;
    GM_ADDR out;
    PsaTiling tiling;
};

int Launch(const Args& a, void* workspace) {
    const uint32_t blocks = a.tiling.block_dim;
    if (blocks == 0) return FLA_NPU_OK;  // bs == 0: nothing to do
    GM_ADDR ws = static_cast<GM_ADDR>(workspace);
    return fla_npu::GuardedSimLaunch(kOp, [&] {
        if (a.dtype == FLA_NPU_FLOAT16)
            AscendC::sim::Launch("fla_prefix_shared_attention_f16", KERNEL_TYPE_MIX_AIC_1_2, blocks, fla_prefix_shared_attention_f16,
                                 a.q, a.k, a.v, a.out, ws, a.tiling);
        else
            AscendC::sim::Launch("fla_prefix_shared_attention_bf16", KERNEL_TYPE_MIX_AIC_1_2, blocks, fla_prefix_shared_attention_bf16,
                                 a.q, a.k, a.v, a.out, ws, a.tiling);
    });
}

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    Args args{};
    args.tiling = call.tiling;
    args.dtype = call.dtype;
    args.q = fla_npu::SimAddr(call.q);
    args.k = fla_npu::SimAddr(call.k);
    args.v = fla_npu::SimAddr(call.v);
    args.out = fla_npu::SimAddr(call.out);
    *executor = fla_npu::NewExecutor(kOp, fla_npu::psa::UserWorkspaceBytes(call.tiling),
                                     [args](void* ws, uint64_t, void*) { return Launch(args, ws); });  // synchronous; no stream
    return FLA_NPU_OK;
}

}  // namespace

#else
// ---- NPU flavours: the operator package's aclnn pair ----------------------------------------------

namespace {

namespace aclnn = fla_npu::aclnn;

// aclnnFlaNpuPrefixSharedAttentionGetWorkspaceSize(q, k, v, scale, out, workspaceSize, executor)
using GetWorkspaceSizeFn = aclnn::Status (*)(const aclnn::AclTensor*, const aclnn::AclTensor*, const aclnn::AclTensor*,
                                             aclnn::FloatAttr, const aclnn::AclTensor*, uint64_t*, aclnn::AclOpExecutor**);
const aclnn::Op g_aclnn("aclnnFlaNpuPrefixSharedAttention");

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    const FlaNpuTensor* const tensors[] = {call.q, call.k, call.v, call.out};
    const char* const names[] = {"q", "k", "v", "out"};
    return aclnn::ForwardToPackage(
        g_aclnn, kOp, call.tiling.block_dim == 0 /* bs == 0: nothing to call */, tensors, names,
        [&call](aclnn::Call& c, const aclnn::AclTensor* const* t) {
            return c.GetWorkspaceSize<GetWorkspaceSizeFn>(t[0], t[1], t[2], aclnn::FloatAttr(call.scale), t[3]);
        },
        executor);
}

}  // namespace
#endif

extern "C" {

int flaNpuPrefixSharedAttentionGetWorkspaceSize(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v, float scale,
                                                const FlaNpuTensor* out, uint64_t* workspace_size, FlaNpuExecutor** executor) {
    using namespace fla_npu;
    if (!BeginGetWorkspaceSize(kOp, workspace_size, executor)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (!CheckPresent(kOp, "q", q) || !CheckPresent(kOp, "k", k) || !CheckPresent(kOp, "v", v) || !CheckPresent(kOp, "out", out))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes: the checks the operator package's tiling shares (psa::PsaArgs), with this entry
    // point's descriptor checks (dtypes, strides) in between.
    psa::PsaArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q->ndim, k->ndim, v->ndim))) return Invalid(bad);
    if (q->dtype != FLA_NPU_FLOAT16 && q->dtype != FLA_NPU_BFLOAT16)
        return Invalid(std::string("`q` must be float16 or bfloat16, got ") + DtypeName(q->dtype));
    if (k->dtype != q->dtype || v->dtype != q->dtype || out->dtype != q->dtype)
        return Invalid("`q`, `k`, `v` and `out` must have one dtype");
    if ((bad = checked.SetShapes(q->shape, k->shape, v->shape, out->ndim, out->shape))) return Invalid(bad);
    if (!CheckContiguous(kOp, "q", q) || !CheckContiguous(kOp, "k", k) || !CheckContiguous(kOp, "v", v) ||
        !CheckContiguous(kOp, "out", out))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const psa::PsaProblem p = checked.Problem(scale, MixedLaunchAiCoreNum(), TargetUbBytes(), TargetL0cBytes());

    Request call{};
    const char* err = "";
    if (psa::ComputeTiling(p, &call.tiling, &err) != 0) return Invalid(err);
    g_last_tiling = call.tiling;
    call.dtype = q->dtype;
    call.q = q;
    call.k = k;
    call.v = v;
    call.scale = scale;
    call.out = out;

    return FinishGetWorkspaceSize(MakeExecutor(call, executor), executor, workspace_size);
}

int flaNpuPrefixSharedAttention(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream) {
    return fla_npu::RunExecutor(kOp, "flaNpuPrefixSharedAttentionGetWorkspaceSize", workspace, workspace_size, executor, stream);
}

int32_t flaNpuPrefixSharedAttentionLastTiling(uint32_t* words, int32_t capacity) {
    return fla_npu::CopyTiling(g_last_tiling, words, capacity);
}

}  // extern "C"
