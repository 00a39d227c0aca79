// The operator package's FlaNpuWyFast (csrc/opp/) on the host simulation, against the sim library's
// direct entry point flaNpuWyFast: its registration; its op_host tiling function run on a stand-in
// TilingContext; the tiling bytes put in a GM buffer and the OPP kernel entry
// (op_kernel/fla_npu_wy_fast.cpp, one copy per DTYPE_K) launched with them, the block count and a
// workspace of the size the tiling asked for (system part first, kept intact), as CANN's runtime
// would. The outputs must be bit-identical to the direct entry's and the tiling identical word for
// word; invalid calls must fail in both with the same message. Driven by
// tests/kernels/test_opp_kernel_entries.py.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../../opp/tests/opp_test_util.h"
#include "../wy_fast_tiling.h"

using fla_npu::wy_fast::WyFastTiling;
using opp_test::Desc;
using opp_test::Gm;
using opp_test::Numel;

// The OPP kernel entry, compiled once per DTYPE_K (tests/CMakeLists.txt suffixes each copy's symbol).
#define FLA_NPU_DECLARE_OPP_ENTRY(NAME)                                                                                   \
    extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_wy_fast_f16)
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_wy_fast_bf16)

namespace {

constexpr const char* kOpType = "FlaNpuWyFast";

struct Call {
    int32_t dtype = FLA_NPU_FLOAT16;
    int64_t NC = 3, HV = 2, BT = 64, K = 128, V = 128, Kg = 128;
    std::vector<int64_t> beta_shape, u_shape;  // empty: consistent with the above
};

struct Data {
    std::vector<uint16_t> k, v, akk;  // half / bfloat16_t bit patterns
    std::vector<float> beta, e_row, e_tail;
    std::vector<float> out_direct[3], out_opp[3];  // w, u, kg
    std::vector<int64_t> shapes[9];                // k, v, beta, akk, e_row, e_tail, w, u, kg
};

Data MakeData(const Call& c) {
    Data d;
    d.shapes[0] = {c.NC, c.HV, c.BT, c.K};
    d.shapes[1] = {c.NC, c.HV, c.BT, c.V};
    d.shapes[2] = c.beta_shape.empty() ? std::vector<int64_t>{c.NC, c.HV, c.BT} : c.beta_shape;
    d.shapes[3] = {c.NC, c.HV, c.BT, c.BT};
    d.shapes[4] = d.shapes[5] = {c.NC, c.HV, c.BT, c.Kg};
    d.shapes[6] = d.shapes[8] = d.shapes[0];
    d.shapes[7] = c.u_shape.empty() ? d.shapes[1] : c.u_shape;
    opp_test::Rng rng(static_cast<uint64_t>(c.NC * 1000 + c.HV * 100 + c.BT + c.K + c.V * 3 + c.Kg + c.dtype));
    opp_test::FillHalf(rng, c.dtype, Numel(d.shapes[0]), &d.k);
    opp_test::FillHalf(rng, c.dtype, Numel(d.shapes[1]), &d.v);
    opp_test::FillHalf(rng, c.dtype, Numel(d.shapes[3]), &d.akk);
    opp_test::FillPositive(rng, Numel(d.shapes[2]), &d.beta);
    opp_test::FillPositive(rng, Numel(d.shapes[4]), &d.e_row);
    opp_test::FillPositive(rng, Numel(d.shapes[5]), &d.e_tail);
    for (int i = 0; i < 3; ++i) {
        d.out_direct[i].assign(static_cast<size_t>(Numel(d.shapes[6 + i])), std::nanf(""));
        d.out_opp[i] = d.out_direct[i];
    }
    return d;
}

int RunDirect(const Call& c, Data& d, std::string* message) {
    const FlaNpuTensor k = Desc(d.k.data(), c.dtype, d.shapes[0]);
    const FlaNpuTensor v = Desc(d.v.data(), c.dtype, d.shapes[1]);
    const FlaNpuTensor b = Desc(d.beta.data(), FLA_NPU_FLOAT32, d.shapes[2]);
    const FlaNpuTensor a = Desc(d.akk.data(), c.dtype, d.shapes[3]);
    const FlaNpuTensor er = Desc(d.e_row.data(), FLA_NPU_FLOAT32, d.shapes[4]);
    const FlaNpuTensor et = Desc(d.e_tail.data(), FLA_NPU_FLOAT32, d.shapes[5]);
    const FlaNpuTensor w = Desc(d.out_direct[0].data(), FLA_NPU_FLOAT32, d.shapes[6]);
    const FlaNpuTensor u = Desc(d.out_direct[1].data(), FLA_NPU_FLOAT32, d.shapes[7]);
    const FlaNpuTensor kg = Desc(d.out_direct[2].data(), FLA_NPU_FLOAT32, d.shapes[8]);
    uint64_t ws_size = 0;
    FlaNpuExecutor* ex = nullptr;
    int status = flaNpuWyFastGetWorkspaceSize(&k, &v, &b, &a, &er, &et, &w, &u, &kg, &ws_size, &ex);
    std::vector<uint8_t> ws(static_cast<size_t>(ws_size));
    if (status == FLA_NPU_OK) status = flaNpuWyFast(ws.empty() ? nullptr : ws.data(), ws_size, ex, nullptr);
    if (status != FLA_NPU_OK) *message = flaNpuGetLastErrorMessage();
    return status;
}

ge::graphStatus RunTiling(const Call& c, const Data& d, gert::TilingContext* ctx, fe::PlatFormInfos* platform) {
    const ge::DataType t = c.dtype == FLA_NPU_FLOAT16 ? ge::DT_FLOAT16 : ge::DT_BF16;
    const ge::DataType f = ge::DT_FLOAT;
    ctx->platform = platform;
    ctx->inputs = {gert::Tensor(d.shapes[0], t), gert::Tensor(d.shapes[1], t), gert::Tensor(d.shapes[2], f),
                   gert::Tensor(d.shapes[3], t), gert::Tensor(d.shapes[4], f), gert::Tensor(d.shapes[5], f)};
    ctx->outputs = {gert::Tensor(d.shapes[6], f), gert::Tensor(d.shapes[7], f), gert::Tensor(d.shapes[8], f)};
    return opp_test::Registered(kOpType)->aicore.tiling(ctx);
}

const opp_test::FrontEnds<Call, Data> kFrontEnds = {kOpType, "flaNpuWyFast", RunDirect, flaNpuWyFastLastTiling, RunTiling};

// A valid call: both paths give the same tiling, block dim and workspace, and bit-identical outputs.
int Same(const Call& c) {
    Data d = MakeData(c);
    gert::TilingContext ctx;
    fe::PlatFormInfos platform;
    WyFastTiling t;
    OPP_TRY(opp_test::SameTiling(kFrontEnds, c, d, &ctx, &platform, &t));
    OPP_TRY(opp_test::CheckWorkspaceRequest(ctx, platform, fla_npu::wy_fast::UserWorkspaceBytes(t)));

    opp_test::LaunchBuffers buffers(ctx);
    GM_ADDR k = Gm(d.k.data());  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR v = Gm(d.v.data());
    GM_ADDR b = Gm(d.beta.data());
    GM_ADDR a = Gm(d.akk.data());
    GM_ADDR er = Gm(d.e_row.data());
    GM_ADDR et = Gm(d.e_tail.data());
    GM_ADDR w = Gm(d.out_opp[0].data());
    GM_ADDR u = Gm(d.out_opp[1].data());
    GM_ADDR kg = Gm(d.out_opp[2].data());
    GM_ADDR ws = buffers.WorkspaceGm();
    GM_ADDR tiling = buffers.TilingGm();
    auto entry = c.dtype == FLA_NPU_FLOAT16 ? fla_npu_wy_fast_f16 : fla_npu_wy_fast_bf16;
    AscendC::sim::Launch("fla_npu_wy_fast", KERNEL_TYPE_MIX_AIC_1_2, ctx.block_dim, entry, k, v, b, a, er, et, w, u, kg, ws, tiling);

    for (int i = 0; i < 3; ++i) {
        OPP_TRY(opp_test::CheckSameBits(d.out_opp[i], d.out_direct[i]));
        OPP_TRY(opp_test::CheckAllFinite(d.out_opp[i]));
    }
    OPP_TRY(opp_test::CheckSystemWorkspaceIntact(buffers, platform));
    return 0;
}

// An invalid call: both front ends refuse it with the same message.
int SameRefusal(const Call& c, const char* expect) { return opp_test::SameRefusal(kFrontEnds, c, MakeData(c), expect); }

constexpr auto With = opp_test::ChunkCall<Call>;

int CaseRegistration() {
    const ops::OpDef* def = opp_test::Registered(kOpType);
    OPP_CHECK(def != nullptr && def->aicore.tiling != nullptr);
    const char* inputs[] = {"k", "v", "beta", "akk", "e_row", "e_tail"};
    const char* outputs[] = {"w", "u", "kg"};
    const std::vector<ge::DataType> cube = {ge::DT_FLOAT16, ge::DT_BF16}, fp32 = {ge::DT_FLOAT, ge::DT_FLOAT};
    const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND};
    OPP_CHECK(def->inputs.size() == 6 && def->outputs.size() == 3);
    for (size_t i = 0; i < 6; ++i)
        OPP_CHECK(def->inputs[i].name == inputs[i] && def->inputs[i].param_type == ops::REQUIRED &&
                  def->inputs[i].dtypes == (i == 0 || i == 1 || i == 3 ? cube : fp32) && def->inputs[i].formats == nd);
    for (size_t i = 0; i < 3; ++i)
        OPP_CHECK(def->outputs[i].name == outputs[i] && def->outputs[i].dtypes == fp32 && def->outputs[i].formats == nd);
    OPP_CHECK(def->attrs.empty());
    OPP_CHECK((def->aicore.configs == std::vector<std::string>{"ascend910b", "ascend910_93", "ascend950"}));
    gert::InferShapeContext shape_ctx;
    shape_ctx.inputs = {gert::Shape{3, 2, 64, 128}, gert::Shape{3, 2, 64, 96}, gert::Shape{3, 2, 64}, gert::Shape{3, 2, 64, 64},
                        gert::Shape{3, 2, 64, 1}, gert::Shape{3, 2, 64, 1}};
    shape_ctx.outputs.resize(3);
    OPP_CHECK(def->infer_shape(&shape_ctx) == ge::GRAPH_SUCCESS && shape_ctx.outputs[0] == shape_ctx.inputs[0] &&
              shape_ctx.outputs[1] == shape_ctx.inputs[1] && shape_ctx.outputs[2] == shape_ctx.inputs[0]);
    gert::InferDataTypeContext dtype_ctx;
    dtype_ctx.inputs = {ge::DT_BF16, ge::DT_BF16, ge::DT_FLOAT, ge::DT_BF16, ge::DT_FLOAT, ge::DT_FLOAT};
    dtype_ctx.outputs = {ge::DT_UNDEFINED, ge::DT_UNDEFINED, ge::DT_UNDEFINED};
    OPP_CHECK(def->infer_dtype(&dtype_ctx) == ge::GRAPH_SUCCESS);
    for (ge::DataType t : dtype_ctx.outputs) OPP_CHECK(t == ge::DT_FLOAT);
    return 0;
}

