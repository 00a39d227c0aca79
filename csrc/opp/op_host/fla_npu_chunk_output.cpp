// Host side of the operator FlaNpuChunkOutput (csrc/chunk_output/): its registration, from which
// CANN generates
//
//   aclnnFlaNpuChunkOutputGetWorkspaceSize(const aclTensor *q, const aclTensor *eRow, const aclTensor *s,
//       const aclTensor *aqk, const aclTensor *vNew, const aclTensor *out, uint64_t *workspaceSize,
//       aclOpExecutor **executor)
//   aclnnFlaNpuChunkOutput(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
//
// its shape/dtype inference, and its tiling: the sim library's argument checks and tiling
// (chunk_output::ChunkOutputArgs, chunk_output::ComputeTiling) on the call's shapes, the POD tiling
// struct copied into the tiling buffer for the kernel entry (op_kernel/fla_npu_chunk_output.cpp), and
// the workspace: the system workspace plus two slots per AI core through which the vector cores hand
// q * e_row and the cast S to the Cube.
#include "opp_host_common.h"

#include "../../chunk_output/chunk_output_tiling.h"

namespace optiling {

static ge::graphStatus FlaNpuChunkOutputTiling(gert::TilingContext* context) {
    using namespace fla_npu;
    constexpr const char* kOp = "FlaNpuChunkOutput";
    // The checks in the C entry point's order (dtypes and layout are CANN's, from the registration).
    opp::Dims d[6];
    for (int i = 0; i < 5; ++i) d[i] = opp::DimsOf(context->GetInputShape(i));
    d[5] = opp::DimsOf(context->GetOutputShape(0));
    chunk_output::ChunkOutputArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(d[0].ndim, d[1].ndim, d[2].ndim, d[3].ndim, d[4].ndim, d[5].ndim))) return opp::Fail(kOp, bad);
    if ((bad = checked.SetShapes(d[0].d, d[1].d, d[2].d, d[3].d, d[4].d, d[5].d))) return opp::Fail(kOp, bad);
    if ((bad = checked.CheckSizes())) return opp::Fail(kOp, bad);

    const platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    // The registration takes float16 / bfloat16 only (2-byte Cube inputs); a2/a3/a5 Cubes take fp32 too.
    const chunk_output::ChunkOutputProblem p =
        checked.Problem(2, true, platform.GetCoreNumAic(), opp::UbBytes(platform), opp::L0cBytes(platform));
    chunk_output::ChunkOutputTiling t;
    const char* err = "";
    if (chunk_output::ComputeTiling(p, &t, &err) != 0) return opp::Fail(kOp, err);

    const ge::graphStatus saved = opp::SaveTiling(context, kOp, t);
    if (saved != ge::GRAPH_SUCCESS) return saved;
    context->SetBlockDim(opp::BlockDim(t.block_dim));  // AI cores: each one AIC + two AIVs (mixed 1:2)
    size_t* workspace = context->GetWorkspaceSizes(1);
    if (workspace == nullptr) return opp::Fail(kOp, "no workspace size slot");
    // The kernel finds its slots with GetUserWorkspace, after the system workspace.
    workspace[0] = static_cast<size_t>(platform.GetLibApiWorkSpaceSize()) + static_cast<size_t>(chunk_output::UserWorkspaceBytes(t));
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

// out: v_new's shape, float32.
static graphStatus FlaNpuChunkOutputInferShape(gert::InferShapeContext* context) {
    const gert::Shape* v_new = context->GetInputShape(4);
    gert::Shape* out = context->GetOutputShape(0);
    if (v_new == nullptr || out == nullptr) return GRAPH_FAILED;
    *out = *v_new;
    return GRAPH_SUCCESS;
}

static graphStatus FlaNpuChunkOutputInferDataType(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(0, DT_FLOAT);
    return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

// q, aqk, v_new float16 or bfloat16 (one dtype); e_row, s and out float32 (each column of the
// DataType lists is one supported combination).
class FlaNpuChunkOutput : public OpDef {
  public:
    explicit FlaNpuChunkOutput(const char* name) : OpDef(name) {
        const std::vector<ge::DataType> cube = {ge::DT_FLOAT16, ge::DT_BF16};
        const std::vector<ge::DataType> fp32 = {ge::DT_FLOAT, ge::DT_FLOAT};
        const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND};
        this->Input("q").ParamType(REQUIRED).DataType(cube).Format(nd);
        this->Input("e_row").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Input("s").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Input("aqk").ParamType(REQUIRED).DataType(cube).Format(nd);
        this->Input("v_new").ParamType(REQUIRED).DataType(cube).Format(nd);
        this->Output("out").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->SetInferShape(ge::FlaNpuChunkOutputInferShape);
        this->SetInferDataType(ge::FlaNpuChunkOutputInferDataType);
        this->AICore().SetTiling(optiling::FlaNpuChunkOutputTiling);
        this->AICore().AddConfig("ascend910b");
        this->AICore().AddConfig("ascend910_93");
        this->AICore().AddConfig("ascend950");
    }
};

OP_ADD(FlaNpuChunkOutput);

}  // namespace ops
