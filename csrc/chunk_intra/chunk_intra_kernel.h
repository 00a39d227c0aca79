// Intra-chunk matrices (stage 2 of chunked KDA / Gated DeltaNet), mixed Cube + vector
// (KERNEL_TYPE_MIX_AIC_1_2):
//
//   Aqk[i, j] = sum_d q[i, d] k[j, d] e^(G[i, d] - G[j, d])            (j <= i, 0 above)
//   L[i, j]   = beta[i] sum_d k[i, d] k[j, d] e^(G[i, d] - G[j, d])    (j <  i, 0 on and above)
//   Akk       = (I + L)^-1
//
// The factoring that keeps every Cube operand finite, the shapes and the work split:
// chunk_intra_tiling.h. Per unit (chunk, head) u, the i-th of its AI core, operand and result slots
// i % 2, inverse slot i % kInvSlots:
//   AIV  [i >= 2: wait Free]  KDA: per owned block J, for every block row I >= J (reference row r:
//        its middle or first row, chunk_intra_tiling.h) the column operand rows k_j e^(G_r - G_j) of
//        block J (the diagonal block's rows zero when max |G_r - G_j| there exceeds safe_span ln 2), and at
//        I == J the row operands q_I, k_I times e^(G_I - G_r), in fp32, into the operand slot (each
//        G and k block read by its owner only);  set Ready (PIPE_MTE3);
//        then finish unit i - 1 (below)
//   AIC  wait Ready; KDA: per block row I, its operands from the fp32 slot into L1 (the row operands
//        as 16-row bands, the column operands an NZ matrix of their own: each product's operands then
//        one LoadData each) [the last: slot reused later: set Free], one fp32 Mmad per part (q, k): Fixpipe the
//        columns [0, 16 I) straight to Aqk (fp32, or rounded once to T) and L / beta's to the inverse
//        slot (fp32), the 16 x 16 diagonal blocks (fp32) to the result slot. GDN: [q; k] from GM, one Mmad
//        against k^T, Fixpipe (fp32) to the result slot (with qk_l2norm q q^T too: its diagonal blocks
//        for q's norms).  Set Done.  Then (BT > 16) wait Inv of unit i - MergeLag (GDN 2, KDA 1:
//        chunk_intra_tiling.h) and merge its inverse (BlockRowMerge: the blocks of Akk left of the
//        diagonal); after the last unit, those of the units not merged yet
//   AIV  finish: wait Done; KDA, per owned block row: the diagonal blocks masked (or computed exactly
//        per pair when unsafe), L's times beta, Aqk's written with the zero columns right of it. GDN, per
//        owned block row: the result rows times e^(G_i - G_j), masked (q's and k's norms from the
//        diagonals of q q^T and k k^T with qk_l2norm), L times beta, Aqk's whole rows
//        written, L's to the inverse slot. Then L's diagonal block inverted (BlockInverse16): X_bb and
//        the zeros right of it to Akk, -X_bb (KDA: -X_bb diag(beta_b)) and X_bb^T to the inverse slot.
//        (BT > 16) set Inv
// With KDA's gate in the launch (chunk_gate_intra_tiling.h) the AIVs form each unit's G themselves from
// the raw gate (ActivateGate, SumGate), the unit after the one whose operands the AIC multiplies.
// Ready also tells the AIC that the result slot it is about to fill was read: an AIV sets Ready for
// unit i (on MTE3) only after it finished unit i - 2, whose result reads (MTE2) precede the output
// copies (MTE3) that depend on them. The AIC and the AIVs write disjoint parts of Aqk and Akk. The
// inverse slot of unit i is written by the AIC's products (KDA) after the merges of unit i - 3 or
// earlier (one AIC, in order) and by the AIVs after Done(i), which the AIC sets after those merges.
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX and the
// reverse pairs before each buffer is reused); on the AIVs the queues order MTE2 -> V -> MTE3, the
// masks built by the scalar unit are ordered by S_V, the unsafe-block test reads a reduction by V_S.
#ifndef FLA_NPU_CHUNK_INTRA_KERNEL_H
#define FLA_NPU_CHUNK_INTRA_KERNEL_H

#include "../common/chunk_cube.h"
#include "../common/vector_io.h"
#include "../gate/gate_activation.h"
#include "../solve_tril/tril_inverse.h"
#include "chunk_intra_tiling.h"
#include "kda_blocks.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace chunk_intra {

using namespace AscendC;
using namespace chunk_cube;
using namespace vector_io;
using kda_blocks::ReferenceRow;
using solve_tril::BlockInverse16;
using solve_tril::BlockRowMerge;
using solve_tril::kBlockElems;

// The kernel's GM arguments (both sides read their own). With the gate in the launch (the tiling's
// gate_in) g is the raw gate and the last five are its parameters and G's outputs.
struct ChunkIntraGm {
    GmAddr q, k, beta, g, aqk, akk, qScale, kScale, ws;
    GmAddr aLog = nullptr, dtBias = nullptr, len = nullptr, gOut = nullptr, eLast = nullptr;
};

constexpr uint16_t kFlagDone = 2;  // AIC -> AIVs: the results of a unit are in its result slot
constexpr uint16_t kFlagInv = 3;   // AIVs -> AIC: a unit's inverse slot holds its diagonal blocks (BT > 16)
// AIV <-> AIV (gate in the launch, BT > 16): both AIVs' activated rows in the gate slot. Mode 1: each AIV
// of the AI core sets it, then waits for it (CrossCoreSetFlag.md: "模式1: AI Core内部, AIV之间的同步").
constexpr uint16_t kFlagGate = 4;

// q and k, token-major [NC, BT, HV / groups, K]: the element of row r of value-head unit u, and
// the distance between rows.
__aicore__ inline uint64_t QkRowOf(const ChunkIntraTiling& t, uint32_t u, uint32_t r) {
    return TokenRow(u, r, t.HV, t.groups, t.BT, t.K);
}
__aicore__ inline uint32_t QkPitchOf(const ChunkIntraTiling& t) { return TokenPitch(t.HV, t.groups, t.K); }

// An output (Aqk or Akk), bound as float and as T; f32 says which is written.
template <class T>
struct OutGm {
    GlobalTensor<float> f;
    GlobalTensor<T> t;
    bool f32;
};

// The GM tensors both sides use: q, k, Aqk and Akk (OutGm: each float32 or T, by the tiling),
// and AI core `block`'s workspace: its two operand slots (KDA), then its two result slots, then its
// inverse slots (BT > 16; InvSlot), then its two gate slots (GateSlotElems: the gate in the launch).
template <class T>
struct SharedGm {
    GlobalTensor<T> q, k;
    GlobalTensor<float> op, res, inv, gate;  // op: the KDA operand slots (fp32)
    OutGm<T> a, akk;

    __aicore__ inline void BindAll(const ChunkIntraGm& g, const ChunkIntraTiling& t, uint32_t block) {
        const uint64_t rows = uint64_t(t.num_units) * t.BT;
        Bind(rows / t.groups * t.K, q, g.q, k, g.k);  // q, k: HV / groups heads (GVA)
        Bind(rows * t.BT, a.f, g.aqk, a.t, g.aqk, akk.f, g.akk, akk.t, g.akk);
        a.f32 = t.aqk_f32 != 0;
        akk.f32 = t.akk_f32 != 0;
        if (t.Kg != 1) BindSlots(op, g.ws, block, t.ws_bytes_per_core, t.ws_op_elems);
        GmAddr res0 = g.ws + uint64_t(block) * t.ws_bytes_per_core + 2ull * t.ws_op_elems * sizeof(float);
        Bind(2ull * t.ws_res_elems, res, res0);
        const GmAddr inv0 = res0 + 2ull * t.ws_res_elems * 4;
        if (t.nb > 1) Bind(uint64_t(kInvSlots) * t.ws_inv_elems, inv, inv0);
        if (GateSlotElems(t) != 0) Bind(2ull * GateSlotElems(t), gate, inv0 + uint64_t(kInvSlots) * t.ws_inv_elems * 4);
    }
};

