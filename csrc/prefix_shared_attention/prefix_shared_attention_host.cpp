// C entry points of the prefix-shared attention forward kernel (include/fla_npu/kernels.h):
// validation, tiling, workspace size, and the launch of prefix_shared_attention_kernel.cpp on the
// flavour's device (the host simulation under FLA_NPU_TARGET_SIM, the NPU otherwise).
#include <cstring>
#include <string>

#include "../common/api_common.h"
#include "prefix_shared_attention_tiling.h"

#if defined(FLA_NPU_TARGET_SIM)
#include "kernel_operator.h"  // the simulation's: GM_ADDR, AscendC::sim::Launch
#else
#include "acl/acl.h"
#include "kernel_operator.h"  // CANN's (this file is compiled as Ascend C for the <<<>>> launch)
#endif

using fla_npu::psa::PsaTiling;

#if defined(FLA_NPU_TARGET_SIM)
#define FLA_NPU_DECLARE_PSA_KERNEL(NAME) extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, PsaTiling);
#else
#define FLA_NPU_DECLARE_PSA_KERNEL(NAME) \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, PsaTiling);
#endif
FLA_NPU_DECLARE_PSA_KERNEL(fla_prefix_shared_attention_f16)
FLA_NPU_DECLARE_PSA_KERNEL(fla_prefix_shared_attention_bf16)

namespace {

constexpr const char* kOp = "flaNpuPrefixSharedAttention";
thread_local PsaTiling g_last_tiling{};

struct Args {
    int32_t dtype;
    GM_ADDR q;  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR k;
    GM_ADDR v;
    GM_ADDR out;
    PsaTiling tiling;
};

int Launch(const Args& a, void* workspace, void* stream) {
    const uint32_t blocks = a.tiling.block_dim;
    if (blocks == 0) return FLA_NPU_OK;  // bs == 0: nothing to do
    GM_ADDR ws = static_cast<GM_ADDR>(workspace);
#if defined(FLA_NPU_TARGET_SIM)
    (void)stream;
    try {
        if (a.dtype == FLA_NPU_FLOAT16)
            AscendC::sim::Launch("fla_prefix_shared_attention_f16", KERNEL_TYPE_MIX_AIC_1_2, blocks, fla_prefix_shared_attention_f16,
                                 a.q, a.k, a.v, a.out, ws, a.tiling);
        else
            AscendC::sim::Launch("fla_prefix_shared_attention_bf16", KERNEL_TYPE_MIX_AIC_1_2, blocks, fla_prefix_shared_attention_bf16,
                                 a.q, a.k, a.v, a.out, ws, a.tiling);
    } catch (const AscendC::sim::LaunchError& e) {
        return fla_npu::SetError(FLA_NPU_ERR_KERNEL, e.what());
    } catch (const std::exception& e) {
        return fla_npu::SetError(FLA_NPU_ERR_RUNTIME, std::string(kOp) + ": " + e.what());
    }
    return FLA_NPU_OK;
#else
    // Not buildable here (no CANN). A mixed 1:2 kernel launches `blocks` AI cores (AIC + 2 AIV each).
    auto s = static_cast<aclrtStream>(stream);
    if (a.dtype == FLA_NPU_FLOAT16)
        fla_prefix_shared_attention_f16<<<blocks, nullptr, s>>>(a.q, a.k, a.v, a.out, ws, a.tiling);
    else
        fla_prefix_shared_attention_bf16<<<blocks, nullptr, s>>>(a.q, a.k, a.v, a.out, ws, a.tiling);
    return FLA_NPU_OK;
#endif
}

int Invalid(const std::string& msg) { return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(kOp) + ": " + msg); }

GM_ADDR Addr(const FlaNpuTensor* t) { return t == nullptr ? nullptr : static_cast<GM_ADDR>(t->data); }

// AI cores a mixed launch may use: one per two vector cores.
uint32_t AiCoreNum() {
    const int32_t aiv = flaNpuVectorCoreNum();
    return aiv >= 2 ? static_cast<uint32_t>(aiv / 2) : 1u;
}

}  // namespace

