// Unit tests of the intra-chunk host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "chunk_intra_tiling.h"

using namespace fla_npu::chunk_intra;
namespace soc = fla_npu::soc;

static ChunkIntraProblem Problem(uint32_t NC, uint32_t HV, uint32_t BT, uint32_t K, uint32_t Kg, uint32_t cores) {
    auto p = tiling_test::UnitsProblem<ChunkIntraProblem>(NC, HV, BT, cores);
    p.K = K;
    p.Kg = Kg;
    return p;
}

// Buffers fit; the operand slot holds 32 row-operand rows and 16 (I + 1) column rows per block row;
// BT > 16 adds kInvSlots inverse slots (the merges' slot, then L) and the merges' L1 buffers.
static void CheckBuffers(const ChunkIntraTiling& t, const ChunkIntraProblem& p) {
    const bool kda = p.Kg == p.K;
    CHECK(t.nb * 16 == t.BT);
    uint32_t cols = 0;
    for (uint32_t I = 0; I < t.nb; ++I) {
        CHECK(!kda || ColOffset(I) == cols);
        cols += 16 * (I + 1);
    }
    CHECK(t.row_rows == (kda ? 32 * t.nb : 0) && t.col_rows == (kda ? cols : 0));
    CHECK(t.ws_op_elems == (t.row_rows + t.col_rows) * t.K &&
          t.ws_res_elems == (kda ? 512 * t.nb : (p.qk_l2norm ? 3 : 2) * t.BT * t.BT));  // GDN's q q^T with the norms
    const fla_npu::solve_tril::MergeSizes m = fla_npu::solve_tril::MergeSizesOf(t.BT);
    CHECK(t.ws_inv_elems == (t.nb > 1 ? m.elems + t.BT * t.BT : 0));
    CHECK(t.ws_bytes_per_core == 2 * t.ws_op_elems * 4 + 2 * t.ws_res_elems * 4 + kInvSlots * t.ws_inv_elems * 4);
    CHECK(t.nb == 1 || (t.l0a_bytes_used >= m.l0a && t.l0b_bytes_used >= m.l0b && t.l0c_bytes_used >= m.l0c &&
                        t.l1_bytes_used >= m.l1 + (kda ? t.ws_op_elems * 4 : 2 * t.BT * t.K * t.elem_bytes)));
    CHECK((2ull * t.ws_op_elems * 4) % 32 == 0);  // the result slots start 32-byte aligned
    CHECK(t.piece_elems >= 16 * t.K && t.piece_elems >= 16 * t.BT);
    CHECK(t.ub_bytes_used <= p.ub_bytes);
    CHECK(t.l1_bytes_used <= soc::kA2.l1Bytes && t.l0a_bytes_used <= soc::kL0abBytes && t.l0b_bytes_used <= soc::kL0abBytes &&
          t.l0c_bytes_used <= p.l0c_bytes);
    CHECK(t.safe_span == kSafeSpan && t.aqk_f32 == (p.aqk_f32 ? 1u : 0u) && t.akk_f32 == (p.akk_f32 ? 1u : 0u));
}

static void TestShapes() {
    const uint32_t bts[] = {16, 32, 64}, dims[] = {16, 48, 64, 80, 128, 256};
    for (uint32_t BT : bts)
        for (uint32_t K : dims)
            for (uint32_t Kg : {1u, K})
                for (uint32_t cores : {1u, 3u, 16u})
                    for (bool aqkF32 : {false, true}) {
                        ChunkIntraProblem p = Problem(5, 3, BT, K, Kg, cores);
                        p.aqk_f32 = aqkF32;  // the two outputs' dtypes independent
                        p.akk_f32 = !aqkF32;
                        p.qk_l2norm = aqkF32;  // with and without the norms
                        tiling_test::CheckTiled<ChunkIntraTiling>(p, cores, CheckBuffers);
                    }
    // The production head (BT 64, K 128, KDA): 288 operand rows per slot.
    ChunkIntraTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(Problem(4, 2, 64, 128, 128, 8), &t, &err) == 0 && t.row_rows == 128 && t.col_rows == 160);
    // No chunk: nothing launched.
    CHECK(ComputeTiling(Problem(0, 4, 64, 128, 1, 8), &t, &err) == 0 && t.block_dim == 0 && UserWorkspaceBytes(t) == 0);
}

// The block rows are split over the two AIVs: BT 64 {0, 3} / {1, 2} (equal operand rows), BT 32
// {0} / {1}, BT 16 {0} / {}.
static void TestOwners() {
    CHECK(BlockRowOwner(0) == 0 && BlockRowOwner(1) == 1 && BlockRowOwner(2) == 1 && BlockRowOwner(3) == 0);
    uint32_t rows[2] = {0, 0};
    for (uint32_t I = 0; I < 4; ++I) rows[BlockRowOwner(I)] += 32 + 16 * (I + 1);
    CHECK(rows[0] == rows[1]);
}