const std::map<std::string, std::function<int()>>& Cases() {
    static const std::map<std::string, std::function<int()>> cases = {
        {"registration", CaseRegistration},
        // KDA (Kg = K) and GDN (Kg = 1), every chunk size, K != V, widest heads, more units than cores.
        {"kda_f16", [] { return Same(With(FLA_NPU_FLOAT16, 3, 2, 64, 128, 128, 128)); }},
        {"kda_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 128, 128)); }},
        {"gdn_bt32_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 5, 3, 32, 64, 128, 1)); }},
        {"gdn_bt16_f16", [] { return Same(With(FLA_NPU_FLOAT16, 4, 2, 16, 128, 64, 1)); }},
        {"wide_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 1, 2, 64, 256, 256, 256)); }},
        {"many_units_f16", [] { return Same(With(FLA_NPU_FLOAT16, 9, 3, 32, 32, 48, 32)); }},
        {"empty_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 0, 2, 64, 64, 64, 1)); }},
        // Refused by both front ends with the same message.
        {"refuse_chunk_size", [] { return SameRefusal(With(FLA_NPU_FLOAT16, 1, 2, 48, 64, 64, 1), "BT"); }},
        {"refuse_head_dim", [] { return SameRefusal(With(FLA_NPU_BFLOAT16, 1, 2, 64, 64, 72, 1), "multiples of 16"); }},
        {"refuse_e_row", [] { return SameRefusal(With(FLA_NPU_FLOAT16, 1, 2, 64, 64, 64, 8), "`e_row`"); }},
        {"refuse_beta_shape", [] { Call c = With(FLA_NPU_FLOAT16, 1, 2, 64, 64, 64, 1); c.beta_shape = {1, 2, 32}; return SameRefusal(c, "`beta`"); }},
        {"refuse_u_shape", [] { Call c = With(FLA_NPU_BFLOAT16, 1, 2, 64, 64, 64, 1); c.u_shape = {1, 2, 64, 48}; return SameRefusal(c, "`u`"); }},
    };
    return cases;
}

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, Cases()); }
