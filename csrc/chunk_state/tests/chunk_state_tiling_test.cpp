// Unit tests of the inter-chunk state kernel's host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "chunk_state_tiling.h"
#include "state_test_problem.h"

using namespace fla_npu::chunk_state;
namespace soc = fla_npu::soc;

static ChunkStateProblem Problem(uint32_t N, uint32_t HV, uint32_t NC, uint32_t BT, uint32_t K, uint32_t V, uint32_t Kg,
                                 uint32_t cores, const soc::SocFacts& s = soc::kA2) {
    return state_test::Problem(N, HV, NC, BT, K, V, Kg, cores, s);
}

// Blocks tile V in multiples of 16; buffers fit; rows are whole 32-byte blocks and Brcb repeats.
static void CheckBuffers(const ChunkStateTiling& t, const ChunkStateProblem& p) {
    CHECK(t.v_block % 16 == 0 && t.v_last % 16 == 0 && t.v_last > 0 && t.v_last <= t.v_block && t.v_block <= kMaxVBlock);
    CHECK((t.num_vb - 1) * t.v_block + t.v_last == t.V);
    CHECK(t.num_units == t.N * t.HV * t.num_vb);
    CHECK(t.rows_k * 2 == t.K && t.rows_v * 2 == t.BT && t.rows_k % 8 == 0 && t.rows_v % 8 == 0);
    CHECK(t.spread_rows >= 1 && t.spread_rows * 8 <= t.vec_rows);
    CHECK(t.ub_bytes_used <= p.ub_bytes);
    CHECK(t.n_tile % 16 == 0 && t.n_tile >= 16 && t.n_tile <= t.v_block);
    CHECK(t.l0a_bytes_used <= soc::kL0abBytes && t.l0b_bytes_used <= soc::kL0abBytes && t.l0c_bytes_used <= p.l0c_bytes);
    CHECK(t.l1_bytes_used <= 512u * 1024 - 256);
    CHECK(t.ws_t_elems == 2 * (t.K + t.BT) * t.v_block && t.ws_f_elems == (t.K + t.BT) * t.v_block);
    CHECK(t.ws_bytes_per_core % 32 == 0 && UserWorkspaceBytes(t) == uint64_t(t.block_dim) * t.ws_bytes_per_core);
}

static void TestShapes() {
    const uint32_t bts[] = {16, 32, 64}, dims[] = {16, 48, 80, 128, 256};
    for (const soc::SocFacts* s : {&soc::kA2, &soc::kA5})
        for (uint32_t BT : bts)
            for (uint32_t K : dims)
                for (uint32_t V : dims)
                    for (uint32_t Kg : {1u, K})
                        for (uint32_t N : {1u, 3u})
                            for (uint32_t cores : {1u, 3u, 24u}) {
                                const ChunkStateProblem p = Problem(N, 4, 5, BT, K, V, Kg, cores, *s);
                                ChunkStateTiling t;
                                const char* err = nullptr;
                                CHECK(ComputeTiling(p, &t, &err) == 0);
                                CHECK(t.block_dim == (t.num_units < cores ? t.num_units : cores));
                                CheckBuffers(t, p);
                                tiling_test::CheckCover(t);
                            }
}

// V blocks give every core work without needing the chunk offsets.
static void TestSplit() {
    ChunkStateTiling t;
    const char* err = nullptr;
    // The production shape: 96 heads already cover 24 cores: one block of all V.
    CHECK(ComputeTiling(Problem(1, 96, 128, 64, 128, 128, 128, 24), &t, &err) == 0);
    CHECK(t.num_vb == 1 && t.v_block == 128 && t.num_units == 96 && t.block_dim == 24);
    // 20 cores: 96 x 1, 2 or 4 blocks give the busiest core the same columns: the fewest blocks.
    CHECK(ComputeTiling(Problem(1, 96, 128, 64, 128, 128, 128, 20), &t, &err) == 0 && t.num_vb == 1);
    // Few heads: V split until the busiest core has least to run: 4 heads x 4 blocks of 32 on 16 of
    // 24 cores (8 blocks of 16 would put two units on some core).
    CHECK(ComputeTiling(Problem(1, 4, 16, 64, 128, 128, 128, 24), &t, &err) == 0);
    CHECK(t.num_vb == 4 && t.v_block == 32 && t.block_dim == 16);
    CHECK(ComputeTiling(Problem(1, 1, 16, 64, 128, 128, 128, 24), &t, &err) == 0 && t.num_vb == 8 && t.block_dim == 8);
    // V = 80: blocks of 48 + 32, or 16 each.
    CHECK(ComputeTiling(Problem(2, 1, 4, 32, 64, 80, 1, 3), &t, &err) == 0);
    CHECK((t.num_vb - 1) * t.v_block + t.v_last == 80 && t.num_units == 2 * t.num_vb);
    // K = 256 on a2: UB bounds the block.
    CHECK(ComputeTiling(Problem(1, 1, 4, 64, 256, 256, 256, 1), &t, &err) == 0 && t.v_block < 128 && t.num_vb * t.v_block >= 256);
    // No sequence: nothing launched. No chunk but sequences: units (final = h0) still run.
    CHECK(ComputeTiling(Problem(0, 4, 0, 64, 128, 128, 1, 8), &t, &err) == 0 && t.block_dim == 0 && UserWorkspaceBytes(t) == 0);
    CHECK(ComputeTiling(Problem(2, 4, 0, 64, 128, 128, 1, 8), &t, &err) == 0 && t.block_dim == 8);
}

