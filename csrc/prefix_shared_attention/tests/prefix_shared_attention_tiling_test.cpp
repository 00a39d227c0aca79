// Unit tests of the prefix-shared attention host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "prefix_shared_attention_tiling.h"

using namespace fla_npu::psa;
namespace soc = fla_npu::soc;

static PsaProblem Problem(uint32_t bs, uint32_t G, uint32_t Lq, uint32_t Lkv, uint32_t D, uint32_t cores) {
    PsaProblem p;
    p.bs = bs;
    p.G = G;
    p.len_q = Lq;
    p.len_kv = Lkv;
    p.D = D;
    p.core_num = cores;
    p.scale = 0.125f;
    p.ub_bytes = soc::kA2.ubBytes;
    return p;
}

using tiling_test::CheckCover;

// The units of each (batch, M-tile) walk its K/V tiles exactly once, split by split; the combine
// groups (distributed tilings) cover every stacked row once, 8-aligned, inside one M-tile.
static void CheckSplits(const PsaTiling& t) {
    CHECK(t.kv_tiles_per_split == SplitTiles(t.kv_tiles));
    CHECK(t.kv_splits == (t.kv_tiles + t.kv_tiles_per_split - 1) / t.kv_tiles_per_split && t.kv_splits <= kMaxKvSplits);
    CHECK(t.unit_splits == 1 || t.unit_splits == t.kv_splits);
    CHECK(t.num_units == t.bs * t.m_tiles * t.unit_splits);
    uint32_t nextTile = 0, lastTile = 0xFFFFFFFFu;
    for (uint32_t u = 0; u < t.num_units; ++u) {
        uint32_t b = 0, m0 = 0, mLen = 0, j0 = 0, j1 = 0;
        UnitWork(t, u, &b, &m0, &mLen, &j0, &j1);
        const uint32_t tile = b * t.m_tiles + m0 / kBlockM;
        if (tile != lastTile) {
            CHECK(nextTile == 0 || nextTile == t.kv_tiles);
            nextTile = 0;
            lastTile = tile;
        }
        CHECK(j0 == nextTile && j1 > j0 && mLen >= 1 && mLen <= kBlockM);
        if (t.unit_splits > 1) CHECK(j0 % t.kv_tiles_per_split == 0 && j1 - j0 <= t.kv_tiles_per_split);
        nextTile = j1;
    }
    if (t.num_units > 0) CHECK(nextTile == t.kv_tiles);
    const bool distributed = t.unit_splits > 1;
    CHECK(t.partial_slots == (distributed ? t.bs * t.m_tiles * t.kv_splits : 0u));
    CHECK(t.partial_slot_bytes == (2 * kBlockM + kBlockM * t.D) * 4);
    CHECK(UserWorkspaceBytes(t) ==
          uint64_t(t.block_dim) * t.ws_bytes_per_core + uint64_t(t.partial_slots) * t.partial_slot_bytes);
    if (!distributed) {
        CHECK(t.combine_groups == 0);
        return;
    }
    uint32_t next = 0, rows = 0;
    for (uint32_t aiv = 0; aiv < 2 * t.block_dim; ++aiv) {
        uint32_t first = 0, count = 0;
        AivCombineGroups(t, aiv, &first, &count);
        CHECK(first == next);
        next = first + count;
        for (uint32_t g = first; g < first + count; ++g) {
            uint32_t b = 0, row0 = 0, cnt = 0;
            CombineRows(t, g, &b, &row0, &cnt);
            CHECK(b < t.bs && row0 % kCombineRows == 0 && cnt >= 1 && cnt <= kCombineRows && row0 + cnt <= t.rows);
            CHECK(row0 / kBlockM == (row0 + cnt - 1) / kBlockM);
            CHECK(PartialSlot(t, b, row0 / kBlockM, t.kv_splits - 1) < t.partial_slots);
            rows += cnt;
        }
    }
    CHECK(next == t.combine_groups && rows == t.bs * t.rows);
}

