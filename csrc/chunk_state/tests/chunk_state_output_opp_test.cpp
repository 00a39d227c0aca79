// The operator package's FlaNpuChunkStateOutput on the host simulation against the direct entry point
// flaNpuChunkStateOutput: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these
// calls. Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_state_output_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

struct Shape {
    int64_t HV, HQ, BT, K, V, Kg;
    std::vector<int32_t> offsets;  // chunk_offsets, N + 1 values; NC = the last
};

// q, k [NC, BT, HQ, K] and v [NC, BT, HV, V] of `dtype`, g (GateDims: log gates in (-2, 0)), akk,
// aqk [NC, HV, BT, BT], e_last [NC, HV, Kg] (decays in (0.1, 1)),
// chunk_offsets, h0 [N, HV, K, V] ([N, HV, V, K] with v_first) or absent, with `scaled` q_scale and
// k_scale [NC, HQ, BT] (in (0.05, 0.5): the random rows' norms are above 1; else absent), o v's shape, final h0's.
CallSpec Call(int32_t dtype, const Shape& s, bool with_h0, bool v_first, bool scaled = false) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    const int64_t NC = s.offsets.back(), N = static_cast<int64_t>(s.offsets.size()) - 1;
    const std::vector<int64_t> state =
        v_first ? std::vector<int64_t>{N, s.HV, s.V, s.K} : std::vector<int64_t>{N, s.HV, s.K, s.V};
    opp_test::AttrValue v_first_attr;
    v_first_attr.i = v_first ? 1 : 0;
    const auto scale = [&] { return scaled ? Floats(f32, {NC, s.HQ, s.BT}, 0.05f, 0.5f) : opp_test::Absent(); };
    return {{Floats(dtype, {NC, s.BT, s.HQ, s.K}), Floats(dtype, {NC, s.BT, s.HQ, s.K}), Floats(dtype, {NC, s.BT, s.HV, s.V}),
             Floats(f32, opp_test::GateDims(NC, s.HV, s.BT, s.Kg), -2.0f, 0.0f), Floats(dtype, {NC, s.HV, s.BT, s.BT}),
             Floats(dtype, {NC, s.HV, s.BT, s.BT}), Floats(f32, {NC, s.HV, s.Kg}, 0.1f, 1.0f), opp_test::Ints({N + 1}, s.offsets),
             with_h0 ? Floats(f32, state) : opp_test::Absent(), scale(), scale(), Floats(dtype, {NC, s.BT, s.HV, s.V}),
             Floats(f32, state)},
            {v_first_attr}};
}

const Shape kKda{2, 2, 64, 128, 128, 128, {0, 2, 3}}, kGdn{4, 2, 32, 64, 128, 1, {0, 1, 1, 4}};
const int32_t f16 = FLA_NPU_FLOAT16, bf16 = FLA_NPU_BFLOAT16;

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Call(bf16, kKda, true, false)); }},
    // KDA and GDN (GVA), with and without h0, both state layouts, BT 16, the widest heads, more
    // units than cores, no sequence.
    {"kda_h0_f16", [] { return Same(Call(f16, kKda, true, false)); }},
    {"kda_v_first_bf16", [] { return Same(Call(bf16, kKda, true, true)); }},
    {"gdn_gva_no_h0_bf16", [] { return Same(Call(bf16, kGdn, false, false)); }},
    {"kda_scaled_bf16", [] { return Same(Call(bf16, kKda, true, false, true)); }},
    {"gdn_gva_scaled_f16", [] { return Same(Call(f16, kGdn, false, false, true)); }},
    {"gdn_bt16_f16", [] { return Same(Call(f16, {2, 1, 16, 64, 64, 1, {0, 3}}, true, false)); }},
    {"wide_bf16", [] { return Same(Call(bf16, {1, 1, 64, 256, 256, 256, {0, 1}}, true, false)); }},
    {"many_units_f16", [] { return Same(Call(f16, {5, 5, 32, 32, 48, 32, {0, 2, 5, 6}}, true, false)); }},
    {"empty_bf16", [] { return Same(Call(bf16, {2, 2, 64, 64, 64, 1, {0}}, false, false)); }},
    // Refused by both front ends with the same message.
    {"refuse_chunk_size", [] { return Refused(Call(f16, {2, 2, 48, 64, 64, 1, {0, 1}}, true, false), "BT"); }},
    {"refuse_k_heads", [] { return Refused(Call(f16, {4, 3, 64, 64, 64, 1, {0, 1}}, true, false), "`k`"); }},
    {"refuse_o_shape", [] { return Refused(opp_test::Reshaped(Call(f16, kKda, true, false), 11, {3, 2, 64, 128}), "`o`"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
