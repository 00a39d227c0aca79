// Unit tests of the WY kernel's host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "wy_fast_tiling.h"

using namespace fla_npu::wy_fast;
namespace soc = fla_npu::soc;

// Problem(NC, HV, BT, K, V, Kg, cores)
static const auto Problem = tiling_test::HeadsProblem<WyFastProblem>;

// Buffers fit, rows are whole 32-byte blocks (DataCopy) and Brcb repeats (8 rows).
static void CheckBuffers(const WyFastTiling& t, const WyFastProblem& p) {
    CHECK(t.rows_per_aiv * 2 == t.BT && t.rows_per_aiv % 8 == 0);
    CHECK(t.rows_per_aiv * t.K <= t.vec_elems && t.rows_per_aiv * t.V <= t.vec_elems);
    CHECK((t.rows_per_aiv * t.Kg * 4) % 32 == 0 && (t.rows_per_aiv * 4) % 32 == 0);
    CHECK((t.rows_per_aiv * t.K * 2) % 32 == 0 && (t.rows_per_aiv * t.V * 2) % 32 == 0);
    CHECK(t.ub_bytes_used <= p.ub_bytes);
    CHECK(t.n_tile % 16 == 0 && t.n_tile >= 16 && t.n_tile <= (t.K > t.V ? t.K : t.V));
    CHECK(t.l0a_bytes_used <= soc::kL0abBytes && t.l0b_bytes_used <= soc::kL0abBytes && t.l0c_bytes_used <= p.l0c_bytes);
    CHECK(t.l1_bytes_used <= 512u * 1024);
    CHECK(t.ws_slot_elems == t.BT * (t.K + t.V) && t.ws_bytes_per_core == 2 * t.ws_slot_elems * t.elem_bytes);
}

static void TestShapes() {
    tiling_test::CheckChunkShapes<WyFastTiling>(Problem, CheckBuffers);
    // One N-tile holds the widest head (BT <= 64, N <= 256).
    WyFastTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(Problem(4, 2, 64, 256, 128, 256, 8), &t, &err) == 0 && t.n_tile == 256);
    // No chunk: nothing launched.
    CHECK(ComputeTiling(Problem(0, 4, 64, 128, 128, 1, 8), &t, &err) == 0 && t.block_dim == 0 && UserWorkspaceBytes(t) == 0);
}

static void TestRefusals() {
    tiling_test::CheckChunkRefusals<WyFastTiling>(Problem);
    WyFastTiling t;
    const char* err = nullptr;
    WyFastProblem p = Problem(2, 2, 64, 256, 256, 256, 4);
    p.ub_bytes = 64u * 1024;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "UB") != nullptr);
}

static void TestArgs() {
    using tiling_test::Arg;
    using tiling_test::Names;
    // k and v token-major ([NC, BT, H, D]), the rest head-major
    const auto k = Arg({3, 64, 2, 128}), v = Arg({3, 64, 2, 64}), b = Arg({3, 2, 64}, FLA_NPU_FLOAT32), a = Arg({3, 2, 64, 64}),
               e = Arg({3, 2, 64, 1}, FLA_NPU_FLOAT32), ek = Arg({3, 64, 2, 128}, FLA_NPU_FLOAT32),
               w = Arg({3, 2, 64, 128}, FLA_NPU_FLOAT32), u = Arg({3, 2, 64, 64}, FLA_NPU_FLOAT32);
    const auto dev = tiling_test::Device(8, 100000, 131072);
    WyFastProblem p;
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call) { return tiling_test::CheckCall(&p, dev, call); };
    CHECK(check({k, v, Arg({3, 2, 64, 1}), a, e, w, u, w}) != nullptr);
    CHECK(check({k, v, b, a, e, w, u, w}) == nullptr);
    CHECK(p.NC == 3 && p.HV == 2 && p.BT == 64 && p.K == 128 && p.V == 64 && p.Kg == 1 && p.core_num == 8);
    CHECK(check({k, v, b, a, ek, w, u, w}) == nullptr && p.Kg == 128);                         // KDA's G token-major
    CHECK(Names(check({k, v, b, a, Arg({3, 2, 64, 128}, FLA_NPU_FLOAT32), w, u, w}), "`g`"));  // not head-major
    const auto badE = Arg({3, 2, 64, 7}), badB = Arg({3, 2, 32}), badA = Arg({3, 2, 64, 32}), badU = Arg({3, 2, 64, 32}),
               badHead = Arg({3, 64, 1, 64});
    CHECK(Names(check({k, v, b, a, badE, w, u, w}), "`g`"));
    CHECK(Names(check({k, v, badB, a, e, w, u, w}), "`beta`"));
    CHECK(Names(check({k, v, b, badA, e, w, u, w}), "`akk`"));
    CHECK(Names(check({k, v, b, a, e, w, badU, w}), "`u`"));
    CHECK(Names(check({k, v, b, a, e, u, u, w}), "`w`"));
    CHECK(Names(check({k, badHead, b, a, e, w, u, w}), "[NC, HV]"));
    // GVA: k with a number of heads dividing v's HV; w and kg over the value heads.
    CHECK(check({Arg({3, 64, 1, 128}), v, b, a, e, w, u, w}) == nullptr && p.HV == 2 && p.groups == 2);
    CHECK(check({k, v, b, a, e, w, u, w}) == nullptr && p.groups == 1);
    CHECK(Names(check({Arg({3, 64, 3, 128}), v, b, a, e, w, u, w}), "GVA"));
    CHECK(Names(check({Arg({3, 64, 1, 128}), v, b, a, e, Arg({3, 1, 64, 128}, FLA_NPU_FLOAT32), u, w}), "[NC, HV]"));
    const auto k48 = Arg({3, 48, 2, 128}), v48 = Arg({3, 48, 2, 64}), b48 = Arg({3, 2, 48}), a48 = Arg({3, 2, 48, 48}),
               e48 = Arg({3, 2, 48, 1});
    CHECK(Names(check({k48, v48, b48, a48, e48, Arg({3, 2, 48, 128}), Arg({3, 2, 48, 64}), Arg({3, 2, 48, 128})}), "BT"));
}

int main() {
    TestShapes();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("wy_fast tiling");
}
