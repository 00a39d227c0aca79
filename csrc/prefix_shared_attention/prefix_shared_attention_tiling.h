// Host tiling of the prefix-shared attention forward kernel (prefix_shared_attention_kernel.h).
// Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/prefix_shared_attention_tiling_test.cpp).
//
// The op: q [bs, G, Lq, D], k, v [bs, Lkv, D]; out[b, g] = softmax(q[b, g] k[b]^T * scale) v[b].
// The G responses of a batch share K/V, so the query rows of a batch are *stacked*: q[b] is read as
// one [M = G * Lq, D] matrix (it is contiguous), and out[b] is written as one [M, D] matrix.
//
// Work split: a *unit* is one M-tile (kBlockM = 128 stacked rows) of one batch and a range of its
// K/V tiles (kBlockN = 128 keys). K/V are read ceil(M / 128) times per batch (exactly once for decode
// shapes, G * Lq <= 128) whatever the split, since every K/V tile belongs to one unit per M-tile.
// Units are numbered batch-major and each AI core (one AIC + two AIVs, mixed 1:2) takes a contiguous
// range. The AIC computes S = Q K^T and O_j = P V on the Cube; AIV `sub` owns rows [r0, r0 + cnt) of
// the M-tile (AivRows: the first half rounded up to 8 rows, so that the two AIVs never write one
// 32-byte block of the per-row partial results) and runs the online softmax in fp32.
//
// K/V splits (flash-decoding). The K/V tiles of a row are cut into *splits* of kv_tiles_per_split
// tiles; each split runs its own online softmax (max m, sum l, unnormalised fp32 accumulator O from
// m = -inf, l = 0, O = 0) and the splits are merged per row in a fixed order, split 0, 1, 2, ...:
//   M' = max(M, m_s), a = exp(M - M'), b = exp(m_s - M'), L = L a + l_s b, O = O a + O_s b;
//   out = O / L  (starting from M = -inf, L = 0, O = 0; with one split that is O_0 / l_0 exactly).
// The split length depends on len_kv only (SplitTiles). Where the splits run is a separate choice,
// `unit_splits`:
//   - 1 ("local"): one unit per M-tile walks all its K/V tiles and merges each split into UB as it
//     ends; nothing extra goes to GM. Used when the M-tiles alone keep the cores busy (prefill).
//   - kv_splits ("distributed"): one unit per (M-tile, split), each writing (m, l, O) of its rows to
//     a GM partial slot; after SyncAll over the AIVs, 8-row *combine groups* spread over all AIVs
//     merge the slots with the same instructions. Used when that shortens the busiest core's work.
// The two run the same vector instructions on the same fp32 values (a slot holds them exactly), so
// the choice never changes a bit of the output and may depend on bs, G, Lq and the core count.
//
// Batch invariance: tile sizes are constants, the K/V tile order and lengths and the split boundaries
// depend only on Lkv, the merge order is fixed, and every operation on a row (Cube dot products,
// vector ops, per-row tree reductions) reads that row only, so a row's output does not depend on bs,
// its batch, G, Lq, its M-tile, the AIV or combine group holding it, where the splits ran or the core
// count.
#ifndef FLA_NPU_PREFIX_SHARED_ATTENTION_TILING_H
#define FLA_NPU_PREFIX_SHARED_ATTENTION_TILING_H

#include "../common/op_tiling.h"

