// Host side of the operator FlaNpuGateChunkCumsum (gate activation + chunk-local cumsum, csrc/gate/):
// its registration, from which CANN generates
//
//   aclnnFlaNpuGateChunkCumsumGetWorkspaceSize(const aclTensor *g, const aclTensor *aLogOptional,
//       const aclTensor *dtBiasOptional, const aclTensor *cuSeqlensOptional,
//       const aclTensor *chunkIndicesOptional, int64_t chunkSize, int64_t gateForm, double lowerBound,
//       double scale, const aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor)
//   aclnnFlaNpuGateChunkCumsum(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
//
// (inputs, then attributes, then outputs; Int -> int64_t, Float -> double), its shape/dtype
// inference, and its tiling: the sim library's argument checks and tiling (gate::GateCumsumArgs,
// gate::ComputeTiling) on the call's shapes and attributes, the POD tiling struct copied into the
// tiling buffer for the kernel entry (op_kernel/fla_npu_gate_chunk_cumsum.cpp). The semantics of the
// arguments: include/fla_npu/kernels.h.
#include "opp_host_common.h"

#include "../../gate/gate_cumsum_tiling.h"

namespace optiling {

static ge::graphStatus FlaNpuGateChunkCumsumTiling(gert::TilingContext* context) {
    using namespace fla_npu;
    constexpr const char* kOp = "FlaNpuGateChunkCumsum";
    // Input indices of the registration below. The optional ones go through GetOptionalInputShape,
    // which takes this index; GetInputShape/GetInputDesc count only the inputs a call has (public op
    // sources rely on this; not documented), which for g, the first input, is the same.
    enum { kG = 0, kALog = 1, kDtBias = 2, kCuSeqlens = 3, kChunkIndices = 4 };
    enum { kChunkSize = 0, kGateForm = 1, kLowerBound = 2, kScale = 3 };

    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    if (attrs == nullptr) return opp::Fail(kOp, "no attributes");
    const int64_t* chunk_size = attrs->GetAttrPointer<int64_t>(kChunkSize);
    const int64_t* gate_form = attrs->GetAttrPointer<int64_t>(kGateForm);
    const float* lower_bound = attrs->GetAttrPointer<float>(kLowerBound);
    const float* scale = attrs->GetAttrPointer<float>(kScale);
    if (chunk_size == nullptr || gate_form == nullptr || lower_bound == nullptr || scale == nullptr)
        return opp::Fail(kOp, "an attribute is missing");
    const auto* g_desc = context->GetInputDesc(kG);
    if (g_desc == nullptr) return opp::Fail(kOp, "`g` has no tensor description");

    // The checks in the C entry point's order (dtypes and layout are CANN's, from the registration).
    const opp::Dims g = opp::DimsOf(context->GetInputShape(kG));
    const opp::Dims out = opp::DimsOf(context->GetOutputShape(0));
    const opp::Dims a_log = opp::DimsOf(context->GetOptionalInputShape(kALog));
    const opp::Dims dt_bias = opp::DimsOf(context->GetOptionalInputShape(kDtBias));
    const opp::Dims cu = opp::DimsOf(context->GetOptionalInputShape(kCuSeqlens));
    const opp::Dims chunks = opp::DimsOf(context->GetOptionalInputShape(kChunkIndices));
    gate::GateCumsumArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetG(g.ndim, g.d))) return opp::Fail(kOp, bad);
    if ((bad = checked.CheckOut(out.ndim, out.d))) return opp::Fail(kOp, bad);
    if ((bad = checked.SetGateForm(*gate_form, a_log.ndim >= 0))) return opp::Fail(kOp, bad);
    if (a_log.ndim >= 0 && checked.UsesALog() && (bad = checked.SetALog(a_log.numel))) return opp::Fail(kOp, bad);
    if (dt_bias.ndim >= 0 && (bad = checked.SetDtBias(dt_bias.numel))) return opp::Fail(kOp, bad);
    if ((bad = gate::GateCumsumArgs::CheckVarlenPair(cu.ndim >= 0, chunks.ndim >= 0))) return opp::Fail(kOp, bad);
    if (cu.ndim >= 0) {
        if ((bad = checked.SetVarlenShapes(cu.ndim, cu.d, chunks.ndim, chunks.d))) return opp::Fail(kOp, bad);
        if ((bad = checked.SetVarlenBatch())) return opp::Fail(kOp, bad);
    }

    const platform_ascendc::PlatformAscendC platform(context->GetPlatformInfo());
    const uint32_t in_elem_bytes = g_desc->GetDataType() == ge::DT_FLOAT ? 4u : 2u;
    const gate::GateCumsumProblem p =
        checked.Problem(*chunk_size, in_elem_bytes, *lower_bound, *scale, platform.GetCoreNumAiv(), opp::UbBytes(platform));
    gate::GateCumsumTiling t;
    const char* err = "";
    if (gate::ComputeTiling(p, &t, &err) != 0) return opp::Fail(kOp, err);

    const ge::graphStatus saved = opp::SaveTiling(context, kOp, t);
    if (saved != ge::GRAPH_SUCCESS) return saved;
    context->SetBlockDim(opp::BlockDim(t.block_dim));
    size_t* workspace = context->GetWorkspaceSizes(1);
    if (workspace == nullptr) return opp::Fail(kOp, "no workspace size slot");
    workspace[0] = 0;  // the kernel uses no workspace and no Ascend C library API that needs one
    return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

