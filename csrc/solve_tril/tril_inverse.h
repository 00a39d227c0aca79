// Device pieces of the triangular inverse (I + L)^-1, L strictly lower triangular, by blocked forward
// substitution (the algorithm: solve_tril_tiling.h), written so that any kernel can call them in its
// own launch (the SolveTril op, solve_tril_kernel.h; the intra-chunk kernel, which forms L itself):
//   BlockInverse16   vector: the inverse of a unit lower-triangular 16 x 16 block and its transpose,
//                    from and into UB (no GM layout involved);
//   BlockRowMerge<O> Cube: the off-diagonal blocks of the inverse, block row by block row, from L and
//                    a workspace slot holding the vector side's blocks (GM tensors with their row
//                    pitch) into the output;
//   ProductNT and its loads: C = A @ B for fp32 A and B^T handed over row-major (no transposing load).
#ifndef FLA_NPU_SOLVE_TRIL_TRIL_INVERSE_H
#define FLA_NPU_SOLVE_TRIL_TRIL_INVERSE_H

#include "../common/chunk_cube.h"
#include "kernel_operator.h"
#include "solve_tril_tiling.h"  // kBlock, kBlockElems (plain C++ constants)

namespace fla_npu {
namespace solve_tril {

using namespace AscendC;
using namespace chunk_cube;

// ------------------------------------------------------------------------------------------------
// Vector: one unit lower-triangular 16 x 16 block.
// ------------------------------------------------------------------------------------------------
//   Load(l)   l: 16 x 16 fp32 row-major in UB, of which only the strictly lower part N is used;
//             each element of -N goes into its own 32-byte block (Brcb), the per-row factors below.
//   Lower(x)  x = (I + N)^-1, forward substitution: x = I; once row k is final, every row i > k
//             loses N[i][k] x[k] (one MulAddDst over rows k+1..15: x[i] += x[k] (-N[i][k]), row k read
//             with repeat stride 0, -N[i][k] with block stride 0; bit for bit a Mul then a Sub).
//   Upper(y)  y = (I + N)^-T = (I + N^T)^-1, backward: y = I; once row i is final (i from 15 down),
//             every row k < i loses N[i][k] y[i] (the factors are row i of N: consecutive blocks).
// Strictly upper entries of x (lower of y) stay exact zeros: they only ever lose finite multiples of
// exact zeros. Every element of the result is rounded once per multiply and once per sum, in fp32.
class BlockInverse16 {
  public:
    __aicore__ inline BlockInverse16() {}

    // Carves its buffers from `pipe` (10 KB of UB) and builds the identity. Call once, on the AIV.
    __aicore__ inline void Init(TPipe& pipe) {
        pipe.InitBuffer(bc_, kBlockElems * 32);
        pipe.InitBuffer(tmp_, kBlockElems * sizeof(float));
        pipe.InitBuffer(id_, kBlockElems * sizeof(float));
        LocalTensor<float> id = id_.Get<float>();
        Duplicate(id, 0.0f, static_cast<int32_t>(kBlockElems));
        Sync<HardEvent::V_S>();
        for (uint32_t i = 0; i < kBlock; ++i) id.SetValue(i * (kBlock + 1), 1.0f);
        Sync<HardEvent::S_V>();
    }

    // The block to invert (l readable by the vector unit: dequeued or written by it).
    __aicore__ inline void Load(const LocalTensor<float>& l) {
        LocalTensor<float> neg = tmp_.Get<float>();
        Muls(neg, l, -1.0f, static_cast<int32_t>(kBlockElems));
        OrderV();
        Brcb(bc_.Get<float>(), neg, static_cast<uint8_t>(kBlockElems / 8), BrcbRepeatParams(1, 8));
        OrderV();
    }

