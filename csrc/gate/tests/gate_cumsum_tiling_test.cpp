// Unit tests of the gate + chunk-local cumsum tiling (plain C++; exit 0 = all passed).
//   gate_cumsum_tiling_test            run every test, print one line per failure
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../common/tests/tiling_test_util.h"
#include "gate_cumsum_tiling.h"

using namespace fla_npu::gate;
namespace soc = fla_npu::soc;

static GateCumsumProblem Problem(uint32_t B, uint32_t T, uint32_t H, uint32_t D, uint32_t bt, uint32_t form, uint32_t bytes,
                                 uint32_t cores = 8, const char* soc = "a2") {
    GateCumsumProblem p;
    p.B = B;
    p.T = T;
    p.H = H;
    p.D = D;
    p.chunk_size = bt;
    p.gate_form = form;
    p.in_elem_bytes = bytes;
    p.has_a_log = form != kGateNone;
    p.has_dt_bias = true;
    p.scale = 2.0f;
    p.lower_bound = -5.0f;
    p.core_num = cores;
    p.ub_bytes = soc::Find(soc)->ubBytes;
    return p;
}

// Every column is covered by exactly one tile; tiles never straddle an unaligned head boundary;
// every unit goes to exactly one core; the UB fits; pitches keep rows 32-byte aligned.
static void CheckInvariants(const GateCumsumProblem& p, const GateCumsumTiling& t) {
    std::vector<int> cover(t.W, 0);
    for (uint32_t tile = 0; tile < t.num_col_tiles; ++tile) {
        uint32_t c0 = 0, w = 0;
        TileColumns(t, tile, &c0, &w);
        CHECK(w >= 1 && w <= t.tile_w && c0 + w <= t.W);
        CHECK(TilePitch(w, p.in_elem_bytes) <= t.max_pitch);
        if (t.heads_per_tile == 0) CHECK(c0 / t.D == (c0 + w - 1) / t.D);  // one head
        else if (t.D > 1) CHECK(c0 % t.D == 0 && w % t.D == 0);            // whole heads
        for (uint32_t c = c0; c < c0 + w && c < t.W; ++c) cover[c]++;
    }
    for (uint32_t c = 0; c < t.W; ++c) CHECK(cover[c] == 1);
    CHECK(t.num_units == t.num_col_tiles * t.num_chunks);
    CHECK(t.block_dim == (t.num_units < p.core_num ? t.num_units : p.core_num));
    std::vector<int> owner(t.num_units, 0);
    uint32_t next = 0;
    for (uint32_t b = 0; b < t.block_dim; ++b) {
        uint32_t first = 0, count = 0;
        CoreUnits(t, b, &first, &count);
        CHECK(first == next);  // contiguous, in order
        CHECK(count == t.units_per_core || count == t.units_per_core + 1);
        for (uint32_t u = first; u < first + count && u < t.num_units; ++u) owner[u]++;
        next = first + count;
    }
    CHECK(next == t.num_units);
    for (uint32_t u = 0; u < t.num_units; ++u) CHECK(owner[u] == 1);
    CHECK(t.ub_bytes_used <= p.ub_bytes);
    CHECK(t.ub_bytes_used == UbBytesNeeded(p, t.max_pitch));
    CHECK((t.max_pitch * p.in_elem_bytes) % kBlockBytes == 0 && (t.max_pitch * 4) % kBlockBytes == 0);
    CHECK(t.max_pitch <= kMaxPitch && t.max_pitch / 8 <= 255);
}

static void TestShapes() {
    const uint32_t Ds[] = {1, 4, 8, 12, 64, 100, 128, 256, 2048, 3000};
    const uint32_t Hs[] = {1, 3, 16, 64, 300};
    const uint32_t BTs[] = {16, 32, 64, 128};
    const uint32_t forms[] = {kGateNone, kGateSoftplus, kGateSigmoid};
    const uint32_t bytes[] = {2, 4};
    const char* socs[] = {"a2", "a5"};
    for (uint32_t D : Ds)
        for (uint32_t H : Hs)
            for (uint32_t bt : BTs)
                for (uint32_t f : forms)
                    for (uint32_t by : bytes)
                        for (const char* soc : socs) {
                            GateCumsumProblem p = Problem(2, 200, H, D, bt, f, by, 5, soc);
                            GateCumsumTiling t;
                            const char* err = nullptr;
                            const int rc = ComputeTiling(p, &t, &err);
                            if (rc != 0) {
                                std::fprintf(stderr, "D=%u H=%u BT=%u form=%u bytes=%u soc=%s: %s\n", D, H, bt, f, by, soc, err);
                                ++tiling_test::failures;
                                continue;
                            }
                            CheckInvariants(p, t);
                            CHECK(t.num_chunks == 2 * ((200 + bt - 1) / bt));
                        }
}

