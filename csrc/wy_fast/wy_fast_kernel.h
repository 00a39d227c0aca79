// WY factors (stage 3 of chunked KDA / Gated DeltaNet), mixed Cube + vector (KERNEL_TYPE_MIX_AIC_1_2).
//
//   w = Akk @ (beta k e_row),   u = Akk @ (beta v),   kg = k e_tail,
//   e_row = e^G,   e_tail = e^(G_last - G)   (G the chunk's gate cumsum, natural log; G_last its last row)
//
// Shapes, the work split and why this is a mixed kernel: wy_fast_tiling.h. Per unit (chunk, head) u,
// the i-th of its AI core, workspace slot i % 2 (the hand-off protocol of common/chunk_cube.h):
//   AIV  [i >= 2: wait Free]  its half of the rows: e_row, e_tail from its rows of G and the chunk's
//        last row; X1 = T(fp32(k) e_row beta) (KDA: element-wise e_row; GDN: one fp32 factor beta
//        e_row per row) and X2 = T(fp32(v) beta) to the slot, one rounding each; kg = fp32(k) e_tail
//        to GM (in O);  set Ready (PIPE_MTE3)
//   AIC  wait Ready; X1, X2 from the slot into L1 (ND -> NZ); [slot reused later: set Free];
//        Akk into L1 and L0A; per N-tile Mmad(init) Akk @ X1 -> Fixpipe w (in O), then Akk @ X2 -> u.
// O, the type of w and kg: float, or the Cube type T (rounded once) for a caller that feeds them to
// the Cube next (the state kernel reads them in T).
// beta is broadcast over a row with Brcb (its factor alone in a 32-byte block, read with stride 0).
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX and the
// reverse pairs before each buffer is reused); on the AIVs the queues order MTE2 -> V -> MTE3.
// Every dimension is a multiple of 16, so L1/L0 tiles are whole fractals and nothing is padded.
#ifndef FLA_NPU_WY_FAST_KERNEL_H
#define FLA_NPU_WY_FAST_KERNEL_H

#include "../common/chunk_cube.h"
#include "../common/vector_io.h"
#include "../common/wy_rows.h"
#include "kernel_operator.h"
#include "wy_fast_tiling.h"

namespace fla_npu {
namespace wy_fast {

using namespace AscendC;
using namespace chunk_cube;
using namespace vector_io;

// The kernel's GM arguments (both sides read their own).
struct WyFastGm {
    GmAddr k, v, beta, akk, g, w, u, kg, ws;
};

// ------------------------------------------------------------------------------------------------
// AIC: w and u, one Akk in L0A for both.
// ------------------------------------------------------------------------------------------------
template <class T, class O>
class WyFastCube {
  public:
    __aicore__ inline WyFastCube(const WyFastGm& a, const WyFastTiling& t) : t_(t) {
        const uint64_t rows = uint64_t(t_.num_units) * t_.BT;
        Bind(rows * t_.BT, gA_, a.akk);
        Bind(rows * t_.K, gW_, a.w);
        Bind(rows * t_.V, gU_, a.u);
        BindSlots(gWs_, a.ws, static_cast<uint32_t>(GetBlockIdx()), t_.ws_bytes_per_core, t_.ws_slot_elems);
        const uint32_t BT = t_.BT;
        InitBufs(pipe_, BT * BT * sizeof(T), a1_, aa_);  // L1 and L0A (one arena each): Akk
        InitBufs(pipe_, BT * t_.K * sizeof(T), x1_);
        InitBufs(pipe_, BT * t_.V * sizeof(T), x2_);
        InitBufs(pipe_, BT * t_.n_tile * sizeof(T), xb_);
        InitBufs(pipe_, BT * t_.n_tile * sizeof(float), oc_);
    }

    __aicore__ inline void Process() { ForEachSlotUnit(*this, t_, static_cast<uint32_t>(GetBlockIdx())); }

    __aicore__ inline void Unit(uint32_t u, uint32_t slot, bool slotReused) {
        const uint32_t BT = t_.BT, K = t_.K, V = t_.V;
        const uint64_t base = uint64_t(slot) * t_.ws_slot_elems;
        LocalTensor<T> a1 = a1_.Get<T>(), x1 = x1_.Get<T>(), x2 = x2_.Get<T>(), aa = aa_.Get<T>(), xb = xb_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();

        TakeSlot(gWs_[base], slotReused, x1, BT, K, x2, BT, V);
        LoadNz(a1, gA_[uint64_t(u) * BT * BT], BT, BT);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();  // the previous unit's Mmads have read L0A
        LoadA(aa, a1, BT, BT);
        const CubeProduct<T> w[1] = {{aa, x1, xb, BT}};
        TileProducts(oc, gW_[uint64_t(u) * BT * K], K, BT, K, t_.n_tile, w);
        const CubeProduct<T> uu[1] = {{aa, x2, xb, BT}};
        TileProducts(oc, gU_[uint64_t(u) * BT * V], V, BT, V, t_.n_tile, uu);
    }

