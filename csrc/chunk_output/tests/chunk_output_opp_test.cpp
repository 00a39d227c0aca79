// The operator package's FlaNpuChunkOutput on the host simulation against the direct entry point
// flaNpuChunkOutput: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h) on the chunk
// kernels' calls and these. Driven by tests/kernels/test_opp_kernel_entries.py.
#include "chunk_opp_cases.h"
#include "chunk_output_opp_glue.h"

namespace {

using opp_test::CallSpec;
using opp_test::Floats;

// q [NC, BT, HV, K] (token-major), g (GateDims: log decays in [-2, 0]), s [NC, HV, K, V], aqk [NC, HV, BT, BT], v_new
// [NC, HV, BT, V] and out [NC, BT, HV, V] (token-major; float32, or q's dtype from `out_dtype`).
CallSpec Call(int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg, int32_t out_dtype) {
    const int32_t f32 = FLA_NPU_FLOAT32;
    return {{Floats(dtype, {NC, BT, HV, K}), Floats(f32, opp_test::GateDims(NC, HV, BT, Kg), -2.0f, 0.0f),
             Floats(dtype, {NC, HV, K, V}), Floats(dtype, {NC, HV, BT, BT}), Floats(dtype, {NC, HV, BT, V}),
             Floats(out_dtype, {NC, BT, HV, V})},
            {}};
}

CallSpec Call(int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg) {
    return Call(dtype, NC, HV, BT, K, V, Kg, FLA_NPU_FLOAT32);
}

// s and out of a shape that does not match the rest.
int BadShape(int32_t dtype, size_t tensor, std::vector<int64_t> shape, const char* expect) {
    return opp_glue::Refused(opp_test::Reshaped(Call(dtype, 1, 2, 64, 64, 64, 1), tensor, std::move(shape)), expect);
}

const opp_test::Cases kCases = opp_test::ChunkCases(
    opp_glue::Spec(), Call, "v_tiles_bf16",
    {
        {"registration", [] { return opp_glue::Registration(Call(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 96, 1)); }},
        {"refuse_s_shape", [] { return BadShape(FLA_NPU_FLOAT16, 2, {1, 2, 64, 32}, "`s`"); }},
        {"refuse_out_shape", [] { return BadShape(FLA_NPU_BFLOAT16, 5, {1, 2, 64, 48}, "`out`"); }},
        {"out_in_cube_type", [] { return opp_glue::Same(Call(FLA_NPU_FLOAT16, 3, 2, 32, 64, 48, 64, FLA_NPU_FLOAT16)); }},
    });

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
