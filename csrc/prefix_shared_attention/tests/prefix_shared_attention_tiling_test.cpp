// Unit tests of the prefix-shared attention host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>

#include "prefix_shared_attention_tiling.h"

using namespace fla_npu::psa;

static int g_fail = 0;
#define CHECK(c)                                                        \
    do {                                                                \
        if (!(c)) {                                                     \
            std::fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #c); \
            ++g_fail;                                                   \
        }                                                               \
    } while (0)

static PsaProblem Problem(uint32_t bs, uint32_t G, uint32_t Lq, uint32_t Lkv, uint32_t D, uint32_t cores) {
    PsaProblem p;
    p.bs = bs; p.G = G; p.len_q = Lq; p.len_kv = Lkv; p.D = D; p.core_num = cores;
    p.scale = 0.125f;
    p.ub_bytes = 192u * 1024 - 8u * 1024 - 256u;
    return p;
}

// Every unit is taken by exactly one core, in order; the per-core counts differ by at most one.
static void CheckCover(const PsaTiling& t) {
    uint32_t next = 0, lo = 0xFFFFFFFFu, hi = 0;
    for (uint32_t b = 0; b < t.block_dim; ++b) {
        uint32_t first = 0, count = 0;
        CoreUnits(t, b, &first, &count);
        CHECK(first == next);
        next = first + count;
        lo = count < lo ? count : lo;
        hi = count > hi ? count : hi;
    }
    CHECK(next == t.num_units);
    if (t.block_dim > 0) CHECK(hi - lo <= 1 && lo >= 1);
}

int main() {
    const char* err = "";
    PsaTiling t{};

    // Decode: G * Lq <= 128 stacked rows are one M-tile per batch, so K/V are read once per batch.
    CHECK(ComputeTiling(Problem(4, 16, 1, 4096, 128, 4), &t, &err) == 0);
    CHECK(t.rows == 16 && t.m_tiles == 1 && t.num_units == 4 && t.kv_tiles == 32 && t.block_dim == 4);
    CheckCover(t);
    CHECK(ComputeTiling(Problem(1, 64, 2, 16384, 128, 4), &t, &err) == 0);
    CHECK(t.rows == 128 && t.m_tiles == 1 && t.num_units == 1 && t.block_dim == 1);
    CheckCover(t);
    // Prefill: ceil(G * Lq / 128) M-tiles per batch.
    CHECK(ComputeTiling(Problem(2, 8, 64, 2048, 128, 4), &t, &err) == 0);
    CHECK(t.rows == 512 && t.m_tiles == 4 && t.num_units == 8 && t.block_dim == 4 && t.units_per_core == 2 && t.units_rem == 0);
    CheckCover(t);
    CHECK(ComputeTiling(Problem(3, 5, 37, 130, 64, 4), &t, &err) == 0);
    CHECK(t.rows == 185 && t.m_tiles == 2 && t.num_units == 6 && t.kv_tiles == 2 && t.units_per_core == 1 && t.units_rem == 2);
    CheckCover(t);
    // Tails of the row split between the two AIVs and of the K/V tiles.
    uint32_t b = 0, m0 = 0, mLen = 0, r0 = 0, cnt = 0, n0 = 0, nLen = 0;
    UnitRows(t, 1, &b, &m0, &mLen);
    CHECK(b == 0 && m0 == 128 && mLen == 57);
    AivRows(mLen, 0, &r0, &cnt);
    CHECK(r0 == 0 && cnt == 29);
    AivRows(mLen, 1, &r0, &cnt);
    CHECK(r0 == 29 && cnt == 28);
    AivRows(1, 1, &r0, &cnt);
    CHECK(cnt == 0);
    KvTile(t, 1, &n0, &nLen);
    CHECK(n0 == 128 && nLen == 2);
    // Workspace and on-chip budgets.
    CHECK(t.ws_bytes_per_core == 2 * 128 * 128 * 4 + 128 * 128 * 2 + 128 * 64 * 4);
    CHECK(t.ub_bytes_used <= 192u * 1024 - 8u * 1024 - 256u);
    CHECK(ComputeTiling(Problem(1, 1, 1, 1, 128, 4), &t, &err) == 0);
    CHECK(t.l0a_bytes_used <= 64u * 1024 && t.l0b_bytes_used <= 64u * 1024 && t.l0c_bytes_used <= 128u * 1024);
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
    if (g_fail == 0) std::printf("prefix_shared_attention tiling: all checks passed\n");
    return g_fail == 0 ? 0 : 1;
}
