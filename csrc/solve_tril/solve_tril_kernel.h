// Triangular inverse (second half of stage 2 of chunked KDA / Gated DeltaNet), mixed Cube + vector
// (KERNEL_TYPE_MIX_AIC_1_2):  Akk = (I + L)^-1, L strictly lower triangular (its diagonal and upper
// part are never read).
//
// The algorithm, the work split and the workspace slot: solve_tril_tiling.h; the pieces (the vector
// block inverse, the Cube merges), which other kernels can call too: tril_inverse.h.
// Per unit (chunk, head) u, the i-th of its AI core, workspace slot i % 2 (the hand-off protocol of
// common/chunk_cube.h; BT = 16 has no merge and no hand-off):
//   AIV  [i >= 2: wait Free]  for its diagonal blocks b: X_bb and the zeros right of it to Akk;
//        -X_bb (b > 0) and X_bb^T (b < nb - 1: what the Cube reads) to the slot;  set Ready (PIPE_MTE3)
//   AIC  wait Ready; block rows 1 .. nb-1 (BlockRowMerge); [slot reused later: set Free]
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX, FIX ->
// MTE2 for the products it reads back from GM, and the reverse pairs before each buffer is reused);
// on the AIVs the queues order MTE2 -> V -> MTE3, and one V -> MTE3 pair at start-up covers the
// constant zero rows.
#ifndef FLA_NPU_SOLVE_TRIL_KERNEL_H
#define FLA_NPU_SOLVE_TRIL_KERNEL_H

#include "../common/chunk_cube.h"
#include "../common/vector_io.h"
#include "kernel_operator.h"
#include "solve_tril_tiling.h"
#include "tril_inverse.h"

namespace fla_npu {
namespace solve_tril {

using namespace AscendC;
using namespace chunk_cube;
using namespace vector_io;

// The kernel's GM arguments, the same for both sides: L and Akk (BT x BT per unit) and the workspace.
struct SolveTrilGm {
    GmAddr l, akk, ws;
};

// L (fp32) and Akk (O) of every unit.
template <class O>
__aicore__ inline void BindMatrices(GlobalTensor<float>& l, GlobalTensor<O>& akk, const SolveTrilGm& a,
                                    const SolveTrilTiling& t) {
    const uint64_t elems = uint64_t(t.num_units) * t.BT * t.BT;
    Bind(elems, l, a.l, akk, a.akk);
}

// ------------------------------------------------------------------------------------------------
// AIC: the merges of each unit, after the AIVs' hand-off.
// ------------------------------------------------------------------------------------------------
template <class O>
class SolveTrilCube {
  public:
    __aicore__ inline SolveTrilCube(const SolveTrilGm& a, const SolveTrilTiling& t) : t_(t) {
        if (t_.nb == 1) return;  // BT = 16: no merge, nothing for the Cube (Process returns at once)
        BindMatrices(gL_, gOut_, a, t_);
        BindSlots(gWs_, a.ws, static_cast<uint32_t>(GetBlockIdx()), t_.ws_bytes_per_core, t_.ws_slot_elems);
        merge_.Init(pipe_, t_.BT);
    }

    __aicore__ inline void Process() {
        if (t_.nb > 1) ForEachSlotUnit(*this, t_, static_cast<uint32_t>(GetBlockIdx()));
    }

    __aicore__ inline void Unit(uint32_t u, uint32_t slot, bool slotReused) {
        const uint64_t mat = uint64_t(u) * t_.BT * t_.BT, base = uint64_t(slot) * t_.ws_slot_elems;
        SlotConsumer::Acquire();
        merge_.Run(gL_[mat], gOut_[mat], gWs_[base], gWs_[base + t_.ws_nx_off], gWs_[base + t_.ws_rt_off], t_.BT);
        SlotConsumer::Release(slotReused);
    }

