// Prefix-shared attention forward, mixed Cube + vector (KERNEL_TYPE_MIX_AIC_1_2).
//
//   out[b, g] = softmax(q[b, g] k[b]^T * scale) v[b]       q [bs, G, Lq, D], k, v [bs, Lkv, D]
//
// Non-causal; fp16 or bf16 in and out; D = 64 or 128. The query rows of the G responses of a batch
// are stacked along M (q[b] is one contiguous [G * Lq, D] matrix), so each K/V tile is read once per
// 128-row M-tile: once per batch for decode shapes (G * Lq <= 128). See the tiling header for the
// work split, the K/V splits and why the result is batch-invariant.
//
// Per unit (batch b, M-tile of mLen <= 128 stacked rows, K/V tiles j0..j1-1) and K/V tile j
// (nLen <= 128 keys):
//   AIC  S_j = Q K_j^T      GM -> L1 (ND -> NZ), L1 -> L0A/L0B (LoadData), Mmad into L0C (fp32),
//                           Fixpipe to the core's GM workspace S slot j % 2 (fp32);  flag S  ->
//   AIV  (its half of the rows) online softmax in fp32: x = S * scale (keys past nLen are -inf),
//        m_new = max(m, rowmax x), alpha = exp(m - m_new), P = exp(x - m_new),
//        l = l * alpha + rowsum P, O *= alpha; P rounded to the input type into the P slot;  flag P ->
//   AIC  O_j = P V_j        P and V_j GM -> L1 (V's key padding zeroed), L0A/L0B (V transposed per
//                           fractal into L0B's Zn), Mmad, Fixpipe to the O_j slot (fp32);   flag O ->
//   AIV  O += O_j.  At the end of each K/V split (kv_tiles_per_split tiles, boundaries set by len_kv):
//        a local unit merges the split's (m, l, O) into its running result in UB and, after its last
//        split, writes out = O / L rounded to the input type; a split unit writes (m, l, O) of its
//        rows to the split's partial slot in GM instead.
//   Distributed launches then run a second phase on the AIVs only: SyncAll<true>(), and each AIV
//   merges, for its 8-row combine groups, the partial slots of splits 0, 1, 2, ... with the same
//   Merge as the local units and writes the output rows. The AICs take no part in it.
// The AIC computes S_{j+1} before waiting for P_j (two S slots), so the Cube works while the vector
// cores run the softmax.
//
// Cross-core protocol (mode 2: AIC <-> the two AIVs of one AI core), per K/V tile:
//   kFlagS  AIC sets after Fixpipe(S_j)      AIVs wait before reading S_j
//   kFlagP  AIVs set after writing P_j       AIC waits (both AIVs) before reading P_j
//   kFlagO  AIC sets after Fixpipe(O_j)      AIVs wait before reading O_j
// Slot reuse follows from the order: S_{j+2} is written after P_j arrived (so S_j was read), O_{j+1}
// and P_{j+1} are produced only after the AIVs read O_j, and the AIC read P_j before it set kFlagO.
// An AIV with no rows in a unit (mLen = 1) still takes part in every handshake.
//
// Intra-core order on the AIC uses explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX and
// the reverse pairs before every buffer reuse); on the AIVs the queues order MTE2 -> V -> MTE3.
#ifndef FLA_NPU_PREFIX_SHARED_ATTENTION_KERNEL_H
#define FLA_NPU_PREFIX_SHARED_ATTENTION_KERNEL_H

#include "../common/chunk_cube.h"  // the loads, the row broadcasts, Sync
#include "../common/vector_io.h"
#include "kernel_operator.h"
#include "prefix_shared_attention_tiling.h"

