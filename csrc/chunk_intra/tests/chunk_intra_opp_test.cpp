// The operator package's FlaNpuChunkIntra on the host simulation against the direct entry point
// flaNpuChunkIntra: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these calls.
// Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_intra_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

// q, k [NC, BT, HV, K] (token-major) of `dtype` (k small, as normalised keys are: (I + L)^-1 stays
// finite in 16 bits), beta [NC, HV, BT] (positive), g (GateDims: a narrow gate,
// Kg = K is KDA, 1 GDN), aqk and akk [NC, HV, BT, BT] of `out`, q_scale and k_scale [NC, HV, BT]; the
// attributes qk_l2norm (`l2norm`), scale (0.125 with it, else 1) and akk_beta (`akkBeta`).
CallSpec Call(int32_t dtype, int32_t out, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t Kg, bool l2norm = false,
              bool akkBeta = false) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    CallSpec c{
        {Floats(dtype, {NC, BT, HV, K}), Floats(dtype, {NC, BT, HV, K}, -0.1f, 0.1f), Floats(f32, {NC, HV, BT}, 0.1f, 1.0f),
         Floats(f32, opp_test::GateDims(NC, HV, BT, Kg), -0.05f, 0.0f), Floats(out, {NC, HV, BT, BT}),
         Floats(out, {NC, HV, BT, BT}), Floats(f32, {NC, HV, BT}), Floats(f32, {NC, HV, BT})},
        {}};
    c.attrs.resize(3);
    c.attrs[0].i = l2norm ? 1 : 0;
    c.attrs[1].f = l2norm ? 0.125f : 1.0f;
    c.attrs[2].i = akkBeta ? 1 : 0;
    return c;
}

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 3, 2, 64, 128, 128)); }},
    // KDA and GDN, float32 and 16-bit outputs, every chunk size, the widest K, more units than cores,
    // no chunk.
    {"kda_f16", [] { return Same(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT32, 3, 2, 64, 128, 128)); }},
    {"kda_bf16_out_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, FLA_NPU_BFLOAT16, 3, 2, 64, 128, 128)); }},
    {"gdn_bt32_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 5, 3, 32, 64, 1)); }},
    {"gdn_bt16_f16_out_f16", [] { return Same(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT16, 4, 2, 16, 128, 1)); }},
    {"wide_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 1, 2, 64, 256, 256)); }},
    {"many_units_f16", [] { return Same(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT32, 9, 3, 32, 32, 32)); }},
    {"empty_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 0, 2, 64, 64, 1)); }},
    // q's and k's l2 norms and scale (KDA, GDN).
    {"kda_l2norm_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 3, 2, 64, 128, 128, true)); }},
    {"gdn_l2norm_f16", [] { return Same(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT16, 3, 2, 32, 64, 1, true)); }},
    // Akk's columns times beta (the fused state kernel's operand).
    {"kda_akk_beta_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, FLA_NPU_BFLOAT16, 3, 2, 64, 128, 128, true, true)); }},
    {"gdn_akk_beta_f16", [] { return Same(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT32, 3, 2, 32, 64, 1, false, true)); }},
    // Refused by both front ends with the same message.
    {"refuse_chunk_size", [] { return Refused(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT32, 1, 2, 48, 64, 1), "BT"); }},
    {"refuse_head_dim", [] { return Refused(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 1, 2, 64, 72, 1), "multiple of 16"); }},
    {"refuse_g_shape", [] { return Refused(Call(FLA_NPU_FLOAT16, FLA_NPU_FLOAT32, 1, 2, 64, 64, 8), "`g`"); }},
    {"refuse_scale_shape",
     [] {
         return Refused(opp_test::Reshaped(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 1, 2, 64, 64, 1, true), 7, {1, 2, 32}),
                        "[NC, HQ, BT]");
     }},
    {"refuse_akk_shape",
     [] {
         return Refused(opp_test::Reshaped(Call(FLA_NPU_BFLOAT16, FLA_NPU_FLOAT32, 1, 2, 64, 64, 1), 5, {1, 2, 64, 32}), "`akk`");
     }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
