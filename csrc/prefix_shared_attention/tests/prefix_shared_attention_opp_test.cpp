// The operator package's FlaNpuPrefixSharedAttention (csrc/opp/) on the host simulation, against the
// sim library's direct entry point flaNpuPrefixSharedAttention: its registration; its op_host tiling
// function run on a stand-in TilingContext; the tiling bytes put in a GM buffer and the OPP kernel
// entry (op_kernel/fla_npu_prefix_shared_attention.cpp, one copy per DTYPE_Q) launched with them, the
// block count and a workspace of the size the tiling asked for (system part first, kept intact), as
// CANN's runtime would. The output must be bit-identical to the direct entry's and the tiling
// identical word for word; invalid calls must fail in both with the same message. Driven by
// tests/kernels/test_opp_kernel_entries.py.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../../opp/tests/opp_test_util.h"
#include "../prefix_shared_attention_tiling.h"

using fla_npu::psa::PsaTiling;
using opp_test::Desc;
using opp_test::Gm;
using opp_test::Numel;

// The OPP kernel entry, compiled once per DTYPE_Q (tests/CMakeLists.txt suffixes each copy's symbol).
#define FLA_NPU_DECLARE_OPP_ENTRY(NAME) extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_prefix_shared_attention_f16)
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_prefix_shared_attention_bf16)

