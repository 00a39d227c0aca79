// Unit tests of the host tiling of KDA's chunked forward in one launch (plain C++, no simulation, no
// CANN): chunk_forward's tiling with the gate in the launch.
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "../../gate/gate_cumsum_tiling.h"
#include "chunk_gate_forward_tiling.h"
#include "state_test_problem.h"

using namespace fla_npu;
using chunk_state::ChunkStateProblem;
using chunk_state::ChunkStateTiling;
using tiling_test::Arg;
using tiling_test::Names;
using tiling_test::Numbered;

static ChunkStateProblem Problem(uint32_t BT, uint32_t K, uint32_t V, uint32_t form, bool aLog, const soc::SocFacts& s) {
    ChunkStateProblem p = state_test::Problem(2, 4, 5, BT, K, V, K, 1, s);
    p.fused_output = p.intra = true;
    p.h_f32 = p.v_new_f32 = false;
    p.gate_in = true;
    p.gate_form = form;
    p.has_a_log = aLog;
    p.has_dt_bias = true;
    p.lower_bound = -5.0f;
    return p;
}

// Every chunk size and K up to 128 fits with the activation's parameters; at K = V = 128 one V block
// of 128 columns still (a unit reads its inputs once); the workspace adds the gate's regions; the
// activation's scales are the gate cumsum kernel's (scale 1).
static void TestFits() {
    for (const soc::SocFacts* s : {&soc::kA2, &soc::kA5})
        for (uint32_t BT : {16u, 32u, 64u})
            for (uint32_t K : {16u, 64u, 128u})
                for (uint32_t form : {gate::kGateNone, gate::kGateSoftplus, gate::kGateSigmoid}) {
                    ChunkStateProblem p = Problem(BT, K, 128, form, form != gate::kGateNone, *s);
                    ChunkStateTiling t, plain;
                    const char* err = nullptr;
                    CHECK(chunk_state::ComputeTiling(p, &t, &err) == 0);
                    CHECK(t.ub_bytes_used <= p.ub_bytes && t.gate_in == 1 && t.gate_form == form && t.has_dt_bias == 1);
                    CHECK(t.has_a_log == (form != gate::kGateNone ? 1u : 0u));
                    CHECK(t.coef_scale == gate::CoefScale(form, 1.0f) && t.out_scale == gate::OutScale(form, -5.0f, 1.0f));
                    p.gate_in = false;
                    CHECK(chunk_state::ComputeTiling(p, &plain, &err) == 0 && plain.gate_in == 0);
                    CHECK(t.ws_f_elems == plain.ws_f_elems + chunk_state::GateInElems(BT, K));
                    if (K == 128) CHECK(t.num_vb == 1 && t.v_block == 128);
                }
}

static void TestRefusals() {
    ChunkStateTiling t;
    const char* err = nullptr;
    auto gdn = Problem(64, 128, 128, gate::kGateNone, false, soc::kA2);
    gdn.Kg = 1;
    CHECK(chunk_state::ComputeTiling(gdn, &t, &err) != 0 && Names(err, "KDA"));
    CHECK(chunk_state::ComputeTiling(Problem(64, 128, 128, 3, false, soc::kA2), &t, &err) != 0 && Names(err, "gate_form"));
    CHECK(chunk_state::ComputeTiling(Problem(64, 128, 128, gate::kGateSoftplus, false, soc::kA2), &t, &err) != 0 &&
          Names(err, "gate_form"));
}

// The operator package's hook: chunk_forward's checks, then the gate's tensors and attributes.
static void TestArgs() {
    const int32_t f32 = FLA_NPU_FLOAT32, i32 = FLA_NPU_INT32, bf = FLA_NPU_BFLOAT16;
    // NC 3, HV 4, BT 64, K 128, V 80; q and k with 2 heads (GVA)
    const auto q = Arg({3, 64, 2, 128}, bf), v = Arg({3, 64, 4, 80}, bf), g = Arg({3, 64, 4, 128}, bf), b = Arg({3, 4, 64}, f32),
               co = Arg({3}, i32), s = Arg({2, 4, 128, 80}, f32);
    const auto aLog = Numbered({4}, f32), bias = Numbered({4, 128}, f32), len = Arg({3}, i32), none = ShapeArg();
    const auto dev = tiling_test::Device(8, soc::kA2.ubBytes, soc::kA2.l0cBytes);
    ChunkStateTiling t;
    // q, k, v, g, beta, a_log, dt_bias, chunk_len, chunk_offsets, h0, o, final
    auto check = [&](std::initializer_list<ShapeArg> c, int64_t form = 1, float lowerBound = 0.0f) {
        return chunk_gate_forward::TilingFromShapes(c.begin(), form, lowerBound, 1, 0.125f, 0, dev, &t);
    };
    CHECK(check({q, q, v, g, b, aLog, bias, len, co, none, v, s}) == nullptr);
    CHECK(t.gate_in == 1 && t.gate_form == 1 && t.has_a_log == 1 && t.has_dt_bias == 1 && t.qk_l2norm == 1 && t.Kg == 128 &&
          t.groups == 2 && t.N == 2);
    CHECK(check({q, q, v, g, b, none, none, len, co, s, v, s}, 2, -3.0f) == nullptr && t.has_a_log == 0 && t.has_dt_bias == 0 &&
          t.out_scale == -3.0f && t.has_h0 == 1);
    CHECK(Names(check({q, q, v, g, b, none, bias, len, co, none, v, s}), "`a_log`"));  // softplus needs it
    CHECK(Names(check({q, q, v, g, b, aLog, bias, len, co, none, v, s}, 3), "`gate_form`"));
    CHECK(Names(check({q, q, v, g, b, Numbered({3}, f32), bias, len, co, none, v, s}), "`a_log`"));
    CHECK(Names(check({q, q, v, g, b, aLog, Numbered({4, 64}, f32), len, co, none, v, s}), "`dt_bias`"));
    CHECK(Names(check({q, q, v, g, b, aLog, bias, Arg({2}, i32), co, none, v, s}), "`chunk_len`"));
    CHECK(Names(check({q, q, v, Arg({3, 4, 64, 1}, f32), b, aLog, bias, len, co, none, v, s}), "`g`"));  // GDN's gate
    CHECK(Names(check({q, q, v, g, b, aLog, bias, len, co, none, Arg({3, 64, 4, 64}, bf), s}), "`o`"));
    const auto q256 = Arg({3, 64, 2, 256}, bf), g256 = Arg({3, 64, 4, 256}, bf), s256 = Arg({2, 4, 256, 80}, f32);
    CHECK(Names(check({q256, q256, v, g256, b, aLog, Numbered({4, 256}, f32), len, co, none, v, s256}), "K up to 128"));
}

int main() {
    TestFits();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("chunk_gate_forward tiling");
}
