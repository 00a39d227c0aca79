// The operator package's FlaNpuGateChunkCumsum on the host simulation against the direct entry point
// flaNpuGateChunkCumsum: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these
// calls (absent optional inputs, int32 inputs, attributes). Driven by
// tests/kernels/test_opp_kernel_entries.py.
#include "gate_cumsum_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

enum { kG, kALog, kDtBias, kCu, kChunks, kOut };
enum { kChunkSize, kGateForm, kLowerBound, kScale };

// Dense, g of `dtype` with values in [-3, 3); shapes below.
CallSpec Kda(int32_t dtype, int64_t gate_form) {
    CallSpec c;
    c.t.resize(6);
    c.t[kG] = Floats(dtype, {}, -3.0f, 3.0f);
    c.t[kCu] = c.t[kChunks] = opp_test::Absent();
    c.attrs.resize(4);
    c.attrs[kChunkSize].i = 64;
    c.attrs[kGateForm].i = gate_form;
    c.attrs[kLowerBound].f = -5.0f;
    c.attrs[kScale].f = 1.4426950408889634f;
    return c;
}

// With g of shape `g` and the shapes that follow it: a_log [H], dt_bias [H * K], out g's.
CallSpec Kda(int32_t dtype, int64_t gate_form, const std::vector<int64_t>& g) {
    CallSpec c = Kda(dtype, gate_form);
    const int64_t H = g.size() >= 3 ? g[2] : 1, W = g.size() == 4 ? H * g[3] : H;
    c.t[kG].shape = g;
    c.t[kALog] = Floats(FLA_NPU_FLOAT32, {H});
    c.t[kDtBias] = Floats(FLA_NPU_FLOAT32, {W});
    c.t[kOut] = Floats(FLA_NPU_FLOAT32, g);
    return c;
}
CallSpec Without(CallSpec c, int tensor) {
    c.t[tensor] = opp_test::Absent();
    return c;
}
CallSpec Attr(CallSpec c, int attr, int64_t i, float f = 0.0f) {
    c.attrs[attr].i = i;
    c.attrs[attr].f = f;
    return c;
}

// Varlen: g [1, 150, 3, 16], sequences of lengths 1, 0, 69, 0, 1, 79, chunk size 32; cu_seqlens and
// chunk_indices (one (sequence, chunk) row per chunk) as FLA builds them.
CallSpec Varlen(int32_t dtype) {
    CallSpec c = Attr(Kda(dtype, 1, {1, 150, 3, 16}), kChunkSize, 32);
    const std::vector<int32_t> cu = {0, 1, 1, 70, 70, 71, 150};
    std::vector<int32_t> chunks;
    for (size_t s = 0; s + 1 < cu.size(); ++s)
        for (int32_t j = 0; j * 32 < cu[s + 1] - cu[s]; ++j) chunks.insert(chunks.end(), {static_cast<int32_t>(s), j});
    c.t[kCu] = opp_test::Ints({int64_t(cu.size())}, cu);
    c.t[kChunks] = opp_test::Ints({int64_t(chunks.size() / 2), 2}, chunks);
    return c;
}

const std::vector<int64_t> kKdaG = {2, 150, 3, 16};

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Kda(FLA_NPU_BFLOAT16, 1, {2, 7, 3, 16})); }},
    // KDA forms, every dtype; GDN ([B, T, H]); a_log given with the form that ignores it; a head
    // dim that splits into pieces (K = 20 is not a multiple of 8); no token at all.
    {"kda_softplus_f32", [] { return Same(Kda(FLA_NPU_FLOAT32, 1, kKdaG)); }},
    {"kda_softplus_f16", [] { return Same(Kda(FLA_NPU_FLOAT16, 1, kKdaG)); }},
    {"kda_softplus_bf16", [] { return Same(Kda(FLA_NPU_BFLOAT16, 1, kKdaG)); }},
    {"kda_sigmoid_bf16", [] { return Same(Kda(FLA_NPU_BFLOAT16, 2, kKdaG)); }},
    {"kda_sigmoid_no_a_log_f16", [] { return Same(Without(Kda(FLA_NPU_FLOAT16, 2, kKdaG), kALog)); }},
    {"none_with_a_log_f32", [] { return Same(Attr(Kda(FLA_NPU_FLOAT32, 0, kKdaG), kScale, 0, 0.5f)); }},
    {"gdn_softplus_f32", [] { return Same(Kda(FLA_NPU_FLOAT32, 1, {2, 150, 5})); }},
    {"gdn_softplus_bf16", [] { return Same(Attr(Kda(FLA_NPU_BFLOAT16, 1, {2, 150, 5}), kChunkSize, 16)); }},
    {"head_pieces_f16", [] { return Same(Without(Kda(FLA_NPU_FLOAT16, 1, {1, 70, 2, 20}), kDtBias)); }},
    {"empty_f32", [] { return Same(Kda(FLA_NPU_FLOAT32, 1, {2, 0, 3, 16})); }},
    // Varlen (length-1, zero-length and tail sequences), every dtype.
    {"varlen_f32", [] { return Same(Varlen(FLA_NPU_FLOAT32)); }},
    {"varlen_f16", [] { return Same(Varlen(FLA_NPU_FLOAT16)); }},
    {"varlen_bf16", [] { return Same(Varlen(FLA_NPU_BFLOAT16)); }},
    // Refused by both front ends with the same message.
    {"refuse_chunk_size", [] { return Refused(Attr(Kda(FLA_NPU_FLOAT32, 1, kKdaG), kChunkSize, 48), "chunk_size"); }},
    {"refuse_softplus_without_a_log", [] { return Refused(Without(Kda(FLA_NPU_FLOAT32, 1, kKdaG), kALog), "needs `a_log`"); }},
    {"refuse_gate_form", [] { return Refused(Kda(FLA_NPU_FLOAT32, 3, kKdaG), "`gate_form`"); }},
    {"refuse_g_rank",
     [] {
         CallSpec c = Kda(FLA_NPU_FLOAT32, 1, kKdaG);
         c.t[kG].shape = {300, 3};
         return Refused(c, "`g` must be");
     }},
    {"refuse_out_shape",
     [] { return Refused(opp_test::Reshaped(Kda(FLA_NPU_FLOAT32, 1, kKdaG), kOut, {2, 150, 3, 8}), "`out`"); }},
    {"refuse_cu_alone", [] { return Refused(Without(Varlen(FLA_NPU_FLOAT32), kChunks), "go together"); }},
    {"refuse_varlen_batch",
     [] {
         CallSpec c = Varlen(FLA_NPU_FLOAT32);
         c.t[kG].shape = c.t[kOut].shape = {2, 75, 3, 16};
         return Refused(c, "batch size");
     }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
