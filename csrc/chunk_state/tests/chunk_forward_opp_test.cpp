// The operator package's FlaNpuChunkForward on the host simulation against the direct entry point
// flaNpuChunkForward: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these
// calls. Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_forward_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

struct Shape {
    int64_t HV, HQ, BT, K, V;
    std::vector<int32_t> offsets;  // chunk_offsets, N + 1 values; NC = the last
};

// q, k [NC, BT, HQ, K] and v [NC, BT, HV, V] of `dtype` (k in (-1/16, 1/16) without the norms: L's
// entries then stay small enough for its inverse to fit float16), g [NC, HV, BT, 1] (log gates in (-2, 0);
// kda: per key, token-major [NC, BT, HV, K]), beta [NC, HV, BT] in (0, 1), e_last [NC, HV, 1] (kda: [NC,
// HV, K]; decays in (0.1, 1)), chunk_offsets, h0 [N, HV, K, V] ([N, HV, V, K] with v_first) or absent,
// qk_l2norm, scale 0.125; o v's shape, final h0's. (The gate values are arbitrary, not cumulative sums:
// both front ends compute the same function of them.)
CallSpec Call(int32_t dtype, const Shape& s, bool with_h0, bool v_first, bool l2norm = true, bool kda = false) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    const int64_t NC = s.offsets.back(), N = static_cast<int64_t>(s.offsets.size()) - 1;
    const std::vector<int64_t> state =
        v_first ? std::vector<int64_t>{N, s.HV, s.V, s.K} : std::vector<int64_t>{N, s.HV, s.K, s.V};
    opp_test::AttrValue l2, scale, v_first_attr;
    l2.i = l2norm ? 1 : 0;
    scale.f = 0.125f;
    v_first_attr.i = v_first ? 1 : 0;
    const float kr = l2norm ? 1.0f : 0.0625f;
    return {{Floats(dtype, {NC, s.BT, s.HQ, s.K}), Floats(dtype, {NC, s.BT, s.HQ, s.K}, -kr, kr),
             Floats(dtype, {NC, s.BT, s.HV, s.V}),
             kda ? Floats(f32, {NC, s.BT, s.HV, s.K}, -2.0f, 0.0f) : Floats(f32, {NC, s.HV, s.BT, 1}, -2.0f, 0.0f),
             Floats(f32, {NC, s.HV, s.BT}, 0.0f, 1.0f), Floats(f32, {NC, s.HV, kda ? s.K : 1}, 0.1f, 1.0f),
             opp_test::Ints({N + 1}, s.offsets), with_h0 ? Floats(f32, state) : opp_test::Absent(),
             Floats(dtype, {NC, s.BT, s.HV, s.V}), Floats(f32, state)},
            {l2, scale, v_first_attr}};
}

const Shape kGdn{4, 2, 64, 128, 128, {0, 2, 3}};
const int32_t f16 = FLA_NPU_FLOAT16, bf16 = FLA_NPU_BFLOAT16;

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Call(bf16, kGdn, true, false)); }},
    // GVA, with and without h0 and the norms, both state layouts, BT 16 and 32, more units than cores,
    // no sequence.
    {"gva_h0_bf16", [] { return Same(Call(bf16, kGdn, true, false)); }},
    {"v_first_f16", [] { return Same(Call(f16, kGdn, true, true, false)); }},
    {"bt32_no_h0_bf16", [] { return Same(Call(bf16, {2, 2, 32, 64, 48, {0, 1, 4}}, false, false)); }},
    {"bt16_f16", [] { return Same(Call(f16, {2, 1, 16, 64, 64, {0, 3}}, true, false)); }},
    {"many_units_f16", [] { return Same(Call(f16, {5, 5, 32, 32, 48, {0, 2, 5, 6}}, true, false)); }},
    {"empty_bf16", [] { return Same(Call(bf16, {2, 2, 64, 64, 64, {0}}, false, false)); }},
    // KDA's per-key gate: GVA, h0, both state layouts, BT 16, 32 and 64.
    {"kda_gva_h0_bf16", [] { return Same(Call(bf16, {4, 2, 64, 128, 128, {0, 2, 3}}, true, false, true, true)); }},
    {"kda_bt32_v_first_f16", [] { return Same(Call(f16, {2, 2, 32, 64, 48, {0, 1, 4}}, true, true, false, true)); }},
    {"kda_bt16_bf16", [] { return Same(Call(bf16, {2, 1, 16, 64, 64, {0, 3}}, false, false, true, true)); }},
    // Refused by both front ends with the same message.
    {"refuse_chunk_size", [] { return Refused(Call(f16, {2, 2, 48, 64, 64, {0, 1}}, true, false), "BT"); }},
    {"refuse_k_heads", [] { return Refused(Call(f16, {4, 3, 64, 64, 64, {0, 1}}, true, false), "`k`"); }},
    {"refuse_o_shape", [] { return Refused(opp_test::Reshaped(Call(f16, kGdn, true, false), 8, {3, 2, 64, 128}), "`o`"); }},
    {"refuse_kda_k256", [] { return Refused(Call(bf16, {2, 2, 64, 256, 64, {0, 1}}, true, false, true, true), "K up to 128"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
