// The operator package's FlaNpuChunkGateForward on the host simulation against the direct entry point
// flaNpuChunkGateForward: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these
// calls. Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_gate_forward_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

struct Shape {
    int64_t HV, HQ, BT, K, V;
    std::vector<int32_t> offsets;  // chunk_offsets, N + 1 values; NC = the last
};

// q, k [NC, BT, HQ, K] (k small) and v [NC, BT, HV, V] of `dtype`, the raw gate g [NC, BT, HV, K] of
// `gdtype` (form 0: log decays in (-0.05, 0); else raw values in (-1, 1)), beta [NC, HV, BT] in (0, 1),
// a_log [HV] and dt_bias [HV * K] (`params`: else absent), chunk_len (every chunk whole but the last of
// each sequence, 5 rows), chunk_offsets, h0 [N, HV, K, V] or absent; attributes gate_form `form`,
// lower_bound -5, qk_l2norm 1, scale 0.125, state_v_first 0; o v's shape, final h0's.
CallSpec Call(int32_t dtype, int32_t gdtype, const Shape& s, int32_t form, bool params, bool with_h0) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    const int64_t NC = s.offsets.back(), N = static_cast<int64_t>(s.offsets.size()) - 1;
    std::vector<int32_t> len(static_cast<size_t>(NC), static_cast<int32_t>(s.BT));
    for (size_t n = 1; n < s.offsets.size(); ++n)
        if (s.offsets[n] > s.offsets[n - 1]) len[static_cast<size_t>(s.offsets[n] - 1)] = 5;
    const std::vector<int64_t> state{N, s.HV, s.K, s.V};
    CallSpec c{{Floats(dtype, {NC, s.BT, s.HQ, s.K}), Floats(dtype, {NC, s.BT, s.HQ, s.K}, -0.1f, 0.1f),
                Floats(dtype, {NC, s.BT, s.HV, s.V}),
                form == 0 ? Floats(gdtype, {NC, s.BT, s.HV, s.K}, -0.05f, 0.0f) : Floats(gdtype, {NC, s.BT, s.HV, s.K}),
                Floats(f32, {NC, s.HV, s.BT}, 0.0f, 1.0f), params ? Floats(f32, {s.HV}, -3.0f, -1.0f) : opp_test::Absent(),
                params ? Floats(f32, {s.HV * s.K}, -0.5f, 0.5f) : opp_test::Absent(), opp_test::Ints({NC}, len),
                opp_test::Ints({N + 1}, s.offsets), with_h0 ? Floats(f32, state) : opp_test::Absent(),
                Floats(dtype, {NC, s.BT, s.HV, s.V}), Floats(f32, state)},
               {}};
    c.attrs.resize(5);
    c.attrs[0].i = form;
    c.attrs[1].f = -5.0f;
    c.attrs[2].i = 1;
    c.attrs[3].f = 0.125f;
    c.attrs[4].i = 0;
    return c;
}

const int32_t f16 = FLA_NPU_FLOAT16, bf16 = FLA_NPU_BFLOAT16, f32 = FLA_NPU_FLOAT32;
const Shape kKda{4, 2, 64, 128, 128, {0, 2, 3}};

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Call(bf16, f32, kKda, 2, true, true)); }},
    // Every gate form, a float32 and a 16-bit raw gate, GVA, h0, every chunk size, no sequence.
    {"sigmoid_gva_h0_bf16", [] { return Same(Call(bf16, f32, kKda, 2, true, true)); }},
    {"softplus_bt32_f16_raw_f16", [] { return Same(Call(f16, f16, {2, 2, 32, 64, 48, {0, 1, 4}}, 1, true, false)); }},
    {"none_bt16_bf16_raw_bf16", [] { return Same(Call(bf16, bf16, {2, 1, 16, 64, 64, {0, 3}}, 0, false, true)); }},
    {"empty_bf16", [] { return Same(Call(bf16, f32, {2, 2, 64, 64, 64, {0}}, 2, true, false)); }},
    // Refused by both front ends with the same message.
    {"refuse_softplus_without_a_log", [] { return Refused(Call(bf16, f32, kKda, 1, false, false), "`a_log`"); }},
    {"refuse_head_dim", [] { return Refused(Call(bf16, f32, {2, 2, 64, 256, 64, {0, 1}}, 2, true, false), "128"); }},
    {"refuse_o_shape",
     [] { return Refused(opp_test::Reshaped(Call(f16, f32, kKda, 2, true, false), 10, {3, 2, 64, 128}), "`o`"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