// Where inverse slot `slot` (a core's i-th unit: i % kInvSlots) starts among the inverse floats, and
// its L within it (after the merges' own slot, solve_tril::MergeSizesOf).
__aicore__ inline uint64_t InvSlot(const ChunkIntraTiling& t, uint32_t slot) { return uint64_t(slot) * t.ws_inv_elems; }
__aicore__ inline uint64_t InvL(const ChunkIntraTiling& t, uint32_t slot) {
    return InvSlot(t, slot) + solve_tril::MergeSizesOf(t.BT).elems;
}

// ------------------------------------------------------------------------------------------------
// AIC: one Mmad per block row (KDA) or one for the chunk (GDN), fp32 results to the result slot;
// the merges of the inverse (O: Akk's type).
// ------------------------------------------------------------------------------------------------
template <class T, class O>
class ChunkIntraCube {
  public:
    __aicore__ inline ChunkIntraCube(const ChunkIntraGm& a, const ChunkIntraTiling& t) : t_(t) {
        kda_ = t_.Kg != 1;
        g_.BindAll(a, t_, static_cast<uint32_t>(GetBlockIdx()));
        // the operands (KDA's fp32 slot, GDN's [q; k]); the merges' after
        InitBufs(pipe_, kda_ ? t_.ws_op_elems * sizeof(float) : 2 * t_.BT * t_.K * sizeof(T), l1_);
        InitBufs(pipe_, t_.l0a_bytes_used, aa_);
        InitBufs(pipe_, t_.l0b_bytes_used, bb_);
        InitBufs(pipe_, t_.l0c_bytes_used, oc_);
        if (t_.nb > 1) {  // L0 taken in turns with the products
            merge_.Init(pipe_, t_.BT, aa_.Get<float>(), bb_.Get<float>(), oc_.Get<float>());
            Bind(uint64_t(t_.num_units) * t_.BT * t_.BT, akk_, a.akk);
        }
    }

    // The units under the slot protocol (Unit), then the merges of the last MergeLag() units.
    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, static_cast<uint32_t>(GetBlockIdx()));
        ForEachSlotUnit(*this, t_, static_cast<uint32_t>(GetBlockIdx()));
        const uint32_t lag = MergeLag(t_);
        for (uint32_t i = r.count > lag ? r.count - lag : 0; i < r.count; ++i) Merge(r.first + i, i % kInvSlots);
    }

    // Unit u's products (the core's n_-th), then the merges of unit u - MergeLag(): they wait for
    // its AIVs' Inv, which the AIVs set after forming the unit after it.
    __aicore__ inline void Unit(uint32_t u, uint32_t slot, bool slotReused) {
        const uint32_t lag = MergeLag(t_);
        if (kda_) UnitKda(u, slot, n_ % kInvSlots, slotReused);
        else UnitGdn(u, slot, slotReused);
        CrossCoreSetFlag<2, PIPE_FIX>(kFlagDone);  // after the Fixpipes of the unit
        if (n_ >= lag) Merge(u - lag, (n_ - lag) % kInvSlots);
        ++n_;
    }

  private:
    // Akk's blocks left of the diagonal of unit u (inverse slot `inv`), BT > 16: once both AIVs set Inv
    // (their diagonal blocks, and GDN's L columns, in the slot), after this core's Fixpipes of L (KDA).
    __aicore__ inline void Merge(uint32_t u, uint32_t inv) {
        if (t_.nb == 1) return;
        const uint64_t s = InvSlot(t_, inv);
        const solve_tril::MergeSizes m = solve_tril::MergeSizesOf(t_.BT);
        CrossCoreWaitFlag(kFlagInv);
        Sync<HardEvent::FIX_MTE2>();
        merge_.Run(g_.inv[InvL(t_, inv)], akk_[uint64_t(u) * t_.BT * t_.BT], g_.inv[s], g_.inv[s + m.nx_off],
                   g_.inv[s + m.rt_off], t_.BT);
    }

    // The A rows (L1 fractal rows aFrac..aFrac + m / 16, as `parts` products of m / parts rows each,
    // one L0A / L0C region per part) times the transposes of n rows of L1 from fractal row bFrac (the
    // L1 matrix has rowFrac fractal rows): Mmads into L0C, ready for Fixpipe (part p at
    // oc[p * pitch]). Orders itself after the previous Mmads (L0A / L0B) and Fixpipes (L0C).
    __aicore__ inline void Products(uint32_t rowFrac, uint32_t aFrac, uint32_t m, uint32_t parts, uint32_t bFrac, uint32_t n,
                                    uint32_t pitch) {
        LocalTensor<T> l1 = l1_.Get<T>(), aa = aa_.Get<T>(), bb = bb_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();
        const uint32_t K = t_.K, mp = m / parts;
        Sync<HardEvent::M_MTE1>();  // the previous Mmads have read L0A / L0B
        for (uint32_t p = 0; p < parts; ++p) LoadARows(aa[p * mp * K], l1, rowFrac, aFrac + p * mp / 16, mp / 16, K);
        LoadBTransposed(bb, l1, rowFrac, bFrac, n, K);
        Sync<HardEvent::MTE1_M>();
        Sync<HardEvent::FIX_M>();  // the previous Fixpipes have read L0C
        for (uint32_t p = 0; p < parts; ++p)
            Mmad(oc[p * pitch], aa[p * mp * K], bb,
                 MmadParams(static_cast<uint16_t>(mp), static_cast<uint16_t>(n), static_cast<uint16_t>(K), 0, false, true));
        Sync<HardEvent::M_FIX>();
    }

    // 16 rows x n columns of an L0C product (16-row Nz) to an output at element `at` (row pitch BT):
    // fp32, or rounded once to T by the Fixpipe (CAST_RINT).
    __aicore__ inline void ToOutput(const OutGm<T>& out, uint64_t at, const LocalTensor<float>& oc, uint32_t n) {
        FixpipeParamsV220 p(static_cast<uint16_t>(n), 16, 16, t_.BT, false);
        if (out.f32) {
            Fixpipe(out.f[at], oc, p);
        } else {
            p.quantPre = FixpipeQuant<T>::kMode;
            Fixpipe<T, float, CFG_ROW_MAJOR>(out.t[at], oc, p);
        }
    }

    // Block row I: q_I and k_I (times e^(G_I - G_r); row operand rows 32 I and 32 I + 16) times
    // the column operand (16 (I + 1) rows), one Mmad per part. Columns [0, 16 I) are final: straight
    // to Aqk and (L / beta: the merges take beta from their left factor) to the inverse slot; the
    // diagonal block (16 x 16 of each) to the result slot at 512 I (q part, then k part), which the
    // AIVs mask (and compute exactly when it is unsafe).
    __aicore__ inline void UnitKda(uint32_t u, uint32_t slot, uint32_t inv, bool slotReused) {
        const uint32_t BT = t_.BT, K = t_.K;
        LocalTensor<float> l1 = l1_.Get<float>();
        const GlobalTensor<float> op = g_.op[uint64_t(slot) * t_.ws_op_elems];
        SlotConsumer::Acquire();
        Sync<HardEvent::MTE1_MTE2>();  // the previous unit's LoadData have read L1
        LocalTensor<float> oc = oc_.Get<float>();
        const uint64_t res = uint64_t(slot) * t_.ws_res_elems;
        for (uint32_t I = 0; I < t_.nb; ++I) {
            // block row I's operands (loaded while the Cube multiplies block row I - 1's)
            LoadBands(l1[32 * I * K], op[32 * I * K], 32, K);
            LoadNz(l1[ColumnAt(I)], op[ColumnAt(I)], 16 * (I + 1), K);
            if (I + 1 == t_.nb) SlotConsumer::Release(slotReused);
            Sync<HardEvent::MTE2_MTE1>();
            kda_blocks::BlockRowProducts(l1, ColumnAt(I), aa_.Get<float>(), bb_.Get<float>(), oc, I, K, BT);
            for (uint32_t p = 0; p < 2; ++p)
                Fixpipe(g_.res[res + 512 * I + 256 * p], oc[p * 16 * BT + 256 * I], FixpipeParamsV220(16, 16, 16, 16, false));
            if (I == 0) continue;
            ToOutput(g_.a, (uint64_t(u) * BT + 16 * I) * BT, oc, 16 * I);
            Fixpipe(g_.inv[InvL(t_, inv) + 16 * I * BT], oc[16 * BT],
                    FixpipeParamsV220(static_cast<uint16_t>(16 * I), 16, 16, BT, false));  // L's columns, fp32
        }
    }

    // The first element of block row I's column operand, in the operand slot and in L1.
    __aicore__ inline uint64_t ColumnAt(uint32_t I) const { return uint64_t(t_.row_rows + ColOffset(I)) * t_.K; }

    // [q; k] (2 BT rows) from GM times k^T -> result rows [0, BT) q k^T, [BT, 2 BT) k k^T.
    __aicore__ inline void UnitGdn(uint32_t u, uint32_t slot, bool slotReused) {
        const uint32_t BT = t_.BT, K = t_.K;
        LocalTensor<T> l1 = l1_.Get<T>();
        SlotConsumer::Acquire();  // the AIVs have read this result slot's previous results
        Sync<HardEvent::MTE1_MTE2>();
        const uint64_t qk = QkRowOf(t_, u, 0);  // q, k token-major: rows QkPitchOf(t_) apart
        LoadNz(l1, g_.q[qk], BT, K, 2 * BT, QkPitchOf(t_));
        LoadNz(l1[BT * 16], g_.k[qk], BT, K, 2 * BT, QkPitchOf(t_));
        SlotConsumer::Release(slotReused);
        Sync<HardEvent::MTE2_MTE1>();
        Products(2 * BT / 16, 0, 2 * BT, 1, BT / 16, BT, 0);
        Fixpipe(g_.res[uint64_t(slot) * t_.ws_res_elems], oc_.Get<float>(),
                FixpipeParamsV220(static_cast<uint16_t>(BT), static_cast<uint16_t>(2 * BT), static_cast<uint16_t>(2 * BT), BT,
                                  false));
        if (!t_.qk_l2norm) return;
        // q q^T's 16 x 16 diagonal blocks after them (in place in a BT x BT matrix): its diagonal gives
        // the AIVs q's rows' norms, no q read on the vector side
        Products(2 * BT / 16, 0, BT, 1, 0, BT, 0);
        for (uint32_t I = 0; I < BT / 16; ++I)
            Fixpipe(g_.res[uint64_t(slot) * t_.ws_res_elems + 2ull * BT * BT + 16ull * I * (BT + 1)],
                    oc_.Get<float>()[16 * I * (BT + 16)], FixpipeParamsV220(16, 16, static_cast<uint16_t>(BT), BT, false));
    }

    const ChunkIntraTiling t_;
    bool kda_ = true;
    uint32_t n_ = 0;  // the core's units so far
    TPipe pipe_;
    TBuf<TPosition::A1> l1_;
    TBuf<TPosition::A2> aa_;
    TBuf<TPosition::B2> bb_;
    TBuf<TPosition::CO1> oc_;
    SharedGm<T> g_;
    BlockRowMerge<O> merge_;
    GlobalTensor<O> akk_;
};

