// The operator package's FlaNpuPrefixSharedAttention on the host simulation against the direct entry
// point flaNpuPrefixSharedAttention: the generic OPP-vs-direct test (csrc/opp/tests/opp_test_generic.h)
// on these calls, with the K/V-split tilings checked to take the paths they name. Driven by
// tests/kernels/test_opp_kernel_entries.py.
#include <cmath>

#include "prefix_shared_attention_opp_glue.h"

namespace {

using opp_glue::Refused;
using opp_glue::Tiling;
using opp_test::CallSpec;
using opp_test::Reshaped;

// q [bs, G, len_q, D], k and v [bs, len_kv, D], scale D^-1/2, out like q.
CallSpec With(int32_t dtype, int64_t bs, int64_t G, int64_t len_q, int64_t len_kv, int64_t D) {
    const opp_test::TensorVal q = opp_test::Floats(dtype, {bs, G, len_q, D}), kv = opp_test::Floats(dtype, {bs, len_kv, D});
    opp_test::AttrValue scale;
    scale.f = 1.0f / std::sqrt(static_cast<float>(D));
    return {{q, kv, kv, q}, {scale}};
}

int Same(const CallSpec& c) { return opp_glue::Same(c); }

// K/V splits run as units of their own (merged after SyncAll from the workspace's partial slots) or
// merged on chip.
int SameSplitUnits(const CallSpec& c) {
    return opp_glue::Same(c, [](const void* p) {
        const Tiling& t = *static_cast<const Tiling*>(p);
        OPP_CHECK(t.kv_splits > 1 && t.unit_splits == t.kv_splits && t.partial_slots > 0);
        return 0;
    });
}
int SameSplitOnChip(const CallSpec& c) {
    return opp_glue::Same(c, [](const void* p) {
        const Tiling& t = *static_cast<const Tiling*>(p);
        OPP_CHECK(t.kv_splits > 1 && t.unit_splits == 1 && t.partial_slots == 0);
        return 0;
    });
}

const std::map<std::string, std::function<int()>> kCases = {
    {"registration", [] { return opp_glue::Registration(With(FLA_NPU_BFLOAT16, 2, 4, 3, 200, 128)); }},
    // Decode shapes (one M-tile per batch), K/V tails, D 64 and 128, several M-tiles per batch,
    // len_q = len_kv = 1, no batch at all.
    {"decode_f16", [] { return Same(With(FLA_NPU_FLOAT16, 2, 4, 3, 200, 128)); }},
    {"decode_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 2, 4, 3, 200, 128)); }},
    {"m_tiles_d64_f16", [] { return Same(With(FLA_NPU_FLOAT16, 1, 5, 60, 130, 64)); }},
    {"m_tiles_d64_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 1, 5, 60, 130, 64)); }},
    {"single_row_bf16", [] { return Same(With(FLA_NPU_BFLOAT16, 3, 1, 1, 1, 128)); }},
    {"split_decode_f16", [] { return SameSplitUnits(With(FLA_NPU_FLOAT16, 1, 4, 1, 1000, 128)); }},
    {"split_units_over_cores_bf16", [] { return SameSplitUnits(With(FLA_NPU_BFLOAT16, 2, 3, 1, 2500, 64)); }},
    {"split_on_chip_bf16", [] { return SameSplitOnChip(With(FLA_NPU_BFLOAT16, 2, 64, 4, 600, 64)); }},
    {"empty_f16", [] { return Same(With(FLA_NPU_FLOAT16, 0, 4, 3, 20, 64)); }},
    {"schedule_mode_refused",
     [] { return opp_test::BatchModeRefused(opp_glue::Spec(), With(FLA_NPU_FLOAT16, 1, 4, 1, 1000, 128)); }},
    // Refused by both front ends with the same message.
    {"refuse_head_dim", [] { return Refused(With(FLA_NPU_FLOAT16, 1, 2, 3, 20, 96), "64 or 128"); }},
    {"refuse_kv_batch", [] { return Refused(Reshaped(With(FLA_NPU_FLOAT16, 2, 2, 3, 20, 64), 1, {1, 20, 64}), "batch sizes"); }},
    {"refuse_out_shape", [] { return Refused(Reshaped(With(FLA_NPU_BFLOAT16, 1, 2, 3, 20, 64), 3, {1, 2, 4, 64}), "`out`"); }},
    {"refuse_zero_g", [] { return Refused(With(FLA_NPU_FLOAT16, 1, 0, 3, 20, 64), "positive"); }},
};

}  // namespace

int main(int argc, char** argv) { return opp_test::Main(argc, argv, kCases); }