  private:
    const WyFastTiling t_;
    TPipe pipe_;
    TBuf<TPosition::A1> a1_;
    TBuf<TPosition::B1> x1_, x2_;
    TBuf<TPosition::A2> aa_;
    TBuf<TPosition::B2> xb_;
    TBuf<TPosition::CO1> oc_;
    GlobalTensor<T> gA_, gWs_;
    GlobalTensor<O> gW_;
    GlobalTensor<float> gU_;
};

// ------------------------------------------------------------------------------------------------
// AIV: the scaled Cube operands and kg, half of the rows per sub-block.
// ------------------------------------------------------------------------------------------------
template <class T, class O>
class WyFastVector {
  public:
    __aicore__ inline WyFastVector(const WyFastGm& a, const WyFastTiling& t) : t_(t) {
        const uint64_t rows = uint64_t(t_.num_units) * t_.BT;
        Bind(rows / t_.groups * t_.K, gK_, a.k);  // k: HV / groups heads (GVA)
        Bind(rows * t_.K, gKg_, a.kg);
        Bind(rows * t_.V, gV_, a.v);
        Bind(rows, gB_, a.beta);
        Bind(rows * t_.Kg, gG_, a.g);
        BindSlots(gWs_, a.ws, at_.block, t_.ws_bytes_per_core, t_.ws_slot_elems);
        const uint32_t R = t_.rows_per_aiv, n = t_.vec_elems;
        InitQues(pipe_, 1, n * sizeof(T), inT_);
        InitQues(pipe_, 1, n * sizeof(float), inF_);
        InitQues(pipe_, 1, R * sizeof(float), inB_);
        InitQues(pipe_, 1, n * sizeof(T), outT_);
        InitQues(pipe_, 1, n * sizeof(float), outF_);
        InitBufs(pipe_, n * sizeof(float), x_, tmp_);
        InitBufs(pipe_, R * sizeof(float), fac_);
        if (t_.Kg != 1) InitQues(pipe_, 1, t_.Kg * sizeof(float), inL_);
        InitBufs(pipe_, R * 8 * sizeof(float), bcB_, bcE_);
    }

    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, at_.block);
        const uint32_t R = t_.rows_per_aiv;
        for (uint32_t i = 0; i < r.count; ++i) {
            const uint64_t c0 = uint64_t(r.first + i) * t_.BT, row0 = c0 + at_.sub * R;  // the chunk's, this AIV's first row
            SlotProducer::Acquire(i);
            LocalTensor<float> b = CopyIn(inB_, gB_[row0], R);
            BroadcastRows(bcB_.Get<float>(), b, R);
            OrderV();
            const uint64_t base = uint64_t(i % 2) * t_.ws_slot_elems;
            // k and v token-major [NC, BT, H, D]: this AIV's first row of each (k: GVA, HV / groups heads)
            const uint32_t u = r.first + i;
            const uint64_t kAt = TokenRow(u, at_.sub * R, t_.HV, t_.groups, t_.BT, t_.K);
            const uint64_t gAt = GateRow(u, at_.sub * R, t_.HV, t_.BT, t_.Kg), gLast = GateRow(u, t_.BT - 1, t_.HV, t_.BT, t_.Kg);
            FormK(row0, kAt, gAt, gLast, base + uint64_t(at_.sub) * R * t_.K, b);
            FormV(TokenRow(u, at_.sub * R, t_.HV, 1, t_.BT, t_.V), base + uint64_t(t_.BT) * t_.K + uint64_t(at_.sub) * R * t_.V);
            inB_.FreeTensor(b);
            SlotProducer::Ready();
        }
    }

  private:
    // kg = k e_tail to GM, then X1 = T(k e_row beta) into the slot (rows from row0, k's from element
    // kAt, G's from element gAt, the chunk's last row of G at `last`): common/wy_rows.h.
    __aicore__ inline void FormK(uint64_t row0, uint64_t kAt, uint64_t gAt, uint64_t last, uint64_t dst,
                                 const LocalTensor<float>& b) {
        const wy_rows::Scratch x{x_.Get<float>(), tmp_.Get<float>(), bcB_.Get<float>(), bcE_.Get<float>(), fac_.Get<float>()};
        LocalTensor<float> e =
            wy_rows::FormK<T, O>(inT_, inF_, inL_, outT_, outF_, x, gK_[kAt], TokenPitch(t_.HV, t_.groups, t_.K), gG_[gAt],
                                 gG_[last], gKg_[row0 * t_.K], gWs_[dst], &b, Rows());
        inF_.FreeTensor(e);
    }

    // X2 = T(v beta) into the slot.
    __aicore__ inline void FormV(uint64_t vAt, uint64_t dst) {
        wy_rows::FormV(inT_, outT_, x_.Get<float>(), bcB_.Get<float>(), gV_[vAt], TokenPitch(t_.HV, 1, t_.V), gWs_[dst],
                       t_.rows_per_aiv, t_.V);
    }

    __aicore__ inline wy_rows::Rows Rows() const { return wy_rows::Rows{t_.rows_per_aiv, t_.K, t_.Kg, t_.HV}; }

    const WyFastTiling t_;
    const AivPlace at_ = ThisAiv();  // known from the start: the launch places the core
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> inT_, inF_, inB_, inL_;
    TQue<QuePosition::VECOUT, 1> outT_, outF_;
    TBuf<TPosition::VECCALC> x_, tmp_, fac_, bcB_, bcE_;
    GlobalTensor<T> gK_, gV_, gWs_;
    GlobalTensor<O> gKg_;
    GlobalTensor<float> gB_, gG_;
};

template <class T, class O>
__aicore__ inline void RunWyFast(GM_ADDR k, GM_ADDR v, GM_ADDR beta, GM_ADDR akk, GM_ADDR g, GM_ADDR w, GM_ADDR u, GM_ADDR kg,
                                 GM_ADDR ws, const WyFastTiling& t) {
    static_assert(IsSame<O, float>::value || IsSame<O, T>::value, "w and kg: float or the Cube input type");
    RunMixed<WyFastCube<T, O>, WyFastVector<T, O>>(WyFastGm{k, v, beta, akk, g, w, u, kg, ws}, t);
}

}  // namespace wy_fast
}  // namespace fla_npu

#endif