    __aicore__ inline void Lower(const LocalTensor<float>& x) {
        LocalTensor<float> bc = bc_.Get<float>();
        Adds(x, id_.Get<float>(), 0.0f, static_cast<int32_t>(kBlockElems));
        OrderV();
        // Repeat i - k - 1 is row i: dst rows 2 blocks apart, x[k] re-read (stride 0), the factor
        // -N[i][k] (block 16 i + k of bc) read by both blocks of the row, 16 blocks apart.
        const BinaryRepeatParams p(1, 1, 0, 2, 0, kBlock);
        for (uint32_t k = 0; k + 1 < kBlock; ++k) {
            const uint32_t row = (k + 1) * kBlock, rows = kBlock - 1 - k;
            MulAddDst(x[row], x[k * kBlock], bc[(row + k) * 8], kRowLanes, static_cast<uint8_t>(rows), p);
            OrderV();
        }
    }

    __aicore__ inline void Upper(const LocalTensor<float>& y) {
        LocalTensor<float> bc = bc_.Get<float>();
        Adds(y, id_.Get<float>(), 0.0f, static_cast<int32_t>(kBlockElems));
        OrderV();
        // Repeat k is row k < i: y[i] re-read (stride 0), the factor -N[i][k] (block 16 i + k).
        const BinaryRepeatParams p(1, 1, 0, 2, 0, 1);
        for (uint32_t i = kBlock - 1; i > 0; --i) {
            MulAddDst(y, y[i * kBlock], bc[i * kBlock * 8], kRowLanes, static_cast<uint8_t>(i), p);
            OrderV();
        }
    }

  private:
    static constexpr uint64_t kRowLanes = kBlock;  // one block row per repeat

