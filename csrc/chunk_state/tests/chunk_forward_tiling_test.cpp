// Unit tests of the one-launch forward's host tiling (plain C++, no simulation, no CANN): the fused
// state kernel's tiling with stage 2's workspace regions and buffers, its refusals and shape checks.
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "chunk_forward_tiling.h"
#include "state_test_problem.h"

using namespace fla_npu::chunk_state;
namespace soc = fla_npu::soc;

// The state kernel's problem with the fused output and stage 2 in the launch (GDN: Kg = 1; KDA: Kg = K).
static ChunkStateProblem Problem(uint32_t N, uint32_t HV, uint32_t NC, uint32_t BT, uint32_t K, uint32_t V, uint32_t cores,
                                 const soc::SocFacts& s = soc::kA2, bool kda = false) {
    ChunkStateProblem p = state_test::Problem(N, HV, NC, BT, K, V, kda ? K : 1, cores, s);
    p.fused_output = p.intra = true;
    p.h_f32 = p.v_new_f32 = false;
    return p;
}

// One shape fits: the fused kernel's regions with two more operand rows per slot ([q; k]; KDA: its
// fp32 operand slots instead), two pairs of Aqk and Akk, the result and inverse slots; the buffers
// stage 2 takes on both sides. At K = V = 128 on one core, one V block of 128 columns (a unit reads its
// inputs once).
static void TestShape(const ChunkStateProblem& p, uint32_t cores) {
    const uint32_t BT = p.BT, K = p.K, V = p.V;
    const bool kda = p.Kg != 1;
    ChunkStateTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(p, &t, &err) == 0);
    CHECK(t.intra == 1 && t.nb == BT / 16 && t.fused_output == 1);
    CHECK(t.ub_bytes_used <= p.ub_bytes && t.l0a_bytes_used <= soc::kL0abBytes && t.l0b_bytes_used <= soc::kL0abBytes &&
          t.l0c_bytes_used <= p.l0c_bytes);
    CHECK(t.l1_bytes_used <= 512u * 1024 - 256);
    CHECK(t.ws_t_elems == 2 * K * t.v_block + BT * BT + 3 * (kda ? 3 : 5) * BT * K + 4 * BT * BT);
    const uint32_t inv = BT > 16 ? fla_npu::solve_tril::MergeSizesOf(BT).elems + BT * BT : 0;
    CHECK(t.ws_f_elems == K * t.v_block + 4 * BT * BT + 2 * inv + 6 * BT + (kda ? 3 * KdaOperandElems(BT, K) : 0));
    const CubeBuffers cb = CubeBuffersOf(K, BT, 2, t.n_tile, true, kda);
    CHECK(cb.wa >= BT * K * 2 && cb.b2a >= K * BT * 2 && cb.oc >= BT * BT * 4);
    if (kda) CHECK(cb.wa >= 2 * 16 * K * 4 && cb.b2a >= BT * K * 4 && cb.oc >= 2 * 16 * BT * 4);
    if (K == 128 && V == 128 && cores == 1) CHECK(t.num_vb == 1 && t.v_block == 128);
    tiling_test::CheckCover(t);
}

static void TestShapes() {
    const uint32_t bts[] = {16, 32, 64}, dims[] = {16, 48, 80, 128, 256};
    for (bool kda : {false, true})
        for (const soc::SocFacts* s : {&soc::kA2, &soc::kA5})
            for (uint32_t BT : bts)
                for (uint32_t K : dims)
                    for (uint32_t V : dims)
                        for (uint32_t cores : {1u, 24u})
                            if (!kda || K <= kKdaIntraMaxK) TestShape(Problem(2, 4, 5, BT, K, V, cores, *s, kda), cores);
}

