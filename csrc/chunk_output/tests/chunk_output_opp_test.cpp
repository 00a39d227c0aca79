// The operator package's FlaNpuChunkOutput on the host simulation against the direct entry point
// flaNpuChunkOutput: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these calls.
// Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_output_opp_glue.h"

namespace {

using opp_test::CallSpec;
using opp_test::Reshaped;
using opp_test::Floats;
using opp_glue::Refused;
using opp_glue::Same;

// q [NC, HV, BT, K], e_row [NC, HV, BT, Kg], s [NC, HV, K, V], aqk [NC, HV, BT, BT], v_new and out [NC, HV, BT, V].
CallSpec With(int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    return {{Floats(dtype, {NC, HV, BT, K}), Floats(f32, {NC, HV, BT, Kg}, 0.1f, 1.0f), Floats(f32, {NC, HV, K, V}),
             Floats(dtype, {NC, HV, BT, BT}), Floats(dtype, {NC, HV, BT, V}), Floats(f32, {NC, HV, BT, V})},
            {}};
}

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(With(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 96, 1)); }},
    // KDA (Kg = K) and GDN (Kg = 1), every chunk size, K != V, V-tiles (256 x 256), more units than cores.
    {"kda_f16", [] { return Same(With(FLA_NPU_FLOAT16, 3, 2, 64, 128, 128, 128)); }},
    {"kda_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 128, 128)); }},
    {"gdn_bt32_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 5, 3, 32, 64, 128, 1)); }},
    {"gdn_bt16_f16", [] { return Same(With(FLA_NPU_FLOAT16, 4, 2, 16, 128, 64, 1)); }},
    {"v_tiles_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 1, 2, 64, 256, 256, 256)); }},
    {"many_units_f16", [] { return Same(With(FLA_NPU_FLOAT16, 9, 3, 32, 32, 48, 32)); }},
    {"empty_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 0, 2, 64, 64, 64, 1)); }},
    // Refused by both front ends with the same message.
    {"refuse_chunk_size", [] { return Refused(With(FLA_NPU_FLOAT16, 1, 2, 48, 64, 64, 1), "BT"); }},
    {"refuse_head_dim", [] { return Refused(With(FLA_NPU_BFLOAT16, 1, 2, 64, 64, 72, 1), "multiples of 16"); }},
    {"refuse_e_row", [] { return Refused(With(FLA_NPU_FLOAT16, 1, 2, 64, 64, 64, 8), "`e_row`"); }},
    {"refuse_s_shape", [] { return Refused(Reshaped(With(FLA_NPU_FLOAT16, 1, 2, 64, 64, 64, 1), 2, {1, 2, 64, 32}), "`s`"); }},
    {"refuse_out_shape", [] { return Refused(Reshaped(With(FLA_NPU_BFLOAT16, 1, 2, 64, 64, 64, 1), 5, {1, 2, 64, 48}), "`out`"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