    TBuf<TPosition::VECCALC> bc_, tmp_, id_;
};

// What the Cube's merges read of diagonal block I of a BT x BT inverse, once x = X_II (Lower; the
// block still loaded for Upper), into an inverse slot (`slot`: XT [BT, BT] at 0, -X_bb at
// MergeSizesOf(BT).nx_off, pitch BT): for I > 0 -X_II, or X_II diag(*left) with `left` given (the
// caller's negated row factors), through a buffer of queue outN; for I < BT / 16 - 1 X_II^T, or
// diag(d) X_II^T with bcD = Brcb(d) given, on XT's diagonal, through a buffer of queue outT.
template <class QN, class QT>
__aicore__ inline void WriteMergeOperands(QN& outN, QT& outT, BlockInverse16& inv, const GlobalTensor<float>& slot,
                                          const LocalTensor<float>& x, const LocalTensor<float>* left,
                                          const LocalTensor<float>* bcD, uint32_t I, uint32_t BT) {
    if (I > 0) {
        LocalTensor<float> nx = outN.template AllocTensor<float>();
        if (left != nullptr) MulByRow(nx, x, *left, kBlock, kBlock);
        else Muls(nx, x, -1.0f, static_cast<int32_t>(kBlockElems));
        vector_io::CopyOut(outN, slot[MergeSizesOf(BT).nx_off + I * kBlockElems], nx, kBlockElems);
    }
    if (I + 1 < BT / kBlock) {
        LocalTensor<float> y = outT.template AllocTensor<float>();
        inv.Upper(y);
        if (bcD != nullptr) {
            OrderV();
            MulRows(y, y, *bcD, kBlock, kBlock);
        }
        outT.EnQue(y);
        y = outT.template DeQue<float>();
        DataCopy(
            slot[uint64_t(kBlock * I) * BT + kBlock * I], y,
            DataCopyParams(kBlock, kBlock * sizeof(float) / 32, 0, static_cast<uint16_t>((BT - kBlock) * sizeof(float) / 32)));
        outT.FreeTensor(y);
    }
}

// ------------------------------------------------------------------------------------------------
// Cube: C = A @ B for fp32 A (m x k) and B (k x n) held in L1 as NZ of A and of B^T (n x k), both
// loaded from row-major matrices (LoadNzRows). A goes into L0A in the SoC's layout (LoadA); the NZ
// fractals of B^T are already the Zn fractals L0B wants, in the same order (one LoadData, no
// transpose: LoadData transposes 2-byte types only).
// ------------------------------------------------------------------------------------------------

// A row-major rows x cols fp32 matrix with row pitch `pitch` from GM into L1 as NZ, its 8-column
// blocks `height` rows apart (default: rows; more when it is the top part of a taller NZ matrix).
__aicore__ inline void LoadNzRows(const LocalTensor<float>& l1, const GlobalTensor<float>& gm, uint32_t rows, uint32_t cols,
                                  uint32_t pitch, uint32_t height = 0) {
    DataCopy(l1, gm,
             Nd2NzParams(1, static_cast<uint16_t>(rows), static_cast<uint16_t>(cols), 0, static_cast<uint16_t>(pitch),
                         static_cast<uint16_t>(height ? height : rows), 1, 0));
}

// B (k x n) into L0B from the NZ of B^T in L1.
__aicore__ inline void LoadBt(const LocalTensor<float>& b2, const LocalTensor<float>& bt1, uint32_t n, uint32_t k) {
    LoadData(b2, bt1, LoadData2dParams(0, static_cast<uint8_t>((k / 8) * (n / 16)), 1, 0, 0, false, 0));
}

// One product into L0C (the caller has ordered L1 -> MTE1): A, B^T from L1 into L0, Mmad (m, n, k
// multiples of 16, m >= 16). Orders itself against the previous Mmad (L0 reuse) and Fixpipe (L0C).
__aicore__ inline void ProductNT(const LocalTensor<float>& c, const LocalTensor<float>& a2, const LocalTensor<float>& b2,
                                 const LocalTensor<float>& a1, const LocalTensor<float>& bt1, uint32_t m, uint32_t n,
                                 uint32_t k) {
    Sync<HardEvent::M_MTE1>();
    LoadA(a2, a1, m, k);
    LoadBt(b2, bt1, n, k);
    Sync<HardEvent::MTE1_M>();
    Sync<HardEvent::FIX_M>();
    Mmad(c, a2, b2, MmadParams(static_cast<uint16_t>(m), static_cast<uint16_t>(n), static_cast<uint16_t>(k), 0, false, true));
    Sync<HardEvent::M_FIX>();
}

// The m x n product in L0C to GM row-major (row pitch `pitch`), converted to O once.
template <class O>
__aicore__ inline void StoreRows(const GlobalTensor<O>& out, const LocalTensor<float>& c, uint32_t m, uint32_t n,
                                 uint32_t pitch) {
    FixpipeParamsV220 p(static_cast<uint16_t>(n), static_cast<uint16_t>(m), static_cast<uint16_t>(m), pitch, false);
    p.quantPre = FixpipeQuant<O>::kMode;
    Fixpipe(out, c, p);
}

// The off-diagonal blocks of X = (I + L)^-1 of one BT x BT matrix, block row by block row, given
// the vector side's work in the slot: X_bb^T on the diagonal of XT (pitch BT; b < nb - 1) and -X_bb
// (16 x 16 each; b > 0). Block row i (n = 16 i; XT[:n, :n] is upper block triangular: its zero
// blocks are filled in L1, only the blocks on and above the diagonal are read):
//   R^T      = XT[:n, :n] @ L[i, :n]^T   (n x 16)   into the slot, read back
//   X[i, :n] = (-X_ii) @ R                (16 x n)   into the output, rounded once to O
//   XT[:n, n : n + 16] = R^T @ (-X_ii)^T            into the slot (the next block row's XT)
// All operands are already in the A / B^T form the Cube takes: nothing is transposed.
template <class O>
class BlockRowMerge {
  public:
    __aicore__ inline BlockRowMerge() {}

    // Carves L1 / L0 buffers for chunks of up to BT rows from `pipe` (MergeSizesOf). Call once, on the AIC.
    __aicore__ inline void Init(TPipe& pipe, uint32_t BT) {
        const MergeSizes m = MergeSizesOf(BT);
        InitL1(pipe, BT);
        pipe.InitBuffer(a2Buf_, m.l0a);
        pipe.InitBuffer(b2Buf_, m.l0b);
        pipe.InitBuffer(cBuf_, m.l0c);
        Use(a2Buf_.Get<float>(), b2Buf_.Get<float>(), cBuf_.Get<float>());
    }
    // The same with the caller's L0A, L0B and L0C buffers (at least MergeSizesOf's each), for a kernel
    // whose own products take turns with the merges on one AIC (every product orders itself after the
    // previous Mmads and Fixpipes).
    __aicore__ inline void Init(TPipe& pipe, uint32_t BT, const LocalTensor<float>& a2, const LocalTensor<float>& b2,
                                const LocalTensor<float>& c) {
        InitL1(pipe, BT);
        Use(a2, b2, c);
    }

