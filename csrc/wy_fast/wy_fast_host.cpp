// C entry points of the WY kernel (include/fla_npu/kernels.h): validation, tiling and workspace size
// (every flavour), then the kernel: wy_fast_kernel.cpp launched on the host simulation (sim
// flavour), or the operator package's aclnnFlaNpuWyFast pair (NPU flavours, through
// common/aclnn_bridge.h; the kernel is built into the package by csrc/opp/).
#include <string>

#include "../common/api_common.h"
#include "wy_fast_tiling.h"

#if defined(FLA_NPU_TARGET_SIM)
#include "../common/sim_launch_guard.h"  // and the simulation's kernel_operator.h: GM_ADDR, sim::Launch, sim::kCube
#else
#include "../common/aclnn_bridge.h"
#endif

using fla_npu::wy_fast::WyFastTiling;

namespace {

constexpr const char* kOp = "flaNpuWyFast";
constexpr int kTensors = 9;  // k, v, beta, akk, e_row, e_tail, w, u, kg
thread_local WyFastTiling g_last_tiling{};

int Invalid(const std::string& msg) { return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(kOp) + ": " + msg); }

// A validated call.
struct Request {
    WyFastTiling tiling;
    int32_t dtype;
    const FlaNpuTensor* t[kTensors];
};

// The flavour's executor for a validated call (below): FLA_NPU_OK and `*executor`, or an error.
int MakeExecutor(const Request& call, FlaNpuExecutor** executor);

}  // namespace

#if defined(FLA_NPU_TARGET_SIM)
// ---- sim flavour: the kernel on the host simulation ------------------------------------------------

#define FLA_NPU_DECLARE_WY_FAST_KERNEL(NAME)                                                                         \
    extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, \
                         WyFastTiling);
FLA_NPU_DECLARE_WY_FAST_KERNEL(fla_wy_fast_f16)
FLA_NPU_DECLARE_WY_FAST_KERNEL(fla_wy_fast_bf16)

namespace {

struct Args {
    int32_t dtype;
    uint8_t* t[kTensors];  // the GM addresses in the entry's order
    WyFastTiling tiling;
};

int Launch(const Args& a, void* workspace) {
    const uint32_t blocks = a.tiling.block_dim;
    if (blocks == 0) return FLA_NPU_OK;  // no chunk: nothing to do
    GM_ADDR ws = static_cast<GM_ADDR>(workspace);
    const bool f16 = a.dtype == FLA_NPU_FLOAT16;
    return fla_npu::GuardedSimLaunch(kOp, [&] {
        AscendC::sim::Launch(f16 ? "fla_wy_fast_f16" : "fla_wy_fast_bf16", KERNEL_TYPE_MIX_AIC_1_2, blocks,
                             f16 ? fla_wy_fast_f16 : fla_wy_fast_bf16, a.t[0], a.t[1], a.t[2], a.t[3], a.t[4], a.t[5], a.t[6],
                             a.t[7], a.t[8], ws, a.tiling);
    });
}

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    Args args{};
    args.tiling = call.tiling;
    args.dtype = call.dtype;
    for (int i = 0; i < kTensors; ++i) args.t[i] = static_cast<uint8_t*>(call.t[i]->data);
    *executor = fla_npu::NewExecutor(kOp, fla_npu::wy_fast::UserWorkspaceBytes(call.tiling),
                                     [args](void* ws, uint64_t, void*) { return Launch(args, ws); });  // synchronous; no stream
    return FLA_NPU_OK;
}

// Whether the simulated SoC's Cube takes float x float.
bool CubeTakesFp32() { return AscendC::sim::kCube.fp32Inputs; }

}  // namespace

#else
// ---- NPU flavours: the operator package's aclnn pair ----------------------------------------------

namespace {

namespace aclnn = fla_npu::aclnn;

// aclnnFlaNpuWyFastGetWorkspaceSize(k, v, beta, akk, eRow, eTail, w, u, kg, workspaceSize, executor)
using Tensor = const aclnn::AclTensor*;
using GetWorkspaceSizeFn = aclnn::Status (*)(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, uint64_t*,
                                             aclnn::AclOpExecutor**);
const aclnn::Op g_aclnn("aclnnFlaNpuWyFast");

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    const char* const names[kTensors] = {"k", "v", "beta", "akk", "e_row", "e_tail", "w", "u", "kg"};
    return aclnn::ForwardToPackage(
        g_aclnn, kOp, call.tiling.block_dim == 0 /* no chunk: nothing to call */, call.t, names,
        [](aclnn::Call& c, const Tensor* t) {
            return c.GetWorkspaceSize<GetWorkspaceSizeFn>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]);
        },
        executor);
}

// a2/a3 (2201) and a5 (3510) Cubes take float x float (IEEE fp32).
bool CubeTakesFp32() { return true; }

}  // namespace
#endif

extern "C" {

int flaNpuWyFastGetWorkspaceSize(const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* beta, const FlaNpuTensor* akk,
                                 const FlaNpuTensor* e_row, const FlaNpuTensor* e_tail, const FlaNpuTensor* w,
                                 const FlaNpuTensor* u, const FlaNpuTensor* kg, uint64_t* workspace_size,
                                 FlaNpuExecutor** executor) {
    using namespace fla_npu;
    if (!BeginGetWorkspaceSize(kOp, workspace_size, executor)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    const FlaNpuTensor* const t[kTensors] = {k, v, beta, akk, e_row, e_tail, w, u, kg};
    const char* const names[kTensors] = {"k", "v", "beta", "akk", "e_row", "e_tail", "w", "u", "kg"};
    for (int i = 0; i < kTensors; ++i)
        if (!CheckPresent(kOp, names[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes: the checks the operator package's tiling shares (wy_fast::WyFastArgs), with this entry
    // point's descriptor checks (dtypes, strides) in between.
    wy_fast::WyFastArgs checked;
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
        if (!CheckContiguous(kOp, names[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const wy_fast::WyFastProblem p =
        checked.Problem(k->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, CubeTakesFp32(), MixedLaunchAiCoreNum(), TargetUbBytes(),
                        TargetL0cBytes());

    Request call{};
    const char* err = "";
    if (wy_fast::ComputeTiling(p, &call.tiling, &err) != 0) return Invalid(err);
    g_last_tiling = call.tiling;
    call.dtype = k->dtype;
    for (int i = 0; i < kTensors; ++i) call.t[i] = t[i];

    return FinishGetWorkspaceSize(MakeExecutor(call, executor), executor, workspace_size);
}

int flaNpuWyFast(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream) {
    return fla_npu::RunExecutor(kOp, "flaNpuWyFastGetWorkspaceSize", workspace, workspace_size, executor, stream);
}

int32_t flaNpuWyFastLastTiling(uint32_t* words, int32_t capacity) { return fla_npu::CopyTiling(g_last_tiling, words, capacity); }

}  // extern "C"