namespace fla_npu {
namespace psa {

using namespace AscendC;
using namespace chunk_cube;
using namespace vector_io;

constexpr uint16_t kFlagS = 0, kFlagP = 1, kFlagO = 2;
constexpr float kNegInf = -__builtin_inff();

__aicore__ inline uint32_t Ceil16(uint32_t v) { return (v + 15) / 16 * 16; }
__aicore__ inline uint32_t Pad32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }

// The kernel's GM arguments (both sides read their own).
struct PsaGm {
    GmAddr q, k, v, out, ws;
};

// The S (two), P and O slots of AI core `block` in the workspace.
template <class T>
__aicore__ inline void BindTileSlots(GlobalTensor<float>& s, GlobalTensor<T>& p, GlobalTensor<float>& o, GM_ADDR ws,
                                     uint32_t block, const PsaTiling& t) {
    __gm__ uint8_t* base = (__gm__ uint8_t*)ws + uint64_t(block) * t.ws_bytes_per_core;
    Bind(2ull * kBlockM * kBlockN, s, base + t.ws_s_off);
    Bind(uint64_t(kBlockM) * kBlockN, p, base + t.ws_p_off);
    Bind(uint64_t(kBlockM) * t.D, o, base + t.ws_o_off);
}

// ------------------------------------------------------------------------------------------------
// AIC: the two matrix products.
// ------------------------------------------------------------------------------------------------
template <class T>
class PsaCube {
  public:
    __aicore__ inline PsaCube(const PsaGm& a, const PsaTiling& t) : t_(t) {
        Bind(uint64_t(t_.bs) * t_.rows * t_.D, gQ_, a.q);
        Bind(uint64_t(t_.bs) * t_.len_kv * t_.D, gK_, a.k, gV_, a.v);
        BindTileSlots(gS_, gP_, gO_, a.ws, static_cast<uint32_t>(GetBlockIdx()), t_);
        InitBufs(pipe_, kBlockM * t_.D * sizeof(T), q1_, qa_);  // L1 and L0A (one arena each): Q, then P
        InitBufs(pipe_, kBlockM * kBlockN * sizeof(T), p1_, pa_);
        InitBufs(pipe_, kBlockN * t_.D * sizeof(T), k1_, v1_, kb_, vb_);  // L1, then L0B
        InitBufs(pipe_, kBlockM * kBlockN * sizeof(float), sc_);
        InitBufs(pipe_, kBlockM * t_.D * sizeof(float), oc_);
    }

    __aicore__ inline void Process() {
        uint32_t j0 = 0, j1 = 0;
        const Units r = CoreUnitsOf(t_, static_cast<uint32_t>(GetBlockIdx()));
        for (uint32_t u = r.first; u < r.first + r.count; ++u) {
            UnitWork(t_, u, &b_, &m0_, &mLen_, &j0, &j1);
            mPad_ = Ceil16(mLen_);
            LoadQ();
            ComputeS(j0);
            for (uint32_t j = j0; j < j1; ++j) {
                if (j + 1 < j1) ComputeS(j + 1);
                ComputePV(j);
            }
        }
    }

  private:
    __aicore__ inline void LoadQ() {
        LocalTensor<T> q1 = q1_.Get<T>(), qa = qa_.Get<T>();
        Sync<HardEvent::MTE1_MTE2>();  // the previous unit's LoadData has read q1
        if (mPad_ != mLen_) ZeroL1(q1, mPad_ * t_.D);
        LoadNz(q1, gQ_[(uint64_t(b_) * t_.rows + m0_) * t_.D], mLen_, t_.D, mPad_);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();  // the previous unit's Mmads have read qa
        LoadA(qa, q1, mPad_, t_.D);
    }

