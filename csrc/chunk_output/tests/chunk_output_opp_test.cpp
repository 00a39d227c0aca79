// The operator package's FlaNpuChunkOutput (csrc/opp/) on the host simulation, against the sim
// library's direct entry point flaNpuChunkOutput: its registration; its op_host tiling function run
// on a stand-in TilingContext; the tiling bytes put in a GM buffer and the OPP kernel entry
// (op_kernel/fla_npu_chunk_output.cpp, one copy per DTYPE_Q) launched with them, the block count and
// a workspace of the size the tiling asked for (system part first, kept intact), as CANN's runtime
// would. The output must be bit-identical to the direct entry's and the tiling identical word for
// word; invalid calls must fail in both with the same message. Driven by
// tests/kernels/test_opp_kernel_entries.py.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../../opp/tests/opp_test_util.h"
#include "../chunk_output_tiling.h"

using fla_npu::chunk_output::ChunkOutputTiling;
using opp_test::Desc;
using opp_test::Gm;
using opp_test::Numel;

// The OPP kernel entry, compiled once per DTYPE_Q (tests/CMakeLists.txt suffixes each copy's symbol).
#define FLA_NPU_DECLARE_OPP_ENTRY(NAME) extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_chunk_output_f16)
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_chunk_output_bf16)

