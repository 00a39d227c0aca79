// Unit tests of the chunk output host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "chunk_output_tiling.h"

using namespace fla_npu::chunk_output;
namespace soc = fla_npu::soc;

// Problem(NC, HV, BT, K, V, Kg, cores)
static const auto Problem = tiling_test::HeadsProblem<ChunkOutputProblem>;

// Buffers fit and cover what each AIV must produce.
static void CheckBuffers(const ChunkOutputTiling& t, const ChunkOutputProblem& p) {
    CHECK(t.rows_per_aiv * 2 == t.BT);
    CHECK((t.rows_per_aiv * t.Kg * 4) % 32 == 0 && (t.rows_per_aiv * t.K * 2) % 32 == 0);
    CHECK(t.ub_bytes_used <= p.ub_bytes);
    CHECK(t.v_tile % 16 == 0 && t.v_tile >= 16 && t.v_tile <= t.V);
    CHECK(t.l0a_bytes_used <= soc::kL0abBytes && t.l0b_bytes_used <= soc::kL0abBytes && t.l0c_bytes_used <= p.l0c_bytes);
    CHECK(t.l1_bytes_used <= 512u * 1024);
    CHECK(t.ws_slot_elems == t.BT * t.K && t.ws_bytes_per_core == 2 * t.ws_slot_elems * t.elem_bytes);
}

static void TestShapes() {
    tiling_test::CheckChunkShapes<ChunkOutputTiling>(Problem, CheckBuffers);
    // The whole V in one L0 tile for the production head dims; 256 x 256 needs V-tiles.
    ChunkOutputTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(Problem(4, 2, 64, 128, 128, 128, 8), &t, &err) == 0 && t.v_tile == 128);
    CHECK(ComputeTiling(Problem(4, 2, 64, 256, 256, 256, 8), &t, &err) == 0 && t.v_tile == 96);
    // No chunk: nothing launched.
    CHECK(ComputeTiling(Problem(0, 4, 64, 128, 128, 1, 8), &t, &err) == 0 && t.block_dim == 0 && UserWorkspaceBytes(t) == 0);
}

static void TestRefusals() { tiling_test::CheckChunkRefusals<ChunkOutputTiling>(Problem); }

static void TestArgs() {
    using tiling_test::Arg;
    using tiling_test::Names;
    // q and o token-major ([NC, BT, H, D]), the rest head-major
    const auto q = Arg({3, 64, 2, 128}), e = Arg({3, 2, 64, 1}, FLA_NPU_FLOAT32), ek = Arg({3, 64, 2, 128}, FLA_NPU_FLOAT32),
               s = Arg({3, 2, 128, 64}), a = Arg({3, 2, 64, 64}), v = Arg({3, 2, 64, 64}),
               o = Arg({3, 64, 2, 64}, FLA_NPU_FLOAT32);
    const auto dev = tiling_test::Device(8, 100000, 131072);
    ChunkOutputProblem p;
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call) { return tiling_test::CheckCall(&p, dev, call); };
    CHECK(check({q, e, s, a, v, Arg({3, 2, 64}, FLA_NPU_FLOAT32)}) != nullptr);
    CHECK(check({q, e, s, a, v, o}) == nullptr);
    CHECK(p.NC == 3 && p.HV == 2 && p.BT == 64 && p.K == 128 && p.V == 64 && p.Kg == 1 && p.core_num == 8);
    CHECK(check({q, ek, s, a, v, o}) == nullptr && p.Kg == 128);                         // KDA's G token-major
    CHECK(Names(check({q, Arg({3, 2, 64, 128}, FLA_NPU_FLOAT32), s, a, v, o}), "`g`"));  // not head-major
    const auto badE = Arg({3, 2, 64, 7}), badS = Arg({3, 2, 128, 32}), badA = Arg({3, 2, 64, 32}), badOut = Arg({3, 2, 64, 64}),
               badHead = Arg({3, 1, 64, 64});
    CHECK(Names(check({q, badE, s, a, v, o}), "`g`"));
    CHECK(Names(check({q, e, badS, a, v, o}), "`s`"));
    CHECK(Names(check({q, e, s, badA, v, o}), "`aqk`"));
    CHECK(Names(check({q, e, s, a, v, badOut}), "`out`"));
    CHECK(Names(check({q, e, s, a, badHead, o}), "[NC, HV]"));
    // GVA: q with a number of heads dividing g's HV.
    CHECK(check({Arg({3, 64, 1, 128}), e, s, a, v, o}) == nullptr && p.HV == 2 && p.groups == 2);
    CHECK(check({q, e, s, a, v, o}) == nullptr && p.groups == 1);
    CHECK(Names(check({Arg({3, 64, 3, 128}), e, s, a, v, o}), "GVA"));
    const auto q48 = Arg({3, 48, 2, 128}), e48 = Arg({3, 2, 48, 1}), a48 = Arg({3, 2, 48, 48}), v48 = Arg({3, 2, 48, 64});
    CHECK(Names(check({q48, e48, s, a48, v48, Arg({3, 48, 2, 64})}), "BT"));
}

int main() {
    TestShapes();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("chunk_output tiling");
}