// ------------------------------------------------------------------------------------------------
// AIV: the scaled operands (KDA) and the outputs, for the block rows this sub-block owns. R: the raw
// gate's type with the gate in the launch (chunk_gate_intra_tiling.h), else unused.
// ------------------------------------------------------------------------------------------------
template <class T, class R = float>
class ChunkIntraVector {
  public:
    __aicore__ inline ChunkIntraVector(const ChunkIntraGm& a, const ChunkIntraTiling& t) : t_(t) {
        kda_ = t_.Kg != 1;
        g_.BindAll(a, t_, at_.block);
        const uint64_t rows = uint64_t(t_.num_units) * t_.BT;
        Bind(rows, gB_, a.beta);
        Bind(rows * t_.Kg, gG_, t_.gate_in ? a.gOut : a.g);      // G: read, or (gate_in) written here
        Bind(rows / t_.groups, gQs_, a.qScale, gKs_, a.kScale);  // q_scale, k_scale [NC, HQ, BT]
        const uint32_t P = t_.piece_elems, BT = t_.BT;
        InitQues(pipe_, 2, P * sizeof(float), inF_);
        InitQues(pipe_, 2, P * sizeof(T), inT_);
        InitQues(pipe_, 1, 32 * BT * sizeof(float), res_);
        InitQues(pipe_, 1, 16 * sizeof(float), inB_);
        // the first, middle and last rows of G of every block row (KDA) or a spread diagonal (GDN's k k^T, q q^T)
        InitQues(pipe_, 1, (3 * t_.nb * t_.K > 8 * BT ? 3 * t_.nb * t_.K : 8 * BT) * sizeof(float), inR_);
        InitQues(pipe_, 2, 16 * BT * sizeof(T), outT_);
        InitQues(pipe_, 2, 16 * BT * sizeof(float), outF_);
        if (kda_ && TwoOperandQueues()) {  // the fp32 operands: row operands, column operands below the diagonal
            InitQues(pipe_, 2, P * sizeof(float), outO_);
            InitQues(pipe_, 2, P * sizeof(float), outC_);
        } else if (kda_) {
            InitQues(pipe_, 1, P * sizeof(float), outO_);
        }
        InitBufs(pipe_, P * sizeof(float), w0_, w1_, w2_, w3_);
        InitBufs(pipe_, 16 * 8 * sizeof(float), bcB_, bcG_);
        InitBufs(pipe_, 16 * sizeof(float), red_);
        InitBufs(pipe_, kBlockElems * sizeof(float), x_, dg_);
        inv_.Init(pipe_);
        maskW_ = kda_ ? 16 : BT;  // KDA masks the diagonal block only, GDN whole rows
        maskBytes_ = (16 * maskW_ / 8 + 31) / 32 * 32;
        InitBufs(pipe_, 4 * maskBytes_, masks_);
        for (uint32_t I = 0; I < t_.nb; ++I)
            if (BlockRowOwner(I) == at_.sub) owned_[nOwned_++] = I;
        BuildMasks();
        if (t_.gate_in) InitGate(a, rows);
        // zero rows for the columns right of a diagonal block (KDA's Aqk; Akk), in both output types
        InitBufs(pipe_, 16 * BT * sizeof(float), zf_);
        InitBufs(pipe_, 16 * BT * sizeof(T), zt_);
        Duplicate(zf_.Get<float>(), 0.0f, static_cast<int32_t>(16 * BT));
        OrderV();
        Cast(zt_.Get<T>(), zf_.Get<float>(), RoundMode::CAST_RINT, 16 * BT);
        Sync<HardEvent::V_MTE3>();
    }