int main() {
    const char* err = "";
    PsaTiling t{};

    // Decode: G * Lq <= 128 stacked rows are one M-tile per batch, so K/V are read once per batch.
    CHECK(ComputeTiling(Problem(4, 16, 1, 4096, 128, 4), &t, &err) == 0);
    CHECK(t.rows == 16 && t.m_tiles == 1 && t.num_units == 4 && t.kv_tiles == 32 && t.block_dim == 4);
    CheckCover(t);
    CHECK(t.kv_tiles_per_split == 2 && t.kv_splits == 16 && t.unit_splits == 1);  // 4 units fill 4 cores
    CheckSplits(t);
    CHECK(ComputeTiling(Problem(1, 64, 2, 16384, 128, 4), &t, &err) == 0);
    CHECK(t.rows == 128 && t.m_tiles == 1 && t.kv_tiles == 128 && t.kv_tiles_per_split == 7 && t.kv_splits == 19);
    CHECK(t.unit_splits == 19 && t.num_units == 19 && t.block_dim == 4 && t.partial_slots == 19 && t.combine_groups == 16);
    CheckCover(t);
    CheckSplits(t);
    uint32_t j0 = 0, j1 = 0, b = 0, m0 = 0, mLen = 0;
    UnitWork(t, 18, &b, &m0, &mLen, &j0, &j1);
    CHECK(b == 0 && m0 == 0 && mLen == 128 && j0 == 126 && j1 == 128);  // the last split is short

    // The split length depends on len_kv alone: at most kMaxKvSplits splits, at least 2 tiles each.
    CHECK(SplitTiles(1) == 2 && SplitTiles(2) == 2 && SplitTiles(40) == 2 && SplitTiles(41) == 3 && SplitTiles(64) == 4);
    const uint32_t lens[] = {1, 127, 128, 129, 300, 1000, 4096, 8192, 16383, 16384, 100000};
    const uint32_t shapes[][4] = {{1, 1, 1, 1}, {1, 64, 1, 24}, {4, 16, 1, 20}, {3, 5, 37, 4}, {1, 64, 512, 24}, {2, 8, 64, 7}};
    for (uint32_t len : lens) {
        CHECK(ComputeTiling(Problem(1, 1, 1, len, 128, 1), &t, &err) == 0);
        const uint32_t per = t.kv_tiles_per_split, splits = t.kv_splits;
        CHECK(per == SplitTiles((len + kBlockN - 1) / kBlockN));
        for (const auto& sh : shapes) {
            for (uint32_t D : {64u, 128u}) {
                CHECK(ComputeTiling(Problem(sh[0], sh[1], sh[2], len, D, sh[3]), &t, &err) == 0);
                CHECK(t.kv_tiles_per_split == per && t.kv_splits == splits);
                CheckCover(t);
                CheckSplits(t);
            }
        }
    }

    // The production decode shapes on 20 and 24 AI cores run distributed; the prefill ones with
    // 256 M-tiles per batch stay local (the M-tiles keep every core busy).
    for (uint32_t cores : {20u, 24u}) {
        CHECK(ComputeTiling(Problem(1, 64, 1, 8192, 128, cores), &t, &err) == 0);
        CHECK(t.kv_splits == 16 && t.unit_splits == 16 && t.block_dim == 16);
        CHECK(ComputeTiling(Problem(4, 16, 1, 4096, 128, cores), &t, &err) == 0);
        CHECK(t.kv_splits == 16 && t.unit_splits == 16 && t.block_dim == cores);
        CHECK(ComputeTiling(Problem(1, 64, 2, 16384, 128, cores), &t, &err) == 0);
        CHECK(t.kv_splits == 19 && t.unit_splits == 19 && t.block_dim == 19);
        CHECK(ComputeTiling(Problem(1, 64, 512, 1024, 128, cores), &t, &err) == 0);
        CHECK(t.unit_splits == 1 && t.num_units == 256 && t.partial_slots == 0);
        CHECK(ComputeTiling(Problem(1, 64, 512, 16384, 128, cores), &t, &err) == 0);
        CHECK(t.unit_splits == 1 && t.num_units == 256 && t.partial_slots == 0);
    }
    // Prefill: ceil(G * Lq / 128) M-tiles per batch.
    CHECK(ComputeTiling(Problem(2, 8, 64, 2048, 128, 4), &t, &err) == 0);
    CHECK(t.rows == 512 && t.m_tiles == 4 && t.num_units == 8 && t.block_dim == 4 && t.units_per_core == 2 && t.units_rem == 0);
    CheckCover(t);
    CHECK(ComputeTiling(Problem(3, 5, 37, 130, 64, 4), &t, &err) == 0);
    CHECK(t.rows == 185 && t.m_tiles == 2 && t.num_units == 6 && t.kv_tiles == 2 && t.units_per_core == 1 && t.units_rem == 2);
    CheckCover(t);
    CHECK(t.kv_splits == 1 && t.unit_splits == 1);
    // Tails of the row split between the two AIVs (AIV 1 starts on a multiple of 8) and of the K/V tiles.
    uint32_t r0 = 0, cnt = 0, n0 = 0, nLen = 0;
    UnitWork(t, 1, &b, &m0, &mLen, &j0, &j1);
    CHECK(b == 0 && m0 == 128 && mLen == 57 && j0 == 0 && j1 == 2);
    AivRows(mLen, 0, &r0, &cnt);
    CHECK(r0 == 0 && cnt == 32);
    AivRows(mLen, 1, &r0, &cnt);
    CHECK(r0 == 32 && cnt == 25);
    AivRows(128, 1, &r0, &cnt);
    CHECK(r0 == 64 && cnt == 64);
    AivRows(9, 1, &r0, &cnt);
    CHECK(r0 == 8 && cnt == 1);
    AivRows(1, 0, &r0, &cnt);
    CHECK(r0 == 0 && cnt == 1);
    AivRows(1, 1, &r0, &cnt);
    CHECK(cnt == 0);
    KvTile(t, 1, &n0, &nLen);
    CHECK(n0 == 128 && nLen == 2);
    // Workspace and on-chip budgets.
    CHECK(t.ws_bytes_per_core == 2 * 128 * 128 * 4 + 128 * 128 * 2 + 128 * 64 * 4);
    CHECK(t.ub_bytes_used <= soc::kA2.ubBytes);
    CHECK(ComputeTiling(Problem(1, 1, 1, 1, 128, 4), &t, &err) == 0);
    CHECK(t.l0a_bytes_used <= soc::kA2.l0aBytes && t.l0b_bytes_used <= soc::kA2.l0bBytes &&
          t.l0c_bytes_used <= soc::kA2.l0cBytes);
    CHECK(t.ub_bytes_used == UbBytesNeeded(128, 2));
    // bs == 0: nothing to launch.
    CHECK(ComputeTiling(Problem(0, 4, 3, 10, 128, 4), &t, &err) == 0);
    CHECK(t.num_units == 0 && t.block_dim == 0);
    // Rejections.
    CHECK(ComputeTiling(Problem(1, 4, 3, 10, 96, 4), &t, &err) != 0 && std::strstr(err, "D must be 64 or 128"));
    CHECK(ComputeTiling(Problem(1, 4, 0, 10, 128, 4), &t, &err) != 0 && std::strstr(err, "positive"));
    CHECK(ComputeTiling(Problem(1, 4, 3, 0, 128, 4), &t, &err) != 0);
    PsaProblem p = Problem(1, 4, 3, 10, 128, 4);
    p.elem_bytes = 4;
    CHECK(ComputeTiling(p, &t, &err) != 0);
    p = Problem(1, 4, 3, 10, 128, 0);
    CHECK(ComputeTiling(p, &t, &err) != 0);
    p = Problem(1, 4, 3, 10, 128, 4);
    p.ub_bytes = 64 * 1024;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "UB"));
    return tiling_test::Report("prefix_shared_attention tiling");
}