namespace fla_npu {
namespace psa {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

constexpr uint32_t kBlockM = 128;  // stacked query rows per unit (Cube M)
constexpr uint32_t kBlockN = 128;  // keys per K/V tile (Cube N of Q K^T, K of P V)
constexpr uint32_t kRowsPerAiv = kBlockM / 2;
constexpr uint32_t kRowAlign = 8;     // fp32 per-row values in one 32-byte block
constexpr uint32_t kCombineRows = 8;  // rows of one combine group
// At most this many splits per row: all splits of one M-tile run in one wave on the smallest A2/A3
// part (20 AI cores), so a bs = 1 decode keeps up to 20 cores busy.
constexpr uint32_t kMaxKvSplits = 20;
// At least this many K/V tiles per split: a split costs a Q reload, a partial-result write and its
// read back (about a third of one tile's GM traffic), so one-tile splits would cost more than they save.
constexpr uint32_t kMinSplitTiles = 2;

// K/V tiles per split: a function of the K/V tile count (so of len_kv) alone.
FLA_NPU_AICORE inline uint32_t SplitTiles(uint32_t kv_tiles) {
    const uint32_t even = (kv_tiles + kMaxKvSplits - 1) / kMaxKvSplits;
    return even > kMinSplitTiles ? even : kMinSplitTiles;
}

// Passed by value to the kernel (POD; identical layout on host and device).
struct PsaTiling {
    uint32_t bs, G, len_q, len_kv, D;
    uint32_t rows;                // M = G * len_q stacked query rows per batch
    uint32_t m_tiles;             // ceil(M / kBlockM)
    uint32_t kv_tiles;            // ceil(len_kv / kBlockN)
    uint32_t kv_tiles_per_split;  // SplitTiles(kv_tiles)
    uint32_t kv_splits;           // ceil(kv_tiles / kv_tiles_per_split)
    uint32_t unit_splits;         // splits run as units of their own: 1 (local) or kv_splits (distributed)
    uint32_t num_units;           // bs * m_tiles * unit_splits
    uint32_t block_dim;           // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t combine_groups;                // distributed: bs * ceil(M / kCombineRows), merged after SyncAll; else 0
    uint32_t combine_per_aiv, combine_rem;  // combine groups over the 2 * block_dim AIVs
    uint32_t elem_bytes;                    // 2 (fp16 / bf16)
    uint32_t ws_bytes_per_core;             // GM workspace of one AI core (S slots, P, O_j)
    uint32_t ws_s_off, ws_p_off, ws_o_off;  // byte offsets inside a core's workspace
    uint32_t partial_slots;                 // distributed: bs * m_tiles * kv_splits slots after the cores' slices; else 0
    uint32_t partial_slot_bytes;            // one slot: m[kBlockM], l[kBlockM], O[kBlockM][D], fp32
    uint32_t ub_bytes_used;                 // UB carved by an AIV
    uint32_t l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
    float scale;
};

struct PsaProblem {
    uint32_t bs = 0, G = 0, len_q = 0, len_kv = 0, D = 128;
    uint32_t elem_bytes = 2;
    float scale = 0.0f;
    uint32_t core_num = 1;  // AI cores (AIC + 2 AIV) available
    uint32_t ub_bytes = 0;  // usable UB per vector core
    uint32_t l0c_bytes = soc::kA2.l0cBytes;
};

// UB bytes an AIV carves for head dim D and element size e (each buffer rounded to 32 bytes).
uint32_t UbBytesNeeded(uint32_t D, uint32_t elem_bytes);

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const PsaProblem& p, PsaTiling* t, const char** err);

// GM workspace the kernel uses: one slice per launched AI core, then the partial slots.
FLA_NPU_AICORE inline uint64_t PartialBase(const PsaTiling& t) { return uint64_t(t.block_dim) * t.ws_bytes_per_core; }
inline uint64_t UserWorkspaceBytes(const PsaTiling& t) {
    return PartialBase(t) + uint64_t(t.partial_slots) * t.partial_slot_bytes;
}

// The argument checks that depend only on shapes, and the problem they yield, shared by the op's
// two front ends: the C entry point (prefix_shared_attention_host.cpp, which also checks its tensor
// descriptors' dtypes and strides) and the operator package's tiling (TilingFromShapes below, where CANN
// checks dtypes and layout against the op's registration). Each step returns nullptr or a message
// (static, without the op's name); call them in the order declared, the C entry point running its
// descriptor checks between them, so that both front ends report the first defect alike.
class PsaArgs {
  public:
    const char* SetRanks(int32_t q_ndim, int32_t k_ndim, int32_t v_ndim);  // 4, 3, 3
    // q [bs, G, len_q, D], k and v [bs, len_kv, D], D 64 or 128, out the shape of q.
    const char* SetShapes(const int64_t* q, const int64_t* k, const int64_t* v, int32_t out_ndim, const int64_t* out);
    const char* CheckSizes() const;  // every dimension fits 31 bits
    // The problem for ComputeTiling, with the launch facts of the caller's device.
    PsaProblem Problem(float scale, uint32_t core_num, uint32_t ub_bytes, uint32_t l0c_bytes) const;

