// C entry points of the chunk output kernel (include/fla_npu/kernels.h): validation, tiling and
// workspace size (every flavour), then the kernel: chunk_output_kernel.cpp launched on the host
// simulation (sim flavour), or the operator package's aclnnFlaNpuChunkOutput pair (NPU flavours,
// through common/aclnn_bridge.h; the kernel is built into the package by csrc/opp/).
#include <string>

#include "../common/api_common.h"
#include "chunk_output_tiling.h"

#if defined(FLA_NPU_TARGET_SIM)
#include "../common/sim_launch_guard.h"  // and the simulation's kernel_operator.h: GM_ADDR, sim::Launch, sim::kCube
#else
#include "../common/aclnn_bridge.h"
#endif

using fla_npu::chunk_output::ChunkOutputTiling;

namespace {

constexpr const char* kOp = "flaNpuChunkOutput";
thread_local ChunkOutputTiling g_last_tiling{};

int Invalid(const std::string& msg) { return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(kOp) + ": " + msg); }

// A validated call.
struct Request {
    ChunkOutputTiling tiling;
    int32_t dtype;
    const FlaNpuTensor* q;
    const FlaNpuTensor* e_row;
    const FlaNpuTensor* s;
    const FlaNpuTensor* aqk;
    const FlaNpuTensor* v_new;
    const FlaNpuTensor* out;
};

// The flavour's executor for a validated call (below): FLA_NPU_OK and `*executor`, or an error.
int MakeExecutor(const Request& call, FlaNpuExecutor** executor);

}  // namespace

#if defined(FLA_NPU_TARGET_SIM)
// ---- sim flavour: the kernel on the host simulation ------------------------------------------------

#define FLA_NPU_DECLARE_CHUNK_OUTPUT_KERNEL(NAME) \
    extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, ChunkOutputTiling);
FLA_NPU_DECLARE_CHUNK_OUTPUT_KERNEL(fla_chunk_output_f16)
FLA_NPU_DECLARE_CHUNK_OUTPUT_KERNEL(fla_chunk_output_bf16)