namespace {

constexpr const char* kOpType = "FlaNpuChunkOutput";

struct Call {
    int32_t dtype = FLA_NPU_FLOAT16;
    int64_t NC = 3, HV = 2, BT = 64, K = 128, V = 128, Kg = 128;
    std::vector<int64_t> s_shape, out_shape;  // empty: consistent with the above
};

struct Data {
    std::vector<uint16_t> q, aqk, v_new;  // half / bfloat16_t bit patterns
    std::vector<float> e_row, s, out_direct, out_opp;
    std::vector<int64_t> q_shape, e_shape, s_shape, a_shape, v_shape, out_shape;
};

Data MakeData(const Call& c) {
    Data d;
    d.q_shape = {c.NC, c.HV, c.BT, c.K};
    d.e_shape = {c.NC, c.HV, c.BT, c.Kg};
    d.s_shape = c.s_shape.empty() ? std::vector<int64_t>{c.NC, c.HV, c.K, c.V} : c.s_shape;
    d.a_shape = {c.NC, c.HV, c.BT, c.BT};
    d.v_shape = {c.NC, c.HV, c.BT, c.V};
    d.out_shape = c.out_shape.empty() ? d.v_shape : c.out_shape;
    opp_test::Rng rng(static_cast<uint64_t>(c.NC * 1000 + c.HV * 100 + c.BT + c.K + c.V * 3 + c.Kg + c.dtype));
    opp_test::FillHalf(rng, c.dtype, Numel(d.q_shape), &d.q);
    opp_test::FillHalf(rng, c.dtype, Numel(d.a_shape), &d.aqk);
    opp_test::FillHalf(rng, c.dtype, Numel(d.v_shape), &d.v_new);
    opp_test::FillPositive(rng, Numel(d.e_shape), &d.e_row);
    d.s.resize(static_cast<size_t>(Numel(d.s_shape)));
    for (auto& e : d.s) e = rng.Next();
    d.out_direct.assign(static_cast<size_t>(Numel(d.out_shape)), std::nanf(""));
    d.out_opp = d.out_direct;
    return d;
}

int RunDirect(const Call& c, Data& d, std::string* message) {
    const FlaNpuTensor q = Desc(d.q.data(), c.dtype, d.q_shape);
    const FlaNpuTensor e = Desc(d.e_row.data(), FLA_NPU_FLOAT32, d.e_shape);
    const FlaNpuTensor s = Desc(d.s.data(), FLA_NPU_FLOAT32, d.s_shape);
    const FlaNpuTensor a = Desc(d.aqk.data(), c.dtype, d.a_shape);
    const FlaNpuTensor v = Desc(d.v_new.data(), c.dtype, d.v_shape);
    const FlaNpuTensor out = Desc(d.out_direct.data(), FLA_NPU_FLOAT32, d.out_shape);
    uint64_t ws_size = 0;
    FlaNpuExecutor* ex = nullptr;
    int status = flaNpuChunkOutputGetWorkspaceSize(&q, &e, &s, &a, &v, &out, &ws_size, &ex);
    std::vector<uint8_t> ws(static_cast<size_t>(ws_size));
    if (status == FLA_NPU_OK) status = flaNpuChunkOutput(ws.empty() ? nullptr : ws.data(), ws_size, ex, nullptr);
    if (status != FLA_NPU_OK) *message = flaNpuGetLastErrorMessage();
    return status;
}

ge::graphStatus RunTiling(const Call& c, const Data& d, gert::TilingContext* ctx, fe::PlatFormInfos* platform) {
    const ge::DataType t = c.dtype == FLA_NPU_FLOAT16 ? ge::DT_FLOAT16 : ge::DT_BF16;
    ctx->platform = platform;
    ctx->inputs = {gert::Tensor(d.q_shape, t), gert::Tensor(d.e_shape, ge::DT_FLOAT), gert::Tensor(d.s_shape, ge::DT_FLOAT),
                   gert::Tensor(d.a_shape, t), gert::Tensor(d.v_shape, t)};
    ctx->outputs = {gert::Tensor(d.out_shape, ge::DT_FLOAT)};
    return opp_test::Registered(kOpType)->aicore.tiling(ctx);
}

const opp_test::FrontEnds<Call, Data> kFrontEnds = {kOpType, "flaNpuChunkOutput", RunDirect, flaNpuChunkOutputLastTiling,
                                                     RunTiling};

// A valid call: both paths give the same tiling, block dim and workspace, and bit-identical outputs.
int Same(const Call& c) {
    Data d = MakeData(c);
    gert::TilingContext ctx;
    fe::PlatFormInfos platform;
    ChunkOutputTiling t;
    OPP_TRY(opp_test::SameTiling(kFrontEnds, c, d, &ctx, &platform, &t));
    OPP_TRY(opp_test::CheckWorkspaceRequest(ctx, platform, fla_npu::chunk_output::UserWorkspaceBytes(t)));

    opp_test::LaunchBuffers buffers(ctx);
    GM_ADDR q = Gm(d.q.data());  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR e = Gm(d.e_row.data());
    GM_ADDR s = Gm(d.s.data());
    GM_ADDR a = Gm(d.aqk.data());
    GM_ADDR v = Gm(d.v_new.data());
    GM_ADDR out = Gm(d.out_opp.data());
    GM_ADDR ws = buffers.WorkspaceGm();
    GM_ADDR tiling = buffers.TilingGm();
    auto entry = c.dtype == FLA_NPU_FLOAT16 ? fla_npu_chunk_output_f16 : fla_npu_chunk_output_bf16;
    AscendC::sim::Launch("fla_npu_chunk_output", KERNEL_TYPE_MIX_AIC_1_2, ctx.block_dim, entry, q, e, s, a, v, out, ws, tiling);

    OPP_TRY(opp_test::CheckSameBits(d.out_opp, d.out_direct));
    OPP_TRY(opp_test::CheckAllFinite(d.out_opp));
    OPP_TRY(opp_test::CheckSystemWorkspaceIntact(buffers, platform));
    return 0;
}

// An invalid call: both front ends refuse it with the same message.
int SameRefusal(const Call& c, const char* expect) { return opp_test::SameRefusal(kFrontEnds, c, MakeData(c), expect); }

constexpr auto With = opp_test::ChunkCall<Call>;

int CaseRegistration() {
    const ops::OpDef* def = opp_test::Registered(kOpType);
    OPP_CHECK(def != nullptr && def->aicore.tiling != nullptr);
    const char* inputs[] = {"q", "e_row", "s", "aqk", "v_new"};
    const std::vector<ge::DataType> cube = {ge::DT_FLOAT16, ge::DT_BF16}, fp32 = {ge::DT_FLOAT, ge::DT_FLOAT};
    const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND};
    OPP_CHECK(def->inputs.size() == 5 && def->outputs.size() == 1 && def->outputs[0].name == "out");
    for (size_t i = 0; i < 5; ++i)
        OPP_CHECK(def->inputs[i].name == inputs[i] && def->inputs[i].param_type == ops::REQUIRED &&
                  def->inputs[i].dtypes == (i == 1 || i == 2 ? fp32 : cube) && def->inputs[i].formats == nd);
    OPP_CHECK(def->outputs[0].dtypes == fp32 && def->outputs[0].formats == nd);
    OPP_CHECK(def->attrs.empty());
    OPP_CHECK((def->aicore.configs == std::vector<std::string>{"ascend910b", "ascend910_93", "ascend950"}));
    gert::InferShapeContext shape_ctx;
    shape_ctx.inputs = {gert::Shape{3, 2, 64, 128}, gert::Shape{3, 2, 64, 1}, gert::Shape{3, 2, 128, 96},
                        gert::Shape{3, 2, 64, 64}, gert::Shape{3, 2, 64, 96}};
    shape_ctx.outputs.resize(1);
    OPP_CHECK(def->infer_shape(&shape_ctx) == ge::GRAPH_SUCCESS && shape_ctx.outputs[0] == shape_ctx.inputs[4]);
    gert::InferDataTypeContext dtype_ctx;
    dtype_ctx.inputs = {ge::DT_BF16, ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_BF16, ge::DT_BF16};
    dtype_ctx.outputs = {ge::DT_UNDEFINED};
    OPP_CHECK(def->infer_dtype(&dtype_ctx) == ge::GRAPH_SUCCESS && dtype_ctx.outputs[0] == ge::DT_FLOAT);
    return 0;
}