  private:
    int64_t q_[4] = {0, 0, 0, 0};
    int64_t len_kv_ = 0;
};

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): the checks above on the call's shapes, in the C entry point's order, then
// ComputeTiling. nullptr, or the message of the first defect.
const char* TilingFromShapes(const ShapeArg* t, float scale, const DeviceFacts& dev, PsaTiling* tiling);

// Whether a launch runs the kernel's second phase (the K/V split merge) behind SyncAll: then all its
// blocks must be resident at once (the operator package schedules it in batch mode).
inline bool RunsSyncAll(const PsaTiling& t) { return t.unit_splits != 1; }

// Unit u: batch, first stacked row and row count of its M-tile, its K/V tiles [*j0, *j1).
FLA_NPU_AICORE inline void UnitWork(const PsaTiling& t, uint32_t u, uint32_t* b, uint32_t* m0, uint32_t* mLen, uint32_t* j0,
                                    uint32_t* j1) {
    const uint32_t tile = u / t.unit_splits, split = u % t.unit_splits;
    *b = tile / t.m_tiles;
    *m0 = (tile % t.m_tiles) * kBlockM;
    const uint32_t left = t.rows - *m0;
    *mLen = left < kBlockM ? left : kBlockM;
    *j0 = t.unit_splits == 1 ? 0u : split * t.kv_tiles_per_split;
    const uint32_t end = t.unit_splits == 1 ? t.kv_tiles : *j0 + t.kv_tiles_per_split;
    *j1 = end < t.kv_tiles ? end : t.kv_tiles;
}

// Rows [*r0, *r0 + *cnt) of an M-tile of mLen rows handled by AIV `sub` (0 or 1): AIV 0 takes
// ceil(mLen / 2) rounded up to kRowAlign rows (so AIV 1 starts on a 32-byte block of the per-row
// values), AIV 1 the rest.
FLA_NPU_AICORE inline void AivRows(uint32_t mLen, uint32_t sub, uint32_t* r0, uint32_t* cnt) {
    uint32_t h = ((mLen + 1) / 2 + kRowAlign - 1) / kRowAlign * kRowAlign;
    h = h < mLen ? h : mLen;
    *r0 = sub == 0 ? 0u : h;
    *cnt = sub == 0 ? h : mLen - h;
}

// First combine group and group count of AIV `aiv` (0 .. 2 * block_dim - 1).
FLA_NPU_AICORE inline void AivCombineGroups(const PsaTiling& t, uint32_t aiv, uint32_t* first, uint32_t* count) {
    *count = t.combine_per_aiv + (aiv < t.combine_rem ? 1u : 0u);
    *first = aiv * t.combine_per_aiv + (aiv < t.combine_rem ? aiv : t.combine_rem);
}

// Combine group g: batch, first stacked row (a multiple of 8, so inside one M-tile) and row count.
FLA_NPU_AICORE inline void CombineRows(const PsaTiling& t, uint32_t g, uint32_t* b, uint32_t* row0, uint32_t* cnt) {
    const uint32_t perBatch = (t.rows + kCombineRows - 1) / kCombineRows;
    *b = g / perBatch;
    *row0 = (g % perBatch) * kCombineRows;
    const uint32_t left = t.rows - *row0;
    *cnt = left < kCombineRows ? left : kCombineRows;
}

// Partial slot of (batch b, M-tile mt, split s).
FLA_NPU_AICORE inline uint32_t PartialSlot(const PsaTiling& t, uint32_t b, uint32_t mt, uint32_t s) {
    return (b * t.m_tiles + mt) * t.kv_splits + s;
}

// Keys of K/V tile j: first key and count.
FLA_NPU_AICORE inline void KvTile(const PsaTiling& t, uint32_t j, uint32_t* n0, uint32_t* nLen) {
    *n0 = j * kBlockN;
    const uint32_t left = t.len_kv - *n0;
    *nLen = left < kBlockN ? left : kBlockN;
}

}  // namespace psa
}  // namespace fla_npu

#endif