static void TestRefusals() {
    ChunkStateTiling t;
    const char* err = nullptr;
    ChunkStateProblem p = Problem(1, 1, 1, 64, 128, 128, 128, 1);
    p.elem_bytes = 4;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "2-byte") != nullptr);
    CHECK(ComputeTiling(Problem(1, 1, 1, 48, 128, 128, 1, 1), &t, &err) != 0 && std::strstr(err, "BT") != nullptr);
    CHECK(ComputeTiling(Problem(1, 1, 1, 64, 40, 128, 1, 1), &t, &err) != 0 && std::strstr(err, "multiples of 16") != nullptr);
    CHECK(ComputeTiling(Problem(1, 1, 1, 64, 128, 272, 1, 1), &t, &err) != 0);
    CHECK(ComputeTiling(Problem(1, 1, 1, 64, 128, 128, 3, 1), &t, &err) != 0 && std::strstr(err, "e_last") != nullptr);
    p = Problem(1, 1, 1, 64, 128, 128, 1, 1);
    p.ub_bytes = 16u * 1024;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "UB") != nullptr);
}

static void TestArgs() {
    using tiling_test::Arg;
    using tiling_test::Names;
    constexpr int32_t F32 = FLA_NPU_FLOAT32;
    const auto w = Arg({3, 2, 64, 128}), u = Arg({3, 2, 64, 80}, F32), e = Arg({3, 2, 1}, F32), ek = Arg({3, 2, 128}, F32),
               co = Arg({3}, FLA_NPU_INT32), h = Arg({3, 2, 128, 80}, F32), vn = Arg({3, 2, 64, 80}),
               s = Arg({2, 2, 128, 80}, F32), sv = Arg({2, 2, 80, 128}, F32);
    const fla_npu::ShapeArg none;  // h0 absent
    const auto dev = tiling_test::Device(8, 100000, 131072);
    ChunkStateProblem p;
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call, int64_t v_first = 0) {
        return tiling_test::CheckCall(&p, dev, call, v_first);
    };
    CHECK(check({w, u, w, e, co, none, h, u, s}) == nullptr && check({w, u, w, e, co, s, h, u, s}) == nullptr);
    CHECK(check({w, u, w, Arg({3, 2, 1, 1}), co, none, h, u, s}) != nullptr &&
          check({w, u, w, e, Arg({3, 1}), none, h, u, s}) != nullptr);
    CHECK(check({w, u, w, e, co, Arg({2, 2, 128}), h, u, s}) != nullptr);
    CHECK(Names(check({w, u, w, e, co, none, h, u, s}, 2), "`state_v_first`"));
    CHECK(check({w, u, w, e, co, none, h, vn, s}) == nullptr);
    CHECK(p.N == 2 && p.NC == 3 && p.HV == 2 && p.BT == 64 && p.K == 128 && p.V == 80 && p.Kg == 1 && !p.has_h0);
    CHECK(p.h_f32 && !p.v_new_f32 && p.core_num == 8);
    CHECK(check({w, u, w, ek, co, s, h, u, s}) == nullptr && p.Kg == 128 && p.has_h0);
    CHECK(check({w, u, w, e, co, sv, h, u, sv}, 1) == nullptr && p.state_v_first);
    CHECK(Names(check({w, u, w, e, co, s, h, u, s}, 1), "state_v_first"));
    CHECK(Names(check({w, u, w, e, co, sv, h, u, s}), "`h0`"));
    CHECK(Names(check({w, u, u, e, co, none, h, u, s}), "`kg`"));
    const auto badE = Arg({3, 2, 7}, F32), badU = Arg({3, 2, 32, 80}, F32), badH = Arg({3, 2, 80, 128}, F32),
               badCo = Arg({0}, FLA_NPU_INT32);
    CHECK(Names(check({w, u, w, badE, co, none, h, u, s}), "`e_last`"));
    CHECK(Names(check({w, badU, w, e, co, none, h, badU, s}), "`u`"));
    CHECK(Names(check({w, u, w, e, co, none, badH, u, s}), "`h`"));
    CHECK(Names(check({w, u, w, e, co, none, h, w, s}), "`v_new`"));
    CHECK(Names(check({w, u, w, e, badCo, none, h, u, s}), "`chunk_offsets`"));
    const auto w48 = Arg({3, 2, 48, 128}), u48 = Arg({3, 2, 48, 80}, F32);
    CHECK(Names(check({w48, u48, w48, e, co, none, h, u48, s}), "BT"));
}

int main() {
    TestShapes();
    TestSplit();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("chunk_state tiling");
}
