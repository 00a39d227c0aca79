// Host tiling of the WY kernel; see wy_fast_tiling.h.
#include "wy_fast_tiling.h"

#include <cstring>

#include "../common/chunk_tiling.h"
#include "../common/shape_args.h"

namespace fla_npu {
namespace wy_fast {

namespace {
using chunk_tiling::Pad32;
}  // namespace

int ComputeTiling(const WyFastProblem& p, WyFastTiling* t, const char** err) {
    static const char* kOk = "";
    *err = kOk;
    std::memset(t, 0, sizeof(*t));
    if (const char* bad = chunk_tiling::CheckHeads(p, kMaxHeadDim,
                                                   "float32 Cube inputs are not supported: beta * k * e_row and beta * v "
                                                   "reach the Cube through a transposing load that exists for 2-byte types "
                                                   "only; pass float16 or bfloat16",
                                                   "e_row and e_tail must have 1 or K columns"))
        return Refuse(err, bad);
    const uint64_t units = uint64_t(p.NC) * p.HV;
    if (units > 0x7FFFFFFFull || units * p.BT * (p.K > p.V ? p.K : p.V) > (1ull << 40)) return Refuse(err, "tensor too large");
    chunk_tiling::CopyHeads(p, t);
    core_split::SplitUnits(static_cast<uint32_t>(units), p.core_num, t);

    // AIV: half of the rows, whole (at most 32 x 256 = 8192 elements: no pieces needed).
    t->rows_per_aiv = p.BT / 2;
    t->vec_elems = t->rows_per_aiv * (p.K > p.V ? p.K : p.V);
    // k / v in and X out (T); e_row / e_tail in, the fp32 k / v, the fp32 scaled rows and kg out
    // (fp32); beta and the GDN row factor; two Brcb blocks per row (beta, the row factor).
    const uint64_t rows = t->rows_per_aiv;
    t->ub_bytes_used =
        static_cast<uint32_t>(Pad32(uint64_t(t->vec_elems) * p.elem_bytes) * 2 + Pad32(uint64_t(t->vec_elems) * 4) * 4 +
                              Pad32(rows * 4) * 2 + Pad32(rows * 8 * 4) * 2);
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the N-tile is the widest multiple of 16 whose B operand (BT rows) fits L0B and whose fp32
    // result fits L0C (with BT <= 64 and N <= 256 that is all of N).
    const uint32_t N = p.K > p.V ? p.K : p.V;
    uint32_t nt = kL0abBytes / (p.BT * p.elem_bytes) / 16 * 16;
    const uint32_t ntC = p.l0c_bytes / (p.BT * 4) / 16 * 16;
    nt = ntC < nt ? ntC : nt;
    t->n_tile = nt < N ? nt : N;
    t->l1_bytes_used = (p.BT * p.K + p.BT * p.V + p.BT * p.BT) * p.elem_bytes;
    t->l0a_bytes_used = p.BT * p.BT * p.elem_bytes;
    t->l0b_bytes_used = p.BT * t->n_tile * p.elem_bytes;
    t->l0c_bytes_used = p.BT * t->n_tile * 4;
    if (t->n_tile < 16 || t->l0a_bytes_used > kL0abBytes || t->l0b_bytes_used > kL0abBytes || t->l0c_bytes_used > p.l0c_bytes)
        return Refuse(err, "L0 too small");
    t->ws_slot_elems = p.BT * (p.K + p.V);
    t->ws_bytes_per_core = 2 * t->ws_slot_elems * p.elem_bytes;
    return 0;
}

// ---- WyFastArgs: the messages are the C entry point's (include/fla_npu/kernels.h) ---------------

const char* WyFastArgs::SetRanks(int32_t k, int32_t v, int32_t beta, int32_t akk, int32_t e_row, int32_t e_tail, int32_t w,
                                 int32_t u, int32_t kg) {
    if (k != 4 || v != 4 || beta != 3 || akk != 4 || e_row != 4 || e_tail != 4 || w != 4 || u != 4 || kg != 4)
        return "`beta` must be 3-D and `k`, `v`, `akk`, `e_row`, `e_tail`, `w`, `u`, `kg` 4-D (chunk layout [NC, HV, ...])";
    return nullptr;
}

const char* WyFastArgs::SetShapes(const int64_t* k, const int64_t* v, const int64_t* beta, const int64_t* akk,
                                  const int64_t* e_row, const int64_t* e_tail, const int64_t* w, const int64_t* u,
                                  const int64_t* kg) {
    const int64_t NC = k[0], HV = k[1], BT = k[2], K = k[3], V = v[3];
    const int64_t* all[] = {v, beta, akk, e_row, e_tail, w, u, kg};
    for (const int64_t* x : all)
        if (x[0] != NC || x[1] != HV)
            return "`v`, `beta`, `akk`, `e_row`, `e_tail`, `w`, `u` and `kg` must have the [NC, HV] of `k`";
    if (v[2] != BT) return "`v` must be [NC, HV, BT, V]";
    if (beta[2] != BT) return "`beta` must be [NC, HV, BT]";
    if (akk[2] != BT || akk[3] != BT) return "`akk` must be [NC, HV, BT, BT]";
    if (e_row[2] != BT || (e_row[3] != 1 && e_row[3] != K) || std::memcmp(e_row, e_tail, sizeof(int64_t) * 4) != 0)
        return "`e_row` and `e_tail` must both be [NC, HV, BT, 1] or [NC, HV, BT, K]";
    if (std::memcmp(w, k, sizeof(int64_t) * 4) != 0 || std::memcmp(kg, k, sizeof(int64_t) * 4) != 0)
        return "`w` and `kg` must have the shape of `k`";
    if (std::memcmp(u, v, sizeof(int64_t) * 4) != 0) return "`u` must have the shape of `v`";
    std::memcpy(k_, k, sizeof(k_));
    V_ = V;
    Kg_ = e_row[3];
    return nullptr;
}

const char* WyFastArgs::CheckSizes() const { return chunk_tiling::CheckSizes(k_, V_, kMaxHeadDim); }

WyFastProblem WyFastArgs::Problem(uint32_t elem_bytes, bool cube_fp32, uint32_t core_num, uint32_t ub_bytes,
                                  uint32_t l0c_bytes) const {
    return chunk_tiling::MakeProblem<WyFastProblem>(k_, V_, Kg_, elem_bytes, cube_fp32, core_num, ub_bytes, l0c_bytes);
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, WyFastTiling* tiling) {
    // k, v, beta, akk, e_row, e_tail, w, u, kg
    WyFastArgs checked;
    const char* bad = nullptr;
    if ((bad =
             checked.SetRanks(a[0].ndim, a[1].ndim, a[2].ndim, a[3].ndim, a[4].ndim, a[5].ndim, a[6].ndim, a[7].ndim, a[8].ndim)))
        return bad;
    if ((bad = checked.SetShapes(a[0].d, a[1].d, a[2].d, a[3].d, a[4].d, a[5].d, a[6].d, a[7].d, a[8].d))) return bad;
    if ((bad = checked.CheckSizes())) return bad;
    // The registration takes float16 / bfloat16 only; the C entry point passes float32 here too (refused
    // by ComputeTiling with its reason).
    const uint32_t elem_bytes = a[0].dtype == FLA_NPU_FLOAT32 ? 4u : 2u;
    return TilingOrMessage(checked.Problem(elem_bytes, dev.cube_fp32, dev.ai_cores, dev.ub_bytes, dev.l0c_bytes), tiling);
}

}  // namespace wy_fast
}  // namespace fla_npu
