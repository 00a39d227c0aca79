// The operator package's FlaNpuGateChunkCumsum (csrc/opp/) on the host simulation, against the sim
// library's direct entry point flaNpuGateChunkCumsum: its registration; its op_host tiling function
// run on a stand-in TilingContext; the tiling bytes put in a GM buffer and the OPP kernel entry
// (op_kernel/fla_npu_gate_chunk_cumsum.cpp, one copy per DTYPE_G) launched with them and the block
// count and workspace the tiling asked for, as CANN's runtime would. The output must be
// bit-identical to the direct entry's and the tiling identical word for word; invalid calls must
// fail in both with the same message. Driven by tests/kernels/test_opp_kernel_entries.py.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../../opp/tests/opp_test_util.h"
#include "../gate_cumsum_tiling.h"

using fla_npu::gate::GateCumsumTiling;
using opp_test::Desc;
using opp_test::Gm;
using opp_test::Numel;

// The OPP kernel entry, compiled once per DTYPE_G like the OPP build does (tests/CMakeLists.txt
// suffixes each copy's symbol so that one process holds the three).
#define FLA_NPU_DECLARE_OPP_ENTRY(NAME) \
    extern "C" void NAME(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_gate_chunk_cumsum_f32)
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_gate_chunk_cumsum_f16)
FLA_NPU_DECLARE_OPP_ENTRY(fla_npu_gate_chunk_cumsum_bf16)

