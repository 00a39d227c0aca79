// WY factors (stage 3 of chunked KDA / Gated DeltaNet), mixed Cube + vector (KERNEL_TYPE_MIX_AIC_1_2).
//
//   w = Akk @ (beta k e_row),   u = Akk @ (beta v),   kg = k e_tail
//
// Shapes, the work split and why this is a mixed kernel: wy_fast_tiling.h. Per unit (chunk, head) u,
// the i-th of its AI core, workspace slot i % 2 (the hand-off protocol of common/chunk_cube.h):
//   AIV  [i >= 2: wait Free]  its half of the rows: X1 = T(fp32(k) e_row beta) (KDA: element-wise
//        e_row; GDN: one fp32 factor beta e_row per row) and X2 = T(fp32(v) beta) to the slot, one
//        rounding each; kg = fp32(k) e_tail (fp32) to GM;  set Ready (PIPE_MTE3)
//   AIC  wait Ready; X1, X2 from the slot into L1 (ND -> NZ); [slot reused later: set Free];
//        Akk into L1 and L0A; per N-tile Mmad(init) Akk @ X1 -> Fixpipe w, then Akk @ X2 -> u.
// beta is broadcast over a row with Brcb (its factor alone in a 32-byte block, read with stride 0).
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX and the
// reverse pairs before each buffer is reused); on the AIVs the queues order MTE2 -> V -> MTE3.
// Every dimension is a multiple of 16, so L1/L0 tiles are whole fractals and nothing is padded.
#ifndef FLA_NPU_WY_FAST_KERNEL_H
#define FLA_NPU_WY_FAST_KERNEL_H

#include "../common/chunk_cube.h"
#include "kernel_operator.h"
#include "wy_fast_tiling.h"

namespace fla_npu {
namespace wy_fast {

using namespace AscendC;
using namespace chunk_cube;

// ------------------------------------------------------------------------------------------------
// AIC: w and u, one Akk in L0A for both.
// ------------------------------------------------------------------------------------------------
template <class T>
class WyFastCube {
  public:
    __aicore__ inline WyFastCube() {}

    __aicore__ inline void Init(GM_ADDR akk, GM_ADDR w, GM_ADDR u, GM_ADDR ws, const WyFastTiling& t) {
        t_ = t;
        const uint64_t units = t.num_units;
        gA_.SetGlobalBuffer((__gm__ T*)akk, units * t.BT * t.BT);
        gW_.SetGlobalBuffer((__gm__ float*)w, units * t.BT * t.K);
        gU_.SetGlobalBuffer((__gm__ float*)u, units * t.BT * t.V);
        BindSlots(gWs_, ws, static_cast<uint32_t>(GetBlockIdx()), t.ws_bytes_per_core, t.ws_slot_elems);
        const uint32_t BT = t.BT;
        pipe_.InitBuffer(a1_, BT * BT * sizeof(T));
        pipe_.InitBuffer(x1_, BT * t.K * sizeof(T));
        pipe_.InitBuffer(x2_, BT * t.V * sizeof(T));
        pipe_.InitBuffer(aa_, BT * BT * sizeof(T));
        pipe_.InitBuffer(xb_, BT * t.n_tile * sizeof(T));
        pipe_.InitBuffer(oc_, BT * t.n_tile * sizeof(float));
    }

    __aicore__ inline void Process() {
        uint32_t first = 0, count = 0;
        CoreUnits(t_, static_cast<uint32_t>(GetBlockIdx()), &first, &count);
        for (uint32_t i = 0; i < count; ++i) Unit(first + i, i % 2, i + 2 < count);
    }

  private:
    __aicore__ inline void Unit(uint32_t u, uint32_t slot, bool slotReused) {
        const uint32_t BT = t_.BT, K = t_.K, V = t_.V;
        const uint64_t base = uint64_t(slot) * t_.ws_slot_elems;
        LocalTensor<T> a1 = a1_.Get<T>(), x1 = x1_.Get<T>(), x2 = x2_.Get<T>(), aa = aa_.Get<T>(), xb = xb_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();

        SlotConsumer::Acquire();
        Sync<HardEvent::MTE1_MTE2>();  // the previous unit's LoadData have read L1
        LoadNz(x1, gWs_[base], BT, K);
        LoadNz(x2, gWs_[base + uint64_t(BT) * K], BT, V);
        SlotConsumer::Release(slotReused);
        LoadNz(a1, gA_[uint64_t(u) * BT * BT], BT, BT);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();  // the previous unit's Mmads have read L0A
        LoadA(aa, a1, BT, BT);
        const CubeProduct<T> w[1] = {{aa, x1, xb, BT}};
        TileProducts(oc, gW_[uint64_t(u) * BT * K], K, BT, K, t_.n_tile, w);
        const CubeProduct<T> uu[1] = {{aa, x2, xb, BT}};
        TileProducts(oc, gU_[uint64_t(u) * BT * V], V, BT, V, t_.n_tile, uu);
    }