static void TestRefusals() {
    ChunkIntraTiling t;
    const char* err = nullptr;
    auto p = Problem(2, 2, 64, 128, 128, 4);
    p.elem_bytes = 4;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "float32") != nullptr);
    p.cube_fp32 = false;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "takes no float32") != nullptr);
    // BT 32 and 64 merge the inverse's blocks with float32 Cube products; BT 16 has no merge.
    auto noFp32 = Problem(2, 2, 32, 128, 1, 4);
    noFp32.cube_fp32 = false;
    CHECK(ComputeTiling(noFp32, &t, &err) != 0 && std::strstr(err, "merges") != nullptr);
    noFp32.BT = 16;
    CHECK(ComputeTiling(noFp32, &t, &err) == 0 && t.ws_inv_elems == 0);
    auto kdaNoFp32 = Problem(2, 2, 16, 128, 128, 4);  // KDA's factored operands reach the Cube in float32
    kdaNoFp32.cube_fp32 = false;
    CHECK(ComputeTiling(kdaNoFp32, &t, &err) != 0 && std::strstr(err, "KDA") != nullptr);
    CHECK(ComputeTiling(Problem(2, 2, 128, 128, 1, 4), &t, &err) != 0 && std::strstr(err, "BT") != nullptr);
    CHECK(ComputeTiling(Problem(2, 2, 48, 128, 1, 4), &t, &err) != 0 && std::strstr(err, "BT") != nullptr);
    CHECK(ComputeTiling(Problem(2, 2, 64, 100, 1, 4), &t, &err) != 0 && std::strstr(err, "multiple of 16") != nullptr);
    CHECK(ComputeTiling(Problem(2, 2, 64, 512, 1, 4), &t, &err) != 0 && std::strstr(err, "multiple of 16") != nullptr);
    CHECK(ComputeTiling(Problem(2, 2, 64, 128, 7, 4), &t, &err) != 0 && std::strstr(err, "g must") != nullptr);
    CHECK(ComputeTiling(Problem(2, 2, 64, 128, 1, 0), &t, &err) != 0);
    auto small = Problem(2, 2, 64, 256, 256, 4);
    small.ub_bytes = 64 * 1024;
    CHECK(ComputeTiling(small, &t, &err) != 0 && std::strstr(err, "UB") != nullptr);
}