namespace {

constexpr const char* kOpType = "FlaNpuPrefixSharedAttention";

struct Call {
    int32_t dtype = FLA_NPU_FLOAT16;
    int64_t bs = 2, G = 4, len_q = 3, len_kv = 200, D = 128;
    std::vector<int64_t> k_shape, out_shape;  // empty: consistent with the above
};

struct Data {
    std::vector<uint16_t> q, k, v, out_direct, out_opp;  // half / bfloat16_t bit patterns
    std::vector<int64_t> q_shape, k_shape, out_shape;
};

Data MakeData(const Call& c) {
    Data d;
    d.q_shape = {c.bs, c.G, c.len_q, c.D};
    d.k_shape = c.k_shape.empty() ? std::vector<int64_t>{c.bs, c.len_kv, c.D} : c.k_shape;
    d.out_shape = c.out_shape.empty() ? d.q_shape : c.out_shape;
    opp_test::Rng rng(static_cast<uint64_t>(c.bs * 1000 + c.G * 100 + c.len_q * 10 + c.len_kv + c.dtype));
    opp_test::FillHalf(rng, c.dtype, Numel(d.q_shape), &d.q);
    opp_test::FillHalf(rng, c.dtype, Numel(d.k_shape), &d.k);
    opp_test::FillHalf(rng, c.dtype, Numel(d.k_shape), &d.v);
    d.out_direct.assign(static_cast<size_t>(Numel(d.out_shape)), 0xFFFF);  // NaN
    d.out_opp = d.out_direct;
    return d;
}

float Scale(const Call& c) { return 1.0f / std::sqrt(static_cast<float>(c.D)); }

int RunDirect(const Call& c, Data& d, std::string* message) {
    const FlaNpuTensor q = Desc(d.q.data(), c.dtype, d.q_shape);
    const FlaNpuTensor k = Desc(d.k.data(), c.dtype, d.k_shape);
    const FlaNpuTensor v = Desc(d.v.data(), c.dtype, d.k_shape);
    const FlaNpuTensor out = Desc(d.out_direct.data(), c.dtype, d.out_shape);
    uint64_t ws_size = 0;
    FlaNpuExecutor* ex = nullptr;
    int status = flaNpuPrefixSharedAttentionGetWorkspaceSize(&q, &k, &v, Scale(c), &out, &ws_size, &ex);
    std::vector<uint8_t> ws(static_cast<size_t>(ws_size));
    if (status == FLA_NPU_OK) status = flaNpuPrefixSharedAttention(ws.empty() ? nullptr : ws.data(), ws_size, ex, nullptr);
    if (status != FLA_NPU_OK) *message = flaNpuGetLastErrorMessage();
    return status;
}

ge::graphStatus RunTiling(const Call& c, const Data& d, gert::TilingContext* ctx, fe::PlatFormInfos* platform) {
    const ge::DataType t = c.dtype == FLA_NPU_FLOAT16 ? ge::DT_FLOAT16 : ge::DT_BF16;
    ctx->platform = platform;
    ctx->inputs = {gert::Tensor(d.q_shape, t), gert::Tensor(d.k_shape, t), gert::Tensor(d.k_shape, t)};
    ctx->outputs = {gert::Tensor(d.out_shape, t)};
    ctx->attrs.values = {{0, Scale(c)}};
    return opp_test::Registered(kOpType)->aicore.tiling(ctx);
}

const opp_test::FrontEnds<Call, Data> kFrontEnds = {kOpType, "flaNpuPrefixSharedAttention", RunDirect,
                                                     flaNpuPrefixSharedAttentionLastTiling, RunTiling};

// A valid call: both paths give the same tiling, block dim and workspace, and bit-identical outputs.
int Same(const Call& c) {
    Data d = MakeData(c);
    gert::TilingContext ctx;
    fe::PlatFormInfos platform;
    PsaTiling t;
    OPP_TRY(opp_test::SameTiling(kFrontEnds, c, d, &ctx, &platform, &t));
    if (c.len_kv >= 1000) OPP_CHECK(t.kv_splits > 1 && t.unit_splits == t.kv_splits && t.partial_slots > 0);
    if (c.G == 64) OPP_CHECK(t.kv_splits > 1 && t.unit_splits == 1 && t.partial_slots == 0);
    // Batch mode (SetScheduleMode(1)) exactly when the launch runs the SyncAll of the split merge.
    const bool sync_all = t.unit_splits != 1;
    OPP_CHECK(ctx.schedule_mode == (sync_all ? 1u : 0u) && ctx.schedule_mode_calls == (sync_all ? 1 : 0));
    OPP_TRY(opp_test::CheckWorkspaceRequest(ctx, platform, fla_npu::psa::UserWorkspaceBytes(t)));

    opp_test::LaunchBuffers buffers(ctx);
    GM_ADDR q = Gm(d.q.data());  // one declaration each: GM_ADDR is a macro ending in '*'
    GM_ADDR k = Gm(d.k.data());
    GM_ADDR v = Gm(d.v.data());
    GM_ADDR out = Gm(d.out_opp.data());
    GM_ADDR ws = buffers.WorkspaceGm();
    GM_ADDR tiling = buffers.TilingGm();
    auto entry = c.dtype == FLA_NPU_FLOAT16 ? fla_npu_prefix_shared_attention_f16 : fla_npu_prefix_shared_attention_bf16;
    AscendC::sim::Launch("fla_npu_prefix_shared_attention", KERNEL_TYPE_MIX_AIC_1_2, ctx.block_dim, entry, q, k, v, out, ws,
                         tiling);

    OPP_TRY(opp_test::CheckSameBits(d.out_opp, d.out_direct));
    if (c.bs > 0)  // every element written (the outputs were NaN)
        for (uint16_t bits : d.out_opp)
            OPP_CHECK(std::isfinite(c.dtype == FLA_NPU_FLOAT16 ? float(half::FromBits(bits)) : float(bfloat16_t::FromBits(bits))));
    OPP_TRY(opp_test::CheckSystemWorkspaceIntact(buffers, platform));
    return 0;
}

// An invalid call: both front ends refuse it with the same message.
int SameRefusal(const Call& c, const char* expect) { return opp_test::SameRefusal(kFrontEnds, c, MakeData(c), expect); }

Call With(int32_t dtype, int64_t bs, int64_t G, int64_t len_q, int64_t len_kv, int64_t D) {
    Call c;
    c.dtype = dtype;
    c.bs = bs;
    c.G = G;
    c.len_q = len_q;
    c.len_kv = len_kv;
    c.D = D;
    return c;
}

// The split merge's launch cannot run without batch mode: if CANN refuses SetScheduleMode, the
// tiling fails (naming it) instead of launching a kernel that may deadlock.
int ScheduleModeRefused() {
    const Call c = With(FLA_NPU_FLOAT16, 1, 4, 1, 1000, 128);
    Data d = MakeData(c);
    gert::TilingContext ctx;
    ctx.schedule_mode_status = ge::GRAPH_FAILED;
    fe::PlatFormInfos platform = opp_test::SimPlatform();
    ge::graphStatus status = ge::GRAPH_SUCCESS;
    const std::string err = opp_test::CaptureStderr([&] { status = RunTiling(c, d, &ctx, &platform); });
    OPP_CHECK(status == ge::GRAPH_FAILED);
    OPP_CHECK(ctx.schedule_mode_calls == 1 && err.find("SetScheduleMode(1)") != std::string::npos);
    return 0;
}

int CaseRegistration() {
    const ops::OpDef* def = opp_test::Registered(kOpType);
    OPP_CHECK(def != nullptr && def->aicore.tiling != nullptr);
    const char* inputs[] = {"q", "k", "v"};
    OPP_CHECK(def->inputs.size() == 3 && def->outputs.size() == 1 && def->outputs[0].name == "out");
    const std::vector<ge::DataType> types = {ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::Format> nd = {ge::FORMAT_ND, ge::FORMAT_ND};
    for (size_t i = 0; i < 3; ++i)
        OPP_CHECK(def->inputs[i].name == inputs[i] && def->inputs[i].param_type == ops::REQUIRED &&
                  def->inputs[i].dtypes == types && def->inputs[i].formats == nd);
    OPP_CHECK(def->outputs[0].dtypes == types && def->outputs[0].formats == nd);
    OPP_CHECK(def->attrs.size() == 1 && def->attrs[0].name == "scale" && def->attrs[0].kind == ops::OpAttrDef::kFloat &&
              def->attrs[0].attr_type == ops::REQUIRED);
    OPP_CHECK((def->aicore.configs == std::vector<std::string>{"ascend910b", "ascend910_93", "ascend950"}));
    gert::InferShapeContext shape_ctx;
    shape_ctx.inputs = {gert::Shape{2, 4, 3, 128}, gert::Shape{2, 200, 128}, gert::Shape{2, 200, 128}};
    shape_ctx.outputs.resize(1);
    OPP_CHECK(def->infer_shape(&shape_ctx) == ge::GRAPH_SUCCESS && shape_ctx.outputs[0] == shape_ctx.inputs[0]);
    gert::InferDataTypeContext dtype_ctx;
    dtype_ctx.inputs = {ge::DT_BF16, ge::DT_BF16, ge::DT_BF16};
    dtype_ctx.outputs = {ge::DT_UNDEFINED};
    OPP_CHECK(def->infer_dtype(&dtype_ctx) == ge::GRAPH_SUCCESS && dtype_ctx.outputs[0] == ge::DT_BF16);
    return 0;
}

const std::map<std::string, std::function<int()>>& Cases() {
    static const std::map<std::string, std::function<int()>> cases = {
        {"registration", CaseRegistration},
        // Decode shapes (one M-tile per batch), K/V tails, D 64 and 128, several M-tiles per batch,
        // len_q = len_kv = 1, no batch at all.
        {"decode_f16", [] { return Same(With(FLA_NPU_FLOAT16, 2, 4, 3, 200, 128)); }},
        {"decode_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 2, 4, 3, 200, 128)); }},
        {"m_tiles_d64_f16", [] { return Same(With(FLA_NPU_FLOAT16, 1, 5, 60, 130, 64)); }},
        {"m_tiles_d64_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 1, 5, 60, 130, 64)); }},
        {"single_row_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 3, 1, 1, 1, 128)); }},
        // K/V splits: run as units of their own and merged after the barrier from the workspace's
        // partial slots (decode; more split units than cores), and merged on chip (2 M-tiles per batch).
        {"split_decode_f16", [] { return Same(With(FLA_NPU_FLOAT16, 1, 4, 1, 1000, 128)); }},
        {"split_units_over_cores_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 2, 3, 1, 2500, 64)); }},
        {"split_on_chip_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 2, 64, 4, 600, 64)); }},
        {"empty_f16", [] { return Same(With(FLA_NPU_FLOAT16, 0, 4, 3, 20, 64)); }},
        {"schedule_mode_refused", ScheduleModeRefused},
        // Refused by both front ends with the same message.
        {"refuse_head_dim", [] { return SameRefusal(With(FLA_NPU_FLOAT16, 1, 2, 3, 20, 96), "64 or 128"); }},
        {"refuse_kv_batch", [] { Call c = With(FLA_NPU_FLOAT16, 2, 2, 3, 20, 64); c.k_shape = {1, 20, 64}; return SameRefusal(c, "batch sizes"); }},
        {"refuse_out_shape", [] { Call c = With(FLA_NPU_BFLOAT16, 1, 2, 3, 20, 64); c.out_shape = {1, 2, 4, 64}; return SameRefusal(c, "`out`"); }},
        {"refuse_zero_g", [] { return SameRefusal(With(FLA_NPU_FLOAT16, 1, 0, 3, 20, 64), "positive"); }},
    };
    return cases;
}

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, Cases()); }
