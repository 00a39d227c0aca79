// The operator package's FlaNpuSolveTril on the host simulation against the direct entry point
// flaNpuSolveTril: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on these calls.
// Driven by tests/kernels/test_opp_kernel_entries.py.
#include "solve_tril_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Same;
using opp_test::CallSpec;
using opp_test::Floats;

// l [NC, HV, BT, BT] float32 (small entries: the inverse stays well within float16), akk l's shape in
// `out`.
CallSpec Call(int32_t out, int64_t NC, int64_t HV, int64_t BT) {
    return {{Floats(FLA_NPU_FLOAT32, {NC, HV, BT, BT}, -0.1f, 0.1f), Floats(out, {NC, HV, BT, BT})}, {}};
}

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(Call(FLA_NPU_FLOAT32, 3, 2, 64)); }},
    // Every output dtype and chunk size (BT 16: no Cube merge), more units than cores, no chunk.
    {"bt64_f32", [] { return Same(Call(FLA_NPU_FLOAT32, 3, 2, 64)); }},
    {"bt64_f16", [] { return Same(Call(FLA_NPU_FLOAT16, 3, 2, 64)); }},
    {"bt64_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, 3, 2, 64)); }},
    {"bt32_bf16", [] { return Same(Call(FLA_NPU_BFLOAT16, 5, 3, 32)); }},
    {"bt16_f32", [] { return Same(Call(FLA_NPU_FLOAT32, 4, 2, 16)); }},
    {"many_units_f16", [] { return Same(Call(FLA_NPU_FLOAT16, 9, 5, 32)); }},
    {"empty_f32", [] { return Same(Call(FLA_NPU_FLOAT32, 0, 2, 64)); }},
    // Refused by both front ends with the same message.
    {"refuse_chunk_size", [] { return Refused(Call(FLA_NPU_FLOAT32, 1, 2, 48), "BT"); }},
    {"refuse_akk_shape", [] { return Refused(opp_test::Reshaped(Call(FLA_NPU_FLOAT16, 1, 2, 64), 1, {1, 2, 64, 32}), "`akk`"); }},
    {"refuse_l_rank", [] { return Refused(opp_test::Reshaped(Call(FLA_NPU_FLOAT32, 1, 2, 64), 0, {2, 64, 64}), "`l`"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