// out: g's shape, float32.
static graphStatus FlaNpuGateChunkCumsumInferShape(gert::InferShapeContext* context) {
    const gert::Shape* g = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (g == nullptr || out == nullptr) return GRAPH_FAILED;
    *out = *g;
    return GRAPH_SUCCESS;
}

static graphStatus FlaNpuGateChunkCumsumInferDataType(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(0, DT_FLOAT);
    return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

// Inputs in this order (the kernel entry's parameters and the aclnn signature follow it); each
// column of the DataType lists is one supported combination: g float32 / float16 / bfloat16, the
// rest fixed.
class FlaNpuGateChunkCumsum : public OpDef {
  public:
    explicit FlaNpuGateChunkCumsum(const char* name) : OpDef(name) {
        const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND};
        this->Input("g").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16}).Format(nd);
        this->Input("a_log").ParamType(OPTIONAL).DataType({ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT}).Format(nd);
        this->Input("dt_bias").ParamType(OPTIONAL).DataType({ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT}).Format(nd);
        this->Input("cu_seqlens").ParamType(OPTIONAL).DataType({ge::DT_INT32, ge::DT_INT32, ge::DT_INT32}).Format(nd);
        this->Input("chunk_indices").ParamType(OPTIONAL).DataType({ge::DT_INT32, ge::DT_INT32, ge::DT_INT32}).Format(nd);
        this->Output("out").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT}).Format(nd);
        this->Attr("chunk_size").AttrType(REQUIRED).Int();
        this->Attr("gate_form").AttrType(REQUIRED).Int();
        this->Attr("lower_bound").AttrType(REQUIRED).Float();
        this->Attr("scale").AttrType(REQUIRED).Float();
        this->SetInferShape(ge::FlaNpuGateChunkCumsumInferShape);
        this->SetInferDataType(ge::FlaNpuGateChunkCumsumInferDataType);
        this->AICore().SetTiling(optiling::FlaNpuGateChunkCumsumTiling);
        // Every SoC the kernel supports; the build compiles those in ASCEND_COMPUTE_UNIT (assumed: an
        // AddConfig outside it is ignored).
        this->AICore().AddConfig("ascend910b");
        this->AICore().AddConfig("ascend910_93");
        this->AICore().AddConfig("ascend950");
    }
};

OP_ADD(FlaNpuGateChunkCumsum);

}  // namespace ops