namespace {

struct Args {
    int32_t dtype;
    GM_ADDR q;  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR e_row;
    GM_ADDR s;
    GM_ADDR aqk;
    GM_ADDR v_new;
    GM_ADDR out;
    ChunkOutputTiling tiling;
};

int Launch(const Args& a, void* workspace) {
    const uint32_t blocks = a.tiling.block_dim;
    if (blocks == 0) return FLA_NPU_OK;  // no chunk: nothing to do
    GM_ADDR ws = static_cast<GM_ADDR>(workspace);
    return fla_npu::GuardedSimLaunch(kOp, [&] {
        if (a.dtype == FLA_NPU_FLOAT16)
            AscendC::sim::Launch("fla_chunk_output_f16", KERNEL_TYPE_MIX_AIC_1_2, blocks, fla_chunk_output_f16, a.q, a.e_row, a.s,
                                 a.aqk, a.v_new, a.out, ws, a.tiling);
        else
            AscendC::sim::Launch("fla_chunk_output_bf16", KERNEL_TYPE_MIX_AIC_1_2, blocks, fla_chunk_output_bf16, a.q, a.e_row,
                                 a.s, a.aqk, a.v_new, a.out, ws, a.tiling);
    });
}

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    Args args{};
    args.tiling = call.tiling;
    args.dtype = call.dtype;
    args.q = fla_npu::SimAddr(call.q);
    args.e_row = fla_npu::SimAddr(call.e_row);
    args.s = fla_npu::SimAddr(call.s);
    args.aqk = fla_npu::SimAddr(call.aqk);
    args.v_new = fla_npu::SimAddr(call.v_new);
    args.out = fla_npu::SimAddr(call.out);
    *executor = fla_npu::NewExecutor(kOp, fla_npu::chunk_output::UserWorkspaceBytes(call.tiling),
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

// aclnnFlaNpuChunkOutputGetWorkspaceSize(q, eRow, s, aqk, vNew, out, workspaceSize, executor)
using GetWorkspaceSizeFn = aclnn::Status (*)(const aclnn::AclTensor*, const aclnn::AclTensor*, const aclnn::AclTensor*,
                                             const aclnn::AclTensor*, const aclnn::AclTensor*, const aclnn::AclTensor*, uint64_t*,
                                             aclnn::AclOpExecutor**);
const aclnn::Op g_aclnn("aclnnFlaNpuChunkOutput");

int MakeExecutor(const Request& call, FlaNpuExecutor** executor) {
    const FlaNpuTensor* const tensors[] = {call.q, call.e_row, call.s, call.aqk, call.v_new, call.out};
    const char* const names[] = {"q", "e_row", "s", "aqk", "v_new", "out"};
    return aclnn::ForwardToPackage(
        g_aclnn, kOp, call.tiling.block_dim == 0 /* no chunk: nothing to call */, tensors, names,
        [](aclnn::Call& c, const aclnn::AclTensor* const* t) {
            return c.GetWorkspaceSize<GetWorkspaceSizeFn>(t[0], t[1], t[2], t[3], t[4], t[5]);
        },
        executor);
}

// a2/a3 (2201) and a5 (3510) Cubes take float x float (IEEE fp32).
bool CubeTakesFp32() { return true; }

}  // namespace
#endif

extern "C" {

int flaNpuChunkOutputGetWorkspaceSize(const FlaNpuTensor* q, const FlaNpuTensor* e_row, const FlaNpuTensor* s,
                                      const FlaNpuTensor* aqk, const FlaNpuTensor* v_new, const FlaNpuTensor* out,
                                      uint64_t* workspace_size, FlaNpuExecutor** executor) {
    using namespace fla_npu;
    if (!BeginGetWorkspaceSize(kOp, workspace_size, executor)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    if (!CheckPresent(kOp, "q", q) || !CheckPresent(kOp, "e_row", e_row) || !CheckPresent(kOp, "s", s) ||
        !CheckPresent(kOp, "aqk", aqk) || !CheckPresent(kOp, "v_new", v_new) || !CheckPresent(kOp, "out", out))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    // Shapes: the checks the operator package's tiling shares (chunk_output::ChunkOutputArgs), with
    // this entry point's descriptor checks (dtypes, strides) in between.
    chunk_output::ChunkOutputArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q->ndim, e_row->ndim, s->ndim, aqk->ndim, v_new->ndim, out->ndim))) return Invalid(bad);
    if (q->dtype != FLA_NPU_FLOAT16 && q->dtype != FLA_NPU_BFLOAT16 && q->dtype != FLA_NPU_FLOAT32)
        return Invalid(std::string("`q` must be float16, bfloat16 or float32, got ") + DtypeName(q->dtype));
    if (aqk->dtype != q->dtype || v_new->dtype != q->dtype) return Invalid("`q`, `aqk` and `v_new` must have one dtype");
    if (e_row->dtype != FLA_NPU_FLOAT32 || s->dtype != FLA_NPU_FLOAT32 || out->dtype != FLA_NPU_FLOAT32)
        return Invalid("`e_row`, `s` and `out` must be float32");
    if ((bad = checked.SetShapes(q->shape, e_row->shape, s->shape, aqk->shape, v_new->shape, out->shape))) return Invalid(bad);
    if (!CheckContiguous(kOp, "q", q) || !CheckContiguous(kOp, "e_row", e_row) || !CheckContiguous(kOp, "s", s) ||
        !CheckContiguous(kOp, "aqk", aqk) || !CheckContiguous(kOp, "v_new", v_new) || !CheckContiguous(kOp, "out", out))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    if ((bad = checked.CheckSizes())) return Invalid(bad);
    const chunk_output::ChunkOutputProblem p =
        checked.Problem(q->dtype == FLA_NPU_FLOAT32 ? 4u : 2u, CubeTakesFp32(), MixedLaunchAiCoreNum(), TargetUbBytes(),
                        TargetL0cBytes());

    Request call{};
    const char* err = "";
    if (chunk_output::ComputeTiling(p, &call.tiling, &err) != 0) return Invalid(err);
    g_last_tiling = call.tiling;
    call.dtype = q->dtype;
    call.q = q;
    call.e_row = e_row;
    call.s = s;
    call.aqk = aqk;
    call.v_new = v_new;
    call.out = out;

    return FinishGetWorkspaceSize(MakeExecutor(call, executor), executor, workspace_size);
}

int flaNpuChunkOutput(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream) {
    return fla_npu::RunExecutor(kOp, "flaNpuChunkOutputGetWorkspaceSize", workspace, workspace_size, executor, stream);
}

int32_t flaNpuChunkOutputLastTiling(uint32_t* words, int32_t capacity) {
    return fla_npu::CopyTiling(g_last_tiling, words, capacity);
}

}  // extern "C"