    // S_j = Q K_j^T into S slot j % 2; flag S.
    __aicore__ inline void ComputeS(uint32_t j) {
        uint32_t n0 = 0, nLen = 0;
        KvTile(t_, j, &n0, &nLen);
        const uint32_t nPad = Ceil16(nLen);
        LocalTensor<T> k1 = k1_.Get<T>(), kb = kb_.Get<T>(), qa = qa_.Get<T>();
        LocalTensor<float> sc = sc_.Get<float>();
        Sync<HardEvent::MTE1_MTE2>();
        if (nPad != nLen) ZeroL1(k1, nPad * t_.D);
        // Rows = keys, C0 along d: the NZ fractals are already L0B's Zn fractals of K^T (k = d, n = keys).
        LoadNz(k1, gK_[(uint64_t(b_) * t_.len_kv + n0) * t_.D], nLen, t_.D, nPad);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();
        LoadData(kb, k1, LoadData2dParams(0, static_cast<uint8_t>((t_.D / 16) * (nPad / 16)), 1, 0, 0, false, 0));
        Sync<HardEvent::MTE1_M>();
        Sync<HardEvent::FIX_M>();  // the previous Fixpipe has read sc
        // m = the padded row count (zero rows): never 1, which would switch the Cube to GEMV mode
        // and read L0A as ND (GEMV.md). Padding rows and columns stay in L0C.
        Mmad(sc, qa, kb,
             MmadParams(static_cast<uint16_t>(mPad_), static_cast<uint16_t>(nLen), static_cast<uint16_t>(t_.D), 0, false, true));
        Sync<HardEvent::M_FIX>();
        Fixpipe(gS_[uint64_t(j % 2) * kBlockM * kBlockN], sc,
                FixpipeParamsV220(static_cast<uint16_t>(nLen), static_cast<uint16_t>(mLen_), static_cast<uint16_t>(mPad_),
                                  kBlockN, false));
        CrossCoreSetFlag<2, PIPE_FIX>(kFlagS);
    }

    // O_j = P_j V_j into the O slot; flag O.
    __aicore__ inline void ComputePV(uint32_t j) {
        uint32_t n0 = 0, nLen = 0;
        KvTile(t_, j, &n0, &nLen);
        const uint32_t kRows = Ceil16(nLen);
        LocalTensor<T> v1 = v1_.Get<T>(), p1 = p1_.Get<T>(), vb = vb_.Get<T>(), pa = pa_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();
        CrossCoreWaitFlag(kFlagP);  // both AIVs wrote their rows of P_j
        Sync<HardEvent::MTE1_MTE2>();
        // V_j as B (k = keys, n = d): the key padding rows up to 16 must be zero (P's are, but
        // 0 * NaN is NaN).
        if (kRows != nLen) ZeroL1(v1, kRows * t_.D);
        LoadNz(v1, gV_[(uint64_t(b_) * t_.len_kv + n0) * t_.D], nLen, t_.D, kRows);
        // P_j as A (m rows, k = keys): ND -> NZ zero-fills each row's C0 tail, i.e. keys nLen..kRows;
        // the rows past mLen are zeroed here.
        if (mPad_ != mLen_) ZeroL1(p1, mPad_ * kRows);
        LoadNz(p1, gP_, mLen_, nLen, mPad_, kBlockN);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();
        LoadA(pa, p1, mPad_, kRows);
        // L1 NZ of V holds 16 (keys) x 16 (d) fractals, column-major; L0B wants fractal (key block,
        // d block) row-major, each d-major: one transposing LoadData per key block.
        LoadB(vb, v1, kRows, 0, t_.D);
        Sync<HardEvent::MTE1_M>();
        Sync<HardEvent::FIX_M>();
        Mmad(oc, pa, vb,
             MmadParams(static_cast<uint16_t>(mPad_), static_cast<uint16_t>(t_.D), static_cast<uint16_t>(nLen), 0, false, true));
        Sync<HardEvent::M_FIX>();
        Fixpipe(gO_, oc,
                FixpipeParamsV220(static_cast<uint16_t>(t_.D), static_cast<uint16_t>(mLen_), static_cast<uint16_t>(mPad_), t_.D,
                                  false));
        CrossCoreSetFlag<2, PIPE_FIX>(kFlagO);
    }

