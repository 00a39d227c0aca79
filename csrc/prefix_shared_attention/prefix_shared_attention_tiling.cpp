// Host tiling of the prefix-shared attention forward kernel; see prefix_shared_attention_tiling.h.
#include "prefix_shared_attention_tiling.h"

#include <cstring>
#include "../common/shape_args.h"

namespace fla_npu {
namespace psa {

uint32_t UbBytesNeeded(uint32_t D, uint32_t elem_bytes) {
    const uint64_t R = kRowsPerAiv, N = kBlockN;
    uint64_t total = Pad32(R * N * 4)             // S tile (fp32), VECIN queue
                     + Pad32(R * N * elem_bytes)  // P tile (T), VECOUT queue
                     + Pad32(R * D * 4)           // O_j = P V tile (fp32), VECIN queue
                     + Pad32(R * D * 4)           // O accumulator (fp32)
                     + Pad32(R * D * elem_bytes)  // output tile (T), VECOUT queue
                     + Pad32(R * 64 * 4)          // half-row scratch for the row reductions
                     + 2 * Pad32(R * 4)           // running max, ping-pong
                     + Pad32(R * 4)               // running sum
                     + 2 * Pad32(R * 4)           // tile row max / row sum, alpha
                     + Pad32(R * 8 * 4)           // per-row broadcast (Brcb)
                     + 32                         // one block of -inf
                     // merging the splits: running O (fp32), running max (ping-pong) and sum,
                     // a second per-row broadcast
                     + Pad32(R * D * 4) + 3 * Pad32(R * 4) + Pad32(R * 8 * 4);
    return static_cast<uint32_t>(total);
}

int ComputeTiling(const PsaProblem& p, PsaTiling* t, const char** err) {
    BeginTiling(t, err);
    if (p.D != 64 && p.D != 128) return Refuse(err, "D must be 64 or 128");
    if (p.elem_bytes != 2) return Refuse(err, "inputs must be 2-byte (fp16 / bf16)");
    if (p.G == 0 || p.len_q == 0 || p.len_kv == 0) return Refuse(err, "G, len_q and len_kv must be positive");
    if (p.core_num == 0) return Refuse(err, "core_num must be positive");
    const uint64_t rows = uint64_t(p.G) * p.len_q;
    if (rows > 0x7FFFFFFFull || p.len_kv > 0x7FFFFFFFu || uint64_t(p.bs) * rows * p.D > (1ull << 40) ||
        uint64_t(p.bs) * p.len_kv * p.D > (1ull << 40))
        return Refuse(err, "tensor too large");
    t->bs = p.bs;
    t->G = p.G;
    t->len_q = p.len_q;
    t->len_kv = p.len_kv;
    t->D = p.D;
    t->rows = static_cast<uint32_t>(rows);
    t->m_tiles = static_cast<uint32_t>((rows + kBlockM - 1) / kBlockM);
    t->kv_tiles = (p.len_kv + kBlockN - 1) / kBlockN;
    const uint64_t units = uint64_t(p.bs) * t->m_tiles;
    if (units > 0x7FFFFFFFull) return Refuse(err, "too many units");
    t->kv_tiles_per_split = SplitTiles(t->kv_tiles);
    t->kv_splits = (t->kv_tiles + t->kv_tiles_per_split - 1) / t->kv_tiles_per_split;
    // Run the splits as units of their own when that shortens the busiest core's queue. Cost in
    // half K/V tiles: a local unit walks 2 * kv_tiles; a split unit 2 * kv_tiles_per_split plus one
    // for its Q reload and partial-result round trip. The numbers are the same either way (see the
    // header), so this may look at bs and the core count.
    const uint64_t localCost = (units + p.core_num - 1) / p.core_num * 2 * t->kv_tiles;
    const uint64_t splitUnits = units * t->kv_splits;
    const uint64_t splitCost = (splitUnits + p.core_num - 1) / p.core_num * (2ull * t->kv_tiles_per_split + 1);
    const uint64_t groups = uint64_t(p.bs) * ((t->rows + kCombineRows - 1) / kCombineRows);
    const bool distribute = t->kv_splits > 1 && splitCost < localCost && splitUnits <= 0x7FFFFFFFull && groups <= 0x7FFFFFFFull;
    t->unit_splits = distribute ? t->kv_splits : 1u;
    core_split::SplitUnits(static_cast<uint32_t>(units * t->unit_splits), p.core_num, t);
    if (distribute) {
        t->partial_slots = static_cast<uint32_t>(splitUnits);
        t->combine_groups = static_cast<uint32_t>(groups);
        t->combine_per_aiv = t->combine_groups / (2 * t->block_dim);
        t->combine_rem = t->combine_groups % (2 * t->block_dim);
    }
    t->partial_slot_bytes = (2 * kBlockM + kBlockM * p.D) * 4;
    t->elem_bytes = p.elem_bytes;
    t->scale = p.scale;

    // GM workspace of one AI core: two S slots (fp32, double-buffered so the Cube computes S_{j+1}
    // while the vector cores turn S_j into P_j), one P slot (T), one O_j slot (fp32).
    const uint32_t sBytes = kBlockM * kBlockN * 4, pBytes = kBlockM * kBlockN * p.elem_bytes, oBytes = kBlockM * p.D * 4;
    t->ws_s_off = 0;
    t->ws_p_off = 2 * sBytes;
    t->ws_o_off = t->ws_p_off + pBytes;
    t->ws_bytes_per_core = t->ws_o_off + oBytes;

    t->ub_bytes_used = UbBytesNeeded(p.D, p.elem_bytes);
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");
    // Cube buffers: L1 holds Q, K, V, P tiles; L0A Q and P; L0B K^T and V; L0C S and O_j (fp32).
    t->l1_bytes_used = (kBlockM * p.D + 2 * kBlockN * p.D + kBlockM * kBlockN) * p.elem_bytes;
    t->l0a_bytes_used = (kBlockM * p.D + kBlockM * kBlockN) * p.elem_bytes;
    t->l0b_bytes_used = 2 * kBlockN * p.D * p.elem_bytes;
    t->l0c_bytes_used = (kBlockM * kBlockN + kBlockM * p.D) * 4;
    return CheckCubeBuffers(*t, p.l0c_bytes, err);
}

// ---- PsaArgs: the messages are the C entry point's (include/fla_npu/kernels.h) -----------------

const char* PsaArgs::SetRanks(int32_t q_ndim, int32_t k_ndim, int32_t v_ndim) {
    if (q_ndim != 4 || k_ndim != 3 || v_ndim != 3) return "`q` must be [bs, G, len_q, D] and `k`, `v` [bs, len_kv, D]";
    return nullptr;
}

const char* PsaArgs::SetShapes(const int64_t* q, const int64_t* k, const int64_t* v, int32_t out_ndim, const int64_t* out) {
    const int64_t bs = q[0], G = q[1], Lq = q[2], D = q[3], Lkv = k[1];
    if (k[0] != bs || v[0] != bs) return "the batch sizes of `q`, `k` and `v` differ";
    if (v[1] != Lkv) return "`k` and `v` have different lengths";
    if (k[2] != D || v[2] != D) return "the head dims of `q`, `k` and `v` differ";
    if (D != 64 && D != 128) return "the head dim D must be 64 or 128";
    if (G < 1 || Lq < 1 || Lkv < 1) return "G, len_q and len_kv must be positive";
    if (out_ndim != 4 || std::memcmp(out, q, sizeof(int64_t) * 4) != 0) return "`out` must have the shape of `q`";
    std::memcpy(q_, q, sizeof(q_));
    len_kv_ = Lkv;
    return nullptr;
}

const char* PsaArgs::CheckSizes() const {
    if (q_[0] > 0x7FFFFFFF || q_[1] > 0x7FFFFFFF || q_[2] > 0x7FFFFFFF || len_kv_ > 0x7FFFFFFF) return "a dimension is too large";
    return nullptr;
}

PsaProblem PsaArgs::Problem(float scale, uint32_t core_num, uint32_t ub_bytes, uint32_t l0c_bytes) const {
    PsaProblem p;
    p.bs = static_cast<uint32_t>(q_[0]);
    p.G = static_cast<uint32_t>(q_[1]);
    p.len_q = static_cast<uint32_t>(q_[2]);
    p.len_kv = static_cast<uint32_t>(len_kv_);
    p.D = static_cast<uint32_t>(q_[3]);
    p.elem_bytes = 2;  // fp16 / bf16: checked by each front end
    p.scale = scale;
    p.core_num = core_num;
    p.ub_bytes = ub_bytes;
    p.l0c_bytes = l0c_bytes;
    return p;
}

const char* TilingFromShapes(const ShapeArg* a, float scale, const DeviceFacts& dev, PsaTiling* tiling) {
    const ShapeArg &q = a[0], &k = a[1], &v = a[2], &out = a[3];
    PsaArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q.ndim, k.ndim, v.ndim))) return bad;
    if ((bad = checked.SetShapes(q.d, k.d, v.d, out.ndim, out.d))) return bad;
    if ((bad = checked.CheckSizes())) return bad;
    return TilingOrMessage(checked.Problem(scale, dev.ai_cores, dev.ub_bytes, dev.l0c_bytes), tiling);
}

}  // namespace psa
}  // namespace fla_npu
