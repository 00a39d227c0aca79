// KDA's stage-2 pieces that both kernels forming it run: the intra-chunk kernel (chunk_intra_kernel.h)
// and the one-launch forward (chunk_state_kernel.h with stage 2 in the launch). The factoring they
// implement (reference rows, column factors, the exact diagonal block): chunk_intra_tiling.h.
#ifndef FLA_NPU_CHUNK_INTRA_KDA_BLOCKS_H
#define FLA_NPU_CHUNK_INTRA_KDA_BLOCKS_H

#include "../common/chunk_cube.h"
#include "chunk_intra_tiling.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace kda_blocks {

using namespace AscendC;
using namespace chunk_cube;

// The i-th (0..2) of a block row's first, middle and last rows: the rows that choose its reference.
__aicore__ inline uint32_t ReferenceRow(uint32_t i) { return i == 0 ? 0u : i == 1 ? 8u : 15u; }

// max |d| over its first n elements (tmp and work: n floats of scratch; red: 8 floats), read back by
// the scalar unit.
__aicore__ inline float MaxAbs(const LocalTensor<float>& red, const LocalTensor<float>& d, const LocalTensor<float>& tmp,
                               const LocalTensor<float>& work, uint32_t n) {
    Abs(tmp, d, static_cast<int32_t>(n));
    OrderV();
    ReduceMax(red, tmp, work, static_cast<int32_t>(n));
    Sync<HardEvent::V_S>();
    const float m = red.GetValue(0);
    Sync<HardEvent::S_V>();  // the next reduction may overwrite red
    return m;
}

// Whether block row I's middle row is its reference (max |G_m - G_j| over its diagonal block within
// `span`, natural-log units): rows = its first, middle and last rows of G (3 x K, ordered before), d
// 2 K floats and tmp, work 2 K floats of scratch (chunk_intra_tiling.h: G does not increase, so the
// block's span from the middle is max(G_first - G_m, G_m - G_last)).
__aicore__ inline bool MiddleIsReference(const LocalTensor<float>& red, const LocalTensor<float>& rows,
                                         const LocalTensor<float>& d, const LocalTensor<float>& tmp,
                                         const LocalTensor<float>& work, uint32_t K, float span) {
    Sub(d, rows, rows[K], static_cast<int32_t>(K));            // G_first - G_m
    Sub(d[K], rows[K], rows[2 * K], static_cast<int32_t>(K));  // G_m - G_last
    OrderV();
    return MaxAbs(red, d, tmp, work, 2 * K) <= span;
}

// c = e^(G_r - G_b) for the rows r of gr (first, middle and last of every block row below J: gr's rows
// from 3 (J + 1), nb block rows; gb: G_b): one subtraction (gb read for every row, repeat stride 0) and
// one exponential for all of them.
__aicore__ inline void ColumnFactors(const LocalTensor<float>& c, const LocalTensor<float>& gr, const LocalTensor<float>& gb,
                                     uint32_t J, uint32_t nb, uint32_t K) {
    const uint32_t rows = 3 * (nb - 1 - J);
    const uint8_t rowBlk = static_cast<uint8_t>(K * sizeof(float) / 32);
    const BinaryRepeatParams p(1, 1, 1, rowBlk, rowBlk, 0);
    OrderV();  // c's previous readers and writers
    for (uint32_t k = 0; k < K; k += kFloatLanes)
        Sub(c[k], gr[3 * (J + 1) * K + k], gb[k], K - k < kFloatLanes ? K - k : kFloatLanes, static_cast<uint8_t>(rows), p);
    OrderV();
    Exp(c, c, static_cast<int32_t>(rows * K));
}

// A diagonal block whose decay spans more than safe_span ln 2: per row a of the block and every j <= a,
// sum_d q_a[d] k_j[d] e^(G_a[d] - G_j[d]) (Aqk) and, j < a, sum_d k_a[d] k_j[d] e^(G_a[d] - G_j[d]) (L
// / beta), into columns [0, a] of row a of the 16 x 16 tiles oa / ol (zero there before). qf, kf: the
// block's rows of q and k (fp32, their factors applied), g its G (16 x K each, ordered before); e and
// x 16 x K floats of scratch.
__aicore__ inline void ExactDiagonalRows(const LocalTensor<float>& e, const LocalTensor<float>& x, const LocalTensor<float>& qf,
                                         const LocalTensor<float>& kf, const LocalTensor<float>& g, const LocalTensor<float>& oa,
                                         const LocalTensor<float>& ol, uint32_t K) {
    for (uint32_t a = 0; a < 16; ++a) {
        const uint32_t rows = a + 1, cnt = rows * K;
        SubFromRow(e, g[a * K], g, rows, K);  // G_a - G_j
        OrderV();
        Exp(e, e, cnt);
        OrderV();
        Mul(e, e, kf, cnt);  // k_j e^(G_a - G_j)
        OrderV();
        MulByRow(x, e, qf[a * K], rows, K);
        OrderV();
        RowSums(oa[a * 16], x, rows, K);
        if (a == 0) continue;
        OrderV();
        MulByRow(x, e, kf[a * K], a, K);
        OrderV();
        RowSums(ol[a * 16], x, a, K);
    }
}

// AIC, block row I: its q and k row operands (16-row bands 2 I and 2 I + 1 of the fp32 L1 operands,
// each one run of L0A's fractals) times the transpose of its column operand (an NZ matrix of its own
// at l1[col]: one run of L0B's Zn fractals, no transpose), two fp32 Mmads into L0C (the k part at
// oc[16 BT]). Orders itself after the previous Mmads (L0A / L0B) and Fixpipes (L0C).
__aicore__ inline void BlockRowProducts(const LocalTensor<float>& l1, uint64_t col, const LocalTensor<float>& aa,
                                        const LocalTensor<float>& bb, const LocalTensor<float>& oc, uint32_t I, uint32_t K,
                                        uint32_t BT) {
    constexpr uint32_t c0 = 8;  // floats per fractal row
    const uint32_t n = 16 * (I + 1);
    Sync<HardEvent::M_MTE1>();
    for (uint32_t p = 0; p < 2; ++p) LoadFractals(aa[p * 16 * K], l1[(2 * I + p) * 16 * K], K / c0, false);
    LoadFractals(bb, l1[col], (K / c0) * (n / 16), false);
    Sync<HardEvent::MTE1_M>();
    Sync<HardEvent::FIX_M>();
    for (uint32_t p = 0; p < 2; ++p)
        Mmad(oc[p * 16 * BT], aa[p * 16 * K], bb,
             MmadParams(16, static_cast<uint16_t>(n), static_cast<uint16_t>(K), 0, false, true));
    Sync<HardEvent::M_FIX>();
}

}  // namespace kda_blocks
}  // namespace fla_npu

#endif
