// Host tiling of the gate + chunk-local cumsum kernel; see gate_cumsum_tiling.h.
#include "gate_cumsum_tiling.h"

#include <cstring>
#include "../common/shape_args.h"

namespace fla_npu {
namespace gate {

namespace {
uint64_t RoundUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
uint32_t ElemAlign(uint32_t in_elem_bytes) { return kBlockBytes / in_elem_bytes; }  // 8 (fp32) or 16 (16-bit)
}  // namespace

uint32_t TilePitch(uint32_t w, uint32_t in_elem_bytes) { return static_cast<uint32_t>(RoundUp(w, ElemAlign(in_elem_bytes))); }

uint32_t UbBytesNeeded(const GateCumsumProblem& p, uint32_t max_pitch) {
    const uint64_t rows = p.chunk_size, P = max_pitch;
    uint64_t total = 2 * RoundUp(rows * P * p.in_elem_bytes, kBlockBytes)  // input queue, 2 buffers
                     + 2 * RoundUp(rows * P * 4, kBlockBytes)              // fp32 output queue, 2 buffers
                     + ActivationTmpTiles(p.gate_form) * RoundUp(rows * P * 4, kBlockBytes);
    if (p.has_dt_bias) total += RoundUp(P * 4, kBlockBytes);
    if (p.has_a_log && p.gate_form != kGateNone) total += RoundUp(P * 4, kBlockBytes);
    if (p.gate_form == kGateSigmoid) total += kBlockBytes;  // out_scale, one block every repeat reads
    return total > 0xFFFFFFFFull ? 0xFFFFFFFFu : static_cast<uint32_t>(total);
}

int ComputeTiling(const GateCumsumProblem& p, GateCumsumTiling* t, const char** err) {
    BeginTiling(t, err);
    if (p.H == 0 || p.D == 0) return Refuse(err, "H and D must be positive");
    if (p.chunk_size == 0 || (p.chunk_size & (p.chunk_size - 1)) || p.chunk_size > kMaxChunk)
        return Refuse(err, "chunk_size must be a power of two <= 128");
    if (p.in_elem_bytes != 2 && p.in_elem_bytes != 4) return Refuse(err, "input elements must be 2 or 4 bytes");
    if (p.gate_form > kGateSigmoid) return Refuse(err, "unknown gate form");
    if (p.gate_form == kGateSoftplus && !p.has_a_log) return Refuse(err, "the softplus gate needs A_log");
    if (p.core_num == 0) return Refuse(err, "core_num must be positive");
    const uint64_t W = uint64_t(p.H) * p.D;
    if (W > 0x7FFFFFFFull || uint64_t(p.B) * p.T * W > (1ull << 40)) return Refuse(err, "tensor too large");

    t->B = p.B;
    t->T = p.T;
    t->H = p.H;
    t->D = p.D;
    t->W = static_cast<uint32_t>(W);
    t->chunk_size = p.chunk_size;
    t->varlen = p.varlen ? 1u : 0u;
    t->gate_form = p.gate_form;
    t->has_a_log = (p.has_a_log && p.gate_form != kGateNone) ? 1u : 0u;
    t->has_dt_bias = p.has_dt_bias ? 1u : 0u;
    t->in_elem_bytes = p.in_elem_bytes;
    t->num_tmp_bufs = ActivationTmpTiles(p.gate_form);
    if (p.varlen) {
        t->num_chunks = p.num_chunks;
        t->chunks_per_seq = 0;
    } else {
        t->chunks_per_seq = (p.T + p.chunk_size - 1) / p.chunk_size;
        const uint64_t nc = uint64_t(p.B) * t->chunks_per_seq;
        if (nc > 0x7FFFFFFFull) return Refuse(err, "too many chunks");
        t->num_chunks = static_cast<uint32_t>(nc);
    }
    t->coef_scale = CoefScale(p.gate_form, p.scale);
    t->out_scale = OutScale(p.gate_form, p.lower_bound, p.scale);

    // Widest UB pitch that fits: a multiple of the input's 32-byte element count, capped.
    const uint32_t align = ElemAlign(p.in_elem_bytes);
    uint32_t pmax = kMaxPitch / align * align;
    while (pmax >= align && UbBytesNeeded(p, pmax) > p.ub_bytes) pmax -= align;
    if (pmax < align) return Refuse(err, "the UB is too small for one tile of this chunk size");

    // Column tiles.
    const uint32_t D = p.D, H = p.H;
    if (D == 1 || (D % 8 == 0 && TilePitch(D, p.in_elem_bytes) <= pmax)) {
        uint32_t hpt;
        if (D == 1) {
            hpt = t->W <= pmax ? t->W : pmax;
        } else {
            hpt = pmax / D;  // whole heads; D % 8 == 0 keeps every head 32-byte aligned as fp32
            if (hpt > H) hpt = H;
            while (hpt > 1 && TilePitch(hpt * D, p.in_elem_bytes) > pmax) --hpt;
        }
        t->heads_per_tile = hpt;
        t->tile_w = hpt * D;
        t->tiles_per_head = 0;
        t->num_col_tiles = (t->W + t->tile_w - 1) / t->tile_w;
    } else {
        // Pieces of one head, of equal width (a multiple of the alignment, except a head's last piece).
        uint32_t pieces = (D + pmax - 1) / pmax;
        uint32_t w = TilePitch((D + pieces - 1) / pieces, p.in_elem_bytes);
        if (w > pmax) w = pmax;
        if (w > D) w = D;
        pieces = (D + w - 1) / w;
        t->heads_per_tile = 0;
        t->tiles_per_head = pieces;
        t->tile_w = w;
        t->num_col_tiles = H * pieces;
    }
    t->max_pitch = TilePitch(t->tile_w, p.in_elem_bytes);
    t->ub_bytes_used = UbBytesNeeded(p, t->max_pitch);

    const uint64_t units = uint64_t(t->num_col_tiles) * t->num_chunks;
    if (units > 0x7FFFFFFFull) return Refuse(err, "too many units");
    core_split::SplitUnits(static_cast<uint32_t>(units), p.core_num, t);
    return 0;
}

// ---- GateCumsumArgs: the messages are the C entry point's (include/fla_npu/kernels.h) ----------

const char* GateCumsumArgs::SetG(int32_t ndim, const int64_t* shape) {
    if (ndim != 3 && ndim != 4) return "`g` must be [B, T, H] or [B, T, H, K]";
    g_ndim_ = ndim;
    for (int32_t i = 0; i < ndim; ++i) g_shape_[i] = shape[i];
    return nullptr;
}

const char* GateCumsumArgs::CheckOut(int32_t ndim, const int64_t* shape) const {
    if (ndim != g_ndim_ || std::memcmp(shape, g_shape_, sizeof(int64_t) * g_ndim_) != 0)
        return "`out` must have the shape of `g`";
    return nullptr;
}

const char* GateCumsumArgs::SetGateForm(int64_t gate_form, bool a_log_given) {
    if (gate_form < 0 || gate_form > 2) return "`gate_form` must be 0 (none), 1 (softplus) or 2 (lower-bound sigmoid)";
    for (int32_t i = 0; i < g_ndim_; ++i)
        if (g_shape_[i] > 0x7FFFFFFF) return "`g` is too large";
    p_.B = static_cast<uint32_t>(g_shape_[0]);
    p_.T = static_cast<uint32_t>(g_shape_[1]);
    p_.H = static_cast<uint32_t>(g_shape_[2]);
    p_.D = g_ndim_ == 4 ? static_cast<uint32_t>(g_shape_[3]) : 1u;
    if (gate_form == kGateSoftplus && !a_log_given) return "the softplus gate (gate_form 1) needs `a_log`";
    p_.gate_form = static_cast<uint32_t>(gate_form);
    return nullptr;
}

const char* GateCumsumArgs::SetALog(int64_t numel) {
    if (numel != int64_t(p_.H)) return "`a_log` must have H elements";
    p_.has_a_log = true;
    return nullptr;
}

const char* GateCumsumArgs::SetDtBias(int64_t numel) {
    if (numel != int64_t(p_.H) * p_.D) return "`dt_bias` must have H * K elements (H for [B, T, H] gates)";
    p_.has_dt_bias = true;
    return nullptr;
}

const char* GateCumsumArgs::CheckVarlenPair(bool cu_seqlens_given, bool chunk_indices_given) {
    return cu_seqlens_given != chunk_indices_given ? "`cu_seqlens` and `chunk_indices` go together" : nullptr;
}

const char* GateCumsumArgs::SetVarlenShapes(int32_t cu_ndim, const int64_t* cu_shape, int32_t chunks_ndim,
                                            const int64_t* chunks_shape) {
    if (cu_ndim != 1 || cu_shape[0] < 2) return "`cu_seqlens` must be 1-D with at least 2 entries";
    if (chunks_ndim != 2 || chunks_shape[1] != 2) return "`chunk_indices` must be [NC, 2]";
    num_chunks_ = chunks_shape[0];
    return nullptr;
}

const char* GateCumsumArgs::SetVarlenBatch() {
    if (p_.B != 1) return "the batch size must be 1 when `cu_seqlens` is given";
    if (num_chunks_ > 0x7FFFFFFF) return "too many chunks";
    p_.varlen = true;
    p_.num_chunks = static_cast<uint32_t>(num_chunks_);
    return nullptr;
}

GateCumsumProblem GateCumsumArgs::Problem(int64_t chunk_size, uint32_t in_elem_bytes, float lower_bound, float scale,
                                          uint32_t core_num, uint32_t ub_bytes) const {
    GateCumsumProblem p = p_;
    // Anything outside 1..kMaxChunk is rejected by ComputeTiling: 0 stands for all of it.
    p.chunk_size = chunk_size > 0 && chunk_size <= kMaxChunk ? static_cast<uint32_t>(chunk_size) : 0u;
    p.in_elem_bytes = in_elem_bytes;
    p.lower_bound = lower_bound;
    p.scale = scale;
    p.core_num = core_num;
    p.ub_bytes = ub_bytes;
    return p;
}

const char* TilingFromShapes(const ShapeArg* a, int64_t chunk_size, int64_t gate_form, float lower_bound, float scale,
                             const DeviceFacts& dev, GateCumsumTiling* tiling) {
    const ShapeArg &g = a[0], &a_log = a[1], &dt_bias = a[2], &cu = a[3], &chunks = a[4], &out = a[5];
    if (g.dtype < 0) return "`g` has no tensor description";
    GateCumsumArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetG(g.ndim, g.d))) return bad;
    if ((bad = checked.CheckOut(out.ndim, out.d))) return bad;
    if ((bad = checked.SetGateForm(gate_form, a_log.present()))) return bad;
    if (a_log.present() && checked.UsesALog() && (bad = checked.SetALog(a_log.numel))) return bad;
    if (dt_bias.present() && (bad = checked.SetDtBias(dt_bias.numel))) return bad;
    if ((bad = GateCumsumArgs::CheckVarlenPair(cu.present(), chunks.present()))) return bad;
    if (cu.present()) {
        if ((bad = checked.SetVarlenShapes(cu.ndim, cu.d, chunks.ndim, chunks.d))) return bad;
        if ((bad = checked.SetVarlenBatch())) return bad;
    }
    const uint32_t in_elem_bytes = g.dtype == FLA_NPU_FLOAT32 ? 4u : 2u;
    return TilingOrMessage(checked.Problem(chunk_size, in_elem_bytes, lower_bound, scale, dev.aiv_cores, dev.ub_bytes), tiling);
}

}  // namespace gate
}  // namespace fla_npu