    WyFastTiling t_{};
    TPipe pipe_;
    TBuf<TPosition::A1> a1_;
    TBuf<TPosition::B1> x1_, x2_;
    TBuf<TPosition::A2> aa_;
    TBuf<TPosition::B2> xb_;
    TBuf<TPosition::CO1> oc_;
    GlobalTensor<T> gA_, gWs_;
    GlobalTensor<float> gW_, gU_;
};

// ------------------------------------------------------------------------------------------------
// AIV: the scaled Cube operands and kg, half of the rows per sub-block.
// ------------------------------------------------------------------------------------------------
template <class T>
class WyFastVector {
  public:
    __aicore__ inline WyFastVector() {}

    __aicore__ inline void Init(GM_ADDR k, GM_ADDR v, GM_ADDR beta, GM_ADDR eRow, GM_ADDR eTail, GM_ADDR kg, GM_ADDR ws,
                                const WyFastTiling& t) {
        t_ = t;
        block_ = static_cast<uint32_t>(GetBlockIdx() / GetSubBlockNum());
        sub_ = static_cast<uint32_t>(GetSubBlockIdx());
        const uint64_t rows = uint64_t(t.num_units) * t.BT;
        gK_.SetGlobalBuffer((__gm__ T*)k, rows * t.K);
        gV_.SetGlobalBuffer((__gm__ T*)v, rows * t.V);
        gB_.SetGlobalBuffer((__gm__ float*)beta, rows);
        gEr_.SetGlobalBuffer((__gm__ float*)eRow, rows * t.Kg);
        gEt_.SetGlobalBuffer((__gm__ float*)eTail, rows * t.Kg);
        gKg_.SetGlobalBuffer((__gm__ float*)kg, rows * t.K);
        BindSlots(gWs_, ws, block_, t.ws_bytes_per_core, t.ws_slot_elems);
        const uint32_t R = t.rows_per_aiv;
        pipe_.InitBuffer(inT_, 1, t.vec_elems * sizeof(T));
        pipe_.InitBuffer(inF_, 1, t.vec_elems * sizeof(float));
        pipe_.InitBuffer(inB_, 1, R * sizeof(float));
        pipe_.InitBuffer(outT_, 1, t.vec_elems * sizeof(T));
        pipe_.InitBuffer(outF_, 1, t.vec_elems * sizeof(float));
        pipe_.InitBuffer(x_, t.vec_elems * sizeof(float));
        pipe_.InitBuffer(tmp_, t.vec_elems * sizeof(float));
        pipe_.InitBuffer(fac_, R * sizeof(float));
        pipe_.InitBuffer(bcB_, R * 8 * sizeof(float));
        pipe_.InitBuffer(bcE_, R * 8 * sizeof(float));
    }

    __aicore__ inline void Process() {
        uint32_t first = 0, count = 0;
        CoreUnits(t_, block_, &first, &count);
        const uint32_t R = t_.rows_per_aiv;
        for (uint32_t i = 0; i < count; ++i) {
            const uint32_t u = first + i;
            const uint64_t row0 = uint64_t(u) * t_.BT + sub_ * R;  // first row of this AIV
            SlotProducer::Acquire(i);
            LocalTensor<float> b = inB_.template AllocTensor<float>();
            DataCopy(b, gB_[row0], R);
            inB_.EnQue(b);
            b = inB_.template DeQue<float>();
            BroadcastRows(bcB_.Get<float>(), b, R);
            OrderV();
            const uint64_t base = uint64_t(i % 2) * t_.ws_slot_elems;
            FormK(row0, base + uint64_t(sub_) * R * t_.K, b);
            FormV(row0, base + uint64_t(t_.BT) * t_.K + uint64_t(sub_) * R * t_.V);
            inB_.FreeTensor(b);
            SlotProducer::Ready();
        }
    }

  private:
    // R rows of e (fp32, Kg columns) from GM, dequeued.
    __aicore__ inline LocalTensor<float> LoadE(const GlobalTensor<float>& g, uint64_t row0) {
        const uint32_t n = t_.rows_per_aiv * t_.Kg;
        LocalTensor<float> e = inF_.template AllocTensor<float>();
        DataCopy(e, g[row0 * t_.Kg], n);
        inF_.EnQue(e);
        return inF_.template DeQue<float>();
    }