static void TestLayouts() {
    GateCumsumTiling t;
    const char* err = nullptr;
    // GDN: D = 1, all heads in one tile.
    CHECK(ComputeTiling(Problem(1, 100, 32, 1, 64, kGateSoftplus, 2), &t, &err) == 0);
    CHECK(t.num_col_tiles == 1 && t.tile_w == 32 && t.heads_per_tile == 32 && t.max_pitch == 32);
    // KDA head size 128: whole heads per tile with chunk 32; with chunk 64 the double-buffered
    // fp32 tiles and the softplus scratch leave less than 128 columns on a2: two pieces of 64.
    CHECK(ComputeTiling(Problem(1, 100, 4, 128, 32, kGateSoftplus, 2), &t, &err) == 0);
    CHECK(t.heads_per_tile >= 1 && t.tile_w % 128 == 0 && t.tiles_per_head == 0);
    CHECK(ComputeTiling(Problem(1, 100, 4, 128, 64, kGateSoftplus, 2), &t, &err) == 0);
    CHECK(t.heads_per_tile == 0 && t.tiles_per_head == 2 && t.tile_w == 64 && t.num_col_tiles == 8);
    // K not a multiple of 8: pieces of one head.
    CHECK(ComputeTiling(Problem(1, 100, 4, 12, 64, kGateSoftplus, 4), &t, &err) == 0);
    CHECK(t.heads_per_tile == 0 && t.tiles_per_head == 1 && t.tile_w == 12 && t.num_col_tiles == 4 && t.max_pitch == 16);
    // A head wider than a tile: equal pieces.
    CHECK(ComputeTiling(Problem(1, 64, 2, 3000, 128, kGateSoftplus, 4), &t, &err) == 0);
    CHECK(t.heads_per_tile == 0 && t.tiles_per_head >= 3 && t.num_col_tiles == 2 * t.tiles_per_head);
    // The larger a5 UB allows wider tiles for the same problem.
    GateCumsumTiling t5;
    CHECK(ComputeTiling(Problem(1, 64, 2, 3000, 128, kGateSoftplus, 4, 8, "a5"), &t5, &err) == 0);
    CHECK(t5.tile_w >= t.tile_w);
    // Scale folding.
    CHECK(ComputeTiling(Problem(1, 10, 2, 8, 16, kGateSoftplus, 4), &t, &err) == 0);
    CHECK(t.coef_scale == -2.0f && t.out_scale == 1.0f);
    CHECK(ComputeTiling(Problem(1, 10, 2, 8, 16, kGateSigmoid, 4), &t, &err) == 0);
    CHECK(t.coef_scale == -1.0f && t.out_scale == -10.0f);
    CHECK(ComputeTiling(Problem(1, 10, 2, 8, 16, kGateNone, 4), &t, &err) == 0);
    CHECK(t.out_scale == 2.0f && t.has_a_log == 0 && t.num_tmp_bufs == 0);
}

static void TestWorkSplit() {
    GateCumsumTiling t;
    const char* err = nullptr;
    // Fewer units than cores: one unit per core.
    CHECK(ComputeTiling(Problem(1, 100, 2, 1, 64, kGateNone, 4, 40), &t, &err) == 0);
    CHECK(t.num_units == 2 && t.block_dim == 2 && t.units_per_core == 1 && t.units_rem == 0);
    // T = 0: no unit, no core.
    CHECK(ComputeTiling(Problem(3, 0, 2, 1, 64, kGateNone, 4), &t, &err) == 0);
    CHECK(t.num_units == 0 && t.block_dim == 0);
    // Varlen: the chunk count comes from the chunk list.
    GateCumsumProblem p = Problem(1, 300, 4, 16, 32, kGateSigmoid, 2, 3);
    p.varlen = true;
    p.num_chunks = 13;
    CHECK(ComputeTiling(p, &t, &err) == 0);
    CHECK(t.varlen == 1 && t.num_chunks == 13 && t.chunks_per_seq == 0);
    CheckInvariants(p, t);
    CHECK(t.units_per_core * t.block_dim + t.units_rem == t.num_units);
}

static void TestRejects() {
    GateCumsumTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(Problem(1, 10, 2, 8, 48, kGateNone, 4), &t, &err) != 0 && std::strstr(err, "power of two"));
    CHECK(ComputeTiling(Problem(1, 10, 2, 8, 256, kGateNone, 4), &t, &err) != 0);
    CHECK(ComputeTiling(Problem(1, 10, 2, 8, 64, kGateNone, 8), &t, &err) != 0);
    GateCumsumProblem p = Problem(1, 10, 2, 8, 64, kGateSoftplus, 4);
    p.has_a_log = false;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "A_log"));
    p = Problem(1, 10, 2, 8, 64, kGateNone, 4);
    p.ub_bytes = 1024;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "UB"));
    CHECK(soc::Find("a2")->ubBytes == 192u * 1024 - 8u * 1024 - 256u && soc::Find("a5")->ubBytes == 248u * 1024 &&
          soc::Find("x") == nullptr);
}

int main() {
    TestShapes();
    TestLayouts();
    TestWorkSplit();
    TestRejects();
    return tiling_test::Report("gate_cumsum tiling");
}
