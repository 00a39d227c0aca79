// Host tiling of the WY kernel; see wy_fast_tiling.h.
#include "wy_fast_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace wy_fast {

int ComputeTiling(const WyFastProblem& p, WyFastTiling* t, const char** err) {
    static constexpr chunk_tiling::HeadsRefusals kWhy = {
        "float32 Cube inputs are not supported: beta * k * 2^g and beta * v reach the Cube through a transposing load "
        "that exists for 2-byte types only; pass float16 or bfloat16",
        "g must have 1 or K columns"};
    if (chunk_tiling::OpenHeadsTiling(p, kWhy, uint64_t(p.BT) * (p.K > p.V ? p.K : p.V), t, err) != 0) return -1;
    t->groups = p.groups;
    core_split::SplitUnits(chunk_tiling::Units(p), p.core_num, t);

    // AIV: half of the rows, whole (at most 32 x 256 = 8192 elements: no pieces needed).
    t->rows_per_aiv = p.BT / 2;
    t->vec_elems = t->rows_per_aiv * (p.K > p.V ? p.K : p.V);
    // k / v in and X out (T); g in (the decay factors formed in place and in the scaled-rows buffer),
    // the fp32 k / v, the fp32 scaled rows and kg out (fp32); KDA: the chunk's last row of g; beta and
    // the GDN row factor; two Brcb blocks per row (beta, the row factor).
    const uint64_t rows = t->rows_per_aiv;
    t->ub_bytes_used =
        static_cast<uint32_t>(Pad32(uint64_t(t->vec_elems) * p.elem_bytes) * 2 + Pad32(uint64_t(t->vec_elems) * 4) * 4 +
                              (p.Kg != 1 ? Pad32(uint64_t(p.Kg) * 4) : 0) + Pad32(rows * 4) * 2 + Pad32(rows * 8 * 4) * 2);
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the N-tile is the widest multiple of 16 whose B operand (BT rows) fits L0B and whose fp32
    // result fits L0C (with BT <= 64 and N <= 256 that is all of N).
    const uint32_t N = p.K > p.V ? p.K : p.V;
    uint32_t nt = soc::kL0abBytes / (p.BT * p.elem_bytes) / 16 * 16;
    const uint32_t ntC = p.l0c_bytes / (p.BT * 4) / 16 * 16;
    nt = ntC < nt ? ntC : nt;
    t->n_tile = nt < N ? nt : N;
    t->l1_bytes_used = (p.BT * p.K + p.BT * p.V + p.BT * p.BT) * p.elem_bytes;
    t->l0a_bytes_used = p.BT * p.BT * p.elem_bytes;
    t->l0b_bytes_used = p.BT * t->n_tile * p.elem_bytes;
    t->l0c_bytes_used = p.BT * t->n_tile * 4;
    if (t->n_tile < 16) return Refuse(err, "L0 too small");
    if (CheckCubeBuffers(*t, p.l0c_bytes, err) != 0) return -1;
    t->ws_slot_elems = p.BT * (p.K + p.V);
    t->ws_bytes_per_core = 2 * t->ws_slot_elems * p.elem_bytes;
    return 0;
}

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* ProblemFromShapes(const ShapeArg* a, const DeviceFacts& dev, WyFastProblem* p) {
    const ShapeArg &kt = a[0], &vt = a[1], &beta = a[2], &akk = a[3], &w = a[5], &u = a[6], &kg = a[7];
    const ShapeArg k = chunk_tiling::HeadMajor(kt), v = chunk_tiling::HeadMajor(vt);  // token-major [NC, BT, H, D]
    ShapeArg heads[8];  // the call with k, v and g head-major, for the shared checks
    for (int i = 0; i < 8; ++i) heads[i] = a[i];
    heads[0] = k;
    heads[1] = v;
    const ShapeArg& g = heads[4] = chunk_tiling::GateHeadMajor(a[4]);
    if (!RanksAre(a, {4, 4, 3, 4, 4, 4, 4, 4}))
        return "`beta` must be 3-D and `k`, `v`, `akk`, `g`, `w`, `u`, `kg` 4-D (chunk layout [NC, HV, ...])";
    const int64_t BT = k.d[2], K = k.d[3], V = v.d[3], Kg = g.d[3];
    if (!chunk_tiling::TokenPitchOk(kt) || !chunk_tiling::TokenPitchOk(vt))
        return "`k` and `v`: H * K and HV * V must be at most 65535 (a row stride of the loads)";
    if (!chunk_tiling::ShareUnitsOf(heads, {1, 2, 3, 4, 5, 6, 7}))
        return "`beta`, `akk`, `g`, `w`, `u` and `kg` must have the [NC, HV] of `v`";
    int64_t lead[4];
    if (const char* bad = chunk_tiling::GroupedHeads("`k` must have the NC of `v` and a number of heads dividing its HV (GVA)", k,
                                                     v, lead, &p->groups))
        return bad;
    if (v.d[2] != BT) return "`v` must be [NC, BT, HV, V] (token-major)";
    if (beta.d[2] != BT) return "`beta` must be [NC, HV, BT]";
    if (akk.d[2] != BT || akk.d[3] != BT) return "`akk` must be [NC, HV, BT, BT]";
    if (const char* bad = chunk_tiling::CheckGate(a[4], BT, K)) return bad;
    if (!SameShape(w, kg) || w.d[2] != BT || w.d[3] != K) return "`w` and `kg` must be [NC, HV, BT, K]";
    if (!SameShape(u, v)) return "`u` must have the shape of `v`";
    return chunk_tiling::SizedHeads(lead, V, Kg, chunk_tiling::CubeElemBytes(k), dev, p);
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, WyFastTiling* tiling) {
    return chunk_tiling::TilingOfShapes<WyFastProblem>(a, dev, tiling);
}

}  // namespace wy_fast
}  // namespace fla_npu
