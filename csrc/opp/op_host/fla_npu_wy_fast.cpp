// Host side of the operator FlaNpuWyFast (csrc/wy_fast/): its registration, from which CANN generates
//
//   aclnnFlaNpuWyFastGetWorkspaceSize(const aclTensor *k, const aclTensor *v, const aclTensor *beta,
//       const aclTensor *akk, const aclTensor *eRow, const aclTensor *eTail, const aclTensor *w,
//       const aclTensor *u, const aclTensor *kg, uint64_t *workspaceSize, aclOpExecutor **executor)
//   aclnnFlaNpuWyFast(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
//
// its shape/dtype inference, and its tiling: the sim library's argument checks and tiling
// (wy_fast::WyFastArgs, wy_fast::ComputeTiling) on the call's shapes, the POD tiling struct copied
// into the tiling buffer for the kernel entry (op_kernel/fla_npu_wy_fast.cpp), and the workspace:
// the system workspace plus two slots per AI core through which the vector cores hand the scaled k
// and v to the Cube.
#include "opp_host_common.h"

#include "../../wy_fast/wy_fast_tiling.h"

namespace optiling {

static ge::graphStatus FlaNpuWyFastTiling(gert::TilingContext* context) {
    using namespace fla_npu;
    constexpr const char* kOp = "FlaNpuWyFast";
    // The checks in the C entry point's order (dtypes and layout are CANN's, from the registration).
    opp::Dims d[9];
    for (int i = 0; i < 6; ++i) d[i] = opp::DimsOf(context->GetInputShape(i));
    for (int i = 0; i < 3; ++i) d[6 + i] = opp::DimsOf(context->GetOutputShape(i));
    wy_fast::WyFastArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(d[0].ndim, d[1].ndim, d[2].ndim, d[3].ndim, d[4].ndim, d[5].ndim, d[6].ndim, d[7].ndim, d[8].ndim)))
        return opp::Fail(kOp, bad);
    if ((bad = checked.SetShapes(d[0].d, d[1].d, d[2].d, d[3].d, d[4].d, d[5].d, d[6].d, d[7].d, d[8].d))) return opp::Fail(kOp, bad);
    if ((bad = checked.CheckSizes())) return opp::Fail(kOp, bad);

    const platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    // The registration takes float16 / bfloat16 only (2-byte Cube inputs); a2/a3/a5 Cubes take fp32 too.
    const wy_fast::WyFastProblem p =
        checked.Problem(2, true, platform.GetCoreNumAic(), opp::UbBytes(platform), opp::L0cBytes(platform));
    wy_fast::WyFastTiling t;
    const char* err = "";
    if (wy_fast::ComputeTiling(p, &t, &err) != 0) return opp::Fail(kOp, err);

    const ge::graphStatus saved = opp::SaveTiling(context, kOp, t);
    if (saved != ge::GRAPH_SUCCESS) return saved;
    context->SetBlockDim(opp::BlockDim(t.block_dim));  // AI cores: each one AIC + two AIVs (mixed 1:2)
    size_t* workspace = context->GetWorkspaceSizes(1);
    if (workspace == nullptr) return opp::Fail(kOp, "no workspace size slot");
    // The kernel finds its slots with GetUserWorkspace, after the system workspace.
    workspace[0] = static_cast<size_t>(platform.GetLibApiWorkSpaceSize()) + static_cast<size_t>(wy_fast::UserWorkspaceBytes(t));
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

// w and kg: k's shape; u: v's shape; all float32.
static graphStatus FlaNpuWyFastInferShape(gert::InferShapeContext* context) {
    const gert::Shape* k = context->GetInputShape(0);
    const gert::Shape* v = context->GetInputShape(1);
    gert::Shape* w = context->GetOutputShape(0);
    gert::Shape* u = context->GetOutputShape(1);
    gert::Shape* kg = context->GetOutputShape(2);
    if (k == nullptr || v == nullptr || w == nullptr || u == nullptr || kg == nullptr) return GRAPH_FAILED;
    *w = *k;
    *u = *v;
    *kg = *k;
    return GRAPH_SUCCESS;
}

static graphStatus FlaNpuWyFastInferDataType(gert::InferDataTypeContext* context) {
    for (size_t i = 0; i < 3; ++i) context->SetOutputDataType(i, DT_FLOAT);
    return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

// k, v, akk float16 or bfloat16 (one dtype); beta, e_row, e_tail and the outputs float32 (each
// column of the DataType lists is one supported combination).
class FlaNpuWyFast : public OpDef {
  public:
    explicit FlaNpuWyFast(const char* name) : OpDef(name) {
        const std::vector<ge::DataType> cube = {ge::DT_FLOAT16, ge::DT_BF16};
        const std::vector<ge::DataType> fp32 = {ge::DT_FLOAT, ge::DT_FLOAT};
        const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND};
        this->Input("k").ParamType(REQUIRED).DataType(cube).Format(nd);
        this->Input("v").ParamType(REQUIRED).DataType(cube).Format(nd);
        this->Input("beta").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Input("akk").ParamType(REQUIRED).DataType(cube).Format(nd);
        this->Input("e_row").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Input("e_tail").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Output("w").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Output("u").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->Output("kg").ParamType(REQUIRED).DataType(fp32).Format(nd);
        this->SetInferShape(ge::FlaNpuWyFastInferShape);
        this->SetInferDataType(ge::FlaNpuWyFastInferDataType);
        this->AICore().SetTiling(optiling::FlaNpuWyFastTiling);
        this->AICore().AddConfig("ascend910b");
        this->AICore().AddConfig("ascend910_93");
        this->AICore().AddConfig("ascend950");
    }
};

OP_ADD(FlaNpuWyFast);

}  // namespace ops
