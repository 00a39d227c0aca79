// Unit tests of the fused state + output kernel's host tiling (plain C++, no simulation, no CANN):
// the state kernel's tiling with the fused output's buffers, V split and shape checks.
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "chunk_state_output_tiling.h"
#include "state_test_problem.h"

using namespace fla_npu::chunk_state;
namespace soc = fla_npu::soc;

// The state kernel's problem with the fused output (neither h nor v_new).
static ChunkStateProblem Problem(uint32_t N, uint32_t HV, uint32_t NC, uint32_t BT, uint32_t K, uint32_t V, uint32_t Kg,
                                 uint32_t cores, const soc::SocFacts& s = soc::kA2) {
    ChunkStateProblem p = state_test::Problem(N, HV, NC, BT, K, V, Kg, cores, s);
    p.fused_output = true;
    p.h_f32 = p.v_new_f32 = false;
    return p;
}

// Every shape the state kernel takes fits with the fused kernel's buffers: -I, qe, X1 and kg in the
// workspace after S's halves, qe, X1, v's block, Aqk, Akk and -I in L1, Akk and -I, then qe and Aqk over w and
// kg^T in L0A.
static void TestShapes() {
    const uint32_t bts[] = {16, 32, 64}, dims[] = {16, 48, 80, 128, 256};
    for (const soc::SocFacts* s : {&soc::kA2, &soc::kA5})
        for (uint32_t BT : bts)
            for (uint32_t K : dims)
                for (uint32_t V : dims)
                    for (uint32_t Kg : {1u, K})
                        for (uint32_t cores : {1u, 24u})
                            for (bool scaled : {false, true}) {
                                ChunkStateProblem p = Problem(2, 4, 5, BT, K, V, Kg, cores, *s);
                                p.qk_scaled = scaled;  // the row factors' broadcasts in UB
                                ChunkStateTiling t;
                                const char* err = nullptr;
                                CHECK(ComputeTiling(p, &t, &err) == 0);
                                CHECK(t.fused_output == 1 && t.groups == 1);
                                CHECK(t.ub_bytes_used <= p.ub_bytes && t.l0a_bytes_used <= soc::kL0abBytes);
                                CHECK(t.l0a_bytes_used == (K + (K > 2 * BT ? K : 2 * BT)) * BT * 2);
                                CHECK(t.l1_bytes_used <= 512u * 1024 - 256);
                                CHECK(t.ws_t_elems == 2 * K * t.v_block + BT * BT + 2 * 3 * BT * K);
                                CHECK(t.ws_f_elems == K * t.v_block);
                                CHECK((t.num_vb - 1) * t.v_block + t.v_last == V && t.v_block % 16 == 0);
                                tiling_test::CheckCover(t);
                            }
}

// The V split counts the fused kernel's per-unit reads: the production shape keeps one block per
// head, few heads still split (each block re-reads q, k, G, Aqk and Akk), less than the state
// kernel alone.
static void TestSplit() {
    ChunkStateTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(Problem(1, 96, 128, 64, 128, 128, 128, 24), &t, &err) == 0 && t.num_vb == 1 && t.block_dim == 24);
    CHECK(ComputeTiling(Problem(1, 96, 128, 64, 128, 128, 128, 20), &t, &err) == 0 && t.num_vb == 1);
    ChunkStateProblem scaled = Problem(1, 96, 128, 64, 128, 128, 128, 20);  // with q_scale / k_scale: UB still fits 128
    scaled.qk_scaled = true;
    CHECK(ComputeTiling(scaled, &t, &err) == 0 && t.num_vb == 1 && t.v_block == 128 && t.qk_scaled == 1);
    CHECK(ComputeTiling(Problem(1, 4, 16, 64, 128, 128, 128, 24), &t, &err) == 0 && t.num_vb == 4 && t.block_dim == 16);
    ChunkStateProblem alone = Problem(1, 16, 16, 64, 128, 128, 128, 24);
    alone.fused_output = false;
    ChunkStateTiling ta;
    CHECK(ComputeTiling(alone, &ta, &err) == 0 && ComputeTiling(Problem(1, 16, 16, 64, 128, 128, 128, 24), &t, &err) == 0);
    CHECK(t.num_vb <= ta.num_vb);
}