    // l, out: the unit's BT x BT matrices (pitch BT); xt, nx, rt: its slot's XT, -X_bb, R^T.
    __aicore__ inline void Run(const GlobalTensor<float>& l, const GlobalTensor<O>& out, const GlobalTensor<float>& xt,
                               const GlobalTensor<float>& nx, const GlobalTensor<float>& rt, uint32_t BT) {
        LocalTensor<float> xt1 = xt1_.Get<float>(), ls1 = ls1_.Get<float>(), rt1 = rt1_.Get<float>(), nx1 = nx1_.Get<float>();
        const LocalTensor<float> a2 = a2_, b2 = b2_, c = c_;
        const uint32_t nb = BT / kBlock;
        for (uint32_t i = 1; i < nb; ++i) {
            const uint32_t n = i * kBlock;
            Sync<HardEvent::MTE1_MTE2>();  // the previous LoadData have read L1
            ZeroL1(xt1, n * n);
            for (uint32_t r = 0; r < i; ++r)  // block row r of XT[:n, :n]: columns 16 r .. n
                LoadNzRows(xt1[(r * kBlock / 8) * n * 8 + r * kBlock * 8], xt[uint64_t(r) * kBlock * BT + r * kBlock], kBlock,
                           n - r * kBlock, BT, n);
            LoadNzRows(ls1, l[uint64_t(n) * BT], kBlock, n, BT);
            Sync<HardEvent::MTE2_MTE1>();
            ProductNT(c, a2, b2, xt1, ls1, n, kBlock, n);
            StoreRows(rt, c, n, kBlock, kBlock);
            Sync<HardEvent::FIX_MTE2>();  // R^T is in GM
            Sync<HardEvent::MTE1_MTE2>();
            LoadNzRows(rt1, rt, n, kBlock, kBlock);
            LoadNzRows(nx1, nx[uint64_t(i) * kBlockElems], kBlock, kBlock, kBlock);
            Sync<HardEvent::MTE2_MTE1>();
            ProductNT(c, a2, b2, nx1, rt1, kBlock, n, kBlock);
            StoreRows(out[uint64_t(n) * BT], c, kBlock, n, BT);
            if (i + 1 < nb) {
                ProductNT(c, a2, b2, rt1, nx1, n, kBlock, kBlock);
                StoreRows(xt[n], c, n, kBlock, BT);
                Sync<HardEvent::FIX_MTE2>();  // the next block row reads this XT column block
            }
        }
    }

  private:
    __aicore__ inline void InitL1(TPipe& pipe, uint32_t BT) {
        const uint32_t side = BT - kBlock;
        pipe.InitBuffer(xt1_, side * side * sizeof(float));
        pipe.InitBuffer(ls1_, kBlock * side * sizeof(float));
        pipe.InitBuffer(rt1_, side * kBlock * sizeof(float));
        pipe.InitBuffer(nx1_, kBlockElems * sizeof(float));
    }
    __aicore__ inline void Use(const LocalTensor<float>& a2, const LocalTensor<float>& b2, const LocalTensor<float>& c) {
        a2_ = a2;
        b2_ = b2;
        c_ = c;
    }

    TBuf<TPosition::A1> xt1_, rt1_, nx1_;
    TBuf<TPosition::B1> ls1_;
    TBuf<TPosition::A2> a2Buf_;
    TBuf<TPosition::B2> b2Buf_;
    TBuf<TPosition::CO1> cBuf_;
    LocalTensor<float> a2_, b2_, c_;
};

}  // namespace solve_tril
}  // namespace fla_npu

#endif