// A per-key decay above K = 128 or without a float32 Cube, and a Cube without float32 (BT > 16: the
// merges) are refused in words.
static void TestRefusals() {
    ChunkStateTiling t;
    const char* err = nullptr;
    ChunkStateProblem kda = Problem(1, 4, 8, 64, 256, 128, 24, soc::kA2, true);
    CHECK(ComputeTiling(kda, &t, &err) != 0 && std::strstr(err, "K up to 128") != nullptr);
    kda = Problem(1, 4, 8, 16, 128, 128, 24, soc::kA2, true);
    kda.cube_fp32 = false;
    CHECK(ComputeTiling(kda, &t, &err) != 0 && std::strstr(err, "KDA") != nullptr);
    ChunkStateProblem half = Problem(1, 4, 8, 64, 128, 128, 24);
    half.cube_fp32 = false;
    CHECK(ComputeTiling(half, &t, &err) != 0 && std::strstr(err, "float32") != nullptr);
    half.BT = 16;
    CHECK(ComputeTiling(half, &t, &err) == 0);
}

static void TestArgs() {
    using tiling_test::Arg;
    using tiling_test::Names;
    constexpr int32_t F32 = FLA_NPU_FLOAT32;
    // NC 3, HV 4, BT 64, K 128, V 80; q and k with 2 heads (GVA)
    const auto q = Arg({3, 64, 2, 128}), v = Arg({3, 64, 4, 80}), g = Arg({3, 4, 64, 1}, F32), b = Arg({3, 4, 64}, F32),
               e = Arg({3, 4, 1}, F32), co = Arg({3}, FLA_NPU_INT32), s = Arg({2, 4, 128, 80}, F32);
    const fla_npu::ShapeArg none;
    const auto dev = tiling_test::Device(8, 100000, 131072);
    ChunkStateTiling t;
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call, int64_t l2 = 1, int64_t v_first = 0) {
        return fla_npu::chunk_forward::TilingFromShapes(call.begin(), l2, 0.25f, v_first, dev, &t);
    };
    CHECK(check({q, q, v, g, b, e, co, none, v, s}) == nullptr);
    CHECK(t.intra == 1 && t.groups == 2 && t.N == 2 && t.Kg == 1 && t.V == 80 && !t.has_h0 && t.qk_l2norm == 1 &&
          t.scale == 0.25f);
    CHECK(check({q, q, v, g, b, e, co, s, v, s}, 0) == nullptr && t.has_h0 && t.qk_l2norm == 0);
    CHECK(Names(check({q, q, v, g, b, e, co, none, v, s}, 2), "`qk_l2norm`"));
    const auto gk = Arg({3, 64, 4, 128}, F32), ek = Arg({3, 4, 128}, F32);        // KDA's per-key decay
    const auto a2 = tiling_test::Device(8, soc::kA2.ubBytes, soc::kA2.l0cBytes);  // KDA's buffers need a2's UB
    CHECK(fla_npu::chunk_forward::TilingFromShapes(
              std::initializer_list<fla_npu::ShapeArg>{q, q, v, gk, b, ek, co, none, v, s}.begin(), 1, 0.25f, 0, a2, &t) ==
              nullptr &&
          t.Kg == 128);
    CHECK(Names(check({q, q, v, g, b, ek, co, none, v, s}), "`e_last`"));
    CHECK(Names(check({q, Arg({3, 64, 4, 128}), v, g, b, e, co, none, v, s}), "`q`"));
    const auto k3 = Arg({3, 64, 3, 128});
    CHECK(Names(check({k3, k3, v, g, b, e, co, none, v, s}), "`k`"));
    CHECK(Names(check({q, q, Arg({3, 32, 4, 80}), g, b, e, co, none, v, s}), "`v`"));
    CHECK(Names(check({q, q, v, g, Arg({3, 4, 32}, F32), e, co, none, v, s}), "`beta`"));
    CHECK(Names(check({q, q, v, g, Arg({3, 4, 64, 1}, F32), e, co, none, v, s}), "`beta`"));
    CHECK(Names(check({q, q, v, g, b, e, co, none, Arg({3, 4, 64, 80}), s}), "`o`"));
    CHECK(Names(check({q, q, v, g, b, e, co, none, v, Arg({2, 4, 80, 128}, F32)}), "`final`"));
    CHECK(Names(check({q, q, v, g, b, e, co, none, v, s}, 1, 2), "`state_v_first`"));
}

int main() {
    TestShapes();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("chunk_forward tiling");
}