    // With the gate in the launch, unit i + 1's G is formed while the AIC multiplies unit i's operands:
    // its raw rows activated before unit i - 1's outputs, summed after them (by then the other AIV's
    // activated rows are in the gate slot).
    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, at_.block);
        const bool forms = kda_ && nOwned_ > 0, gateIn = forms && t_.gate_in;
        if (gateIn && r.count > 0) {
            ActivateGate(r.first, 0);
            SumGate(r.first, 0);
        }
        for (uint32_t i = 0; i < r.count; ++i) {
            const bool next = gateIn && i + 1 < r.count;
            SlotProducer::Acquire(i);
            if (forms) Form(r.first + i, i % 2);
            SlotProducer::Ready();
            if (next) ActivateGate(r.first + i + 1, (i + 1) % 2);
            if (i >= 1) Finish(r.first + i - 1, i - 1);
            if (next) SumGate(r.first + i + 1, (i + 1) % 2);
        }
        if (r.count >= 1) Finish(r.first + r.count - 1, r.count - 1);
    }

  private:
    // ---- small pieces -------------------------------------------------------------------------
    // Select masks, 16 x W bits each (element (a, j) at bit a * W + j): [2 o] Aqk's j <= i, [2 o + 1]
    // L's j < i. GDN: W = BT, row i = 16 I + a of owned block row I = owned_[o]; KDA: the diagonal
    // block only (W = 16, i = a), the same for every block row.
    __aicore__ inline void BuildMasks() {
        uint32_t rows[2] = {0, 0};
        for (uint32_t o = 0; o < nOwned_; ++o) rows[o] = kda_ ? 0 : 16 * owned_[o];
        BuildCausalMasks(masks_.Get<uint8_t>(), maskBytes_, maskW_, rows, kda_ ? 1u : nOwned_);
    }

    // ---- KDA operands ----------------------------------------------------------------------------
    // The reference row of each block row I >= this AIV's first owned one, of unit u
    // (chunk_intra_tiling.h): its middle row m = 16 I + 8 when max |G_m - G_j| over its diagonal block
    // is at most safe_span ln 2 (then that block goes through the Cube), else its first row 16 I (the row
    // factors stay <= 1 whatever the gate). G does not increase along the chunk, so that maximum is
    // over the block's first and last rows: max(G_first - G_m, G_m - G_last). Reads those three rows
    // of each such block row once, into the returned tensor (rows 3 I, 3 I + 1, 3 I + 2: first, m,
    // last; the caller frees it), in which the reference row of I is row RefRow(I). Sets midRef_[I]
    // (the same choice on both AIVs: the same rows, the same operations).
    __aicore__ inline LocalTensor<float> ChooseReferences(uint32_t u) {
        const uint32_t K = t_.K;
        LocalTensor<float> d = w0_.Get<float>(), f = w1_.Get<float>(), x = w2_.Get<float>();
        LocalTensor<float> r = inR_.template AllocTensor<float>();
        if (t_.gate_in) {  // from the unit's G in the UB
            for (uint32_t I = owned_[0]; I < t_.nb; ++I)
                for (uint32_t i = 0; i < 3; ++i)
                    DataCopy(r[(3 * I + i) * K], gate_.Get<float>()[(16 * I + ReferenceRow(i)) * K], K);
            OrderV();
        } else {
            for (uint32_t I = owned_[0]; I < t_.nb; ++I)
                for (uint32_t i = 0; i < 3; ++i) DataCopy(r[(3 * I + i) * K], gG_[GateOf(u, 16 * I + ReferenceRow(i))], K);
            inR_.EnQue(r);
            r = inR_.template DeQue<float>();
        }
        for (uint32_t I = owned_[0]; I < t_.nb; ++I)
            midRef_[I] = kda_blocks::MiddleIsReference(red_.Get<float>(), r[3 * I * K], d, x, f, K, SafeSpan());
        return r;
    }

    // The tiling's safe_span (log2) in G's natural-log units.
    __aicore__ inline float SafeSpan() const { return t_.safe_span * kLn2; }

    // The element of G (KDA: token-major, common/chunk_cube.h's GateRow) of row r of unit u.
    __aicore__ inline uint64_t GateOf(uint32_t u, uint32_t r) const { return GateRow(u, r, t_.HV, t_.BT, t_.Kg); }

    // The row of ChooseReferences' tensor that is block row I's reference row.
    __aicore__ inline uint32_t RefRow(uint32_t I) const { return 3 * I + (midRef_[I] ? 1 : 0); }

    // This AIV's share of unit u's operands into operand slot `slot`, each G and k block read by one
    // AIV only: for every owned block J, the column operand rows of block J of every block row I >= J
    // (their reference rows read by both AIVs), and at J == I the row operands of I. G is in natural-log
    // units: its differences go to Exp as they are. Records in unsafe_[slot] which of its diagonal
    // blocks the AIV computes exactly (max |G_r - G_j| over the block above safe_span ln 2 from both
    // reference rows). The ownership (BlockRowOwner) gives both AIVs the same count of column operand
    // blocks for BT 64: {0, 3} 4 + 1, {1, 2} 3 + 2.
    //
    // The block rows I below J take block J's column operand rows as a base, fp32, times the column
    // factors e^(G_r(I) - G_b) (<= 1: r(I) after b): one multiply per element. The base is the diagonal
    // block's operand k_j e^(G_b - G_j), b = r(J) (factors within 2^+-safe_span: an entry is lost only
    // below 2^-(126 - safe_span) of its operands' product, the tiling's bound), or, when that block is
    // computed exactly, k_j e^(G_b - G_j) with b the block's last row (factors <= 1). It is formed in
    // gJ's buffer (G read by then), which RowOperands leaves alone.
    __aicore__ inline void Form(uint32_t u, uint32_t slot) {
        const uint32_t K = t_.K, n = 16 * K;
        const uint64_t base = uint64_t(slot) * t_.ws_op_elems;
        FetchBlock(u, owned_[0]);                     // its copies run while the references are chosen
        LocalTensor<float> gr = ChooseReferences(u);  // holds the reference row of each owned I
        LocalTensor<float> d = w0_.Get<float>(), f = w1_.Get<float>(), x = w2_.Get<float>(), kf = w3_.Get<float>();
        for (uint32_t o = 0; o < nOwned_; ++o) {
            const uint32_t J = owned_[o];
            const bool below = J + 1 < t_.nb;
            LocalTensor<float> gJ = BlockGate(J);
            WidenFetched<T>(inT_, kf, n);
            OrderV();
            ScaleRows(kf, OwnFactors(kf, x, gKs_, u, 16 * J, 1.0f, bcG_.Get<float>()), 16, K);  // once for every I
            SubFromRow(d, gr[RefRow(J) * K], gJ, 16, K);                                        // G_r - G_j
            OrderV();
            // a middle reference was chosen because the block fits the span from it
            const bool safe = midRef_[J] || MaxAbs(d, x, f) <= SafeSpan();
            unsafe_[slot][o] = !safe;
            const uint32_t baseRow = safe ? RefRow(J) : 3 * J + 2;  // b's row in gr
            if (safe) {  // column operand rows k_j e^(G_r - G_j): the diagonal block's and the base
                Exp(f, d, n);
                OrderV();
                Mul(gJ, kf, f, n);
                Sync<HardEvent::V_MTE3>();  // out from gJ as it is: the base stays there
                DataCopy(g_.op[ColumnOperand(base, J, J)], gJ, n);
            } else {  // the AIV computes this diagonal block exactly: zero operand rows
                LocalTensor<float> z = outO_.template AllocTensor<float>();
                Duplicate(z, 0.0f, n);
                CopyOut(outO_, g_.op[ColumnOperand(base, J, J)], z, n);
                if (below) {  // f is scratch here: RowOperands forms from d
                    SubFromRow(f, gr[baseRow * K], gJ, 16, K);
                    OrderV();
                    Exp(f, f, n);
                    OrderV();
                    Mul(gJ, kf, f, n);
                }
            }
            RowOperands(u, J, base, d, kf, safe);
            if (o + 1 < nOwned_) FetchBlock(u, owned_[o + 1]);  // copied while this block's column operands form
            if (below) kda_blocks::ColumnFactors(d, gr, gr[baseRow * K], J, t_.nb, K);
            for (uint32_t I = J + 1; I < t_.nb; ++I) {
                auto& q = TwoOperandQueues() ? outC_ : outO_;
                LocalTensor<float> c = q.template AllocTensor<float>();
                OrderV();  // the column factors' writers
                MulByRow(c, gJ, d[(RefRow(I) - 3 * (J + 1)) * K], 16, K);
                CopyOut(q, g_.op[ColumnOperand(base, I, J)], c, n);
            }
            if (!t_.gate_in) {  // (gate_in: ActivateGate orders the next writes of gate_ after gJ's copy out)
                if (safe) Sync<HardEvent::MTE3_MTE2>();  // gJ's copy out before its buffer is refilled
                inF_.FreeTensor(gJ);
            }
        }
        inR_.FreeTensor(gr);
    }

    // ---- the gate in the launch (gate_in) --------------------------------------------------------
    __aicore__ inline void InitGate(const ChunkIntraGm& a, uint64_t rows) {
        const uint32_t K = t_.K;
        Bind(rows * K, gRaw_, a.g);
        Bind(uint64_t(t_.num_units) * K, gELast_, a.eLast);
        Bind(t_.num_units / t_.HV, gLen_, a.len);
        InitBufs(pipe_, t_.BT * K * sizeof(float), gate_);
        act_.Init(pipe_, K, gate::ActivationForm{t_.gate_form, t_.has_a_log, t_.has_dt_bias, K, 0, t_.coef_scale, t_.out_scale},
                  a.aLog, t_.HV, a.dtBias);
    }

    // Unit u's G into gate_ (chunk_gate_intra_tiling.h), after Form(u - 1), in two steps. Activate: the
    // raw rows in 16-row pieces (one fetched ahead), widened, activated (the gate cumsum kernel's
    // arithmetic); with BT > 16 only the pieces of this AIV's block rows, then copied to gate slot
    // `slot` (the core's units alternate) for the other AIV, and the set met there flagged.
    __aicore__ inline void ActivateGate(uint32_t u, uint32_t slot) {
        const uint32_t K = t_.K, n = 16 * K, h = u % t_.HV;
        const bool split = GateSlotElems(t_) != 0;
        LocalTensor<float> G = gate_.Get<float>();
        const LocalTensor<float> tmp[3] = {w0_.Get<float>(), w1_.Get<float>(), w2_.Get<float>()};
        OrderV();                   // the previous unit's reads of the scratch and of G
        Sync<HardEvent::MTE3_V>();  // and its copies out of G
        if (h != actHead_) {
            act_.Load(h * K, K, actHead_ != 0xFFFFFFFFu);
            actHead_ = h;
        }
        uint32_t mine[4], count = 0;  // the pieces this AIV activates
        for (uint32_t p = 0; p < t_.nb; ++p)
            if (!split || BlockRowOwner(p) == at_.sub) mine[count++] = p;
        FetchRows(inF_, gRaw_[GateOf(u, 16 * mine[0])], 16, K, GatePitch(t_.HV, K));
        for (uint32_t j = 0; j < count; ++j) {
            if (j + 1 < count) FetchRows(inF_, gRaw_[GateOf(u, 16 * mine[j + 1])], 16, K, GatePitch(t_.HV, K));
            LocalTensor<R> x = inF_.template DeQue<R>();
            const LocalTensor<float> y = G[mine[j] * n];
            if constexpr (IsSame<R, float>::value) DataCopy(y, x, n);
            else Cast(y, x, RoundMode::CAST_NONE, n);
            inF_.FreeTensor(x);
            OrderV();
            act_.Apply(y, 16, K, K, tmp);
        }
        if (!split) return;
        Sync<HardEvent::V_MTE3>();
        for (uint32_t j = 0; j < count; ++j) DataCopy(GateSlot(slot)[mine[j] * n], G[mine[j] * n], n);
        CrossCoreSetFlag<1, PIPE_MTE3>(kFlagGate);
    }

    // Sum: (BT > 16) once both AIVs' sets are met, the other AIV's pieces from the gate slot (written
    // again two units later, after the writer met this AIV's set of the unit between, which follows
    // these reads); the rows at or past the chunk's length zeroed; the rows summed (SumRows); this
    // AIV's owned block rows of G and (the owner of the last block row) e_last out.
    __aicore__ inline void SumGate(uint32_t u, uint32_t slot) {
        const uint32_t K = t_.K, BT = t_.BT, n = 16 * K;
        const int32_t given = gLen_.GetValue(u / t_.HV);  // clamped: a bad length cannot write past G
        const uint32_t len = given < 0 ? 0u : given > static_cast<int32_t>(BT) ? BT : static_cast<uint32_t>(given);
        LocalTensor<float> G = gate_.Get<float>();
        if (GateSlotElems(t_) != 0) {
            CrossCoreWaitFlag(kFlagGate);
            Sync<HardEvent::V_MTE2>();  // the vector unit's earlier reads of those rows of G
            for (uint32_t p = 0; p < t_.nb; ++p)
                if (BlockRowOwner(p) != at_.sub) DataCopy(G[p * n], GateSlot(slot)[p * n], n);
            Sync<HardEvent::MTE2_V>();
            Sync<HardEvent::MTE3_V>();  // the sums below rewrite the rows copied out
        }
        if (len < BT) {  // padding rows: no decay, their G the last row's
            Duplicate(G[len * K], 0.0f, static_cast<int32_t>((BT - len) * K));
            OrderV();
        }
        SumRows(G);
        if (BlockRowOwner(t_.nb - 1) == at_.sub) {
            LocalTensor<float> e = outF_.template AllocTensor<float>();
            Exp(e, G[(BT - 1) * K], static_cast<int32_t>(K));
            CopyOut(outF_, gELast_[uint64_t(u) * K], e, K);
        }
        Sync<HardEvent::V_MTE3>();
        const DataCopyParams rows16(16, static_cast<uint16_t>(K / 8), 0, static_cast<uint16_t>((GatePitch(t_.HV, K) - K) / 8));
        for (uint32_t o = 0; o < nOwned_; ++o) DataCopy(gG_[GateOf(u, 16 * owned_[o])], G[owned_[o] * n], rows16);
    }

    // G's rows summed: within each 16-row block in order (the blocks side by side: 15 steps), then each
    // block's last row carried into the next block (in order of the blocks) — into all its rows where
    // this AIV owns the block, else into its first, middle and last rows only: the rows it reads
    // (ChooseReferences; the last one carries on). Both AIVs add the same numbers in the same order, so
    // the rows both hold are the same bits.
    __aicore__ inline void SumRows(const LocalTensor<float>& G) {
        const uint32_t K = t_.K, nb = t_.nb;
        for (uint32_t r = 1; r < 16; ++r) {  // row r of every block reads row r - 1's sum
            for (uint32_t b = 0; b < nb; ++b) Add(G[(16 * b + r) * K], G[(16 * b + r) * K], G[(16 * b + r - 1) * K], int32_t(K));
            OrderV();
        }
        const uint8_t rowBlk = static_cast<uint8_t>(K * sizeof(float) / 32);
        for (uint32_t b = 1; b < nb; ++b) {  // block b - 1's last row is final by now
            const LocalTensor<float> carry = G[(16 * b - 1) * K];
            if (BlockRowOwner(b) == at_.sub) {  // every row: the carry read by each repeat (stride 0)
                for (uint32_t c = 0; c < K; c += kFloatLanes)
                    Add(G[16 * b * K + c], G[16 * b * K + c], carry[c], K - c < kFloatLanes ? K - c : kFloatLanes, 16,
                        BinaryRepeatParams(1, 1, 1, rowBlk, rowBlk, 0));
            } else {
                for (uint32_t i = 0; i < 3; ++i) {
                    const uint32_t row = 16 * b + ReferenceRow(i);
                    Add(G[row * K], G[row * K], carry, int32_t(K));
                }
            }
            OrderV();
        }
    }

    // Gate slot `slot` (0 or 1) of this core's workspace.
    __aicore__ inline GlobalTensor<float> GateSlot(uint32_t slot) const { return g_.gate[uint64_t(slot) * GateSlotElems(t_)]; }

    // Block J's rows of G: a buffer of inF_ fetched ahead (FetchBlock; Form frees it), or (gate_in) the
    // unit's G itself, where Form then forms the block's base in place (G's rows out by then).
    __aicore__ inline LocalTensor<float> BlockGate(uint32_t J) {
        if (!t_.gate_in) return inF_.template DeQue<float>();
        Sync<HardEvent::MTE3_V>();  // SumGate's copies of G out
        return gate_.Get<float>()[J * 16 * t_.K];
    }

    // outC_ takes the column operands below the diagonal (else outO_ takes every operand).
    __aicore__ inline bool TwoOperandQueues() const { return OperandBuffers(t_.K) == 4; }

    // Block J's rows of G (unless formed here: gate_in), k and q of unit u into inF_ and inT_ (k, then
    // q), issued ahead of Form's and RowOperands' DeQue.
    __aicore__ inline void FetchBlock(uint32_t u, uint32_t J) {
        const uint32_t K = t_.K;
        if (!t_.gate_in) FetchGate(inF_, gG_[GateOf(u, 16 * J)], 16, t_.HV, K);
        FetchRows(inT_, g_.k[QkRowOf(t_, u, 16 * J)], 16, K, QkPitchOf(t_));
        FetchRows(inT_, g_.q[QkRowOf(t_, u, 16 * J)], 16, K, QkPitchOf(t_));
    }

    // The first element of block J's column operand rows of block row I in the operand slot at `base`.
    __aicore__ inline uint64_t ColumnOperand(uint64_t base, uint32_t I, uint32_t J) const {
        return base + uint64_t(t_.row_rows + ColOffset(I) + 16 * J) * t_.K;
    }

    // Row operands of block row I: q_I (fetched by FetchBlock) and k_I (kf, fp32, its rows' factors applied) times
    // e^(G_i - G_r) = e^-d (d in natural-log units; <= 1 for a first-row reference, within 2^safe_span
    // for a middle one). The Cube's k part is L without beta: beta scales its diagonal block's rows
    // (FinishDiagonal) and the merges' left factor (Invert), 16 x 16 each instead of 16 x K here. With
    // `colExp` f holds e^d, the diagonal block's column factors (the same rows: |d| within safe_span
    // ln 2), and the operands are divided by it (one rounding, no reciprocal formed).
    __aicore__ inline void RowOperands(uint32_t u, uint32_t I, uint64_t base, const LocalTensor<float>& d,
                                       const LocalTensor<float>& kf, bool colExp) {
        const uint32_t K = t_.K, n = 16 * K;
        LocalTensor<float> f = w1_.Get<float>(), x = w2_.Get<float>();
        LocalTensor<float> y = outO_.template AllocTensor<float>();
        if (colExp) {
            Div(y, kf, f, n);
        } else {
            Muls(f, d, -1.0f, n);
            OrderV();
            Exp(f, f, n);
            OrderV();
            Mul(y, kf, f, n);
        }
        CopyOut(outO_, g_.op[base + uint64_t(32 * I + 16) * K], y, n);
        WidenFetched<T>(inT_, x, n);  // q's rows (FetchBlock)
        OrderV();
        ScaleRows(x, OwnFactors(x, d, gQs_, u, 16 * I, t_.scale, bcG_.Get<float>()), 16, K);  // d is free now
        y = outO_.template AllocTensor<float>();
        if (colExp) Div(y, x, f, n);
        else Mul(y, x, f, n);
        CopyOut(outO_, g_.op[base + uint64_t(32 * I) * K], y, n);
    }

    // max |d| over its first 16 x K elements (kda_blocks::MaxAbs; tmp and work: scratch).
    __aicore__ inline float MaxAbs(const LocalTensor<float>& d, const LocalTensor<float>& tmp, const LocalTensor<float>& work) {
        return kda_blocks::MaxAbs(red_.Get<float>(), d, tmp, work, 16 * t_.K);
    }

    // The factors of x's 16 rows (fp32, K columns: rows [r, r + 16) of unit u of q or k): scale over
    // their l2 norms with qk_l2norm, else scale (RowNormFactors; sq: 16 x 64 floats of scratch); Brcb'd into
    // bc and, with `write`, to rows [r, r + 16) of q_scale or k_scale (out) by the first value head of a
    // q / k head (GVA: the others compute the same). Through a buffer of outF_.
    // Without `write` (ExactDiagonal: outF_ is taken) the factors pass through red_. The RowScale is off
    // when every factor is 1 (k without qk_l2norm; q without it at scale 1).
    __aicore__ inline RowScale OwnFactors(const LocalTensor<float>& x, const LocalTensor<float>& sq,
                                          const GlobalTensor<float>& out, uint32_t u, uint32_t r, float scale,
                                          const LocalTensor<float>& bc, bool write = true) {
        LocalTensor<float> f = write ? outF_.template AllocTensor<float>() : red_.Get<float>();
        RowNormFactors(f, x, sq, t_.qk_l2norm != 0, scale, 16, t_.K);
        OrderV();
        BroadcastRows(bc, f, 16);
        OrderV();
        if (write) WriteFactors(f, out, u, r, 16);
        return RowScale{t_.qk_l2norm != 0 || scale != 1.0f, bc};
    }

    // n factors f (a buffer of outF_, freed here) to rows [r, r + n) of unit u of q_scale or k_scale,
    // by the first value head of its q / k head.
    __aicore__ inline void WriteFactors(LocalTensor<float>& f, const GlobalTensor<float>& out, uint32_t u, uint32_t r,
                                        uint32_t n) {
        if ((u % t_.HV) % t_.groups == 0) {
            outF_.EnQue(f);
            f = outF_.template DeQue<float>();
            DataCopy(out[ScaleRow(u, r, t_.HV, t_.groups, t_.BT)], f, n);
        }
        outF_.FreeTensor(f);
    }

    // ---- outputs ---------------------------------------------------------------------------------
    // Unit u, the core's i-th: its result slot i % 2, its inverse slot i % kInvSlots.
    __aicore__ inline void Finish(uint32_t u, uint32_t i) {
        const uint32_t slot = i % 2, inv = i % kInvSlots;
        CrossCoreWaitFlag(kFlagDone);
        if (!kda_ && nOwned_ > 0) KeyFactors(slot);
        for (uint32_t o = 0; o < nOwned_; ++o) {
            if (kda_) FinishDiagonal(u, slot, inv, o);
            else FinishBlockRow(u, slot, inv, o);
        }
        if (t_.nb > 1) CrossCoreSetFlag<2, PIPE_MTE3>(kFlagInv);  // after the copies to the inverse slot
    }

    // L's diagonal block I of unit u (l: 16 x 16 fp32, its strictly lower part used) inverted in fp32,
    // beta of its rows given in `beta` (KDA; bcB_ its Brcb, the caller frees it: negated here) or read
    // here when needed (GDN), X = (I + L_II)^-1 (BlockInverse16), through o (a buffer of outF_, may
    // hold l; freed) to Akk's diagonal block, and for the merges (BT > 16) -X (I > 0) and X^T on XT's
    // diagonal (I < nb - 1) to inverse slot `inv`. With akk_beta X D and D X^T (D = diag(beta) of the block's rows) in
    // place of X and X^T: the merges, linear in XT's blocks, then give every block of Akk D. KDA: the
    // merges' left factor is -X D (L's blocks left of the diagonal come from the Cube without beta:
    // X_IJ = -X_II D_I sum_K (L_IK / D_I) X_KJ); GDN's L rows hold beta, the factor is -X.
    __aicore__ inline void Invert(const LocalTensor<float>& l, LocalTensor<float>& o, uint32_t u, uint32_t inv, uint32_t I,
                                  LocalTensor<float>* beta = nullptr) {
        const uint32_t BT = t_.BT;
        const uint64_t row0 = uint64_t(u) * BT + 16 * I;
        LocalTensor<float> x = x_.Get<float>(), bc = bcB_.Get<float>();
        OrderV();  // l's writers
        inv_.Load(l);
        inv_.Lower(x);
        OrderV();
        const bool leftBeta = beta != nullptr && I > 0, load = beta == nullptr && t_.akk_beta;
        LocalTensor<float> b = beta != nullptr ? *beta : LocalTensor<float>();
        if (load) b = LoadBeta(row0, bc);
        if (t_.akk_beta) MulByRow(o, x, b, 16, 16);  // X D
        else Adds(o, x, 0.0f, static_cast<int32_t>(kBlockElems));
        WriteRows(o, g_.akk, row0 * BT + 16 * I, 16);
        if (leftBeta) {  // -X D
            OrderV();    // X D's reads of b
            Muls(b, b, -1.0f, 16);
            OrderV();
        }
        solve_tril::WriteMergeOperands(outF_, outF_, inv_, g_.inv[InvSlot(t_, inv)], x, leftBeta ? &b : nullptr,
                                       t_.akk_beta ? &bc : nullptr, I, BT);  // D X^T with akk_beta
        if (load) inB_.FreeTensor(b);
    }

    // GDN: the factors of the unit's BT rows of k into w1_ (NormFactors) and of q after them (times
    // scale), with qk_l2norm from the diagonals of the Cube's k k^T and q q^T (rows [BT, 2 BT) and
    // [2 BT, 3 BT) of the result slot).
    __aicore__ inline void KeyFactors(uint32_t slot) {
        const uint32_t BT = t_.BT;
        const uint64_t res = uint64_t(slot) * t_.ws_res_elems;
        LocalTensor<float> fk = w1_.Get<float>();
        if (t_.qk_l2norm) {
            Diagonal(fk, res + uint64_t(BT) * BT);
            Diagonal(fk[BT], res + 2ull * BT * BT);
        }
        NormFactors(fk, fk, w2_.Get<float>(), t_.qk_l2norm != 0, 1.0f, BT);
        OrderV();
        NormFactors(fk[BT], fk[BT], w2_.Get<float>(), t_.qk_l2norm != 0, t_.scale, BT);
        OrderV();
    }

    // d = the diagonal of the BT x BT product at element `at` of the result slots: one float per row,
    // BT + 1 apart, each into its own 32-byte block, then compacted by a one-lane WholeReduceSum per row.
    __aicore__ inline void Diagonal(const LocalTensor<float>& d, uint64_t at) {
        const uint32_t BT = t_.BT;
        LocalTensor<float> a = inR_.template AllocTensor<float>();
        DataCopyPad(a, g_.res[at], DataCopyExtParams(static_cast<uint16_t>(BT), 4, BT * 4, 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        inR_.EnQue(a);
        a = inR_.template DeQue<float>();
        WholeReduceSum(d, a, 1, static_cast<int32_t>(BT), 1, 1, 1);
        inR_.FreeTensor(a);
        OrderV();
    }

    // beta of rows [row, row + 16) from GM (returned: free it after use), times `by` (16 factors, GDN's
    // k_i factors) when given, Brcb'd into bc.
    __aicore__ inline LocalTensor<float> LoadBeta(uint64_t row, const LocalTensor<float>& bc,
                                                  const LocalTensor<float>* by = nullptr) {
        LocalTensor<float> b = CopyIn(inB_, gB_[row], 16);
        if (by != nullptr) {
            Mul(b, b, *by, 16);
            OrderV();
        }
        BroadcastRows(bc, b, 16);
        OrderV();
        return b;
    }

    // KDA, owned block row I: the Cube wrote columns [0, 16 I) of Aqk and L; here the diagonal blocks
    // (the Cube's 16 x 16 of each part, masked, or computed exactly when unsafe): Aqk's written with the
    // zero columns right of it, L's inverted (Invert; Akk's zero columns too).
    __aicore__ inline void FinishDiagonal(uint32_t u, uint32_t slot, uint32_t inv, uint32_t o) {
        const uint32_t BT = t_.BT, I = owned_[o];
        LocalTensor<float> r = CopyIn(res_, g_.res[uint64_t(slot) * t_.ws_res_elems + 512 * I], 512);
        LocalTensor<float> oa = outF_.template AllocTensor<float>(), ol = outF_.template AllocTensor<float>();
        SelectCausal(oa, ol, r, masks_.Get<uint8_t>(), maskBytes_, 0, 256);
        res_.FreeTensor(r);
        if (unsafe_[slot][o]) {  // the Cube's diagonal block is zero there
            ExactDiagonal(u, I, oa, ol);
            OrderV();
        }
        // L's diagonal block: its rows times beta (kept for Invert: the merges' left factor)
        LocalTensor<float> b = LoadBeta(uint64_t(u) * BT + 16 * I, bcB_.Get<float>());
        MulRows(ol, ol, bcB_.Get<float>(), 16, 16);
        const uint64_t at = (uint64_t(u) * BT + 16 * I) * BT + 16 * I;
        WriteRows(oa, g_.a, at, 16);
        Invert(ol, ol, u, inv, I, &b);
        inB_.FreeTensor(b);
        const uint32_t w = BT - 16 * (I + 1);  // zero columns right of the diagonal block
        if (w == 0) return;
        ZeroColumns(g_.a, at + 16, w);
        ZeroColumns(g_.akk, at + 16, w);
    }

    // 16 rows of w zero columns of an output from element `at` (row pitch BT).
    __aicore__ inline void ZeroColumns(const OutGm<T>& out, uint64_t at, uint32_t w) {
        const uint32_t ob = out.f32 ? 4 : sizeof(T), BT = t_.BT;
        const DataCopyParams z(16, static_cast<uint16_t>(w * ob / 32), 0, static_cast<uint16_t>((BT - w) * ob / 32));
        if (out.f32) DataCopy(out.f[at], zf_.Get<float>(), z);
        else DataCopy(out.t[at], zt_.Get<T>(), z);
    }

    // GDN, owned block row I: columns [0, 16 (I + 1)) of its q k^T and k k^T rows times
    // e^(g_i - g_j), masked, L times beta; Aqk's whole rows written, L's to the inverse slot (BT > 16)
    // and its diagonal block inverted (Invert), with Akk's zero columns right of it.
    __aicore__ inline void FinishBlockRow(uint32_t u, uint32_t slot, uint32_t inv, uint32_t o) {
        const uint32_t BT = t_.BT, I = owned_[o], w = 16 * (I + 1), n = 16 * BT;
        const uint64_t row0 = uint64_t(u) * BT + 16 * I;  // first output row
        const LocalTensor<float> fk = w1_.Get<float>();   // the k rows' factors (KeyFactors)
        // The written columns [0, w) of the q k^T and k k^T rows; the rest is never read unmasked.
        LocalTensor<float> r = res_.template AllocTensor<float>();
        const uint64_t res = uint64_t(slot) * t_.ws_res_elems;
        const DataCopyParams rows(16, static_cast<uint16_t>(w / 8), static_cast<uint16_t>((BT - w) / 8),
                                  static_cast<uint16_t>((BT - w) / 8));
        DataCopy(r, g_.res[res + uint64_t(16 * I) * BT], rows);
        DataCopy(r[n], g_.res[res + uint64_t(BT + 16 * I) * BT], rows);
        res_.EnQue(r);
        r = res_.template DeQue<float>();
        ScaleByDecay(r, u, I, fk);
        // Aqk's rows times q_i's factors (KeyFactors), L's times k_i's with beta; the block row's
        // factors out
        const LocalTensor<float> fkI = fk[16 * I], fqI = fk[BT + 16 * I];
        OrderV();  // the decay's reads of bcG_
        BroadcastRows(bcG_.Get<float>(), fqI, 16);
        OrderV();
        ScaleRows(r, RowScale{t_.qk_l2norm != 0 || t_.scale != 1.0f, bcG_.Get<float>()}, 16, BT);
        for (uint32_t p = 0; p < 2; ++p) {  // q's factors, then k's
            LocalTensor<float> f = outF_.template AllocTensor<float>();
            Muls(f, p == 0 ? fqI : fkI, 1.0f, 16);
            WriteFactors(f, p == 0 ? gQs_ : gKs_, u, 16 * I, 16);
        }
        LocalTensor<float> bc = bcB_.Get<float>();
        LocalTensor<float> b = LoadBeta(row0, bc, t_.qk_l2norm ? &fkI : nullptr);
        LocalTensor<float> oa = outF_.template AllocTensor<float>(), ol = outF_.template AllocTensor<float>();
        SelectCausal(oa, ol, r, masks_.Get<uint8_t>(), maskBytes_, o, n);
        res_.FreeTensor(r);
        MulRows(ol, ol, bc, 16, BT);
        inB_.FreeTensor(b);
        WriteRows(oa, g_.a, row0 * BT, BT);
        OrderV();
        LocalTensor<float> d = dg_.Get<float>();  // the diagonal block, contiguous for the inverse
        DataCopy(d, ol[16 * I], DataCopyParams(16, 2, static_cast<uint16_t>((BT - 16) / 8), 0));
        if (I > 0) {  // the columns left of the diagonal block: what the merges read
            outF_.EnQue(ol);
            ol = outF_.template DeQue<float>();
            const uint16_t gap = static_cast<uint16_t>((BT - 16 * I) / 8);
            DataCopy(g_.inv[InvL(t_, inv) + uint64_t(16 * I) * BT], ol,
                     DataCopyParams(16, static_cast<uint16_t>(2 * I), gap, gap));
        }
        outF_.FreeTensor(ol);
        LocalTensor<float> x = outF_.template AllocTensor<float>();
        Invert(d, x, u, inv, I);
        const uint32_t right = BT - w;
        if (right > 0) ZeroColumns(g_.akk, row0 * BT + w, right);
    }

    // GDN: the result rows of block row I times D[i, j] = e^(g_i - g_j) (every column; the masks
    // drop j > i, where D may be infinite), with the call's row factors times fk[j] too.
    __aicore__ inline void ScaleByDecay(const LocalTensor<float>& r, uint32_t u, uint32_t I, const LocalTensor<float>& fk) {
        const uint32_t BT = t_.BT, n = 16 * BT;
        LocalTensor<float> g = CopyIn(inF_, gG_[uint64_t(u) * BT], BT), dd = w0_.Get<float>();
        BlockRowDecay(dd, g, bcG_.Get<float>(), I, BT);
        inF_.FreeTensor(g);
        if (t_.qk_l2norm) {
            MulByRow(dd, dd, fk, 16, BT);
            OrderV();
        }
        Mul(r, r, dd, n);
        Mul(r[n], r[n], dd, n);
        OrderV();
    }

    // KDA, a diagonal block whose decay spans more than safe_span ln 2: per row a of block row I and
    // every j <= a of the block, sum_d x_a[d] k_j[d] e^(G_a[d] - G_j[d]) with x = q (Aqk) and x = k
    // (L / beta, j < a), into columns [0, a] of row a of the 16 x 16 tiles oa / ol (zero there before).
    __aicore__ inline void ExactDiagonal(uint32_t u, uint32_t I, const LocalTensor<float>& oa, const LocalTensor<float>& ol) {
        const uint32_t K = t_.K;
        const uint64_t qk = QkRowOf(t_, u, 16 * I);
        LocalTensor<float> e = w0_.Get<float>(), x = w1_.Get<float>(), qf = w2_.Get<float>(), kf = w3_.Get<float>();
        if (t_.gate_in) Sync<HardEvent::MTE3_MTE2>();  // G's rows, written by this AIV (SumGate)
        LocalTensor<float> g = CopyInGate(inF_, gG_[GateOf(u, 16 * I)], 16, t_.HV, K);
        CastInRows(inT_, g_.q[qk], qf, 16, K, QkPitchOf(t_));
        CastInRows(inT_, g_.k[qk], kf, 16, K, QkPitchOf(t_));
        OrderV();
        // the rows' factors again (written by Form), bcB_ free until beta's load
        ScaleRows(qf, OwnFactors(qf, e, gQs_, u, 16 * I, t_.scale, bcG_.Get<float>(), false), 16, K);
        ScaleRows(kf, OwnFactors(kf, e, gKs_, u, 16 * I, 1.0f, bcB_.Get<float>(), false), 16, K);
        kda_blocks::ExactDiagonalRows(e, x, qf, kf, g, oa, ol, K);
        inF_.FreeTensor(g);
    }

    // 16 rows of w columns (o holds them contiguously) to an output at element `at`, row pitch BT:
    // fp32 as computed, or rounded once to T.
    __aicore__ inline void WriteRows(LocalTensor<float>& o, const OutGm<T>& out, uint64_t at, uint32_t w) {
        const uint32_t n = 16 * w, BT = t_.BT;
        if (out.f32) {
            outF_.EnQue(o);
            o = outF_.template DeQue<float>();
            DataCopy(out.f[at], o,
                     DataCopyParams(16, static_cast<uint16_t>(w * 4 / 32), 0, static_cast<uint16_t>((BT - w) * 4 / 32)));
        } else {
            OrderV();
            LocalTensor<T> y = outT_.template AllocTensor<T>();
            Cast(y, o, RoundMode::CAST_RINT, n);
            outT_.EnQue(y);
            y = outT_.template DeQue<T>();
            DataCopy(out.t[at], y,
                     DataCopyParams(16, static_cast<uint16_t>(w * sizeof(T) / 32), 0,
                                    static_cast<uint16_t>((BT - w) * sizeof(T) / 32)));
            outT_.FreeTensor(y);
        }
        outF_.FreeTensor(o);
    }

    const ChunkIntraTiling t_;
    bool kda_ = true;
    const AivPlace at_ = ThisAiv();  // known from the start: the launch places the core
    uint32_t maskW_ = 16, maskBytes_ = 0;
    uint32_t owned_[2] = {0, 0}, nOwned_ = 0;
    bool unsafe_[2][2] = {{false, false}, {false, false}};  // [slot][owned block row]: exact diagonal block
    bool midRef_[4] = {false, false, false, false};         // [block row]: reference row 16 I + 8 (this unit)
    TPipe pipe_;
    TQue<QuePosition::VECIN, 2> inF_, inT_;
    TQue<QuePosition::VECIN, 1> res_, inB_, inR_;
    TQue<QuePosition::VECOUT, 2> outT_, outF_, outO_, outC_;
    TBuf<TPosition::VECCALC> w0_, w1_, w2_, w3_, bcB_, bcG_, red_, masks_, zf_, zt_, x_, dg_;
    BlockInverse16 inv_;
    SharedGm<T> g_;
    GlobalTensor<float> gB_, gG_, gQs_, gKs_;
    // the gate in the launch: the unit's G (BT x K), the activation, the raw gate and the outputs
    TBuf<TPosition::VECCALC> gate_;
    gate::GateActivation act_;
    uint32_t actHead_ = 0xFFFFFFFFu;  // the value head whose parameters act_ holds
    GlobalTensor<R> gRaw_;
    GlobalTensor<int32_t> gLen_;
    GlobalTensor<float> gELast_;
};

// The kernel body: T the Cube input type (q, k), A and O the dtypes of aqk and akk (each float or T).
// They decide the output paths; the tiling's aqk_f32 / akk_f32 of a checked call say the same.
template <class T, class A, class O>
__aicore__ inline void RunChunkIntra(GM_ADDR q, GM_ADDR k, GM_ADDR beta, GM_ADDR g, GM_ADDR aqk, GM_ADDR akk, GM_ADDR qScale,
                                     GM_ADDR kScale, GM_ADDR ws, const ChunkIntraTiling& tiling) {
    static_assert((IsSame<A, float>::value || IsSame<A, T>::value) && (IsSame<O, float>::value || IsSame<O, T>::value),
                  "aqk and akk: float or the Cube input type");
    ChunkIntraTiling t = tiling;
    t.aqk_f32 = IsSame<A, float>::value ? 1u : 0u;
    t.akk_f32 = IsSame<O, float>::value ? 1u : 0u;
    RunMixed<ChunkIntraCube<T, O>, ChunkIntraVector<T>>(ChunkIntraGm{q, k, beta, g, aqk, akk, qScale, kScale, ws}, t);
}

}  // namespace chunk_intra
}  // namespace fla_npu

#endif