const std::map<std::string, std::function<int()>>& Cases() {
    static const std::map<std::string, std::function<int()>> cases = {
        {"registration", CaseRegistration},
        // KDA (Kg = K) and GDN (Kg = 1), every chunk size, K != V, V-tiles (256 x 256), more units than cores.
        {"kda_f16", [] { return Same(With(FLA_NPU_FLOAT16, 3, 2, 64, 128, 128, 128)); }},
        {"kda_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 128, 128)); }},
        {"gdn_bt32_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 5, 3, 32, 64, 128, 1)); }},
        {"gdn_bt16_f16", [] { return Same(With(FLA_NPU_FLOAT16, 4, 2, 16, 128, 64, 1)); }},
        {"v_tiles_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 1, 2, 64, 256, 256, 256)); }},
        {"many_units_f16", [] { return Same(With(FLA_NPU_FLOAT16, 9, 3, 32, 32, 48, 32)); }},
        {"empty_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 0, 2, 64, 64, 64, 1)); }},
        // Refused by both front ends with the same message.
        {"refuse_chunk_size", [] { return SameRefusal(With(FLA_NPU_FLOAT16, 1, 2, 48, 64, 64, 1), "BT"); }},
        {"refuse_head_dim", [] { return SameRefusal(With(FLA_NPU_BFLOAT16, 1, 2, 64, 64, 72, 1), "multiples of 16"); }},
        {"refuse_e_row", [] { return SameRefusal(With(FLA_NPU_FLOAT16, 1, 2, 64, 64, 64, 8), "`e_row`"); }},
        {"refuse_s_shape", [] { Call c = With(FLA_NPU_FLOAT16, 1, 2, 64, 64, 64, 1); c.s_shape = {1, 2, 64, 32}; return SameRefusal(c, "`s`"); }},
        {"refuse_out_shape", [] { Call c = With(FLA_NPU_BFLOAT16, 1, 2, 64, 64, 64, 1); c.out_shape = {1, 2, 64, 48}; return SameRefusal(c, "`out`"); }},
    };
    return cases;
}

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, Cases()); }