    // dst = src * e for R rows of K columns: element-wise (KDA) or one factor per row (GDN).
    __aicore__ inline void MulGate(const LocalTensor<float>& dst, const LocalTensor<float>& src, const LocalTensor<float>& e) {
        const uint32_t R = t_.rows_per_aiv, K = t_.K;
        if (t_.Kg == K) {
            Mul(dst, src, e, static_cast<int32_t>(R * K));
            OrderV();
        } else {
            LocalTensor<float> bc = bcE_.Get<float>();
            BroadcastRows(bc, e, R);
            OrderV();
            MulRows(dst, src, bc, R, K);
            OrderV();
        }
    }

    // fp32 rows -> T rows of the workspace slot at element dst.
    __aicore__ inline void ToSlot(const LocalTensor<float>& f, uint64_t dst, uint32_t n) {
        LocalTensor<T> y = outT_.template AllocTensor<T>();
        Cast(y, f, RoundMode::CAST_RINT, n);
        outT_.EnQue(y);
        y = outT_.template DeQue<T>();
        DataCopy(gWs_[dst], y, n);
        outT_.FreeTensor(y);
    }

    // X1 = T(k e_row beta) into the slot, kg = k e_tail to GM.
    __aicore__ inline void FormK(uint64_t row0, uint64_t dst, const LocalTensor<float>& b) {
        const uint32_t R = t_.rows_per_aiv, K = t_.K, n = R * K;
        LocalTensor<T> x = inT_.template AllocTensor<T>();
        DataCopy(x, gK_[row0 * K], n);
        inT_.EnQue(x);
        x = inT_.template DeQue<T>();
        LocalTensor<float> kf = x_.Get<float>(), s = tmp_.Get<float>();
        Cast(kf, x, RoundMode::CAST_NONE, n);
        OrderV();
        inT_.FreeTensor(x);

        LocalTensor<float> e = LoadE(gEr_, row0);
        if (t_.Kg == K) {
            Mul(s, kf, e, static_cast<int32_t>(n));
            OrderV();
            MulRows(s, s, bcB_.Get<float>(), R, K);
            OrderV();
        } else {  // GDN: one factor beta e_row per row
            LocalTensor<float> f = fac_.Get<float>();
            Mul(f, b, e, static_cast<int32_t>(R));
            OrderV();
            MulGate(s, kf, f);
        }
        inF_.FreeTensor(e);
        ToSlot(s, dst, n);

        e = LoadE(gEt_, row0);
        LocalTensor<float> z = outF_.template AllocTensor<float>();
        MulGate(z, kf, e);
        inF_.FreeTensor(e);
        outF_.EnQue(z);
        z = outF_.template DeQue<float>();
        DataCopy(gKg_[row0 * K], z, n);
        outF_.FreeTensor(z);
    }

    // X2 = T(v beta) into the slot.
    __aicore__ inline void FormV(uint64_t row0, uint64_t dst) {
        const uint32_t R = t_.rows_per_aiv, V = t_.V, n = R * V;
        LocalTensor<T> x = inT_.template AllocTensor<T>();
        DataCopy(x, gV_[row0 * V], n);
        inT_.EnQue(x);
        x = inT_.template DeQue<T>();
        LocalTensor<float> vf = x_.Get<float>();
        Cast(vf, x, RoundMode::CAST_NONE, n);
        OrderV();
        inT_.FreeTensor(x);
        MulRows(vf, vf, bcB_.Get<float>(), R, V);
        OrderV();
        ToSlot(vf, dst, n);
    }

    WyFastTiling t_{};
    uint32_t block_ = 0, sub_ = 0;
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> inT_, inF_, inB_;
    TQue<QuePosition::VECOUT, 1> outT_, outF_;
    TBuf<TPosition::VECCALC> x_, tmp_, fac_, bcB_, bcE_;
    GlobalTensor<T> gK_, gV_, gWs_;
    GlobalTensor<float> gB_, gEr_, gEt_, gKg_;
};

template <class T>
__aicore__ inline void RunWyFast(GM_ADDR k, GM_ADDR v, GM_ADDR beta, GM_ADDR akk, GM_ADDR eRow, GM_ADDR eTail, GM_ADDR w,
                                 GM_ADDR u, GM_ADDR kg, GM_ADDR ws, const WyFastTiling& t) {
    if ASCEND_IS_AIC {
        WyFastCube<T> op;
        op.Init(akk, w, u, ws, t);
        op.Process();
    }
    if ASCEND_IS_AIV {
        WyFastVector<T> op;
        op.Init(k, v, beta, eRow, eTail, kg, ws, t);
        op.Process();
    }
}

}  // namespace wy_fast
}  // namespace fla_npu

#endif