static void TestArgs() {
    using tiling_test::Arg;
    using tiling_test::Names;
    // q, k and KDA's g token-major [NC, BT, H, D]; the rest head-major
    const auto q = Arg({3, 64, 2, 128}), b = Arg({3, 2, 64}, FLA_NPU_FLOAT32), g1 = Arg({3, 2, 64, 1}, FLA_NPU_FLOAT32),
               gk = Arg({3, 64, 2, 128}, FLA_NPU_FLOAT32), a = Arg({3, 2, 64, 64}), a32 = Arg({3, 2, 64, 64}, FLA_NPU_FLOAT32);
    const auto dev = tiling_test::Device(8, 196608, 131072);  // a2's UB
    ChunkIntraProblem p;
    // q, k, beta, g, aqk, akk, q_scale, k_scale; qk_l2norm, scale, akk_beta
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call, int64_t l2norm = 0, float scale = 1.0f, int64_t akkBeta = 0) {
        return tiling_test::CheckCall(&p, dev, call, l2norm, scale, akkBeta);
    };
    auto S = [](const fla_npu::ShapeArg& q) { return Arg({q.d[0], q.d[2], q.d[1]}, FLA_NPU_FLOAT32); };  // [NC, HQ, BT]
    CHECK(check({q, q, b, g1, a, Arg({3, 2, 64}), S(q), S(q)}) != nullptr);
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}) == nullptr);
    CHECK(p.NC == 3 && p.HV == 2 && p.BT == 64 && p.K == 128 && p.Kg == 1 && p.core_num == 8 && !p.aqk_f32 && !p.akk_f32);
    CHECK(check({q, q, b, g1, a, a32, S(q), S(q)}) == nullptr && !p.aqk_f32 && p.akk_f32);  // Aqk in T, Akk in float32
    const auto qb = Arg({3, 64, 2, 128}, FLA_NPU_BFLOAT16);
    CHECK(check({qb, qb, b, gk, a32, a32, S(qb), S(qb)}) == nullptr && p.Kg == 128 && p.aqk_f32 &&
          p.akk_f32);  // KDA's G token-major
    CHECK(Names(check({qb, qb, b, Arg({3, 2, 64, 128}, FLA_NPU_FLOAT32), a32, a32, S(qb), S(qb)}), "`g`"));  // not head-major
    const auto badK = Arg({3, 64, 2, 64}), badB = Arg({3, 2, 32}), badG = Arg({3, 2, 64, 7}), badA = Arg({3, 2, 64, 32}),
               badHead = Arg({3, 64, 1, 128});
    CHECK(Names(check({q, badK, b, g1, a, a, S(q), S(q)}), "`k`"));
    CHECK(Names(check({q, q, badB, g1, a, a, S(q), S(q)}), "`beta`"));
    CHECK(Names(check({q, q, b, badG, a, a, S(q), S(q)}), "`g`"));
    CHECK(Names(check({q, q, b, g1, a, badA, S(q), S(q)}), "`aqk` and `akk`"));
    CHECK(Names(check({q, badHead, b, g1, a, a, S(q), S(q)}), "`k`"));
    CHECK(Names(check({q, q, b, Arg({3, 1, 64, 1}, FLA_NPU_FLOAT32), a, a, S(q), S(q)}), "[NC, HV] of `beta`"));
    // GVA: q and k with a number of heads dividing beta's HV; the problem is over the value heads.
    const auto q1 = Arg({3, 64, 1, 128}), b4 = Arg({3, 4, 64}, FLA_NPU_FLOAT32), g4 = Arg({3, 4, 64, 1}, FLA_NPU_FLOAT32),
               a4 = Arg({3, 4, 64, 64});
    CHECK(check({q1, q1, b4, g4, a4, a4, S(q1), S(q1)}) == nullptr && p.HV == 4 && p.groups == 4);
    CHECK(check({q, q, b4, g4, a4, a4, S(q), S(q)}) == nullptr && p.HV == 4 && p.groups == 2);
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}) == nullptr && p.groups == 1);
    CHECK(Names(
        check({Arg({3, 64, 3, 128}), Arg({3, 64, 3, 128}), b4, g4, a4, a4, S(Arg({3, 64, 3, 128})), S(Arg({3, 64, 3, 128}))}),
        "GVA"));
    CHECK(
        Names(check({Arg({2, 64, 2, 128}), Arg({2, 64, 2, 128}), b, g1, a, a, S(Arg({2, 64, 2, 128})), S(Arg({2, 64, 2, 128}))}),
              "GVA"));  // another NC
    const auto q48 = Arg({3, 48, 2, 128}), b48 = Arg({3, 2, 48}), g48 = Arg({3, 2, 48, 1}), a48 = Arg({3, 2, 48, 48});
    CHECK(Names(check({q48, q48, b48, g48, a48, a48, S(q48), S(q48)}), "BT"));
    // The factors of q's and k's rows: outputs [NC, HQ, BT]; qk_l2norm 0 or 1, scale as given.
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}, 1, 0.25f) == nullptr && p.qk_l2norm && p.scale == 0.25f);
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}) == nullptr && !p.qk_l2norm && p.scale == 1.0f);
    CHECK(check({q1, q1, b4, g4, a4, a4, S(q1), S(q1)}, 1) == nullptr && p.groups == 4);  // GVA: q's heads
    CHECK(Names(check({q, q, b, g1, a, a, S(q), S(q)}, 2), "`qk_l2norm`"));
    // Akk's columns times beta: akk_beta 0 or 1.
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}, 0, 1.0f, 1) == nullptr && p.akk_beta);
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}) == nullptr && !p.akk_beta);
    CHECK(Names(check({q, q, b, g1, a, a, S(q), S(q)}, 0, 1.0f, 2), "`akk_beta`"));
    CHECK(Names(check({q, q, b, g1, a, a, S(q), Arg({3, 2, 32}, FLA_NPU_FLOAT32)}), "[NC, HQ, BT]"));
    CHECK(Names(check({q1, q1, b4, g4, a4, a4, S(q), S(q)}), "[NC, HQ, BT]"));  // value heads, not q's
    CHECK(Names(check({q, q, b, g1, a, a, Arg({3, 2, 64, 1}, FLA_NPU_FLOAT32), S(q)}), "3-D"));
    ChunkIntraTiling t;
    const char* err = nullptr;
    CHECK(check({q, q, b, g1, a, a, S(q), S(q)}, 1, 0.5f, 1) == nullptr && ComputeTiling(p, &t, &err) == 0 && t.qk_l2norm == 1 &&
          t.scale == 0.5f && t.akk_beta == 1);
}

int main() {
    TestShapes();
    TestOwners();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("chunk_intra tiling");
}
