// Host tiling of the intra-chunk kernel; see chunk_intra_tiling.h.
#include "chunk_intra_tiling.h"

#include <cstring>

#include "../common/chunk_tiling.h"
#include "../common/shape_args.h"

namespace fla_npu {
namespace chunk_intra {

using chunk_tiling::Pad32;

int ComputeTiling(const ChunkIntraProblem& p, ChunkIntraTiling* t, const char** err) {
    static const char* kOk = "";
    *err = kOk;
    std::memset(t, 0, sizeof(*t));
    if (const char* bad = chunk_tiling::CheckCubeType(p.elem_bytes, p.cube_fp32,
                                                      "float32 Cube inputs are not supported: the scaled q and k reach "
                                                      "the Cube as 16-bit operands (one rounding of the factored products, "
                                                      "loaded without a transposing load for 4-byte types); pass float16 "
                                                      "or bfloat16"))
        return Refuse(err, bad);
    if (!chunk_tiling::ChunkSizeOk(p.BT)) return Refuse(err, "the chunk size BT must be 16, 32 or 64");
    if (!chunk_tiling::HeadDimOk(p.K, kMaxHeadDim)) return Refuse(err, "the head dim K must be a multiple of 16 in [16, 256]");
    if (p.Kg != 1 && p.Kg != p.K) return Refuse(err, "g must have 1 or K columns");
    if (p.core_num == 0) return Refuse(err, "core_num must be positive");
    const uint64_t units = uint64_t(p.NC) * p.HV;
    if (units > 0x7FFFFFFFull || units * p.BT * p.K > (1ull << 40)) return Refuse(err, "tensor too large");

    t->NC = p.NC;
    t->HV = p.HV;
    t->BT = p.BT;
    t->K = p.K;
    t->Kg = p.Kg;
    t->elem_bytes = p.elem_bytes;
    t->out_f32 = p.out_f32 ? 1u : 0u;
    t->safe_span = p.fp16 ? kSafeSpanFp16 : kSafeSpanBf16;
    core_split::SplitUnits(static_cast<uint32_t>(units), p.core_num, t);

    const bool kda = p.Kg == p.K && p.K != 1;
    const uint32_t nb = p.BT / 16, eb = p.elem_bytes;
    t->nb = nb;
    t->row_rows = kda ? 32 * nb : 0;
    t->col_rows = kda ? 8 * nb * (nb + 1) : 0;
    t->ws_op_elems = (t->row_rows + t->col_rows) * p.K;
    t->ws_res_elems = kda ? 512 * nb : 2 * p.BT * p.BT;  // KDA: the diagonal blocks only
    t->ws_bytes_per_core = 2 * t->ws_op_elems * eb + 2 * t->ws_res_elems * 4;

    // AIV: pieces of 16 rows. G blocks (fp32, two), q / k blocks (T, two), the result rows of a block
    // row (32 x BT fp32), operands / cast outputs (T, two), Aqk and L rows (16 x BT fp32, two), four
    // fp32 work pieces, beta, two Brcb tiles, a reduction result, the four select masks, the two
    // reference rows of G, KDA's zero rows (fp32 and T).
    const uint64_t P = 16ull * (p.K > p.BT ? p.K : p.BT);
    t->piece_elems = static_cast<uint32_t>(P);
    t->ub_bytes_used = static_cast<uint32_t>(
        2 * Pad32(P * 4) + 2 * Pad32(P * eb) + Pad32(32ull * p.BT * 4) + 2 * Pad32(P * eb) + 2 * Pad32(16ull * p.BT * 4) +
        4 * Pad32(P * 4) + Pad32(16 * 4) + 2 * Pad32(16 * 8 * 4) + Pad32(16 * 4) + 4 * Pad32(16ull * (kda ? 16 : p.BT) / 8) +
        Pad32(2ull * p.K * 4) + (kda ? Pad32(16ull * p.BT * 4) + Pad32(16ull * p.BT * eb) : 0));
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the operand slot (KDA) or [q; k] (GDN) whole in L1; per Mmad the A rows in L0A, k^T columns
    // in L0B, the fp32 product in L0C.
    const uint32_t aRows = kda ? 32 : 2 * p.BT;
    t->l1_bytes_used = kda ? t->ws_op_elems * eb : 2 * p.BT * p.K * eb;
    t->l0a_bytes_used = aRows * p.K * eb;
    t->l0b_bytes_used = p.K * p.BT * eb;
    t->l0c_bytes_used = aRows * p.BT * 4;
    if (t->l1_bytes_used > p.l1_bytes || t->l0a_bytes_used > kL0abBytes || t->l0b_bytes_used > kL0abBytes ||
        t->l0c_bytes_used > p.l0c_bytes)
        return Refuse(err, "L1 / L0 too small");
    return 0;
}

// ---- ChunkIntraArgs: the messages are the C entry point's (include/fla_npu/kernels.h) -------------

const char* ChunkIntraArgs::SetRanks(int32_t q, int32_t k, int32_t beta, int32_t g, int32_t aqk, int32_t l) {
    if (q != 4 || k != 4 || beta != 3 || g != 4 || aqk != 4 || l != 4)
        return "`beta` must be 3-D and `q`, `k`, `g`, `aqk`, `l` 4-D (chunk layout [NC, HV, ...])";
    return nullptr;
}

const char* ChunkIntraArgs::SetShapes(const int64_t* q, const int64_t* k, const int64_t* beta, const int64_t* g,
                                      const int64_t* aqk, const int64_t* l) {
    const int64_t NC = q[0], HV = q[1], BT = q[2], K = q[3];
    const int64_t* all[] = {k, beta, g, aqk, l};
    for (const int64_t* x : all)
        if (x[0] != NC || x[1] != HV) return "`k`, `beta`, `g`, `aqk` and `l` must have the [NC, HV] of `q`";
    if (std::memcmp(k, q, sizeof(int64_t) * 4) != 0) return "`k` must have the shape of `q`";
    if (beta[2] != BT) return "`beta` must be [NC, HV, BT]";
    if (g[2] != BT || (g[3] != 1 && g[3] != K)) return "`g` must be [NC, HV, BT, 1] or [NC, HV, BT, K]";
    if (aqk[2] != BT || aqk[3] != BT || l[2] != BT || l[3] != BT) return "`aqk` and `l` must be [NC, HV, BT, BT]";
    std::memcpy(q_, q, sizeof(q_));
    Kg_ = g[3];
    return nullptr;
}

const char* ChunkIntraArgs::CheckSizes() const {
    if (q_[2] != 16 && q_[2] != 32 && q_[2] != 64) return "the chunk size BT must be 16, 32 or 64";
    if (q_[3] < 16 || q_[3] > kMaxHeadDim || q_[3] % 16 != 0) return "the head dim K must be a multiple of 16 in [16, 256]";
    if (q_[0] > 0x7FFFFFFF || q_[1] > 0x7FFFFFFF) return "a dimension is too large";
    return nullptr;
}

ChunkIntraProblem ChunkIntraArgs::Problem(uint32_t elem_bytes, bool fp16, bool out_f32, bool cube_fp32, uint32_t core_num,
                                          uint32_t ub_bytes, uint32_t l0c_bytes) const {
    ChunkIntraProblem p;
    chunk_tiling::SetUnits(q_, core_num, ub_bytes, l0c_bytes, &p);
    p.K = static_cast<uint32_t>(q_[3]);
    p.Kg = static_cast<uint32_t>(Kg_);
    p.elem_bytes = elem_bytes;
    p.fp16 = fp16;
    p.out_f32 = out_f32;
    p.cube_fp32 = cube_fp32;
    return p;
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, ChunkIntraTiling* tiling) {
    // q, k, beta, g, aqk, l
    ChunkIntraArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(a[0].ndim, a[1].ndim, a[2].ndim, a[3].ndim, a[4].ndim, a[5].ndim))) return bad;
    if ((bad = checked.SetShapes(a[0].d, a[1].d, a[2].d, a[3].d, a[4].d, a[5].d))) return bad;
    if ((bad = checked.CheckSizes())) return bad;
    // The registration takes float16 / bfloat16 q and k, aqk and l float32 or q's dtype; the C entry
    // point passes float32 q and k here too (refused by ComputeTiling with its reason).
    const uint32_t elem_bytes = a[0].dtype == FLA_NPU_FLOAT32 ? 4u : 2u;
    return TilingOrMessage(checked.Problem(elem_bytes, a[0].dtype == FLA_NPU_FLOAT16, a[4].dtype == FLA_NPU_FLOAT32,
                                           dev.cube_fp32, dev.ai_cores, dev.ub_bytes, dev.l0c_bytes),
                           tiling);
}

}  // namespace chunk_intra
}  // namespace fla_npu