namespace {

constexpr const char* kOpType = "FlaNpuGateChunkCumsum";

struct Call {
    int32_t dtype = FLA_NPU_FLOAT32;
    std::vector<int64_t> g_shape;       // [B, T, H, K] or [B, T, H]
    int64_t gate_form = 1;
    bool a_log = true, dt_bias = true;
    std::vector<int32_t> cu_seqlens;    // varlen when not empty (B == 1)
    bool chunk_indices_too = true;      // false: cu_seqlens alone (invalid)
    int64_t chunk_size = 64;
    float lower_bound = -5.0f, scale = 1.4426950408889634f;
    std::vector<int64_t> out_shape;     // empty: g's
};

// Inputs of a call, poisoned outputs for both paths.
struct Data {
    std::vector<uint8_t> g;
    std::vector<float> a_log, dt_bias, out_direct, out_opp;
    std::vector<int32_t> cu, chunks;
    int64_t H = 0, W = 0, NC = 0;
};

size_t ElemBytes(int32_t dtype) { return dtype == FLA_NPU_FLOAT32 ? 4 : 2; }
ge::DataType GeType(int32_t dtype) {
    return dtype == FLA_NPU_FLOAT32 ? ge::DT_FLOAT : dtype == FLA_NPU_FLOAT16 ? ge::DT_FLOAT16 : ge::DT_BF16;
}

Data MakeData(const Call& c) {
    Data d;
    opp_test::Rng rng(static_cast<uint64_t>(Numel(c.g_shape)) * 31 + c.dtype);
    const int64_t n = Numel(c.g_shape);
    d.H = c.g_shape.size() >= 3 ? c.g_shape[2] : 1;
    d.W = c.g_shape.size() == 4 ? d.H * c.g_shape[3] : d.H;
    d.g.resize(static_cast<size_t>(n) * ElemBytes(c.dtype));
    for (int64_t i = 0; i < n; ++i) {
        const float v = 3.0f * rng.Next();
        if (c.dtype == FLA_NPU_FLOAT32) std::memcpy(&d.g[i * 4], &v, 4);
        else {
            const uint16_t bits = c.dtype == FLA_NPU_FLOAT16 ? half(v).bits : bfloat16_t(v).bits;
            std::memcpy(&d.g[i * 2], &bits, 2);
        }
    }
    for (int64_t h = 0; h < d.H; ++h) d.a_log.push_back(rng.Next());
    for (int64_t w = 0; w < d.W; ++w) d.dt_bias.push_back(rng.Next());
    d.cu = c.cu_seqlens;
    for (size_t s = 0; s + 1 < d.cu.size(); ++s)
        for (int32_t j = 0; int64_t(j) * c.chunk_size < d.cu[s + 1] - d.cu[s]; ++j) {
            d.chunks.push_back(static_cast<int32_t>(s));
            d.chunks.push_back(j);
        }
    d.NC = static_cast<int64_t>(d.chunks.size() / 2);
    const std::vector<int64_t> out_shape = c.out_shape.empty() ? c.g_shape : c.out_shape;
    d.out_direct.assign(static_cast<size_t>(Numel(out_shape)), NAN);
    d.out_opp.assign(d.out_direct.size(), NAN);
    return d;
}

// The direct entry point; status, and the message on failure.
int RunDirect(const Call& c, Data& d, std::string* message) {
    const std::vector<int64_t> out_shape = c.out_shape.empty() ? c.g_shape : c.out_shape;
    const FlaNpuTensor g = Desc(d.g.data(), c.dtype, c.g_shape);
    const FlaNpuTensor a_log = Desc(d.a_log.data(), FLA_NPU_FLOAT32, {d.H});
    const FlaNpuTensor dt_bias = Desc(d.dt_bias.data(), FLA_NPU_FLOAT32, {d.W});
    const FlaNpuTensor cu = Desc(d.cu.data(), FLA_NPU_INT32, {int64_t(d.cu.size())});
    const FlaNpuTensor chunks = Desc(d.chunks.data(), FLA_NPU_INT32, {d.NC, 2});
    const FlaNpuTensor out = Desc(d.out_direct.data(), FLA_NPU_FLOAT32, out_shape);
    const bool varlen = !c.cu_seqlens.empty();
    uint64_t ws_size = 0;
    FlaNpuExecutor* ex = nullptr;
    int status = flaNpuGateChunkCumsumGetWorkspaceSize(
        &g, c.a_log ? &a_log : nullptr, c.dt_bias ? &dt_bias : nullptr, varlen ? &cu : nullptr,
        varlen && c.chunk_indices_too ? &chunks : nullptr, static_cast<int32_t>(c.chunk_size),
        static_cast<int32_t>(c.gate_form), c.lower_bound, c.scale, &out, &ws_size, &ex);
    if (status == FLA_NPU_OK) status = flaNpuGateChunkCumsum(nullptr, 0, ex, nullptr);
    if (status != FLA_NPU_OK) *message = flaNpuGetLastErrorMessage();
    return status;
}

// The OPP path: the registered tiling function on the call's shapes and attributes.
ge::graphStatus RunTiling(const Call& c, const Data& d, gert::TilingContext* ctx, fe::PlatFormInfos* platform) {
    using gert::Absent;
    using gert::Tensor;
    const bool varlen = !c.cu_seqlens.empty();
    ctx->platform = platform;
    ctx->inputs = {Tensor(c.g_shape, GeType(c.dtype)),
                   c.a_log ? Tensor({d.H}, ge::DT_FLOAT) : Absent(),
                   c.dt_bias ? Tensor({d.W}, ge::DT_FLOAT) : Absent(),
                   varlen ? Tensor({int64_t(d.cu.size())}, ge::DT_INT32) : Absent(),
                   varlen && c.chunk_indices_too ? Tensor({d.NC, 2}, ge::DT_INT32) : Absent()};
    ctx->outputs = {Tensor(c.out_shape.empty() ? c.g_shape : c.out_shape, ge::DT_FLOAT)};
    ctx->attrs.values = {{c.chunk_size, 0.0f}, {c.gate_form, 0.0f}, {0, c.lower_bound}, {0, c.scale}};
    return opp_test::Registered(kOpType)->aicore.tiling(ctx);
}

// ... then the kernel entry with the tiling in GM, as CANN's runtime launches it.
void LaunchOpp(const Call& c, Data& d, const gert::TilingContext& ctx) {
    opp_test::LaunchBuffers buffers(ctx);
    const bool varlen = !c.cu_seqlens.empty();
    GM_ADDR g = Gm(d.g.data());
    GM_ADDR a_log = c.a_log ? Gm(d.a_log.data()) : nullptr;  // an absent optional input: null
    GM_ADDR dt_bias = c.dt_bias ? Gm(d.dt_bias.data()) : nullptr;
    GM_ADDR cu = varlen ? Gm(d.cu.data()) : nullptr;
    GM_ADDR chunks = varlen ? Gm(d.chunks.data()) : nullptr;
    GM_ADDR out = Gm(d.out_opp.data());
    GM_ADDR ws = buffers.WorkspaceGm();
    GM_ADDR tiling = buffers.TilingGm();
    auto entry = c.dtype == FLA_NPU_FLOAT32 ? fla_npu_gate_chunk_cumsum_f32
               : c.dtype == FLA_NPU_FLOAT16 ? fla_npu_gate_chunk_cumsum_f16 : fla_npu_gate_chunk_cumsum_bf16;
    AscendC::sim::Launch("fla_npu_gate_chunk_cumsum", KERNEL_TYPE_AIV_ONLY, ctx.block_dim, entry, g, a_log, dt_bias, cu,
                         chunks, out, ws, tiling);
}

const opp_test::FrontEnds<Call, Data> kFrontEnds = {kOpType, "flaNpuGateChunkCumsum", RunDirect,
                                                     flaNpuGateChunkCumsumLastTiling, RunTiling};

// A valid call: both paths, identical tilings, no workspace and bit-identical outputs.
int Same(const Call& c) {
    Data d = MakeData(c);
    gert::TilingContext ctx;
    fe::PlatFormInfos platform;
    GateCumsumTiling t;
    OPP_TRY(opp_test::SameTiling(kFrontEnds, c, d, &ctx, &platform, &t));
    OPP_CHECK(ctx.workspace.size() == 1 && ctx.workspace[0] == 0);

    LaunchOpp(c, d, ctx);
    OPP_TRY(opp_test::CheckSameBits(d.out_opp, d.out_direct));
    if (t.num_units > 0) OPP_TRY(opp_test::CheckAllFinite(d.out_opp));
    return 0;
}

// An invalid call: both front ends refuse it with the same message.
int SameRefusal(const Call& c, const char* expect) { return opp_test::SameRefusal(kFrontEnds, c, MakeData(c), expect); }

Call Kda(int32_t dtype, int64_t form) {
    Call c;
    c.dtype = dtype;
    c.g_shape = {2, 150, 3, 16};
    c.gate_form = form;
    return c;
}
Call Varlen(int32_t dtype) {
    Call c = Kda(dtype, 1);
    c.g_shape = {1, 150, 3, 16};
    c.cu_seqlens = {0, 1, 1, 70, 70, 71, 150};  // lengths 1, 0, 69, 0, 1, 79
    c.chunk_size = 32;
    return c;
}

int CaseRegistration() {
    const ops::OpDef* def = opp_test::Registered(kOpType);
    OPP_CHECK(def != nullptr && def->aicore.tiling != nullptr);
    const char* inputs[] = {"g", "a_log", "dt_bias", "cu_seqlens", "chunk_indices"};
    OPP_CHECK(def->inputs.size() == 5 && def->outputs.size() == 1 && def->outputs[0].name == "out");
    for (size_t i = 0; i < 5; ++i) {
        OPP_CHECK(def->inputs[i].name == inputs[i]);
        OPP_CHECK(def->inputs[i].param_type == (i == 0 ? ops::REQUIRED : ops::OPTIONAL));
        OPP_CHECK(def->inputs[i].dtypes.size() == 3 && def->inputs[i].formats.size() == 3);
    }
    // The dtype combinations (one per OPP binary): g float32 / float16 / bfloat16, the rest fixed.
    const ge::DataType g_types[] = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    for (size_t k = 0; k < 3; ++k) {
        OPP_CHECK(def->inputs[0].dtypes[k] == g_types[k]);
        OPP_CHECK(def->inputs[1].dtypes[k] == ge::DT_FLOAT && def->inputs[2].dtypes[k] == ge::DT_FLOAT);
        OPP_CHECK(def->inputs[3].dtypes[k] == ge::DT_INT32 && def->inputs[4].dtypes[k] == ge::DT_INT32);
        OPP_CHECK(def->outputs[0].dtypes[k] == ge::DT_FLOAT);
        for (size_t i = 0; i < 5; ++i) OPP_CHECK(def->inputs[i].formats[k] == ge::FORMAT_ND);
    }
    const char* attrs[] = {"chunk_size", "gate_form", "lower_bound", "scale"};
    const ops::OpAttrDef::Kind kinds[] = {ops::OpAttrDef::kInt, ops::OpAttrDef::kInt, ops::OpAttrDef::kFloat,
                                          ops::OpAttrDef::kFloat};
    OPP_CHECK(def->attrs.size() == 4);
    for (size_t i = 0; i < 4; ++i)
        OPP_CHECK(def->attrs[i].name == attrs[i] && def->attrs[i].kind == kinds[i] && def->attrs[i].attr_type == ops::REQUIRED);
    OPP_CHECK((def->aicore.configs == std::vector<std::string>{"ascend910b", "ascend910_93", "ascend950"}));
    // Inference: out has g's shape, float32.
    gert::InferShapeContext shape_ctx;
    shape_ctx.inputs = {gert::Shape{2, 7, 3, 16}};
    shape_ctx.outputs.resize(1);
    OPP_CHECK(def->infer_shape(&shape_ctx) == ge::GRAPH_SUCCESS && shape_ctx.outputs[0] == shape_ctx.inputs[0]);
    gert::InferDataTypeContext dtype_ctx;
    dtype_ctx.inputs = {ge::DT_BF16};
    dtype_ctx.outputs = {ge::DT_UNDEFINED};
    OPP_CHECK(def->infer_dtype(&dtype_ctx) == ge::GRAPH_SUCCESS && dtype_ctx.outputs[0] == ge::DT_FLOAT);
    return 0;
}

const std::map<std::string, std::function<int()>>& Cases() {
    static const std::map<std::string, std::function<int()>> cases = {
        {"registration", CaseRegistration},
        // KDA forms, every dtype; GDN ([B, T, H]); a_log given with the form that ignores it; a head
        // dim that splits into pieces (K = 20 is not a multiple of 8); no token at all.
        {"kda_softplus_f32", [] { return Same(Kda(FLA_NPU_FLOAT32, 1)); }},
        {"kda_softplus_f16", [] { return Same(Kda(FLA_NPU_FLOAT16, 1)); }},
        {"kda_softplus_bf16", [] { return Same(Kda(FLA_NPU_BFLOAT16, 1)); }},
        {"kda_sigmoid_bf16", [] { return Same(Kda(FLA_NPU_BFLOAT16, 2)); }},
        {"kda_sigmoid_no_a_log_f16", [] { Call c = Kda(FLA_NPU_FLOAT16, 2); c.a_log = false; return Same(c); }},
        {"none_with_a_log_f32", [] { Call c = Kda(FLA_NPU_FLOAT32, 0); c.scale = 0.5f; return Same(c); }},
        {"gdn_softplus_f32", [] { Call c = Kda(FLA_NPU_FLOAT32, 1); c.g_shape = {2, 150, 5}; return Same(c); }},
        {"gdn_softplus_bf16", [] { Call c = Kda(FLA_NPU_BFLOAT16, 1); c.g_shape = {2, 150, 5}; c.chunk_size = 16; return Same(c); }},
        {"head_pieces_f16", [] { Call c = Kda(FLA_NPU_FLOAT16, 1); c.g_shape = {1, 70, 2, 20}; c.dt_bias = false; return Same(c); }},
        {"empty_f32", [] { Call c = Kda(FLA_NPU_FLOAT32, 1); c.g_shape = {2, 0, 3, 16}; return Same(c); }},
        // Varlen (length-1, zero-length and tail sequences), every dtype.
        {"varlen_f32", [] { return Same(Varlen(FLA_NPU_FLOAT32)); }},
        {"varlen_f16", [] { return Same(Varlen(FLA_NPU_FLOAT16)); }},
        {"varlen_bf16", [] { return Same(Varlen(FLA_NPU_BFLOAT16)); }},
        // Refused by both front ends with the same message.
        {"refuse_chunk_size", [] { Call c = Kda(FLA_NPU_FLOAT32, 1); c.chunk_size = 48; return SameRefusal(c, "chunk_size"); }},
        {"refuse_softplus_without_a_log", [] { Call c = Kda(FLA_NPU_FLOAT32, 1); c.a_log = false; return SameRefusal(c, "needs `a_log`"); }},
        {"refuse_gate_form", [] { return SameRefusal(Kda(FLA_NPU_FLOAT32, 3), "`gate_form`"); }},
        {"refuse_g_rank", [] { Call c = Kda(FLA_NPU_FLOAT32, 1); c.g_shape = {300, 3}; return SameRefusal(c, "`g` must be"); }},
        {"refuse_out_shape", [] { Call c = Kda(FLA_NPU_FLOAT32, 1); c.out_shape = {2, 150, 3, 8}; return SameRefusal(c, "`out`"); }},
        {"refuse_cu_alone", [] { Call c = Varlen(FLA_NPU_FLOAT32); c.chunk_indices_too = false; return SameRefusal(c, "go together"); }},
        {"refuse_varlen_batch", [] { Call c = Varlen(FLA_NPU_FLOAT32); c.g_shape = {2, 75, 3, 16}; return SameRefusal(c, "batch size"); }},
    };
    return cases;
}

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, Cases()); }
