// Host tiling of the chunk output kernel; see chunk_output_tiling.h.
#include "chunk_output_tiling.h"

#include <cstring>

#include "../common/chunk_tiling.h"
#include "../common/shape_args.h"

namespace fla_npu {
namespace chunk_output {

namespace {
using chunk_tiling::Pad32;
}  // namespace

int ComputeTiling(const ChunkOutputProblem& p, ChunkOutputTiling* t, const char** err) {
    static const char* kOk = "";
    *err = kOk;
    std::memset(t, 0, sizeof(*t));
    if (const char* bad = chunk_tiling::CheckHeads(p, kMaxHeadDim,
                                                   "float32 Cube inputs are not supported: S and v_new reach the Cube "
                                                   "through a transposing load that exists for 2-byte types only; pass "
                                                   "float16 or bfloat16",
                                                   "e_row must have 1 or K columns"))
        return Refuse(err, bad);
    const uint64_t units = uint64_t(p.NC) * p.HV;
    if (units > 0x7FFFFFFFull || units * p.K * p.V > (1ull << 40)) return Refuse(err, "tensor too large");
    chunk_tiling::CopyHeads(p, t);
    core_split::SplitUnits(static_cast<uint32_t>(units), p.core_num, t);

    // AIV: half of qe's rows, half of S's rows in pieces of at most kVecPieceElems fp32 elements
    // (V <= 256, so a piece has at least 32 rows; K / 2 is a multiple of 8).
    t->rows_per_aiv = p.BT / 2;
    t->s_rows_per_aiv = p.K / 2;
    const uint32_t piece = kVecPieceElems / p.V;
    t->s_piece_rows = piece < t->s_rows_per_aiv ? piece : t->s_rows_per_aiv;
    const uint32_t qElems = t->rows_per_aiv * p.K, sElems = t->s_piece_rows * p.V;
    t->vec_elems = qElems > sElems ? qElems : sElems;
    // q in (T), e_row / S piece in (fp32), the fp32 work tile, the T out tile, one Brcb block per row.
    t->ub_bytes_used =
        static_cast<uint32_t>(Pad32(uint64_t(t->vec_elems) * p.elem_bytes) * 2 + Pad32(uint64_t(t->vec_elems) * 4) * 2 +
                              (p.Kg == 1 ? Pad32(uint64_t(t->rows_per_aiv) * 8 * 4) : 0));
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the V-tile is the widest multiple of 16 whose B operands (T(S) and v_new columns) fit L0B.
    uint32_t vt = kL0abBytes / ((p.K + p.BT) * p.elem_bytes) / 16 * 16;
    t->v_tile = vt < p.V ? vt : p.V;
    t->l1_bytes_used = (p.BT * p.K + p.K * p.V + p.BT * p.BT + p.BT * p.V) * p.elem_bytes;
    t->l0a_bytes_used = (p.BT * p.K + p.BT * p.BT) * p.elem_bytes;
    t->l0b_bytes_used = (p.K + p.BT) * t->v_tile * p.elem_bytes;
    t->l0c_bytes_used = p.BT * t->v_tile * 4;
    if (t->l0a_bytes_used > kL0abBytes || t->l0b_bytes_used > kL0abBytes || t->l0c_bytes_used > p.l0c_bytes)
        return Refuse(err, "L0 too small");
    t->ws_slot_elems = p.BT * p.K + p.K * p.V;
    t->ws_bytes_per_core = 2 * t->ws_slot_elems * p.elem_bytes;
    return 0;
}

// ---- ChunkOutputArgs: the messages are the C entry point's (include/fla_npu/kernels.h) -------------

const char* ChunkOutputArgs::SetRanks(int32_t q, int32_t e_row, int32_t s, int32_t aqk, int32_t v_new, int32_t out) {
    if (q != 4 || e_row != 4 || s != 4 || aqk != 4 || v_new != 4 || out != 4)
        return "`q`, `e_row`, `s`, `aqk`, `v_new` and `out` must be 4-D (chunk layout [NC, HV, ...])";
    return nullptr;
}

const char* ChunkOutputArgs::SetShapes(const int64_t* q, const int64_t* e_row, const int64_t* s, const int64_t* aqk,
                                       const int64_t* v_new, const int64_t* out) {
    const int64_t NC = q[0], HV = q[1], BT = q[2], K = q[3], V = v_new[3];
    const int64_t* all[] = {e_row, s, aqk, v_new, out};
    for (const int64_t* x : all)
        if (x[0] != NC || x[1] != HV) return "`e_row`, `s`, `aqk`, `v_new` and `out` must have the [NC, HV] of `q`";
    if (e_row[2] != BT || (e_row[3] != 1 && e_row[3] != K)) return "`e_row` must be [NC, HV, BT, 1] or [NC, HV, BT, K]";
    if (s[2] != K || s[3] != V) return "`s` must be [NC, HV, K, V]";
    if (aqk[2] != BT || aqk[3] != BT) return "`aqk` must be [NC, HV, BT, BT]";
    if (v_new[2] != BT) return "`v_new` must be [NC, HV, BT, V]";
    if (std::memcmp(out, v_new, sizeof(int64_t) * 4) != 0) return "`out` must have the shape of `v_new`";
    std::memcpy(q_, q, sizeof(q_));
    V_ = V;
    Kg_ = e_row[3];
    return nullptr;
}

const char* ChunkOutputArgs::CheckSizes() const { return chunk_tiling::CheckSizes(q_, V_, kMaxHeadDim); }

ChunkOutputProblem ChunkOutputArgs::Problem(uint32_t elem_bytes, bool cube_fp32, uint32_t core_num, uint32_t ub_bytes,
                                            uint32_t l0c_bytes) const {
    return chunk_tiling::MakeProblem<ChunkOutputProblem>(q_, V_, Kg_, elem_bytes, cube_fp32, core_num, ub_bytes, l0c_bytes);
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, ChunkOutputTiling* tiling) {
    const ShapeArg &q = a[0], &e_row = a[1], &s = a[2], &aqk = a[3], &v_new = a[4], &out = a[5];
    ChunkOutputArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(q.ndim, e_row.ndim, s.ndim, aqk.ndim, v_new.ndim, out.ndim))) return bad;
    if ((bad = checked.SetShapes(q.d, e_row.d, s.d, aqk.d, v_new.d, out.d))) return bad;
    if ((bad = checked.CheckSizes())) return bad;
    // The registration takes float16 / bfloat16 only; the C entry point passes float32 here too (refused
    // by ComputeTiling with its reason).
    const uint32_t elem_bytes = q.dtype == FLA_NPU_FLOAT32 ? 4u : 2u;
    return TilingOrMessage(checked.Problem(elem_bytes, dev.cube_fp32, dev.ai_cores, dev.ub_bytes, dev.l0c_bytes), tiling);
}

}  // namespace chunk_output
}  // namespace fla_npu
