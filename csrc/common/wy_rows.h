// A vector core's rows of the WY operands (stage 3 of chunked KDA / Gated DeltaNet), formed alike by
// the WY kernel (wy_fast) and the fused state + output kernel (chunk_state_output, whose Akk holds
// beta: X1 = -T(k e_row) there, no X2):
//   kg = k e_tail,   X1 = T(k e_row beta),   X2 = T(v beta),   e_row = e^G,   e_tail = e^(G_last - G)
// (G the chunk's gate cumsum in natural-log units, G_last its last row; KDA Kg = K: element-wise, GDN Kg = 1:
// one factor per row, broadcast with Brcb and read with stride 0). fp32 multiplies, one rounding each.
#ifndef FLA_NPU_COMMON_WY_ROWS_H
#define FLA_NPU_COMMON_WY_ROWS_H

#include "chunk_cube.h"
#include "kernel_operator.h"
#include "vector_io.h"

namespace fla_npu {
namespace wy_rows {

using namespace AscendC;
using namespace chunk_cube;

// The shape of a piece: R rows of keys of K columns, a gate of Kg columns, HV value heads (G's row
// pitch, GatePitch).
struct Rows {
    uint32_t R, K, Kg, HV;
};

// The work buffers: kf and s R x K floats each (k widened, the scaled rows), bcB = Brcb(beta) and bcE
// (GDN's Brcb of a row factor) R x 8 floats each, fac R floats (GDN's beta e_row); kScale: the call's
// factors of the k rows (off unless given), applied to kf first (FormK's kOwn: formed from the rows
// instead, the rows as read and their factors also written out: chunk_cube's ScaleRowsBy).
struct Scratch {
    LocalTensor<float> kf, s, bcB, bcE, fac;
    RowScale kScale{};
};

// e = e^(G_last - G) over the R rows of G (g, R x Kg) and the chunk's last row (gLast, through queue
// inL; GDN: a scalar read from GM, an input: no order to keep).
template <class QL>
__aicore__ inline void TailFactors(QL& inL, const LocalTensor<float>& e, const LocalTensor<float>& g,
                                   const GlobalTensor<float>& gLast, const Rows& r) {
    if (r.Kg != 1) {
        LocalTensor<float> gl = vector_io::CopyIn(inL, gLast, r.Kg);
        SubFromRow(e, gl, g, r.R, r.Kg);
        inL.FreeTensor(gl);
        OrderV();
        Exp(e, e, static_cast<int32_t>(r.R * r.Kg));
    } else {
        Adds(e, g, -gLast.GetValue(0), static_cast<int32_t>(r.R));  // G - G_last
        OrderV();
        ExpOf(e, e, -1.0f, r.R);
    }
    OrderV();
}

// kg = k e_tail to kgDst (O: float, or T rounded once), then X1 = T(k e_row beta) to x1Dst (both R x K,
// contiguous). k: the first row, rows kPitch apart; g: the first row's G (GatePitch apart), gLast the
// chunk's last row; b: beta of the rows, x.bcB = Brcb(*b), or nullptr for X1 = -T(k e_row). Queues: inT R K elements of T, inF R
// Kg floats, inL Kg floats, outT R K elements of T, outF (O = float) R K floats. e_tail first, while G is whole; e_row then in
// place of G. Returns e_row (a buffer of inF: the caller frees it).
template <class T, class O, class QT, class QF, class QL, class QO, class QOF>
__aicore__ inline LocalTensor<float> FormK(QT& inT, QF& inF, QL& inL, QO& outT, QOF& outF, const Scratch& x,
                                           const GlobalTensor<T>& k, uint32_t kPitch, const GlobalTensor<float>& g,
                                           const GlobalTensor<float>& gLast, const GlobalTensor<O>& kgDst,
                                           const GlobalTensor<T>& x1Dst, const LocalTensor<float>* b, const Rows& r,
                                           const OwnFactors<T>& kOwn = OwnFactors<T>{}) {
    const uint32_t n = r.R * r.K;
    vector_io::CastInRows(inT, k, x.kf, r.R, r.K, kPitch);
    if (x.kScale.on || kOwn.on) {
        OrderV();
        ScaleRowsBy(outT, outF, x.kf, x.kScale, kOwn, r.R, r.K);
    }
    LocalTensor<float> e = CopyInGate(inF, g, r.R, r.HV, r.Kg);
    TailFactors(inL, x.s, e, gLast, r);  // s = e_tail
    if constexpr (IsSame<O, float>::value) {
        LocalTensor<float> z = outF.template AllocTensor<float>();
        MulGate(z, x.kf, x.s, x.bcE, r.R, r.K, r.Kg);
        vector_io::CopyOut(outF, kgDst, z, n);
    } else {
        MulGate(x.s, x.kf, x.s, x.bcE, r.R, r.K, r.Kg);  // in place: each element reads its own factor (GDN: the Brcb copy)
        vector_io::CastOut(outT, kgDst, x.s, n);
    }
    OrderV();                       // the reads of s above before it is written again
    ExpOf(e, e, 1.0f, r.R * r.Kg);  // e_row
    OrderV();
    if (r.Kg == r.K) {
        Mul(x.s, x.kf, e, static_cast<int32_t>(n));
        OrderV();
        if (b != nullptr) MulRows(x.s, x.s, x.bcB, r.R, r.K);
        else Muls(x.s, x.s, -1.0f, static_cast<int32_t>(n));
        OrderV();
    } else {  // GDN: one factor beta e_row (or -e_row) per row
        if (b != nullptr) Mul(x.fac, *b, e, static_cast<int32_t>(r.R));
        else Muls(x.fac, e, -1.0f, static_cast<int32_t>(r.R));
        OrderV();
        MulGate(x.s, x.kf, x.fac, x.bcE, r.R, r.K, r.Kg);
    }
    vector_io::CastOut(outT, x1Dst, x.s, n);
    return e;
}

// X2 = T(v beta) to dst (R x C, contiguous): v's first row, rows vPitch apart; vf R x C floats of
// work; bcB = Brcb(beta). Queues: inT and outT R C elements of T.
template <class T, class QT, class QO>
__aicore__ inline void FormV(QT& inT, QO& outT, const LocalTensor<float>& vf, const LocalTensor<float>& bcB,
                             const GlobalTensor<T>& v, uint32_t vPitch, const GlobalTensor<T>& dst, uint32_t R, uint32_t C) {
    vector_io::CastInRows(inT, v, vf, R, C, vPitch);
    OrderV();
    MulRows(vf, vf, bcB, R, C);
    OrderV();
    vector_io::CastOut(outT, dst, vf, R * C);
}

}  // namespace wy_rows
}  // namespace fla_npu

#endif