  private:
    const SolveTrilTiling t_;
    TPipe pipe_;
    BlockRowMerge<O> merge_;
    GlobalTensor<float> gL_, gWs_;
    GlobalTensor<O> gOut_;
};

// ------------------------------------------------------------------------------------------------
// AIV: the diagonal blocks, their hand-off, and the zeros above the diagonal.
// ------------------------------------------------------------------------------------------------
template <class O>
struct ToOutType {  // fp32 -> O, rounded once
    __aicore__ static inline void Run(const LocalTensor<O>& dst, const LocalTensor<float>& src, uint32_t n) {
        Cast(dst, src, RoundMode::CAST_RINT, n);
    }
};
template <>
struct ToOutType<float> {
    __aicore__ static inline void Run(const LocalTensor<float>& dst, const LocalTensor<float>& src, uint32_t n) {
        Adds(dst, src, 0.0f, static_cast<int32_t>(n));
    }
};

template <class O>
class SolveTrilVector {
  public:
    __aicore__ inline SolveTrilVector(const SolveTrilGm& a, const SolveTrilTiling& t) : t_(t) {
        BindMatrices(gL_, gOut_, a, t_);
        BindSlots(gWs_, a.ws, at_.block, t_.ws_bytes_per_core, t_.ws_slot_elems);
        InitQues(pipe_, 1, kBlockElems * sizeof(float), inL_);
        InitQues(pipe_, 1, kBlockElems * sizeof(O), outX_);
        InitQues(pipe_, 1, kBlockElems * sizeof(float), outN_, outT_);
        InitBufs(pipe_, kBlockElems * sizeof(float), x_);
        inv_.Init(pipe_);
        const uint32_t side = t_.BT - kBlock;
        if (side > 0) {  // constant zero rows, copied right of the diagonal blocks
            InitBufs(pipe_, kBlock * side * sizeof(O), zO_);
            // Zero bits are zero in every output type: fill them as 16-bit words.
            Duplicate(zO_.Get<uint16_t>(), uint16_t(0), static_cast<int32_t>(kBlock * side * sizeof(O) / 2));
            Sync<HardEvent::V_MTE3>();
        }
    }

    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, at_.block);
        const uint32_t nb = t_.nb, sub = at_.sub;
        for (uint32_t i = 0; i < r.count; ++i) {
            if (nb == 1) {  // no merge: the two AIVs take alternate units
                if (i % 2 == sub) Diagonal(r.first + i, 0, 0, false);
                continue;
            }
            SlotProducer::Acquire(i);
            const uint64_t base = uint64_t(i % 2) * t_.ws_slot_elems;
            for (uint32_t b = sub * nb / 2; b < (sub + 1) * nb / 2; ++b) Diagonal(r.first + i, b, base, true);
            SlotProducer::Ready();
        }
    }

  private:
    // Diagonal block b of unit u: X_bb and the zeros right of it to Akk; with a merge, what the Cube
    // reads of it to the slot at `base`: -X_bb (b > 0) and X_bb^T on XT's diagonal (b < nb - 1).
    __aicore__ inline void Diagonal(uint32_t u, uint32_t b, uint64_t base, bool merge) {
        const uint32_t BT = t_.BT, c0 = b * kBlock, right = BT - c0 - kBlock;
        const uint64_t at = (uint64_t(u) * BT + c0) * BT + c0;  // element (16 b, 16 b) of unit u
        const uint16_t fBlk = kBlock * sizeof(float) / 32, oBlk = kBlock * sizeof(O) / 32;
        const uint16_t fGap = static_cast<uint16_t>((BT - kBlock) * sizeof(float) / 32);

        LocalTensor<float> lb = inL_.AllocTensor<float>();
        DataCopy(lb, gL_[at], DataCopyParams(kBlock, fBlk, fGap, 0));
        inL_.EnQue(lb);
        lb = inL_.DeQue<float>();
        inv_.Load(lb);
        inL_.FreeTensor(lb);

        LocalTensor<float> x = x_.Get<float>();
        inv_.Lower(x);
        LocalTensor<O> xo = outX_.AllocTensor<O>();
        ToOutType<O>::Run(xo, x, kBlockElems);
        outX_.EnQue(xo);
        xo = outX_.DeQue<O>();
        DataCopy(gOut_[at], xo, DataCopyParams(kBlock, oBlk, 0, static_cast<uint16_t>((BT - kBlock) * sizeof(O) / 32)));
        outX_.FreeTensor(xo);
        if (right > 0)
            DataCopy(gOut_[at + kBlock], zO_.Get<O>(),
                     DataCopyParams(kBlock, static_cast<uint16_t>(right * sizeof(O) / 32), 0,
                                    static_cast<uint16_t>((c0 + kBlock) * sizeof(O) / 32)));
        if (merge) WriteMergeOperands(outN_, outT_, inv_, gWs_[base], x, nullptr, nullptr, b, BT);
    }

    const SolveTrilTiling t_;
    const AivPlace at_ = ThisAiv();  // known from the start: the launch places the core
    TPipe pipe_;
    BlockInverse16 inv_;
    TQue<QuePosition::VECIN, 1> inL_;
    TQue<QuePosition::VECOUT, 1> outX_, outN_, outT_;
    TBuf<TPosition::VECCALC> x_, zO_;
    GlobalTensor<float> gL_, gWs_;
    GlobalTensor<O> gOut_;
};

template <class O>
__aicore__ inline void RunSolveTril(GM_ADDR l, GM_ADDR akk, GM_ADDR ws, const SolveTrilTiling& t) {
    RunMixed<SolveTrilCube<O>, SolveTrilVector<O>>(SolveTrilGm{l, akk, ws}, t);
}

}  // namespace solve_tril
}  // namespace fla_npu

#endif