static void TestArgs() {
    using tiling_test::Arg;
    using tiling_test::Names;
    constexpr int32_t F32 = FLA_NPU_FLOAT32;
    // NC 3, HV 4, BT 64, K 128, V 80; q and k with 2 heads (GVA), GDN's gate
    const auto q = Arg({3, 64, 2, 128}), v = Arg({3, 64, 4, 80}), g = Arg({3, 4, 64, 1}, F32), a = Arg({3, 4, 64, 64}),
               e = Arg({3, 4, 1}, F32), co = Arg({3}, FLA_NPU_INT32), s = Arg({2, 4, 128, 80}, F32);
    const fla_npu::ShapeArg none;
    const auto dev = tiling_test::Device(8, 100000, 131072);
    ChunkStateTiling t;
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call, int64_t v_first = 0) {
        return fla_npu::chunk_state_output::TilingFromShapes(call.begin(), v_first, dev, &t);
    };
    CHECK(check({q, q, v, g, a, a, e, co, none, none, none, v, s}) == nullptr);
    CHECK(t.fused_output == 1 && t.groups == 2 && t.N == 2 && t.Kg == 1 && t.V == 80 && !t.has_h0);
    const auto q4 = Arg({3, 64, 4, 128});
    CHECK(check({q4, q4, v, g, a, a, e, co, s, none, none, v, s}) == nullptr && t.groups == 1 && t.has_h0);
    const auto gk = Arg({3, 64, 4, 128}, F32), ek = Arg({3, 4, 128}, F32);  // KDA: token-major G, K columns
    CHECK(check({q, q, v, gk, a, a, ek, co, none, none, none, v, s}) == nullptr && t.Kg == 128);
    CHECK(Names(check({q, q4, v, g, a, a, e, co, none, none, none, v, s}), "`q`"));  // q and k differ
    const auto k3 = Arg({3, 64, 3, 128});
    CHECK(Names(check({k3, k3, v, g, a, a, e, co, none, none, none, v, s}), "`k`"));  // 3 does not divide 4
    CHECK(Names(check({q, q, Arg({3, 32, 4, 80}), g, a, a, e, co, none, none, none, v, s}), "`v`"));
    CHECK(Names(check({q, q, v, Arg({3, 4, 64, 128}, F32), a, a, ek, co, none, none, none, v, s}), "`g`"));  // head-major KDA
    CHECK(Names(check({q, q, v, gk, a, a, e, co, none, none, none, v, s}), "`g`"));                          // Kg of e_last
    CHECK(Names(check({q, q, v, g, Arg({3, 4, 64, 32}), a, e, co, none, none, none, v, s}), "`akk`"));
    CHECK(Names(check({q, q, v, g, a, Arg({3, 4, 64, 32}), e, co, none, none, none, v, s}), "`aqk`"));
    CHECK(Names(check({q, q, v, g, a, a, e, co, none, none, none, Arg({3, 4, 64, 80}), s}), "`o`"));
    CHECK(Names(check({q, q, v, g, a, a, e, co, none, none, none, v, Arg({2, 4, 80, 128}, F32)}), "`final`"));
    CHECK(Names(check({q, q, v, g, a, a, e, co, none, none, none, v, s}, 2), "`state_v_first`"));
    CHECK(Names(check({q, q, v, g, a, a, Arg({3, 4}, F32), co, none, none, none, v, s}), "`e_last`"));
    const auto q1 = Arg({3, 64, 1, 128});
    CHECK(check({q1, q1, v, g, a, a, e, co, none, none, none, v, s}) == nullptr && t.groups == 4);
    // The optional row factors of q and k: [NC, HQ, BT] float32, both or neither.
    const auto f = Arg({3, 2, 64}, F32);
    CHECK(check({q, q, v, g, a, a, e, co, none, f, f, v, s}) == nullptr && t.qk_scaled == 1);
    CHECK(check({q, q, v, g, a, a, e, co, none, none, none, v, s}) == nullptr && t.qk_scaled == 0);
    CHECK(Names(check({q, q, v, g, a, a, e, co, none, f, none, v, s}), "together"));
    CHECK(Names(check({q, q, v, g, a, a, e, co, none, f, Arg({3, 4, 64}, F32), v, s}), "[NC, HQ, BT]"));  // value heads'
}

int main() {
    TestShapes();
    TestSplit();
    TestArgs();
    return tiling_test::Report("chunk_state_output tiling");
}
