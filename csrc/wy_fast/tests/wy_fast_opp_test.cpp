// The operator package's FlaNpuWyFast on the host simulation against the direct entry point
// flaNpuWyFast: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on the chunk
// kernels' calls and these. Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_opp_cases.h"
#include "wy_fast_opp_glue.h"

namespace {

using opp_test::CallSpec;
using opp_test::Floats;

// k [NC, BT, HV, K], v [NC, BT, HV, V] (token-major), beta [NC, HV, BT] (positive), akk [NC, HV, BT, BT], g [NC,
// HV, BT, Kg] (log decays in [-2, 0]); w and kg k's shape, u v's shape.
CallSpec Call(int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    return {{Floats(dtype, {NC, BT, HV, K}), Floats(dtype, {NC, BT, HV, V}), Floats(f32, {NC, HV, BT}, 0.1f, 1.0f),
             Floats(dtype, {NC, HV, BT, BT}), Floats(f32, opp_test::GateDims(NC, HV, BT, Kg), -2.0f, 0.0f),
             Floats(f32, {NC, HV, BT, K}), Floats(f32, {NC, HV, BT, V}), Floats(f32, {NC, HV, BT, K})},
            {}};
}

// beta and u of a shape that does not match the rest.
int BadShape(int32_t dtype, size_t tensor, std::vector<int64_t> shape, const char* expect) {
    return opp_glue::Refused(opp_test::Reshaped(Call(dtype, 1, 2, 64, 64, 64, 1), tensor, std::move(shape)), expect);
}

const opp_test::Cases kCases = opp_test::ChunkCases(
    opp_glue::Spec(), Call, "wide_bf16",
    {
        {"registration", [] { return opp_glue::Registration(Call(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 96, 1)); }},
        {"refuse_beta_shape", [] { return BadShape(FLA_NPU_FLOAT16, 2, {1, 2, 32}, "`beta`"); }},
        {"refuse_u_shape", [] { return BadShape(FLA_NPU_BFLOAT16, 6, {1, 2, 64, 48}, "`u`"); }},
    });

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