extern "C" {

int flaNpuPrefixSharedAttentionGetWorkspaceSize(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v, float scale,
                                                const FlaNpuTensor* out, uint64_t* workspace_size, FlaNpuExecutor** executor) {
    using namespace fla_npu;
    ClearError();
    if (workspace_size == nullptr || executor == nullptr) return Invalid("`workspace_size` and `executor` must not be null");
    *executor = nullptr;
    *workspace_size = 0;
    if (!CheckPresent(kOp, "q", q) || !CheckPresent(kOp, "k", k) || !CheckPresent(kOp, "v", v) || !CheckPresent(kOp, "out", out))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (q->ndim != 4 || k->ndim != 3 || v->ndim != 3) return Invalid("`q` must be [bs, G, len_q, D] and `k`, `v` [bs, len_kv, D]");
    if (q->dtype != FLA_NPU_FLOAT16 && q->dtype != FLA_NPU_BFLOAT16)
        return Invalid(std::string("`q` must be float16 or bfloat16, got ") + DtypeName(q->dtype));
    if (k->dtype != q->dtype || v->dtype != q->dtype || out->dtype != q->dtype)
        return Invalid("`q`, `k`, `v` and `out` must have one dtype");
    const int64_t bs = q->shape[0], G = q->shape[1], Lq = q->shape[2], D = q->shape[3], Lkv = k->shape[1];
    if (k->shape[0] != bs || v->shape[0] != bs) return Invalid("the batch sizes of `q`, `k` and `v` differ");
    if (v->shape[1] != Lkv) return Invalid("`k` and `v` have different lengths");
    if (k->shape[2] != D || v->shape[2] != D) return Invalid("the head dims of `q`, `k` and `v` differ");
    if (D != 64 && D != 128) return Invalid("the head dim D must be 64 or 128");
    if (G < 1 || Lq < 1 || Lkv < 1) return Invalid("G, len_q and len_kv must be positive");
    if (out->ndim != 4 || std::memcmp(out->shape, q->shape, sizeof(int64_t) * 4) != 0) return Invalid("`out` must have the shape of `q`");
    if (!CheckContiguous(kOp, "q", q) || !CheckContiguous(kOp, "k", k) || !CheckContiguous(kOp, "v", v) ||
        !CheckContiguous(kOp, "out", out))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (bs > 0x7FFFFFFF || G > 0x7FFFFFFF || Lq > 0x7FFFFFFF || Lkv > 0x7FFFFFFF) return Invalid("a dimension is too large");

    psa::PsaProblem p;
    p.bs = static_cast<uint32_t>(bs);
    p.G = static_cast<uint32_t>(G);
    p.len_q = static_cast<uint32_t>(Lq);
    p.len_kv = static_cast<uint32_t>(Lkv);
    p.D = static_cast<uint32_t>(D);
    p.elem_bytes = 2;
    p.scale = scale;
    p.core_num = AiCoreNum();
    p.ub_bytes = TargetUbBytes();
    p.l0c_bytes = std::strcmp(TargetSoc(), "a5") == 0 ? 256u * 1024 : 128u * 1024;

    Args args{};
    const char* err = "";
    if (psa::ComputeTiling(p, &args.tiling, &err) != 0) return Invalid(err);
    g_last_tiling = args.tiling;
    args.dtype = q->dtype;
    args.q = Addr(q);
    args.k = Addr(k);
    args.v = Addr(v);
    args.out = Addr(out);

    auto* ex = new FlaNpuExecutor;
    ex->op = kOp;
    ex->workspace_size = uint64_t(args.tiling.block_dim) * args.tiling.ws_bytes_per_core;
    ex->launch = [args](void* ws, uint64_t, void* stream) { return Launch(args, ws, stream); };
    *executor = ex;
    *workspace_size = ex->workspace_size;
    return FLA_NPU_OK;
}

int flaNpuPrefixSharedAttention(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream) {
    return fla_npu::RunExecutor(kOp, "flaNpuPrefixSharedAttentionGetWorkspaceSize", workspace, workspace_size, executor, stream);
}

int32_t flaNpuPrefixSharedAttentionLastTiling(uint32_t* words, int32_t capacity) {
    return fla_npu::CopyTiling(g_last_tiling, words, capacity);
}

}  // extern "C"
