// Host side of the operator FlaNpuPrefixSharedAttention (csrc/prefix_shared_attention/): its
// registration, from which CANN generates
//
//   aclnnFlaNpuPrefixSharedAttentionGetWorkspaceSize(const aclTensor *q, const aclTensor *k,
//       const aclTensor *v, double scale, const aclTensor *out, uint64_t *workspaceSize,
//       aclOpExecutor **executor)
//   aclnnFlaNpuPrefixSharedAttention(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
//
// its shape/dtype inference, and its tiling: the sim library's argument checks and tiling
// (psa::PsaArgs, psa::ComputeTiling) on the call's shapes, the POD tiling struct copied into the
// tiling buffer for the kernel entry (op_kernel/fla_npu_prefix_shared_attention.cpp), and the
// workspace: the system workspace plus one GM slice per AI core for the kernel's S / P / O_j slots
// and, when the tiling runs the K/V splits as units of their own, the per-(M-tile, split) partial
// results that the kernel's second phase (after SyncAll, in the same launch) merges.
#include "opp_host_common.h"

#include "../../prefix_shared_attention/prefix_shared_attention_tiling.h"

namespace optiling {

// TilingContext::SetScheduleMode: 1 is batch mode (all blocks of the launch scheduled together).
constexpr uint32_t kBatchMode = 1;

// Whether the kernel's launch runs its second phase behind SyncAll (the kernel's condition).
inline bool RunsSyncAll(const fla_npu::psa::PsaTiling& t) { return t.unit_splits != 1; }

static ge::graphStatus FlaNpuPrefixSharedAttentionTiling(gert::TilingContext* context) {
    using namespace fla_npu;
    constexpr const char* kOp = "FlaNpuPrefixSharedAttention";
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    if (attrs == nullptr) return opp::Fail(kOp, "no attributes");
    const float* scale = attrs->GetAttrPointer<float>(0);
    if (scale == nullptr) return opp::Fail(kOp, "the attribute `scale` is missing");

    // The checks in the C entry point's order (dtypes and layout are CANN's, from the registration).
    const opp::Dims q = opp::DimsOf(context->GetInputShape(0));
    const opp::Dims k = opp::DimsOf(context->GetInputShape(1));
    const opp::Dims v = opp::DimsOf(context->GetInputShape(2));
    const opp::Dims out = opp::DimsOf(context->GetOutputShape(0));
    psa::PsaArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q.ndim, k.ndim, v.ndim))) return opp::Fail(kOp, bad);
    if ((bad = checked.SetShapes(q.d, k.d, v.d, out.ndim, out.d))) return opp::Fail(kOp, bad);
    if ((bad = checked.CheckSizes())) return opp::Fail(kOp, bad);

    const platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    const psa::PsaProblem p = checked.Problem(*scale, platform.GetCoreNumAic(), opp::UbBytes(platform), opp::L0cBytes(platform));
    psa::PsaTiling t;
    const char* err = "";
    if (psa::ComputeTiling(p, &t, &err) != 0) return opp::Fail(kOp, err);

    const ge::graphStatus saved = opp::SaveTiling(context, kOp, t);
    if (saved != ge::GRAPH_SUCCESS) return saved;
    context->SetBlockDim(opp::BlockDim(t.block_dim));  // AI cores: each one AIC + two AIVs (mixed 1:2)
    // A launch whose K/V splits are units of their own merges them after the hardware SyncAll
    // (the kernel's `!local` branch, unit_splits != 1): all its blocks must be resident at once, or
    // two such launches on two streams can each hold part of the cores and wait for the rest
    // forever. Batch mode (1) makes CANN start the launch only when all its blocks can run (API page
    // SyncAll, constraints; TilingContext::SetScheduleMode). Launches without SyncAll keep the default.
    if (RunsSyncAll(t) && context->SetScheduleMode(kBatchMode) != ge::GRAPH_SUCCESS)
        return opp::Fail(kOp, "SetScheduleMode(1) (batch mode, needed by the SyncAll of the split merge) failed");
    size_t* workspace = context->GetWorkspaceSizes(1);
    if (workspace == nullptr) return opp::Fail(kOp, "no workspace size slot");
    // The kernel finds its part with GetUserWorkspace, after the system workspace.
    workspace[0] = static_cast<size_t>(platform.GetLibApiWorkSpaceSize()) + static_cast<size_t>(psa::UserWorkspaceBytes(t));
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

// out: q's shape and dtype.
static graphStatus FlaNpuPrefixSharedAttentionInferShape(gert::InferShapeContext* context) {
    const gert::Shape* q = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (q == nullptr || out == nullptr) return GRAPH_FAILED;
    *out = *q;
    return GRAPH_SUCCESS;
}

static graphStatus FlaNpuPrefixSharedAttentionInferDataType(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

// q [bs, G, len_q, D], k and v [bs, len_kv, D], out like q; float16 or bfloat16, one dtype for all
// (each column of the DataType lists is one supported combination).
class FlaNpuPrefixSharedAttention : public OpDef {
  public:
    explicit FlaNpuPrefixSharedAttention(const char* name) : OpDef(name) {
        const std::vector<ge::DataType> types = {ge::DT_FLOAT16, ge::DT_BF16};
        const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND};
        this->Input("q").ParamType(REQUIRED).DataType(types).Format(nd);
        this->Input("k").ParamType(REQUIRED).DataType(types).Format(nd);
        this->Input("v").ParamType(REQUIRED).DataType(types).Format(nd);
        this->Output("out").ParamType(REQUIRED).DataType(types).Format(nd);
        this->Attr("scale").AttrType(REQUIRED).Float();
        this->SetInferShape(ge::FlaNpuPrefixSharedAttentionInferShape);
        this->SetInferDataType(ge::FlaNpuPrefixSharedAttentionInferDataType);
        this->AICore().SetTiling(optiling::FlaNpuPrefixSharedAttentionTiling);
        // Every SoC the kernel supports; the build compiles those in ASCEND_COMPUTE_UNIT (assumed: an
        // AddConfig outside it is ignored).
        this->AICore().AddConfig("ascend910b");
        this->AICore().AddConfig("ascend910_93");
        this->AICore().AddConfig("ascend950");
    }
};

OP_ADD(FlaNpuPrefixSharedAttention);

}  // namespace ops
