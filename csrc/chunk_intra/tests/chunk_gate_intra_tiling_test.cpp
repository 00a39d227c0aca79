// Unit tests of the host tiling of the intra-chunk kernel with the gate in its launch (plain C++, no
// simulation, no CANN).
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "../../gate/gate_cumsum_tiling.h"
#include "chunk_gate_intra_tiling.h"

using namespace fla_npu;
using chunk_intra::ChunkIntraProblem;
using chunk_intra::ChunkIntraTiling;
using tiling_test::Arg;
using tiling_test::Names;
using tiling_test::Numbered;

static ChunkIntraProblem Problem(uint32_t BT, uint32_t K, uint32_t form, bool aLog, bool dtBias) {
    auto p = tiling_test::UnitsProblem<ChunkIntraProblem>(5, 3, BT, 4);
    p.K = p.Kg = K;
    p.gate_in = true;
    p.gate_form = form;
    p.has_a_log = aLog;
    p.has_dt_bias = dtBias;
    p.lower_bound = -5.0f;
    return p;
}

// Every chunk size and K up to 128 fits the UB with the chunk's G and the activation's parameters,
// which add to chunk_intra's own bytes, and the workspace takes the gate slots; the activation's scales
// are the gate cumsum kernel's (scale 1).
static void TestFits() {
    for (uint32_t BT : {16u, 32u, 64u})
        for (uint32_t K : {16u, 64u, 128u})
            for (uint32_t form : {gate::kGateNone, gate::kGateSoftplus, gate::kGateSigmoid}) {
                ChunkIntraProblem p = Problem(BT, K, form, form != gate::kGateNone, true);
                ChunkIntraTiling t, plain;
                const char* err = nullptr;
                CHECK(chunk_intra::ComputeTiling(p, &t, &err) == 0);
                CHECK(t.ub_bytes_used <= p.ub_bytes && t.gate_in == 1 && t.gate_form == form && t.has_dt_bias == 1);
                CHECK(t.has_a_log == (form != gate::kGateNone ? 1u : 0u));
                CHECK(t.coef_scale == gate::CoefScale(form, 1.0f) && t.out_scale == gate::OutScale(form, -5.0f, 1.0f));
                p.gate_in = false;
                CHECK(chunk_intra::ComputeTiling(p, &plain, &err) == 0 && plain.gate_in == 0);
                CHECK(t.ub_bytes_used >= plain.ub_bytes_used + BT * K * 4);
                // BT > 16: two gate slots (each AIV's activated rows for the other) after chunk_intra's
                CHECK(chunk_intra::GateSlotElems(t) == (BT > 16 ? BT * K : 0) && chunk_intra::GateSlotElems(plain) == 0);
                CHECK(t.ws_bytes_per_core == plain.ws_bytes_per_core + 2 * chunk_intra::GateSlotElems(t) * 4);
            }
    // none ignores a given a_log
    ChunkIntraTiling t;
    const char* err = nullptr;
    CHECK(chunk_intra::ComputeTiling(Problem(64, 128, gate::kGateNone, true, false), &t, &err) == 0 && t.has_a_log == 0 &&
          t.has_dt_bias == 0);
}

static void TestRefusals() {
    ChunkIntraTiling t;
    const char* err = nullptr;
    auto gdn = Problem(64, 128, gate::kGateNone, false, false);
    gdn.Kg = 1;
    CHECK(chunk_intra::ComputeTiling(gdn, &t, &err) != 0 && Names(err, "KDA"));
    CHECK(chunk_intra::ComputeTiling(Problem(64, 256, gate::kGateNone, false, false), &t, &err) != 0 && Names(err, "128"));
    CHECK(chunk_intra::ComputeTiling(Problem(64, 128, 3, false, false), &t, &err) != 0 && Names(err, "gate_form"));
    CHECK(chunk_intra::ComputeTiling(Problem(64, 128, gate::kGateSoftplus, false, false), &t, &err) != 0 &&
          Names(err, "gate_form"));
}

// The operator package's hook: chunk_intra's checks, then the gate's tensors and attributes.
static void TestArgs() {
    const int32_t f32 = FLA_NPU_FLOAT32, i32 = FLA_NPU_INT32, bf = FLA_NPU_BFLOAT16;
    const auto q = Arg({3, 64, 2, 128}, bf), b = Arg({3, 2, 64}, f32), g = Arg({3, 64, 2, 128}, bf), a = Arg({3, 2, 64, 64}, bf),
               s = Arg({3, 2, 64}, f32), G = Arg({3, 64, 2, 128}, f32), e = Arg({3, 2, 128}, f32);
    const auto aLog = Numbered({2}, f32), bias = Numbered({2, 128}, f32), len = Arg({3}, i32), none = ShapeArg();
    const auto dev = tiling_test::Device(8, 196608, 131072);  // a2's UB
    ChunkIntraTiling t;
    // q, k, beta, g, a_log, dt_bias, chunk_len, aqk, akk, q_scale, k_scale, gate, e_last
    auto check = [&](std::initializer_list<ShapeArg> c, int64_t form = 1, float lowerBound = 0.0f) {
        return chunk_gate_intra::TilingFromShapes(c.begin(), form, lowerBound, 1, 0.125f, 1, dev, &t);
    };
    CHECK(check({q, q, b, g, aLog, bias, len, a, a, s, s, G, e}) == nullptr);
    CHECK(t.gate_in == 1 && t.gate_form == 1 && t.has_a_log == 1 && t.has_dt_bias == 1 && t.qk_l2norm == 1 && t.akk_beta == 1);
    CHECK(check({q, q, b, g, none, none, len, a, a, s, s, G, e}, 2, -3.0f) == nullptr && t.has_a_log == 0 && t.has_dt_bias == 0 &&
          t.out_scale == -3.0f);
    CHECK(Names(check({q, q, b, g, none, bias, len, a, a, s, s, G, e}), "`a_log`"));  // softplus needs it
    CHECK(Names(check({q, q, b, g, aLog, bias, len, a, a, s, s, G, e}, 3), "`gate_form`"));
    CHECK(Names(check({q, q, b, g, Numbered({3}, f32), bias, len, a, a, s, s, G, e}), "`a_log`"));
    CHECK(Names(check({q, q, b, g, aLog, Numbered({2, 64}, f32), len, a, a, s, s, G, e}), "`dt_bias`"));
    CHECK(Names(check({q, q, b, g, aLog, bias, Arg({2}, i32), a, a, s, s, G, e}), "`chunk_len`"));
    CHECK(Names(check({q, q, b, g, aLog, bias, len, a, a, s, s, Arg({3, 64, 2, 64}, f32), e}), "`gate`"));
    CHECK(Names(check({q, q, b, g, aLog, bias, len, a, a, s, s, G, Arg({3, 2, 64}, f32)}), "`e_last`"));
    CHECK(Names(check({q, q, b, Arg({3, 2, 64, 1}, f32), aLog, bias, len, a, a, s, s, G, e}), "`g`"));  // GDN's gate
    const auto q256 = Arg({3, 64, 2, 256}, bf), g256 = Arg({3, 64, 2, 256}, f32), s256 = Arg({3, 2, 64}, f32);
    CHECK(Names(check({q256, q256, b, g256, aLog, Numbered({2, 256}, f32), len, a, a, s256, s256, g256, Arg({3, 2, 256}, f32)}),
                "128"));
}

int main() {
    TestFits();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("chunk_gate_intra tiling");
}