    const PsaTiling t_;
    uint32_t b_ = 0, m0_ = 0, mLen_ = 0, mPad_ = 0;
    TPipe pipe_;
    TBuf<TPosition::A1> q1_, p1_;
    TBuf<TPosition::B1> k1_, v1_;
    TBuf<TPosition::A2> qa_, pa_;
    TBuf<TPosition::B2> kb_, vb_;
    TBuf<TPosition::CO1> sc_, oc_;
    GlobalTensor<T> gQ_, gK_, gV_, gP_;
    GlobalTensor<float> gS_, gO_;
};

// ------------------------------------------------------------------------------------------------
// AIV: online softmax and the output accumulator for its rows of the M-tile.
// ------------------------------------------------------------------------------------------------
template <class T>
class PsaVector {
  public:
    __aicore__ inline PsaVector(const PsaGm& a, const PsaTiling& t) : t_(t) {
        Bind(uint64_t(t_.bs) * t_.rows * t_.D, gOut_, a.out);
        BindTileSlots(gS_, gP_, gO_, a.ws, at_.block, t_);
        slotFloats_ = t_.partial_slot_bytes / sizeof(float);
        Bind(uint64_t(t_.partial_slots) * slotFloats_, gPart_, a.ws + PartialBase(t_));
        constexpr uint32_t R = kRowsPerAiv;
        InitQues(pipe_, 1, R * kBlockN * sizeof(float), sQ_);
        InitQues(pipe_, 1, R * kBlockN * sizeof(T), pQ_);
        InitQues(pipe_, 1, R * t_.D * sizeof(float), ojQ_);
        InitBufs(pipe_, R * t_.D * sizeof(float), acc_);
        InitQues(pipe_, 1, R * t_.D * sizeof(T), outQ_);
        InitBufs(pipe_, R * kFloatLanes * sizeof(float), half_);
        InitBufs(pipe_, R * sizeof(float), m_[0], m_[1], l_, red_, alpha_);
        InitBufs(pipe_, R * 8 * sizeof(float), brcb_);
        InitBufs(pipe_, 8 * sizeof(float), ninf_);
        InitBufs(pipe_, R * t_.D * sizeof(float), oRun_);
        InitBufs(pipe_, R * sizeof(float), mRun_[0], mRun_[1], lRun_);
        InitBufs(pipe_, R * 8 * sizeof(float), brcb2_);
        Duplicate(ninf_.Get<float>(), kNegInf, 8);
        OrderV();
    }

    __aicore__ inline void Process() {
        const bool local = t_.unit_splits == 1;
        const uint32_t per = t_.kv_tiles_per_split;
        const Units r = CoreUnitsOf(t_, at_.block);
        for (uint32_t u = r.first; u < r.first + r.count; ++u) {
            uint32_t b = 0, m0 = 0, mLen = 0, j0 = 0, j1 = 0;
            UnitWork(t_, u, &b, &m0, &mLen, &j0, &j1);
            AivRows(mLen, at_.sub, &r0_, &R_);
            if (R_ > 0 && local) ResetRun();
            for (uint32_t j = j0; j < j1; ++j) {
                if (R_ > 0 && j % per == 0) ResetSplit();
                CrossCoreWaitFlag(kFlagS);
                if (R_ > 0) Softmax(j);
                CrossCoreSetFlag<2, PIPE_MTE3>(kFlagP);
                if (R_ > 0) RescaleAcc();
                CrossCoreWaitFlag(kFlagO);
                if (R_ > 0) Accumulate();
                if (R_ > 0 && ((j + 1) % per == 0 || j + 1 == j1)) {  // the split ends
                    if (local) Merge(m_[cur_].Get<float>(), l_.Get<float>(), acc_.Get<float>());
                    else WritePartial(PartialSlot(t_, b, m0 / kBlockM, j / per));
                }
            }
            if (R_ > 0 && local) WriteOut(b, m0 + r0_);
        }
        if (!local) {
            // Every split's partial result is in GM before any AIV merges: the barrier waits for
            // all pipes of all AIVs (the AICs have nothing to do with the merge).
            PipeBarrier<PIPE_ALL>();
            SyncAll<true>();
            Combine();
        }
    }

