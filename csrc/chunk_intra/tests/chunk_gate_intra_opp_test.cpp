// The operator package's FlaNpuChunkGateIntra on the host simulation against the direct entry point
// flaNpuChunkGateIntra: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these
// calls. Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_gate_intra_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

// q, k [NC, BT, HV, K] of `dtype` (k small), beta [NC, HV, BT], the raw gate g [NC, BT, HV, K] of
// `gdtype` (form 0: log decays in (-0.05, 0); else raw values in (-1, 1)), a_log [HV] and dt_bias
// [HV * K] (`params`: else absent), chunk_len `len` (NC values), aqk, akk [NC, HV, BT, BT] of `dtype`,
// q_scale, k_scale [NC, HV, BT], gate g's shape, e_last [NC, HV, K]; the attributes gate_form `form`,
// lower_bound -5, qk_l2norm 1, scale 0.125, akk_beta 1.
CallSpec Call(int32_t dtype, int32_t gdtype, int64_t HV, int64_t BT, int64_t K, int32_t form, bool params,
              std::vector<int32_t> len) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    const int64_t NC = static_cast<int64_t>(len.size());
    CallSpec c{
        {Floats(dtype, {NC, BT, HV, K}), Floats(dtype, {NC, BT, HV, K}, -0.1f, 0.1f), Floats(f32, {NC, HV, BT}, 0.1f, 1.0f),
         form == 0 ? Floats(gdtype, {NC, BT, HV, K}, -0.05f, 0.0f) : Floats(gdtype, {NC, BT, HV, K}),
         params ? Floats(f32, {HV}, -3.0f, -1.0f) : opp_test::Absent(),
         params ? Floats(f32, {HV * K}, -0.5f, 0.5f) : opp_test::Absent(), opp_test::Ints({NC}, len),
         Floats(dtype, {NC, HV, BT, BT}), Floats(dtype, {NC, HV, BT, BT}), Floats(f32, {NC, HV, BT}), Floats(f32, {NC, HV, BT}),
         Floats(f32, {NC, BT, HV, K}), Floats(f32, {NC, HV, K})},
        {}};
    c.attrs.resize(5);
    c.attrs[0].i = form;
    c.attrs[1].f = -5.0f;
    c.attrs[2].i = 1;
    c.attrs[3].f = 0.125f;
    c.attrs[4].i = 1;
    return c;
}

const int32_t f16 = FLA_NPU_FLOAT16, bf16 = FLA_NPU_BFLOAT16, f32 = FLA_NPU_FLOAT32;

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Call(bf16, f32, 2, 64, 128, 1, true, {64, 64, 17})); }},
    // Every gate form, a float32 and a 16-bit raw gate, tails, every chunk size, no chunk.
    {"softplus_bf16", [] { return Same(Call(bf16, f32, 2, 64, 128, 1, true, {64, 64, 17})); }},
    {"sigmoid_f16_raw_f16", [] { return Same(Call(f16, f16, 2, 32, 64, 2, true, {32, 1, 0})); }},
    {"none_bf16_raw_bf16", [] { return Same(Call(bf16, bf16, 3, 16, 128, 0, false, {16, 5})); }},
    {"empty_bf16", [] { return Same(Call(bf16, f32, 2, 64, 64, 1, true, {})); }},
    // Refused by both front ends with the same message.
    {"refuse_softplus_without_a_log", [] { return Refused(Call(bf16, f32, 2, 64, 64, 1, false, {64}), "`a_log`"); }},
    {"refuse_head_dim", [] { return Refused(Call(bf16, f32, 1, 64, 256, 1, true, {64}), "128"); }},
    {"refuse_e_last_shape",
     [] { return Refused(opp_test::Reshaped(Call(f16, f32, 2, 32, 64, 2, true, {32}), 12, {1, 2, 32}), "`e_last`"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