  private:
    // S_j -> P_j (to GM), updating the running max and sum; leaves alpha = exp(m_old - m_new).
    __aicore__ inline void Softmax(uint32_t j) {
        uint32_t n0 = 0, nLen = 0;
        KvTile(t_, j, &n0, &nLen);
        constexpr uint32_t N = kBlockN;
        constexpr uint8_t rowBlk = N * sizeof(float) / 32;  // 16 blocks per S row
        const int32_t R = static_cast<int32_t>(R_);
        LocalTensor<float> s = sQ_.template AllocTensor<float>();
        const uint32_t rowBytes = nLen * 4;
        const DataCopyExtParams cp(static_cast<uint16_t>(R_), rowBytes, (N - nLen) * 4, (N * 4 - Pad32(rowBytes)) / 32, 0);
        DataCopyPad(s, gS_[uint64_t(j % 2) * kBlockM * N + uint64_t(r0_) * N], cp, DataCopyPadExtParams<float>());
        sQ_.EnQue(s);
        s = sQ_.template DeQue<float>();
        LocalTensor<float> h = half_.Get<float>(), red = red_.Get<float>(), bc = brcb_.Get<float>();
        LocalTensor<float> mOld = m_[cur_].Get<float>(), mNew = m_[1 - cur_].Get<float>();
        LocalTensor<float> l = l_.Get<float>(), alpha = alpha_.Get<float>();
        const BinaryRepeatParams halves(1, 1, 1, 8, rowBlk, rowBlk);

        Muls(s, s, t_.scale, R * static_cast<int32_t>(N));
        OrderV();
        // Keys past the tile's end (whatever the UB holds there) score -inf, so exp gives 0: a
        // lane-masked Max of the -inf block with itself overwrites exactly those lanes of every row.
        if (nLen < N) {
            const BinaryRepeatParams fill(1, 0, 0, rowBlk, 0, 0);
            LocalTensor<float> ninf = ninf_.Get<float>();
            for (uint32_t half = 0; half < N / kFloatLanes; ++half) {
                const uint32_t c0 = half * kFloatLanes;
                if (nLen >= c0 + kFloatLanes) continue;
                const uint32_t from = nLen > c0 ? nLen - c0 : 0;  // first padded lane of this half
                uint64_t bits[2] = {from == 0 ? ~0ull : ~((1ull << from) - 1), 0};
                Max(s[c0], ninf, ninf, bits, static_cast<uint8_t>(R_), fill);
            }
            OrderV();
        }
        Max(h, s, s[kFloatLanes], kFloatLanes, static_cast<uint8_t>(R_), halves);
        OrderV();
        WholeReduceMax(red, h, kFloatLanes, R, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
        OrderV();
        Max(mNew, mOld, red, R);
        OrderV();
        Sub(alpha, mOld, mNew, R);
        OrderV();
        Exp(alpha, alpha, R);  // read by Mul(l, l, alpha) below, after later barriers
        BroadcastRows(bc, mNew, R_);
        OrderV();
        ApplyRows(RowOp::kSub, s, s, bc, R_, N);  // one instruction per half: other blocks
        OrderV();
        Exp(s, s, R * static_cast<int32_t>(N));
        OrderV();
        Add(h, s, s[kFloatLanes], kFloatLanes, static_cast<uint8_t>(R_), halves);
        OrderV();
        WholeReduceSum(red, h, kFloatLanes, R, 1, 1, 8);
        OrderV();
        Mul(l, l, alpha, R);
        OrderV();
        Add(l, l, red, R);
        OrderV();
        cur_ = 1 - cur_;

        CastOut(pQ_, gP_[uint64_t(r0_) * N], s, R_ * N);
        sQ_.FreeTensor(s);
    }

    // O *= alpha (per row).
    __aicore__ inline void RescaleAcc() {
        LocalTensor<float> acc = acc_.Get<float>(), bc = brcb_.Get<float>();
        BroadcastRows(bc, alpha_.Get<float>(), R_);
        OrderV();
        MulRows(acc, acc, bc, R_, t_.D);
        OrderV();
    }

    // O += O_j.
    __aicore__ inline void Accumulate() {
        LocalTensor<float> oj = CopyIn(ojQ_, gO_[uint64_t(r0_) * t_.D], R_ * t_.D);
        LocalTensor<float> acc = acc_.Get<float>();
        Add(acc, acc, oj, static_cast<int32_t>(R_ * t_.D));
        OrderV();
        ojQ_.FreeTensor(oj);
    }

    // A split starts from m = -inf, l = 0, O = 0.
    __aicore__ inline void ResetSplit() {
        Duplicate(acc_.Get<float>(), 0.0f, static_cast<int32_t>(R_ * t_.D));
        Duplicate(m_[cur_].Get<float>(), kNegInf, static_cast<int32_t>(R_));
        Duplicate(l_.Get<float>(), 0.0f, static_cast<int32_t>(R_));
        OrderV();
    }

    // The merged result starts from M = -inf, L = 0, O = 0.
    __aicore__ inline void ResetRun() {
        Duplicate(oRun_.Get<float>(), 0.0f, static_cast<int32_t>(R_ * t_.D));
        Duplicate(mRun_[run_].Get<float>(), kNegInf, static_cast<int32_t>(R_));
        Duplicate(lRun_.Get<float>(), 0.0f, static_cast<int32_t>(R_));
        OrderV();
    }

    // Merge one split's (m, l, O) of R_ rows into the running (M, L, O); l and O are overwritten.
    // The only merge code: a local unit calls it on its UB values as each split ends, a combine
    // group on the values it loads from GM, so both give the same bits.
    __aicore__ inline void Merge(const LocalTensor<float>& m, const LocalTensor<float>& l, const LocalTensor<float>& o) {
        const int32_t R = static_cast<int32_t>(R_);
        LocalTensor<float> mOld = mRun_[run_].Get<float>(), mNew = mRun_[1 - run_].Get<float>();
        LocalTensor<float> lRun = lRun_.Get<float>(), oRun = oRun_.Get<float>();
        LocalTensor<float> a = alpha_.Get<float>(), w = red_.Get<float>(), bcA = brcb_.Get<float>(), bcW = brcb2_.Get<float>();
        Max(mNew, mOld, m, R);
        OrderV();
        Sub(a, mOld, mNew, R);
        OrderV();
        Exp(a, a, R);  // exp(-inf) = 0 for the first split
        OrderV();
        Sub(w, m, mNew, R);
        OrderV();
        Exp(w, w, R);
        OrderV();
        Mul(lRun, lRun, a, R);
        OrderV();
        Mul(l, l, w, R);
        OrderV();
        Add(lRun, lRun, l, R);
        OrderV();
        BroadcastRows(bcA, a, R_);
        OrderV();
        BroadcastRows(bcW, w, R_);
        OrderV();
        MulRows(oRun, oRun, bcA, R_, t_.D);
        OrderV();
        MulRows(o, o, bcW, R_, t_.D);
        OrderV();
        Add(oRun, oRun, o, R * static_cast<int32_t>(t_.D));
        OrderV();
        run_ = 1 - run_;
    }

    // This AIV's rows of the split's (m, l, O) to their partial slot: m and l at row r0_ (a multiple
    // of 8, so the two AIVs never share a 32-byte block), O as rows of D fp32.
    __aicore__ inline void WritePartial(uint32_t slot) {
        const uint64_t base = uint64_t(slot) * slotFloats_;
        const DataCopyExtParams rowsOf4(1, R_ * 4, 0, 0, 0);
        Sync<HardEvent::V_MTE3>();
        DataCopyPad(gPart_[base + r0_], m_[cur_].Get<float>(), rowsOf4);
        DataCopyPad(gPart_[base + kBlockM + r0_], l_.Get<float>(), rowsOf4);
        DataCopy(gPart_[base + 2 * kBlockM + uint64_t(r0_) * t_.D], acc_.Get<float>(), R_ * t_.D);
        Sync<HardEvent::MTE3_V>();  // the next split's reset overwrites what was just copied out
    }

    // After the barrier: merge the kv_splits partial slots of each of this AIV's combine groups,
    // split 0 first, and write the groups' outputs.
    __aicore__ inline void Combine() {
        uint32_t first = 0, count = 0;
        AivCombineGroups(t_, at_.block * 2 + at_.sub, &first, &count);
        for (uint32_t g = first; g < first + count; ++g) {
            uint32_t b = 0, row0 = 0, cnt = 0;
            CombineRows(t_, g, &b, &row0, &cnt);
            const uint32_t mt = row0 / kBlockM, r = row0 % kBlockM;
            R_ = cnt;
            ResetRun();
            const DataCopyExtParams rowsOf4(1, cnt * 4, 0, 0, 0);
            for (uint32_t s = 0; s < t_.kv_splits; ++s) {
                const uint64_t base = uint64_t(PartialSlot(t_, b, mt, s)) * slotFloats_;
                LocalTensor<float> ml = sQ_.template AllocTensor<float>();  // m at 0, l at kRowsPerAiv
                DataCopyPad(ml, gPart_[base + r], rowsOf4, DataCopyPadExtParams<float>());
                DataCopyPad(ml[kRowsPerAiv], gPart_[base + kBlockM + r], rowsOf4, DataCopyPadExtParams<float>());
                sQ_.EnQue(ml);
                LocalTensor<float> o = ojQ_.template AllocTensor<float>();
                DataCopy(o, gPart_[base + 2 * kBlockM + uint64_t(r) * t_.D], cnt * t_.D);
                ojQ_.EnQue(o);
                ml = sQ_.template DeQue<float>();
                o = ojQ_.template DeQue<float>();
                Merge(ml, ml[kRowsPerAiv], o);
                sQ_.FreeTensor(ml);
                ojQ_.FreeTensor(o);
            }
            WriteOut(b, row0);
        }
    }

    // out = O / L for R_ rows starting at stacked row `row` of batch b, rounded to T, written once.
    __aicore__ inline void WriteOut(uint32_t b, uint32_t row) {
        LocalTensor<float> o = oRun_.Get<float>(), bc = brcb_.Get<float>();
        BroadcastRows(bc, lRun_.Get<float>(), R_);
        OrderV();
        ApplyRows(RowOp::kDiv, o, o, bc, R_, t_.D);
        OrderV();
        CastOut(outQ_, gOut_[(uint64_t(b) * t_.rows + row) * t_.D], o, R_ * t_.D);
    }

    const PsaTiling t_;
    const AivPlace at_ = ThisAiv();  // known from the start: the launch places the core
    uint32_t r0_ = 0, R_ = 0, cur_ = 0, run_ = 0, slotFloats_ = 0;
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> sQ_, ojQ_;
    TQue<QuePosition::VECOUT, 1> pQ_, outQ_;
    // acc_, m_, l_: the current split; oRun_, mRun_, lRun_: the splits merged so far.
    TBuf<TPosition::VECCALC> acc_, half_, m_[2], l_, red_, alpha_, brcb_, ninf_, oRun_, mRun_[2], lRun_, brcb2_;
    GlobalTensor<T> gOut_, gP_;
    GlobalTensor<float> gS_, gO_, gPart_;
};

template <class T>
__aicore__ inline void RunPrefixSharedAttention(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR out, GM_ADDR ws, const PsaTiling& t) {
    RunMixed<PsaCube<T>, PsaVector<T>>(PsaGm{q, k, v, out, ws}, t);
}

}  // namespace psa
}  // namespace fla_npu

#endif
