// Inter-chunk state recurrence (stage 4 of chunked KDA / Gated DeltaNet), mixed Cube + vector
// (KERNEL_TYPE_MIX_AIC_1_2). Per unit (sequence n, head h, V block), S on chip in fp32, for each
// chunk c of the sequence:
//   h[c] = S,   v_new[c] = u[c] - w[c] @ S,   S = diag(e_last[c]) S + kg[c]^T @ v_new[c]
// and, fused (chunk_state_output), w, u, kg formed per chunk first and o after the step. The design,
// the hand-off per chunk and why the Cube runs on hi + lo halves: chunk_state_tiling.h.
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX, FIX -> MTE1
// for w written into L1, and the reverse pairs before each buffer is reused; TileProducts orders L0B
// and L0C); on the AIVs the queues order MTE2 -> V -> MTE3, OrderV() the dependent vector
// instructions. Cross-core: four flags per lane (fused: two more per chunk), each set once per chunk
// and waited once (common/chunk_cube.h's slot protocol is for independent units; this recurrence hands
// its results back and forth per chunk instead).
#ifndef FLA_NPU_CHUNK_STATE_KERNEL_H
#define FLA_NPU_CHUNK_STATE_KERNEL_H

#include "../chunk_intra/chunk_intra_tiling.h"  // BlockRowOwner: chunk_forward finishes stage 2 as chunk_intra does
#include "../chunk_intra/kda_blocks.h"          // and forms KDA's operands as it does
#include "../common/chunk_cube.h"
#include "../common/vector_io.h"
#include "../common/wy_rows.h"
#include "../gate/gate_activation.h"
#include "../solve_tril/tril_inverse.h"
#include "chunk_state_tiling.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace chunk_state {

using namespace AscendC;
using namespace chunk_cube;
using namespace vector_io;

// The kernel's GM arguments (both sides read their own). w, u, kg, h and vNew: the state kernel's;
// k, v, akk, q, g, aqk and o: the fused kernel's (chunk_state_output.op.py); beta: chunk_forward's
// (no akk, aqk); the others null.
// chunk_gate_forward (the tiling's gate_in): g the raw gate, aLog, dtBias and len (chunk_len) its
// parameters, no eLast.
struct ChunkStateGm {
    GmAddr w, u, kg, eLast, chunkOffsets, h0, h, vNew, fin, ws;
    GmAddr k, v, akk, q, g, aqk, o, qScale, kScale, beta;
    GmAddr aLog = nullptr, dtBias = nullptr, len = nullptr;
};

// Cross-core flags (mode 2), per lane l (ids + 4 l): AIV -> AIC kFlagS (S_hi / S_lo written), kFlagV
// (v_hi / v_lo written); AIC -> AIV kFlagWs (w @ S written), kFlagDs (kg^T @ v_new written). Fused,
// kFlagS and kFlagDs only (the Cube forms v_new's halves itself), and AIV -> AIC kFlagX once per chunk
// (the rows of X1, kg and qe written) and kFlagI once per core (the rows of -I written).
// chunk_forward (intra) two more per chunk: AIC -> AIV kFlagStage2 (stage 2's products in the result
// slot), AIV -> AIC kFlagInverse (Aqk, Akk's diagonal blocks and the inverse slot written).
constexpr uint16_t kFlagS = 0, kFlagWs = 1, kFlagV = 2, kFlagDs = 3, kLaneFlags = 4, kFlagX = 8, kFlagI = 9;
constexpr uint16_t kFlagStage2 = 10, kFlagInverse = 15;  // 11-14: SyncAll's (CrossCoreSetFlag.md)
// chunk_gate_forward, AIV <-> AIV (mode 1: each AIV of the AI core sets it, then waits for it;
// CrossCoreSetFlag.md "模式1"): both AIVs' block sums of G in the exchange slot. kFlagWs's id: fused
// kernels never use it.
constexpr uint16_t kFlagGate = kFlagWs;

// A unit's columns run as two lanes (multiples of 16; one lane when 16 wide) whose hand-offs
// interleave: while the Cube works on one lane the vector cores work on the other, so neither
// waits out the other's whole turn. Every matrix of a unit (S in UB, the workspace regions) is
// stored lane by lane: lane l's rows x w[l] block, row-major, at rows * c[l].
struct Lanes {
    uint32_t n, w[2], c[2];  // lane count, widths, first columns within the unit
};

__aicore__ inline Lanes SplitLanes(uint32_t vw) {
    if (vw < 32) return Lanes{1, {vw, 0}, {0, vw}};
    const uint32_t w0 = (vw / 16 + 1) / 2 * 16;
    return Lanes{2, {w0, vw - w0}, {0, w0}};
}

__aicore__ inline uint16_t LaneFlag(uint16_t flag, uint32_t lane) { return static_cast<uint16_t>(flag + kLaneFlags * lane); }

// The unit's place: sequence, head, first V column and width.
struct Unit {
    uint32_t n, h, v0, vw;
};

__aicore__ inline Unit DecodeUnit(const ChunkStateTiling& t, uint32_t u) {
    const uint32_t vb = u % t.num_vb, nh = u / t.num_vb;
    return Unit{nh / t.HV, nh % t.HV, vb * t.v_block, vb + 1 == t.num_vb ? t.v_last : t.v_block};
}

// The workspace slice of AI core `block`: elements of T (S_hi, S_lo, then v_hi, v_lo or, fused,
// FusedRegions), then floats (wS, dS; fused dS only).
template <class T>
__aicore__ inline void BindWorkspace(GlobalTensor<T>& wsT, GlobalTensor<float>& wsF, GM_ADDR ws, uint32_t block,
                                     const ChunkStateTiling& t) {
    __gm__ uint8_t* base = (__gm__ uint8_t*)ws + uint64_t(block) * t.ws_bytes_per_core;
    wsT.SetGlobalBuffer((__gm__ T*)base, t.ws_t_elems);
    wsF.SetGlobalBuffer((__gm__ float*)(base + uint64_t(t.ws_t_elems) * sizeof(T)), t.ws_f_elems);
}

// The fused kernel's workspace regions of T, where each starts: after S_hi, S_lo [K, v_block], -I
// [BT, BT] (written once), then OperandSlots slots (a core's j-th chunk uses slot j % OperandSlots:
// the AIVs form a chunk's operands while the Cube works on the one before; chunk_forward's two
// chunks before) of qe, X1 and kg [BT, K] (chunk_forward, GDN: and q's and k's rows as read, [q; k]
// [2 BT, K], stage 2's operands; KDA's are fp32, Stage2Regions).
struct WsAt {
    uint64_t negI, qe, x1, kg, qk;
};
__aicore__ inline uint32_t OperandSlots(const ChunkStateTiling& t) { return t.intra ? 3 : 2; }
__aicore__ inline bool KdaIntra(const ChunkStateTiling& t) { return t.intra && t.Kg != 1; }
__aicore__ inline WsAt FusedRegions(const ChunkStateTiling& t, uint32_t slot = 0) {
    const uint64_t negI = 2ull * t.K * t.v_block, m = uint64_t(t.BT) * t.K;
    const uint64_t qe = negI + uint64_t(t.BT) * t.BT + slot * (t.intra && !KdaIntra(t) ? 5 : 3) * m;
    return WsAt{negI, qe, qe + m, qe + 2 * m, qe + 3 * m};
}

// chunk_forward's reuse distances (chunk c the core's j-th; orders: chunk_forward_tiling.h):
// - operand slot j % 3: written by the AIVs' form(c) during chunk c - 2, read by the Cube's products(c)
//   (chunk c - 2, after X), WY(c) (chunk c) and the AIVs' finish(c) (chunk c - 1); rewritten by
//   form(c + 3) during chunk c + 1, after the AIVs waited for dS(c), which the Cube sets after WY(c);
// - result slot j % 2: written by products(c), read by finish(c); its next writer, products(c + 2),
//   waits for X(c + 2), which the AIVs set after finish(c);
// - inverse slot and Aqk / Akk pair j % 2: written by finish(c) (and Akk by the merges(c) after
//   Inverse), read by merges(c) and WY(c) at the start of chunk c; rewritten by finish(c + 2) during
//   chunk c + 1, after dS(c).
// chunk_forward's stage-2 regions of a core's j-th chunk: pair j % 2 of Aqk and Akk [BT, BT] (T, after
// the operand slots); among the floats, after dS, result slot j % 2 [2 BT, BT] (q k^T rows, then k k^T
// rows), inverse slot j % 2 (solve_tril::MergeSizesOf's XT, -X_bb, R^T, then L [BT, BT]; BT > 16),
// then the row factors of q and of k [2, BT] of operand slot j % OperandSlots (what the vector cores
// formed with the operands; GDN), then (KDA) the fp32 operand slot j % OperandSlots (KdaOperandElems:
// chunk_intra's layout). KDA's result slot holds the diagonal blocks of block row I at 512 I (q part,
// then k part); the AIC writes Aqk's columns left of them to the pair and L's to the inverse slot.
// With the gate in the launch (gate_in, GateInElems) three more float regions: exchange slot j % 2 of
// the block rows' first, middle and last rows of G summed within their block (gx), each vector core's
// e_last row of operand slot j % OperandSlots (el: its own at el + sub K), and the G blocks of that
// slot whose diagonal blocks are computed exactly (gb, block J at 16 J K).
struct Stage2At {
    uint64_t aqk, akk, res, inv, l, f, op, gx, el, gb;
};
__aicore__ inline Stage2At Stage2Regions(const ChunkStateTiling& t, uint32_t j) {
    const uint32_t par = j % 2, slots = OperandSlots(t);
    const uint64_t bb = uint64_t(t.BT) * t.BT, aqk = FusedRegions(t, slots).qe + 2ull * par * bb;
    const uint64_t merges = t.nb > 1 ? solve_tril::MergeSizesOf(t.BT).elems : 0, invElems = t.nb > 1 ? merges + bb : 0;
    const uint64_t res = uint64_t(t.K) * t.v_block, inv = res + 4 * bb + par * invElems;
    const uint64_t f = res + 4 * bb + 2 * invElems + 2ull * (j % slots) * t.BT;
    const uint64_t op0 = res + 4 * bb + 2 * invElems + 2ull * slots * t.BT, opElems = KdaOperandElems(t.BT, t.K);
    const uint64_t op = op0 + uint64_t(j % slots) * opElems, gx0 = op0 + uint64_t(slots) * opElems;
    const uint64_t gxElems = 3ull * t.nb * t.K, el0 = gx0 + 2 * gxElems, gb0 = el0 + uint64_t(slots) * 2 * t.K;
    return Stage2At{aqk,
                    aqk + bb,
                    res + par * 2 * bb,
                    inv,
                    inv + merges,
                    f,
                    op,
                    gx0 + par * gxElems,
                    el0 + uint64_t(j % slots) * 2 * t.K,
                    gb0 + uint64_t(j % slots) * t.BT * t.K};
}

// Where dS starts among the workspace's floats: after wS, or (fused: no wS) at the start.
__aicore__ inline uint64_t DsAt(const ChunkStateTiling& t) { return t.fused_output ? 0 : uint64_t(t.BT) * t.v_block; }

// The fused kernel's o (and v), token-major [NC, BT, HV, V]: the element of row 0 of chunk c, head h,
// column v0 (rows TokenPitch(HV, 1, V) apart).
__aicore__ inline uint64_t OutRow(const ChunkStateTiling& t, uint32_t c, uint32_t h, uint32_t v0) {
    return TokenRow(c * t.HV + h, 0, t.HV, 1, t.BT, t.V) + v0;
}

// ------------------------------------------------------------------------------------------------
// AIC: per chunk wS = w @ (S_hi + S_lo), then dS = kg^T @ (v_hi + v_lo), fp32 into the workspace.
// Fused (kOut; Akk holds beta's columns): first -w = Akk @ X1 (into L1, rounded once to T), then per
// lane v_new = Akk @ v + (-w) @ (S_hi + S_lo) in place of wS, after the chunk's dS products
// o = qe @ S_hi + Aqk @ v_hi (the unfused chain's products on h and v_new in T).
// ------------------------------------------------------------------------------------------------
template <class T, bool kOut>
class ChunkStateCube {
  public:
    __aicore__ inline ChunkStateCube(const ChunkStateGm& a, const ChunkStateTiling& t) : t_(t) {
        const uint64_t rows = uint64_t(t_.NC) * t_.HV * t_.BT;
        Bind(t_.N + 1, gCo_, a.chunkOffsets);
        BindWorkspace(gWsT_, gWsF_, a.ws, static_cast<uint32_t>(GetBlockIdx()), t_);
        const uint32_t BT = t_.BT, K = t_.K, Vb = t_.v_block, rows0 = K > BT ? K : BT;
        InitBufs(pipe_, BT * K * sizeof(T), w1_, kg1_);  // L1
        InitBufs(pipe_, K * Vb * sizeof(T), sHi1_, sLo1_);
        InitBufs(pipe_, BT * Vb * sizeof(T), vHi1_, vLo1_);
        if (kOut) {
            if (!t_.intra) Bind(rows * t_.BT, gAqk_, a.aqk, gAkk_, a.akk);
            Bind(rows * t_.V, gO_, a.o, gV_, a.v);
            InitBufs(pipe_, BT * K * sizeof(T), qe1_, x11_);
            InitBufs(pipe_, BT * BT * sizeof(T), aqk1_, akk1_, negI1_);
            InitBufs(pipe_, BT * Vb * sizeof(T), v1_);
        } else {
            Bind(rows * t_.K, gW_, a.w, gKg_, a.kg);
        }
        // L0A: w, kg^T; fused, Akk and -I first in kg^T's place, qe and Aqk in theirs after the chunk's dS
        // products (chunk_forward: stage 2's products and the merges in w's, the first B tile's and
        // the C tile's places too: CubeBuffersOf)
        const CubeBuffers cb = CubeBuffersOf(K, BT, sizeof(T), t_.n_tile, t_.intra != 0, KdaIntra(t_));
        InitBufs(pipe_, cb.wa, wa_);
        InitBufs(pipe_, (kOut && 2 * BT > K ? 2 * BT : K) * BT * sizeof(T), kga_);  // fused: Akk, -I
        InitBufs(pipe_, cb.b2a, b2a_);
        InitBufs(pipe_, rows0 * t_.n_tile * sizeof(T), b2b_);
        InitBufs(pipe_, cb.oc, oc_);
        if (kOut && t_.intra) {  // stage 2's operands: GDN's [q; k] in T, KDA's fp32 operand slot
            InitBufs(pipe_, KdaIntra(t_) ? KdaOperandElems(BT, K) * sizeof(float) : 2 * BT * K * sizeof(T), qk1_);
            if (t_.nb > 1) merge_.Init(pipe_, BT, wa_.Get<float>(), b2a_.Get<float>(), oc_.Get<float>());
        }
    }

    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, static_cast<uint32_t>(GetBlockIdx()));
        if (kOut && r.count > 0) {  // -I, for the whole launch
            CrossCoreWaitFlag(kFlagI);
            LoadForA(negI1_.Get<T>(), gWsT_[FusedRegions(t_).negI], t_.BT, t_.BT);
        }
        uint32_t j = 0;  // the core's chunks so far: the fused operands' slot is j % OperandSlots
        for (uint32_t i = 0; i < r.count; ++i) {
            const Unit u = DecodeUnit(t_, r.first + i);
            const int32_t c0 = gCo_.GetValue(u.n), c1 = gCo_.GetValue(u.n + 1);
            if (kOut && t_.intra)  // the unit's first two chunks' stage-2 products
                for (int32_t c = c0; c < c1 && c < c0 + 2; ++c) Stage2Products(j + (c - c0));
            for (int32_t c = c0; c < c1; ++c) Chunk(static_cast<uint32_t>(c), u, j++, c + 2 < c1);
        }
    }

  private:
    // Chunk c of unit u, the core's j-th (fused: its operands in slot j % OperandSlots;
    // chunk_forward: `far`, the unit has a chunk two after this one).
    __aicore__ inline void Chunk(uint32_t c, const Unit& u, uint32_t j, bool far) {
        const uint32_t slot = j % OperandSlots(t_);
        const uint32_t BT = t_.BT, K = t_.K, Vb = t_.v_block;
        const Lanes L = SplitLanes(u.vw);
        const uint64_t tile = (uint64_t(c) * t_.HV + u.h) * BT * K, vs = 2ull * K * Vb;
        LocalTensor<T> w1 = w1_.Get<T>(), kg1 = kg1_.Get<T>(), sHi1 = sHi1_.Get<T>(), sLo1 = sLo1_.Get<T>();
        LocalTensor<T> vHi1 = vHi1_.Get<T>(), vLo1 = vLo1_.Get<T>(), wa = wa_.Get<T>(), kga = kga_.Get<T>();
        LocalTensor<T> b2a = b2a_.Get<T>(), b2b = b2b_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();

        Sync<HardEvent::MTE1_MTE2>();  // the previous chunk's LoadData have read L1
        if (kOut) {
            if (t_.intra) Merge(j);
            WyFactors(c, u, slot, j);
        } else {
            LoadNz(w1, gW_[tile], BT, K);
            LoadNz(kg1, gKg_[tile], BT, K);
        }
        // Per lane wS = w @ S_hi + w @ S_lo; fused, v_new's halves (VNewHalves: w1 holds -w; Akk and -I
        // stay in kg^T's place until both lanes are done).
        for (uint32_t l = 0; l < L.n; ++l) {
            const uint32_t w = L.w[l], s0 = K * L.c[l];
            CrossCoreWaitFlag(LaneFlag(kFlagS, l));
            LoadBands(sHi1[s0], gWsT_[s0], K, w);  // row bands: one LoadData per product B (LoadBBands)
            LoadBands(sLo1[s0], gWsT_[uint64_t(K) * Vb + s0], K, w);
            Sync<HardEvent::MTE2_MTE1>();
            if (l == 0) {
                Sync<HardEvent::M_MTE1>();  // the previous chunk's Mmads have read L0A
                LoadA(wa, w1, BT, K);
                if (!kOut) LoadAT(kga, kg1, K, BT);  // kg^T: the contraction runs over kg's rows
            }
            if (kOut) {
                VNewHalves(L, l);
            } else {
                const CubeProduct<T> ws[2] = {{wa, sHi1[s0], b2a, K, w}, {wa, sLo1[s0], b2b, K, w}};
                TileProducts(oc, gWsF_[uint64_t(BT) * L.c[l]], w, BT, w, t_.n_tile, ws);
                CrossCoreSetFlag<2, PIPE_FIX>(LaneFlag(kFlagWs, l));
            }
        }
        if (kOut) {  // kg^T over Akk and -I, once every lane's v_new products have read them
            Sync<HardEvent::M_MTE1>();
            LoadAT(kga, kg1, K, BT);
            Sync<HardEvent::FIX_MTE1>();  // v_hi and v_lo written before the dS products load them
        }
        for (uint32_t l = 0; l < L.n; ++l) {  // dS = kg^T @ v_hi + kg^T @ v_lo, per lane
            const uint32_t w = L.w[l], v0 = BT * L.c[l];
            if (!kOut) {  // the AIVs' halves of v_new
                CrossCoreWaitFlag(LaneFlag(kFlagV, l));
                LoadNz(vHi1[v0], gWsT_[vs + v0], BT, w);
                LoadNz(vLo1[v0], gWsT_[vs + uint64_t(BT) * Vb + v0], BT, w);
                Sync<HardEvent::MTE2_MTE1>();
            }
            const CubeProduct<T> ds[2] = {{kga, vHi1[v0], b2a, BT}, {kga, vLo1[v0], b2b, BT}};
            TileProducts(oc, gWsF_[DsAt(t_) + uint64_t(K) * L.c[l]], w, K, w, t_.n_tile, ds);
            CrossCoreSetFlag<2, PIPE_FIX>(LaneFlag(kFlagDs, l));
        }
        // chunk_forward: stage 2's products two chunks ahead (the AIVs finish them during the next
        // chunk, between handing over S and waiting for dS)
        if (kOut && t_.intra && far) Stage2Products(j + 2);
        if (kOut) Output(c, u, L);
    }

    // chunk_forward: stage 2's products of the core's j-th chunk (operand slot j % OperandSlots), once
    // the AIVs wrote them (flag X): [q; k] (their rows as read, T) into L1 as one NZ matrix, q k^T and
    // k k^T (fp32) into the chunk's result slot, one Mmad each against k^T; flag Stage2.
    __aicore__ inline void Stage2Products(uint32_t j) {
        if (KdaIntra(t_)) return KdaStage2Products(j);
        const uint32_t BT = t_.BT, K = t_.K, bf = BT / 16;
        LocalTensor<T> qk = qk1_.Get<T>(), wa = wa_.Get<T>(), b2 = b2a_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();
        const uint64_t res = Stage2Regions(t_, j).res;
        CrossCoreWaitFlag(kFlagX);
        Sync<HardEvent::MTE1_MTE2>();  // the previous products' LoadData have read [q; k]
        LoadNz(qk, gWsT_[FusedRegions(t_, j % OperandSlots(t_)).qk], 2 * BT, K);
        Sync<HardEvent::MTE2_MTE1>();
        for (uint32_t p = 0; p < 2; ++p) {  // q's rows, then k's
            Sync<HardEvent::M_MTE1>();      // the previous Mmads have read L0A / L0B
            LoadARows(wa, qk, 2 * bf, p * bf, bf, K);
            if (p == 0) LoadBTransposed(b2, qk, 2 * bf, bf, BT, K);
            Sync<HardEvent::MTE1_M>();
            Sync<HardEvent::FIX_M>();  // the previous Fixpipe has read L0C
            Mmad(oc, wa, b2,
                 MmadParams(static_cast<uint16_t>(BT), static_cast<uint16_t>(BT), static_cast<uint16_t>(K), 0, false, true));
            Sync<HardEvent::M_FIX>();
            const uint16_t bt = static_cast<uint16_t>(BT);
            Fixpipe(gWsF_[res + uint64_t(p) * BT * BT], oc, FixpipeParamsV220(bt, bt, bt, bt, false));
        }
        CrossCoreSetFlag<2, PIPE_FIX>(kFlagStage2);
    }

    // chunk_forward, KDA: stage 2's products of the core's j-th chunk once the AIVs wrote its fp32
    // operands (flag X): block row by block row into L1 (the row operands as 16-row bands, the column
    // operands an NZ matrix of their own), two fp32 Mmads each (kda_blocks::BlockRowProducts); the
    // diagonal blocks to the result slot, the columns left of them to the pair's Aqk (rounded once to
    // T) and L's (without beta, fp32) to the inverse slot's L; flag Stage2.
    __aicore__ inline void KdaStage2Products(uint32_t j) {
        const uint32_t BT = t_.BT, K = t_.K;
        const Stage2At at = Stage2Regions(t_, j);
        LocalTensor<float> l1 = qk1_.Get<float>(), oc = oc_.Get<float>();
        CrossCoreWaitFlag(kFlagX);
        Sync<HardEvent::MTE1_MTE2>();  // the previous products' LoadData have read L1
        for (uint32_t I = 0; I < t_.nb; ++I) {
            const uint64_t col = uint64_t(32 * t_.nb + chunk_intra::ColOffset(I)) * K;
            LoadBands(l1[32 * I * K], gWsF_[at.op + 32 * I * K], 32, K);
            LoadNz(l1[col], gWsF_[at.op + col], 16 * (I + 1), K);
            Sync<HardEvent::MTE2_MTE1>();
            kda_blocks::BlockRowProducts(l1, col, wa_.Get<float>(), b2a_.Get<float>(), oc, I, K, BT);
            for (uint32_t p = 0; p < 2; ++p)
                Fixpipe(gWsF_[at.res + 512 * I + 256 * p], oc[p * 16 * BT + 256 * I], FixpipeParamsV220(16, 16, 16, 16, false));
            if (I == 0) continue;
            const uint16_t left = static_cast<uint16_t>(16 * I), bt = static_cast<uint16_t>(BT);
            FixpipeParamsV220 a(left, 16, 16, bt, false);
            a.quantPre = FixpipeQuant<T>::kMode;
            Fixpipe<T, float, CFG_ROW_MAJOR>(gWsT_[at.aqk + uint64_t(16 * I) * BT], oc, a);
            Fixpipe(gWsF_[at.l + uint64_t(16 * I) * BT], oc[16 * BT], FixpipeParamsV220(left, 16, 16, bt, false));
        }
        CrossCoreSetFlag<2, PIPE_FIX>(kFlagStage2);
    }

    // chunk_forward: once the AIVs finished stage 2 of the core's j-th chunk (flag Inverse), Akk's
    // blocks left of the diagonal (BT > 16; solve_tril's BlockRowMerge, in T into its pair's Akk).
    // KDA's L came from this core's Fixpipes.
    __aicore__ inline void Merge(uint32_t j) {
        CrossCoreWaitFlag(kFlagInverse);
        if (t_.nb == 1) return;
        if (KdaIntra(t_)) Sync<HardEvent::FIX_MTE2>();
        const Stage2At at = Stage2Regions(t_, j);
        const solve_tril::MergeSizes m = solve_tril::MergeSizesOf(t_.BT);
        merge_.Run(gWsF_[at.l], gWsT_[at.akk], gWsF_[at.inv], gWsF_[at.inv + m.nx_off], gWsF_[at.inv + m.rt_off], t_.BT);
    }

    // Fused, lane l: per V tile v_new = Akk @ v + (-w) @ S_hi + (-w) @ S_lo in L0C (one fp32
    // accumulation), rounded once into v_hi (L1, NZ); then -I @ v_hi accumulated onto the same tile
    // gives v_new - v_hi exactly (Sterbenz: v_hi is v_new's rounding), rounded once into v_lo: the
    // halves the AIVs' Split forms, without v_new's round trip through the workspace.
    __aicore__ inline void VNewHalves(const Lanes& L, uint32_t l) {
        const uint32_t BT = t_.BT, K = t_.K, W = L.w[l], s0 = K * L.c[l], v0 = BT * L.c[l];
        LocalTensor<T> kga = kga_.Get<T>(), wa = wa_.Get<T>(), b2a = b2a_.Get<T>(), b2b = b2b_.Get<T>();
        LocalTensor<T> vb = v1_.Get<T>()[v0], sHi = sHi1_.Get<T>()[s0], sLo = sLo1_.Get<T>()[s0];
        LocalTensor<T> vHi = vHi1_.Get<T>()[v0], vLo = vLo1_.Get<T>()[v0];
        LocalTensor<float> oc = oc_.Get<float>();
        for (uint32_t n0 = 0; n0 < W; n0 += t_.n_tile) {  // columns n0..: NZ at n0 k, row bands at n0 16
            const uint32_t n = W - n0 < t_.n_tile ? W - n0 : t_.n_tile;
            const CubeProduct<T> vn[3] = {
                {kga, vb[n0 * BT], b2a, BT}, {wa, sHi[n0 * 16], b2b, K, W}, {wa, sLo[n0 * 16], b2a, K, W}};
            TileProducts(oc, NzL1<T>{vHi[n0 * BT], BT}, 0, BT, n, n, vn);
            Sync<HardEvent::FIX_MTE1>();  // v_hi's tile written before LoadData reads it
            Sync<HardEvent::M_MTE1>();    // the Mmads have read L0B
            LoadB(b2b, vHi, BT, n0, n);
            Sync<HardEvent::MTE1_M>();
            Sync<HardEvent::FIX_M>();  // the Fixpipe has read the tile
            AccumulateBarrier(BT, n);  // onto the previous Mmad's tile (Mmad.md)
            Mmad(oc, kga[BT * BT], b2b,
                 MmadParams(static_cast<uint16_t>(BT), static_cast<uint16_t>(n), static_cast<uint16_t>(BT), 0, false, false));
            Sync<HardEvent::M_FIX>();
            WriteTile(NzL1<T>{vLo, BT}, 0, n0, oc, BT, n);
        }
    }

    // Fused: the chunk's Aqk, Akk (times beta's columns; chunk_forward: the pair's in the workspace) and
    // v's V block from GM, qe, X1 (the AIVs' -T(k e_row)) and kg from the workspace (once the AIVs wrote
    // them: chunk_forward's stage-2 products waited; the dS flags later tell the AIVs the regions were
    // read) into L1; Akk into L0A in kg^T's place; -w = Akk @ X1 into w1 (NZ, rounded once to T: minus
    // the WY kernel's w in T, exactly). u = Akk @ v is formed with each lane's v_new.
    __aicore__ inline void WyFactors(uint32_t c, const Unit& u, uint32_t slot, uint32_t j) {
        const uint32_t BT = t_.BT, K = t_.K;
        const uint64_t unit = uint64_t(c) * t_.HV + u.h;
        const WsAt at = FusedRegions(t_, slot);
        LocalTensor<T> akk1 = akk1_.Get<T>(), aa = kga_.Get<T>(), b2 = b2a_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();
        if (t_.intra) {
            const Stage2At s2 = Stage2Regions(t_, j);
            Sync<HardEvent::FIX_MTE2>();  // the merges' blocks of Akk are written
            LoadForA(aqk1_.Get<T>(), gWsT_[s2.aqk], BT, BT);
            LoadForA(akk1, gWsT_[s2.akk], BT, BT);
        } else {
            LoadForA(aqk1_.Get<T>(), gAqk_[unit * BT * BT], BT, BT);  // A operands in L0A's order
            LoadForA(akk1, gAkk_[unit * BT * BT], BT, BT);
        }
        LoadNz(v1_.Get<T>(), gV_[OutRow(t_, c, u.h, u.v0)], BT, u.vw, 0, TokenPitch(t_.HV, 1, t_.V));
        if (!t_.intra) CrossCoreWaitFlag(kFlagX);
        LoadForA(qe1_.Get<T>(), gWsT_[at.qe], BT, K);
        LoadBands(x11_.Get<T>(), gWsT_[at.x1], BT, K);
        LoadNz(kg1_.Get<T>(), gWsT_[at.kg], BT, K);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();  // the previous chunk's Mmads have read L0A
        LoadAOrdered(aa, akk1, BT, BT);
        LoadAOrdered(aa[BT * BT], negI1_.Get<T>(), BT, BT);
        Sync<HardEvent::MTE1_FIX>();  // the previous chunk's LoadData have read w1
        const CubeProduct<T> w[1] = {{aa, x11_.Get<T>(), b2, BT, K}};
        TileProducts(oc, NzL1<T>{w1_.Get<T>(), BT}, 0, BT, K, t_.n_tile, w);
        Sync<HardEvent::FIX_MTE1>();  // w1 written before LoadA reads it
    }

    // o[c, :, h, lane columns] = qe @ S_hi + Aqk @ v_hi per lane, one L0C tile per V tile, rounded
    // once to T (qe and Aqk into L0A over w and kg^T, after the dS products read those; their loads
    // into L1 came before the dS loop's MTE2 -> MTE1 order).
    __aicore__ inline void Output(uint32_t c, const Unit& u, const Lanes& L) {
        const uint32_t BT = t_.BT, K = t_.K;
        LocalTensor<T> qa = wa_.Get<T>(), aa = kga_.Get<T>();
        Sync<HardEvent::M_MTE1>();
        LoadAOrdered(qa, qe1_.Get<T>(), BT, K);
        LoadAOrdered(aa, aqk1_.Get<T>(), BT, BT);
        for (uint32_t l = 0; l < L.n; ++l) {
            const CubeProduct<T> o[2] = {{qa, sHi1_.Get<T>()[K * L.c[l]], b2a_.Get<T>(), K, L.w[l]},
                                         {aa, vHi1_.Get<T>()[BT * L.c[l]], b2b_.Get<T>(), BT}};
            TileProducts(oc_.Get<float>(), gO_[OutRow(t_, c, u.h, u.v0 + L.c[l])], TokenPitch(t_.HV, 1, t_.V), BT, L.w[l],
                         t_.n_tile, o);
        }
    }

    const ChunkStateTiling t_;
    TPipe pipe_;
    TBuf<TPosition::A1> w1_, kg1_, qe1_, aqk1_, akk1_, negI1_, qk1_;
    TBuf<TPosition::B1> sHi1_, sLo1_, vHi1_, vLo1_, x11_, v1_;
    TBuf<TPosition::A2> wa_, kga_;
    TBuf<TPosition::B2> b2a_, b2b_;
    TBuf<TPosition::CO1> oc_;
    GlobalTensor<T> gW_, gKg_, gWsT_, gAqk_, gAkk_, gO_, gV_;
    GlobalTensor<float> gWsF_;
    GlobalTensor<int32_t> gCo_;
    solve_tril::BlockRowMerge<T> merge_;  // chunk_forward
};

// ------------------------------------------------------------------------------------------------
// AIV: the fp32 state (rows [sub K/2, (sub+1) K/2) of S), v_new (rows [sub BT/2, (sub+1) BT/2)),
// the hi / lo halves for the Cube and every output. Fused (kOut): its rows of the Cube's operands X1,
// kg (common/wy_rows.h) and qe (the next chunk's while the Cube works on this one) and -I once;
// no v_new (the Cube forms its halves), neither h nor v_new written. R: chunk_gate_forward's raw gate
// type (else unused).
// ------------------------------------------------------------------------------------------------
template <class T, bool kOut, class R = float>
class ChunkStateVector {
  public:
    __aicore__ inline ChunkStateVector(const ChunkStateGm& a, const ChunkStateTiling& t) : t_(t) {
        const uint64_t chunks = uint64_t(t_.NC) * t_.HV, states = uint64_t(t_.N) * t_.HV * t_.K * t_.V;
        Bind(chunks * t_.Kg, gE_, a.eLast);
        Bind(t_.N + 1, gCo_, a.chunkOffsets);
        if (t_.has_h0) Bind(states, gH0_, a.h0);
        if (kOut) {
            Bind(chunks / t_.groups * t_.BT * t_.K, gQ_, a.q, gK_, a.k);  // q, k: HV / groups heads (GVA)
            if (t_.gate_in) InitGate(a, chunks);
            else Bind(chunks * t_.BT * t_.Kg, gG_, a.g);
            if (t_.qk_scaled) Bind(chunks / t_.groups * t_.BT, gQs_, a.qScale, gKs_, a.kScale);
            if (t_.intra) Bind(chunks * t_.BT, gB_, a.beta);
        } else {  // h and v_new: bound as float or as T, whichever the output is (the other view gets none)
            Bind(chunks * t_.BT * t_.V, gU_, a.u);
            Bind(t_.h_f32 ? chunks * t_.K * t_.V : 0, gHf_, a.h);
            Bind(t_.h_f32 ? 0 : chunks * t_.K * t_.V, gHt_, a.h);
            Bind(t_.v_new_f32 ? chunks * t_.BT * t_.V : 0, gVf_, a.vNew);
            Bind(t_.v_new_f32 ? 0 : chunks * t_.BT * t_.V, gVt_, a.vNew);
        }
        Bind(states, gFin_, a.fin);
        BindWorkspace(gWsT_, gWsF_, a.ws, at_.block, t_);
        // The fused kernel's rows of the operands (chunk_state_tiling.cpp's UbBytes: the same sizes) pass
        // through inB_ (k, q), inA_ (G), inL_ (G's last row), inE_ (the row factors), res_ (two fp32 R x K
        // pieces), outT_ and bc_ (wy_rows::Scratch's broadcasts and factors). chunk_forward's stage 2
        // (Stage2UbOf) through inA_ (the result rows; KDA: G's blocks and reference rows), inE_ (G's
        // rows), inB_ (beta; KDA: k, q and the raw gate), res_ (the work tiles), outT_ and outF_ (the rows
        // written) and buffers of its own (StartStage2).
        const uint32_t Vb = t_.v_block, rk = t_.rows_k, rv = t_.rows_v, m = t_.vec_rows, qe = kOut ? rv * t_.K : 0;
        const Stage2Ub x = Stage2UbOf(t_.BT, kOut && t_.intra, t_.K, t_.Kg != 1);
        InitBufs(pipe_, rk * Vb * sizeof(float), s_);
        InitQues(pipe_, 1, Max(Max(m * Vb, kOut ? rv * t_.Kg : 0), x.res) * sizeof(float), inA_);
        InitQues(pipe_, 1, Max(Max(kOut ? 0 : rv * Vb * sizeof(float), qe * sizeof(T)), x.in * sizeof(T)), inB_);
        InitQues(pipe_, 1, Max(Max(rk, kOut ? rv : 0), x.gate) * sizeof(float), inE_);
        if (kOut && t_.Kg != 1) InitQues(pipe_, 1, t_.Kg * sizeof(float), inL_);
        InitBufs(pipe_, Max(Max(rk * 8, kOut ? rv * (t_.qk_scaled || t_.intra ? 25 : 9) : 0), x.bc) * sizeof(float), bc_);
        const uint32_t negI = kOut ? rv * t_.BT : 0;  // the rows of -I
        InitBufs(pipe_, Max(Max(Max(m * Vb, 2 * qe), negI), x.work) * sizeof(float), res_);
        InitQues(pipe_, 2, Max(Max(Max(m * Vb, qe), negI), x.rows) * sizeof(T),
                 outT_);  // x_hi held for the output while x_lo goes out
        // fused: two buffers, so that a copy out runs while the next result forms (FusedOutFElems)
        if (kOut) InitQues(pipe_, 2, FusedOutFElems(t_.vec_rows, Vb, x.rows) * sizeof(float), outF_);
        else InitQues(pipe_, 1, Max(m * Vb, x.rows) * sizeof(float), outF_);
        if (kOut && t_.intra) StartStage2();
    }

    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, at_.block);
        if (kOut && r.count > 0) {
            NegIdentityRows();
            if (t_.intra) ZeroAkkRows();
            CrossCoreSetFlag<2, PIPE_MTE3>(kFlagI);
        }
        uint32_t j = 0;  // the core's chunks so far: the fused operands' slot is j % OperandSlots
        for (uint32_t i = 0; i < r.count; ++i) {
            const Unit u = DecodeUnit(t_, r.first + i);
            const int32_t c0 = gCo_.GetValue(u.n), c1 = gCo_.GetValue(u.n + 1);
            LoadState(u);
            for (int32_t c = c0; c < c1; ++c) Chunk(static_cast<uint32_t>(c), u, j++, c == c0, c1 - c);
            StoreFinal(u);
        }
    }

  private:
    __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }

    // rows x cols from UB (pitch cols) to GM rows of pitch `pitch` (cols, pitch multiples of 32 bytes).
    template <class X>
    __aicore__ inline void CopyRows(const GlobalTensor<X>& dst, const LocalTensor<X>& src, uint32_t rows, uint32_t cols,
                                    uint32_t pitch) {
        constexpr uint32_t perBlock = 32 / sizeof(X);
        DataCopy(dst, src,
                 DataCopyParams(static_cast<uint16_t>(rows), static_cast<uint16_t>(cols / perBlock), 0,
                                static_cast<uint16_t>((pitch - cols) / perBlock)));
    }

    // fp32 x (n elements, already ordered after its writers) through the fp32 staging queue to GM rows.
    __aicore__ inline void WriteF32(const GlobalTensor<float>& dst, const LocalTensor<float>& x, uint32_t rows, uint32_t cols,
                                    uint32_t pitch) {
        LocalTensor<float> f = outF_.template AllocTensor<float>();
        DataCopy(f, x, rows * cols);
        outF_.EnQue(f);
        f = outF_.template DeQue<float>();
        CopyRows(dst, f, rows, cols, pitch);
        outF_.FreeTensor(f);
    }

    // x_hi = T(x), x_lo = T(x - x_hi) (rows x cols, contiguous) to the workspace at hiOff / loOff. With
    // `held`, x_hi stays allocated there (the once-rounded output, written after the hand-off flag;
    // the caller frees it), x_lo takes the queue's second buffer.
    __aicore__ inline void Split(const LocalTensor<float>& x, uint32_t rows, uint32_t cols, uint64_t hiOff, uint64_t loOff,
                                 LocalTensor<T>* held) {
        const uint32_t n = rows * cols;
        LocalTensor<float> r = res_.Get<float>();
        LocalTensor<T> hi = outT_.template AllocTensor<T>();
        Cast(hi, x, RoundMode::CAST_RINT, n);
        OrderV();
        Cast(r, hi, RoundMode::CAST_NONE, n);
        OrderV();
        Sub(r, x, r, static_cast<int32_t>(n));
        outT_.EnQue(hi);
        hi = outT_.template DeQue<T>();
        DataCopy(gWsT_[hiOff], hi, n);
        if (held != nullptr) *held = hi;
        else outT_.FreeTensor(hi);
        OrderV();
        CastOut(outT_, gWsT_[loOff], r, n);
    }

    // The output x (rows x cols) to GM rows of pitch V: float32, or its T rounding `hi` (then freed).
    __aicore__ inline void WriteOut(bool f32, const GlobalTensor<float>& outF, const GlobalTensor<T>& outT, uint64_t off,
                                    const LocalTensor<float>& x, LocalTensor<T>& hi, uint32_t rows, uint32_t cols) {
        if (f32) {
            WriteF32(outF[off], x, rows, cols, t_.V);
        } else {
            CopyRows(outT[off], hi, rows, cols, t_.V);
            outT_.FreeTensor(hi);
        }
    }

    // GM offset of the first element of this AIV's rows of the unit's state in h0 / final.
    __aicore__ inline uint64_t StateBase(const Unit& u) const {
        const uint64_t head = (uint64_t(u.n) * t_.HV + u.h) * t_.K * t_.V, k0 = uint64_t(at_.sub) * t_.rows_k;
        return t_.state_v_first ? head + uint64_t(u.v0) * t_.K + k0 : head + k0 * t_.V + u.v0;
    }

    // S = this AIV's rows of h0[n, h] (columns of it with state_v_first), or zeros; lane by lane.
    __aicore__ inline void LoadState(const Unit& u) {
        const uint32_t rk = t_.rows_k, n = rk * u.vw;
        const Lanes L = SplitLanes(u.vw);
        LocalTensor<float> S = s_.Get<float>();
        if (!t_.has_h0) {
            Duplicate(S, 0.0f, static_cast<int32_t>(n));
            OrderV();
            return;
        }
        const uint64_t base = StateBase(u);
        if (!t_.state_v_first) {
            LocalTensor<float> a = inA_.template AllocTensor<float>();
            for (uint32_t l = 0; l < L.n; ++l)
                DataCopy(a[rk * L.c[l]], gH0_[base + L.c[l]],
                         DataCopyParams(static_cast<uint16_t>(rk), static_cast<uint16_t>(L.w[l] / 8),
                                        static_cast<uint16_t>((t_.V - L.w[l]) / 8), 0));
            inA_.EnQue(a);
            a = inA_.template DeQue<float>();
            DataCopy(S, a, n);
            inA_.FreeTensor(a);
            OrderV();
            return;
        }
        // Row k of S is column k of h0[n, h] ([V, K]): one 4-byte block per element, each landing at
        // the start of its own 32-byte block, compacted by a one-lane WholeReduceSum per row.
        const uint32_t P = t_.spread_rows;
        for (uint32_t l = 0; l < L.n; ++l) {
            const uint32_t w = L.w[l];
            const uint64_t col = base + uint64_t(L.c[l]) * t_.K;
            for (uint32_t r = 0; r < rk; r += P) {
                const uint32_t rows = rk - r < P ? rk - r : P;
                LocalTensor<float> a = inA_.template AllocTensor<float>();
                for (uint32_t j = 0; j < rows; ++j)
                    DataCopyPad(a[j * w * 8], gH0_[col + r + j],
                                DataCopyExtParams(static_cast<uint16_t>(w), 4, (t_.K - 1) * 4, 0, 0),
                                DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
                inA_.EnQue(a);
                a = inA_.template DeQue<float>();
                for (uint32_t j = 0; j < rows; ++j)
                    WholeReduceSum(S[rk * L.c[l] + (r + j) * w], a[j * w * 8], 1, static_cast<int32_t>(w), 1, 1, 1);
                inA_.FreeTensor(a);
            }
        }
        OrderV();
    }

    // final[n, h] = S: this AIV's rows (with state_v_first: columns, spread by Brcb, one 4-byte block
    // each), lane by lane.
    __aicore__ inline void StoreFinal(const Unit& u) {
        const uint32_t rk = t_.rows_k;
        const Lanes L = SplitLanes(u.vw);
        LocalTensor<float> S = s_.Get<float>();
        const uint64_t base = StateBase(u);
        for (uint32_t l = 0; l < L.n; ++l) {
            const uint32_t w = L.w[l];
            LocalTensor<float> Sl = S[rk * L.c[l]];
            if (!t_.state_v_first) {
                WriteF32(gFin_[base + L.c[l]], Sl, rk, w, t_.V);
                continue;
            }
            const uint64_t col = base + uint64_t(L.c[l]) * t_.K;
            const uint32_t P = t_.spread_rows;
            for (uint32_t r = 0; r < rk; r += P) {
                const uint32_t rows = rk - r < P ? rk - r : P;
                LocalTensor<float> f = outF_.template AllocTensor<float>();
                for (uint32_t j = 0; j < rows; ++j)
                    Brcb(f[j * w * 8], Sl[(r + j) * w], static_cast<uint8_t>(w / 8), BrcbRepeatParams(1, 8));
                outF_.EnQue(f);
                f = outF_.template DeQue<float>();
                for (uint32_t j = 0; j < rows; ++j)
                    DataCopyPad(gFin_[col + r + j], f[j * w * 8],
                                DataCopyExtParams(static_cast<uint16_t>(w), 4, 0, (t_.K - 1) * 4, 0));
                outF_.FreeTensor(f);
            }
        }
    }

    // Chunk c of unit u, the core's j-th (fused: its operands in slot j % OperandSlots), `first` of the
    // unit's chunks, `left` of them from this one on (itself included).
    __aicore__ inline void Chunk(uint32_t c, const Unit& u, uint32_t j, bool first, int32_t left) {
        const uint32_t BT = t_.BT, K = t_.K, V = t_.V, Vb = t_.v_block, rk = t_.rows_k, rv = t_.rows_v;
        const uint32_t k0 = at_.sub * rk, r0 = at_.sub * rv;
        const Lanes L = SplitLanes(u.vw);
        const uint64_t ch = uint64_t(c) * t_.HV + u.h, hOff = (ch * K + k0) * V + u.v0, vOff = (ch * BT + r0) * V + u.v0;
        const uint64_t vs = 2ull * K * Vb;
        LocalTensor<float> S = s_.Get<float>();
        LocalTensor<T> hi;

        // 0. Fused, the unit's first chunk: this AIV's rows of X1, kg and qe to the Cube (the later
        // chunks' come during the chunk before, step 3); chunk_forward: those of the chunk after it
        // too, then the first's stage 2 finished (the later chunks' come during the chunk before).
        if (kOut && first) {
            for (int32_t d = 0; d < (t_.intra ? 2 : 1) && d < left; ++d) {
                Form(ch + d * t_.HV, r0, j + d);
                CrossCoreSetFlag<2, PIPE_MTE3>(kFlagX);
            }
            if (t_.intra) FinishStage2(ch, j);
        }

        // 1. Per lane: S_hi, S_lo to the Cube, then h[c] = S (rounded once when h is T: S_hi; fused: no h).
        for (uint32_t l = 0; l < L.n; ++l) {
            const uint32_t w = L.w[l];
            const uint64_t at = uint64_t(K) * L.c[l] + uint64_t(k0) * w;
            Split(S[rk * L.c[l]], rk, w, at, uint64_t(K) * Vb + at, kOut || t_.h_f32 ? nullptr : &hi);
            CrossCoreSetFlag<2, PIPE_MTE3>(LaneFlag(kFlagS, l));
            if (!kOut) WriteOut(t_.h_f32, gHf_, gHt_, hOff + L.c[l], S[rk * L.c[l]], hi, rk, w);
        }

        // 2. Unfused, while the Cube forms w S: fetch u.
        LocalTensor<float> a;
        if (!kOut) {
            a = inA_.template AllocTensor<float>();
            for (uint32_t l = 0; l < L.n; ++l)
                DataCopy(a[rv * L.c[l]], gU_[vOff + L.c[l]],
                         DataCopyParams(static_cast<uint16_t>(rv), static_cast<uint16_t>(L.w[l] / 8),
                                        static_cast<uint16_t>((V - L.w[l]) / 8), 0));
            inA_.EnQue(a);
        }

        // 3. Fused: the next chunk's operands into the other slot while the Cube works on this one (the
        // slot is free: the Cube read it before the previous chunk's dS flags); chunk_forward: the
        // operands of the chunk after the next (the slot the Cube read before the previous chunk's dS
        // flags), then the next chunk's stage 2 finished (its products came during the chunk before).
        // In that order the Cube's products of the chunk after the next do not wait for this finish:
        // forming after finishing put the Cube's stage-2 products and both vector steps in one chain
        // per chunk. Unfused, per lane: v_new = u - w S (fp32); v_hi, v_lo to the Cube, then v_new out
        // (rounded once when T: v_hi).
        const int32_t ahead = t_.intra ? 2 : 1;
        if (kOut && left > ahead) {
            Form(ch + ahead * t_.HV, r0, j + ahead);
            CrossCoreSetFlag<2, PIPE_MTE3>(kFlagX);
        }
        if (kOut && t_.intra && left > 1) FinishStage2(ch + t_.HV, j + 1);
        if (!kOut) {
            a = inA_.template DeQue<float>();
            for (uint32_t l = 0; l < L.n; ++l) {
                const uint32_t w = L.w[l], n = rv * w;
                const uint64_t at = uint64_t(BT) * L.c[l] + uint64_t(r0) * w;
                CrossCoreWaitFlag(LaneFlag(kFlagWs, l));
                LocalTensor<float> vn = CopyIn(inB_, gWsF_[at], n);
                Sub(vn, a[rv * L.c[l]], vn, static_cast<int32_t>(n));
                OrderV();
                Split(vn, rv, w, vs + at, vs + uint64_t(BT) * Vb + at, t_.v_new_f32 ? nullptr : &hi);
                CrossCoreSetFlag<2, PIPE_MTE3>(LaneFlag(kFlagV, l));
                WriteOut(t_.v_new_f32, gVf_, gVt_, vOff + L.c[l], vn, hi, rv, w);
                inB_.FreeTensor(vn);
            }
            inA_.FreeTensor(a);
        }

        // 4. Per lane: S = diag(e_last) S + kg^T v_new, one FusedMulAdd per element (the decay's
        // factors into bc_ first: KDA's rows Brcb'd, GDN's one factor in a block every row reads).
        LocalTensor<float> bc = bc_.Get<float>();
        OrderV();          // the operands' reads of bc_ (step 3) before it is rewritten
        if (t_.gate_in) {  // e_last formed with the chunk's operands (FormGate), this AIV's copy
            Sync<HardEvent::MTE3_MTE2>();
            LocalTensor<float> e = CopyIn(inE_, gWsF_[Stage2Regions(t_, j).el + at_.sub * K + k0], rk);
            BroadcastRows(bc, e, rk);
            inE_.FreeTensor(e);
        } else if (t_.Kg != 1) {
            LocalTensor<float> e = CopyIn(inE_, gE_[ch * K + k0], rk);
            BroadcastRows(bc, e, rk);
            inE_.FreeTensor(e);
        } else {
            Duplicate(bc, gE_.GetValue(ch), static_cast<int32_t>(kFloatLanes / 8));
        }
        for (uint32_t l = 0; l < L.n; ++l) {
            const uint32_t w = L.w[l], n = rk * w;
            CrossCoreWaitFlag(LaneFlag(kFlagDs, l));
            LocalTensor<float> d = CopyIn(inA_, gWsF_[DsAt(t_) + uint64_t(K) * L.c[l] + uint64_t(k0) * w], n);
            OrderV();
            MulRowsAdd(S[rk * L.c[l]], bc, d, rk, w, t_.Kg != 1);
            inA_.FreeTensor(d);
        }
        OrderV();
    }

    // chunk_forward: the buffers of stage 2's own (the block inverse's, the select masks of the owned
    // block rows) and the block rows this AIV finishes (chunk_intra's BlockRowOwner).
    // KDA masks the diagonal block only (the same masks for every block row) and reduces (red_).
    __aicore__ inline void StartStage2() {
        const bool kda = KdaIntra(t_);
        const uint32_t W = kda ? 16 : t_.BT;
        inv_.Init(pipe_);
        maskBytes_ = (16 * W / 8 + 31) / 32 * 32;
        InitBufs(pipe_, 4 * maskBytes_, masks_);
        if (kda) InitBufs(pipe_, 4 * 2 * 32, red_);  // ChooseReferences' results, a 32-byte block each
        uint32_t rows[2] = {0, 0};
        for (uint32_t I = 0; I < t_.nb; ++I)
            if (chunk_intra::BlockRowOwner(I) == at_.sub) {
                owned_[nOwned_] = I;
                rows[nOwned_++] = kda ? 0 : 16 * I;
            }
        BuildCausalMasks(masks_.Get<uint8_t>(), maskBytes_, W, rows, kda ? 1 : nOwned_);
    }

    // chunk_forward, once per core with work: its block rows of both pairs' Akk (KDA: and Aqk) zeroed
    // (nothing writes right of a diagonal block later).
    __aicore__ inline void ZeroAkkRows() {
        const uint32_t BT = t_.BT;
        LocalTensor<float> z = res_.Get<float>();
        OrderV();  // -I's reads of res_
        Duplicate(z, 0.0f, static_cast<int32_t>(16 * BT));
        OrderV();
        for (uint32_t j = 0; j < 2; ++j)  // both pairs
            for (uint32_t o = 0; o < nOwned_; ++o) {
                const Stage2At at = Stage2Regions(t_, j);
                CastOut(outT_, gWsT_[at.akk + uint64_t(16 * owned_[o]) * BT], z, 16 * BT);
                if (KdaIntra(t_)) CastOut(outT_, gWsT_[at.aqk + uint64_t(16 * owned_[o]) * BT], z, 16 * BT);
            }
        OrderV();  // z's reads before res_ is rewritten
    }

    // chunk_forward: stage 2 of unit (c, h) = ch, the core's j-th chunk, once the Cube's products are in
    // the result slot (flag Stage2), for the owned block rows (FinishBlockRow); flag Inverse.
    __aicore__ inline void FinishStage2(uint64_t ch, uint32_t j) {
        CrossCoreWaitFlag(kFlagStage2);
        if (KdaIntra(t_)) {
            for (uint32_t o = 0; o < nOwned_; ++o) FinishKda(ch, j, owned_[o], o);
        } else if (nOwned_ > 0) {  // the chunk's G, then q's and k's row factors, once
            const uint32_t BT = t_.BT;
            LocalTensor<float> g = inE_.template AllocTensor<float>();
            DataCopy(g, gG_[ch * BT], BT);
            DataCopy(g[BT], gWsF_[Stage2Regions(t_, j).f], 2 * BT);
            inE_.EnQue(g);
            g = inE_.template DeQue<float>();
            for (uint32_t o = 0; o < nOwned_; ++o) FinishBlockRow(ch, j, owned_[o], o, g);
            inE_.FreeTensor(g);
        }
        CrossCoreSetFlag<2, PIPE_MTE3>(kFlagInverse);
    }

    // chunk_forward, block row I (owned_[o]) of unit ch (g: its G, then q's and k's row factors fq, fk),
    // as chunk_intra's GDN rows: columns [0, 16 (I + 1)) of its q k^T and k k^T rows times
    // e^(g_i - g_j) fk_j, masked, Aqk's times fq_i, L's times beta_i fk_i; Aqk's whole rows (T) to the
    // pair, L's columns left of the diagonal block to the inverse slot (the merges'), the diagonal block
    // inverted (X = (I + L_II)^-1, solve_tril's BlockInverse16): X diag(beta) to the pair's Akk (zero
    // right of it since StartStage2), -X (I > 0) and diag(beta) X^T (I < nb - 1) to the inverse slot.
    __aicore__ inline void FinishBlockRow(uint64_t ch, uint32_t j, uint32_t I, uint32_t o, const LocalTensor<float>& g) {
        const uint32_t BT = t_.BT, w = 16 * (I + 1), n = 16 * BT;
        const Stage2At at = Stage2Regions(t_, j);
        const uint64_t row0 = uint64_t(16 * I) * BT;  // the block row's first element in Aqk, Akk and L
        LocalTensor<float> r = inA_.template AllocTensor<float>();
        const DataCopyParams cols(16, static_cast<uint16_t>(w / 8), static_cast<uint16_t>((BT - w) / 8),
                                  static_cast<uint16_t>((BT - w) / 8));
        DataCopy(r, gWsF_[at.res + row0], cols);
        DataCopy(r[n], gWsF_[at.res + uint64_t(BT) * BT + row0], cols);
        inA_.EnQue(r);
        r = inA_.template DeQue<float>();
        LocalTensor<float> work = res_.Get<float>(), dd = work, oa = work[n], ol = work[2 * n], d = work[3 * n];
        LocalTensor<float> x = d[solve_tril::kBlockElems], bcG = bc_.Get<float>(), bcB = bcG[16 * 8];
        const LocalTensor<float> fq = g[BT], fk = g[2 * BT];
        BlockRowDecay(dd, g, bcG, I, BT);
        MulByRow(dd, dd, fk, 16, BT);
        OrderV();
        Mul(r, r, dd, static_cast<int32_t>(n));
        Mul(r[n], r[n], dd, static_cast<int32_t>(n));
        BroadcastRows(bcG, fq[16 * I], 16);  // the decay's reads of bcG came before (BlockRowDecay)
        LocalTensor<float> b = CopyIn(inB_, gB_[ch * BT + 16 * I], 16);
        Mul(x, b, fk[16 * I], 16);  // beta_i fk_i (x is free until the inverse)
        OrderV();
        MulRows(r, r, bcG, 16, BT);
        OrderV();
        BroadcastRows(bcG, x, 16);
        BroadcastRows(bcB, b, 16);
        OrderV();
        SelectCausal(oa, ol, r, masks_.Get<uint8_t>(), maskBytes_, o, n);
        inA_.FreeTensor(r);
        MulRows(ol, ol, bcG, 16, BT);
        CastOut(outT_, gWsT_[at.aqk + row0], oa, n);
        OrderV();
        DataCopy(d, ol[16 * I], DataCopyParams(16, 2, static_cast<uint16_t>((BT - 16) / 8), 0));
        if (I > 0) {  // L's columns left of the diagonal block: what the merges read
            LocalTensor<float> f = outF_.template AllocTensor<float>();
            DataCopy(f, ol, n);
            outF_.EnQue(f);
            f = outF_.template DeQue<float>();
            const uint16_t gap = static_cast<uint16_t>((BT - 16 * I) / 8);
            DataCopy(gWsF_[at.l + row0], f, DataCopyParams(16, static_cast<uint16_t>(2 * I), gap, gap));
            outF_.FreeTensor(f);
        }
        OrderV();
        inv_.Load(d);
        inv_.Lower(x);
        OrderV();
        MulByRow(oa, x, b, 16, 16);  // X diag(beta)
        OrderV();
        WriteBlock(gWsT_[at.akk + row0 + 16 * I], oa);
        solve_tril::WriteMergeOperands(outF_, outF_, inv_, gWsF_[at.inv], x, nullptr, &bcB, I, BT);  // -X, diag(beta) X^T
        inB_.FreeTensor(b);
    }

    // The operands of unit ch, the core's jj-th chunk, into its operand slot: KDA in the launch per owned
    // block (FormKda), else rows [r0, r0 + rows_v) (FormOperands).
    __aicore__ inline void Form(uint64_t ch, uint32_t r0, uint32_t jj) {
        if (KdaIntra(t_)) FormKda(ch, jj);
        else FormOperands(ch, r0, jj % OperandSlots(t_));
    }

    // chunk_forward, KDA: per block J this AIV owns (chunk_intra's BlockRowOwner), its rows of k, q and
    // G read once give both the state operands' rows (X1, kg, qe: FormOperands' arithmetic, q's and k's
    // factors formed from the rows) and stage 2's fp32 operands (chunk_intra's Form: the column operand
    // rows of block J for every block row I >= J, the row operands of J) into operand slot `slot`.
    // Buffers: inA_ holds G's owned blocks (LoadGate, or FormGate from the raw gate), the reference rows
    // (first, middle, last of each block row from the first owned one) and the chunk's last row; res_ k
    // and q widened, the exponents d and their factors f; a buffer of outF_ the reductions' scratch.
    // Records which diagonal blocks the AIVs compute exactly (unsafe_[slot]). jj: the core's chunk count.
    __aicore__ inline void FormKda(uint64_t ch, uint32_t jj) {
        const uint32_t K = t_.K, BT = t_.BT, HV = t_.HV, nb = t_.nb, n = 16 * K, unit = static_cast<uint32_t>(ch);
        const uint32_t slot = jj % OperandSlots(t_);
        if (nOwned_ == 0) {  // (BT 16: the second AIV) its e_last row with the gate in the launch
            if (t_.gate_in) {
                const uint32_t block0 = 0;
                LocalTensor<float> a = inA_.template AllocTensor<float>();
                FormGate(unit, jj, a, &block0, 1);
                inA_.FreeTensor(a);
            }
            return;
        }
        const WsAt at = FusedRegions(t_, slot);
        const uint64_t op = Stage2Regions(t_, slot).op;
        LocalTensor<float> w = res_.Get<float>(), kf = w, qf = w[n], d = w[2 * n], f = w[3 * n];
        LocalTensor<float> bc = bc_.Get<float>(), bcK = bc, bcQ = bc[128];
        LocalTensor<float> a = inA_.template AllocTensor<float>(), gr = a[2 * n], gl = gr[3 * nb * K];
        if (t_.gate_in) FormGate(unit, jj, a, owned_, nOwned_);
        else LoadGate(unit, a);
        ChooseReferences(gr, d, f);
        for (uint32_t o = 0; o < nOwned_; ++o) {
            const uint32_t J = owned_[o];
            const uint64_t qk = TokenRow(unit, 16 * J, HV, t_.groups, BT, K);
            const LocalTensor<float> g = a[o * n];
            OrderV();
            WidenKeyRows(qk, kf, qf);
            BlockFactors(kf, d, f, bcK, 1.0f);
            BlockFactors(qf, d, f, bcQ, t_.scale);
            // the state operands: kg = T(k e^(G_last - G)), X1 = -T(k e^G), qe = T(q e^G)
            SubFromRow(d, gl, g, 16, K);
            OrderV();
            Exp(d, d, static_cast<int32_t>(n));
            OrderV();
            Mul(d, kf, d, static_cast<int32_t>(n));
            OrderV();
            CastOut(outT_, gWsT_[at.kg + uint64_t(16 * J) * K], d, n);
            Exp(f, g, static_cast<int32_t>(n));
            OrderV();
            Mul(d, kf, f, static_cast<int32_t>(n));
            OrderV();
            Muls(d, d, -1.0f, static_cast<int32_t>(n));
            OrderV();
            CastOut(outT_, gWsT_[at.x1 + uint64_t(16 * J) * K], d, n);
            OrderV();
            Mul(d, qf, f, static_cast<int32_t>(n));
            OrderV();
            CastOut(outT_, gWsT_[at.qe + uint64_t(16 * J) * K], d, n);
            OrderV();
            StageTwoOperands(op, slot, o, g, kf, qf, d, f, gr);
        }
        Sync<HardEvent::MTE3_MTE2>();  // the column operands copied out of G's blocks before inA_ is refilled
        inA_.FreeTensor(a);
    }

    // FormKda's G from GM (the gate kernel's): the owned blocks into a[o 16 K], the reference rows of the
    // block rows from the first owned one (an owned block's copied from it, the others' read) after them
    // (gr), then the chunk's last row (gl: copied when this AIV owns the last block).
    __aicore__ inline void LoadGate(uint32_t unit, LocalTensor<float>& a) {
        const uint32_t K = t_.K, BT = t_.BT, HV = t_.HV, nb = t_.nb, n = 16 * K;
        const DataCopyParams rows16(16, static_cast<uint16_t>(K / 8), static_cast<uint16_t>((GatePitch(HV, K) - K) / 8), 0);
        LocalTensor<float> gr = a[2 * n], gl = gr[3 * nb * K];
        const bool ownsLast = OwnedIndex(nb - 1) != nOwned_;
        for (uint32_t o = 0; o < nOwned_; ++o) DataCopy(a[o * n], gG_[GateRow(unit, 16 * owned_[o], HV, BT, K)], rows16);
        for (uint32_t I = owned_[0]; I < nb; ++I)
            if (OwnedIndex(I) == nOwned_)
                for (uint32_t i = 0; i < 3; ++i)
                    DataCopy(gr[(3 * I + i) * K], gG_[GateRow(unit, 16 * I + kda_blocks::ReferenceRow(i), HV, BT, K)], K);
        if (!ownsLast) DataCopy(gl, gG_[GateRow(unit, BT - 1, HV, BT, K)], K);
        inA_.EnQue(a);
        a = inA_.template DeQue<float>();
        OrderV();                               // the previous users of res_
        for (uint32_t o = 0; o < nOwned_; ++o)  // the owned blocks' rows, UB to UB
            for (uint32_t i = 0; i < 3; ++i) DataCopy(gr[(3 * owned_[o] + i) * K], a[o * n + kda_blocks::ReferenceRow(i) * K], K);
        if (ownsLast) DataCopy(gl, a[OwnedIndex(nb - 1) * n + 15 * K], K);
        OrderV();
    }

    // chunk_gate_forward: FormKda's G from the raw gate, as chunk_gate_intra's vector cores form it
    // (chunk_intra_kernel.h ActivateGate, SumGate, SumRows; the same operations in the same order, so
    // the same bits): the raw rows of blocks[0..count) (this AIV's) activated into a[o 16 K], the rows at
    // or past the chunk's length zeroed, each block summed within (the blocks side by side); the first,
    // middle and last sums of every block row into gr (BT > 16: the other AIV's through exchange slot jj %
    // 2, a mode-1 flag meeting both sets; its next write, two chunks later, follows the other's reads,
    // which precede its set of the chunk between); each block's total carried into the next, in order:
    // into every row of this AIV's blocks and the three rows of every block in gr; gl = G's last row and
    // e^gl to this AIV's e_last row of operand slot jj % OperandSlots (its state update reads it).
    __aicore__ inline void FormGate(uint32_t unit, uint32_t jj, const LocalTensor<float>& a, const uint32_t* blocks,
                                    uint32_t count) {
        const uint32_t K = t_.K, BT = t_.BT, HV = t_.HV, nb = t_.nb, n = 16 * K, h = unit % HV;
        const Stage2At at = Stage2Regions(t_, jj);
        LocalTensor<float> gr = a[2 * n], gl = gr[3 * nb * K], w = res_.Get<float>();
        const LocalTensor<float> tmp[3] = {w, w[n], w[2 * n]};
        OrderV();  // the previous users of res_ and of the activation's parameters
        if (h != actHead_) {
            act_.Load(h * K, K, actHead_ != 0xFFFFFFFFu);
            actHead_ = h;
        }
        const int32_t given = gLen_.GetValue(unit / HV);  // clamped: a bad length cannot index past the chunk
        const uint32_t len = given < 0 ? 0u : given > static_cast<int32_t>(BT) ? BT : static_cast<uint32_t>(given);
        for (uint32_t o = 0; o < count; ++o) {
            const uint32_t J = blocks[o];
            FetchRows(inB_, gRaw_[GateRow(unit, 16 * J, HV, BT, K)], 16, K, GatePitch(HV, K));
            LocalTensor<R> x = inB_.template DeQue<R>();
            const LocalTensor<float> y = a[o * n];
            if constexpr (IsSame<R, float>::value) DataCopy(y, x, n);
            else Cast(y, x, RoundMode::CAST_NONE, n);
            inB_.FreeTensor(x);
            OrderV();
            act_.Apply(y, 16, K, K, tmp);
            if (len < 16 * J + 16) {  // padding rows: no decay
                const uint32_t r0 = len > 16 * J ? len - 16 * J : 0;
                Duplicate(y[r0 * K], 0.0f, static_cast<int32_t>((16 - r0) * K));
                OrderV();
            }
        }
        for (uint32_t r = 1; r < 16; ++r) {  // row r of every block reads row r - 1's sum
            for (uint32_t o = 0; o < count; ++o) Add(a[o * n + r * K], a[o * n + r * K], a[o * n + (r - 1) * K], int32_t(K));
            OrderV();
        }
        for (uint32_t o = 0; o < count; ++o)
            for (uint32_t i = 0; i < 3; ++i) DataCopy(gr[(3 * blocks[o] + i) * K], a[o * n + kda_blocks::ReferenceRow(i) * K], K);
        if (nb > 1) {
            Sync<HardEvent::V_MTE3>();
            for (uint32_t o = 0; o < count; ++o) DataCopy(gWsF_[at.gx + 3ull * blocks[o] * K], gr[3 * blocks[o] * K], 3 * K);
            CrossCoreSetFlag<1, PIPE_MTE3>(kFlagGate);
            CrossCoreWaitFlag(kFlagGate);
            Sync<HardEvent::V_MTE2>();  // the vector unit's earlier reads of those rows
            for (uint32_t I = 0; I < nb; ++I)
                if (OwnedIndex(I) == nOwned_) DataCopy(gr[3 * I * K], gWsF_[at.gx + 3ull * I * K], 3 * K);
            Sync<HardEvent::MTE2_V>();
            Sync<HardEvent::MTE3_V>();  // the carries below rewrite the rows copied out
        }
        OrderV();
        const uint8_t rowBlk = static_cast<uint8_t>(K * sizeof(float) / 32);
        for (uint32_t b = 1; b < nb; ++b) {  // block b - 1's last row is final by now
            const LocalTensor<float> carry = gr[(3 * (b - 1) + 2) * K];
            const uint32_t o = OwnedIndex(b);
            if (o < nOwned_)  // every row of an owned block: the carry read by each repeat (stride 0)
                for (uint32_t c = 0; c < K; c += kFloatLanes)
                    Add(a[o * n + c], a[o * n + c], carry[c], K - c < kFloatLanes ? K - c : kFloatLanes, 16,
                        BinaryRepeatParams(1, 1, 1, rowBlk, rowBlk, 0));
            for (uint32_t i = 0; i < 3; ++i) Add(gr[(3 * b + i) * K], gr[(3 * b + i) * K], carry, int32_t(K));
            OrderV();
        }
        DataCopy(gl, gr[(3 * (nb - 1) + 2) * K], K);
        LocalTensor<float> e = outF_.template AllocTensor<float>();
        Exp(e, gr[(3 * (nb - 1) + 2) * K], static_cast<int32_t>(K));
        CopyOut(outF_, gWsF_[at.el + at_.sub * K], e, K);
        OrderV();
    }

    // chunk_gate_forward, once: the raw gate, the chunk lengths and the activation's parameters.
    __aicore__ inline void InitGate(const ChunkStateGm& a, uint64_t chunks) {
        const uint32_t K = t_.K;
        Bind(chunks * t_.BT * K, gRaw_, a.g);
        Bind(t_.NC, gLen_, a.len);
        act_.Init(pipe_, K, gate::ActivationForm{t_.gate_form, t_.has_a_log, t_.has_dt_bias, K, 0, t_.coef_scale, t_.out_scale},
                  a.aLog, t_.HV, a.dtBias);
    }

    // Every reference decision of the chunk with one read back by the scalar unit (chunk_intra's
    // ChooseReferences and Form make them one block row at a time): per block row I from this AIV's
    // first, over the columns, the largest |G_first - G_m| and |G_m - G_last| (midRef_[I]: its middle
    // row m the reference when within the span) and |G_first - G_last| (firstSafe_[I]: with the first
    // row as reference the diagonal block within the span, so on the Cube). G does not increase along
    // the chunk, so the last is chunk_intra's largest |G_r - G_j| over the whole block, the same float:
    // the same decisions. gr: FormKda's reference rows; d 3 x 4 K floats and work 16 K of scratch.
    __aicore__ inline void ChooseReferences(const LocalTensor<float>& gr, const LocalTensor<float>& d,
                                            const LocalTensor<float>& work) {
        const uint32_t K = t_.K, I0 = owned_[0], rows = t_.nb - I0;
        LocalTensor<float> red = red_.Get<float>();
        for (uint32_t q = 0; q < rows; ++q) {
            const LocalTensor<float> g = gr[3 * (I0 + q) * K], e = d[3 * q * K];
            Sub(e, g, g[K], static_cast<int32_t>(K));             // G_first - G_m
            Sub(e[K], g[K], g[2 * K], static_cast<int32_t>(K));   // G_m - G_last
            Sub(e[2 * K], g, g[2 * K], static_cast<int32_t>(K));  // G_first - G_last
        }
        OrderV();
        Abs(d, d, static_cast<int32_t>(3 * rows * K));
        OrderV();
        for (uint32_t q = 0; q < rows; ++q) {  // each reduction its own work region and result block
            ReduceMax(red[16 * q], d[3 * q * K], work[4 * q * K], static_cast<int32_t>(2 * K));
            ReduceMax(red[16 * q + 8], d[(3 * q + 2) * K], work[(4 * q + 2) * K], static_cast<int32_t>(K));
        }
        Sync<HardEvent::V_S>();
        for (uint32_t q = 0; q < rows; ++q) {
            midRef_[I0 + q] = red.GetValue(16 * q) <= SafeSpan();
            firstSafe_[I0 + q] = red.GetValue(16 * q + 8) <= SafeSpan();
        }
        Sync<HardEvent::S_V>();  // the next chunk's reductions may overwrite red
    }

    // kf, qf (fp32) = the 16 rows of k and of q from element qk (token-major), fetched together through
    // one buffer of inB_ (one wait for both), widened exactly; ordered after.
    __aicore__ inline void WidenKeyRows(uint64_t qk, const LocalTensor<float>& kf, const LocalTensor<float>& qf) {
        const uint32_t K = t_.K, n = 16 * K, perBlock = 32 / sizeof(T);
        const DataCopyParams rows(16, static_cast<uint16_t>(K / perBlock),
                                  static_cast<uint16_t>((TokenPitch(t_.HV, t_.groups, K) - K) / perBlock), 0);
        LocalTensor<T> x = inB_.template AllocTensor<T>();
        DataCopy(x, gK_[qk], rows);
        DataCopy(x[n], gQ_[qk], rows);
        inB_.EnQue(x);
        x = inB_.template DeQue<T>();
        Cast(kf, x, RoundMode::CAST_NONE, n);
        Cast(qf, x[n], RoundMode::CAST_NONE, n);
        inB_.FreeTensor(x);
        OrderV();
    }

    // The index in owned_ of block row I, or nOwned_ when this AIV does not own it.
    __aicore__ inline uint32_t OwnedIndex(uint32_t I) const {
        for (uint32_t o = 0; o < nOwned_; ++o)
            if (owned_[o] == I) return o;
        return nOwned_;
    }

    // chunk_forward, KDA: stage 2's operands of owned block J = owned_[o] (chunk_intra's Form, whose
    // comments say why each factor is bounded): G_r - G_j against its reference row r, the column operand
    // rows k_j e^(G_r - G_j) (zero when the block is computed exactly), q's and k's row operands times
    // e^(G_j - G_r), then the base (in g's place) times the column factors of every block row below.
    __aicore__ inline void StageTwoOperands(uint64_t op, uint32_t slot, uint32_t o, const LocalTensor<float>& g,
                                            const LocalTensor<float>& kf, const LocalTensor<float>& qf,
                                            const LocalTensor<float>& d, const LocalTensor<float>& f,
                                            const LocalTensor<float>& gr) {
        const uint32_t K = t_.K, nb = t_.nb, n = 16 * K, J = owned_[o];
        const bool below = J + 1 < nb;
        SubFromRow(d, gr[RefRow(J) * K], g, 16, K);  // G_r - G_j
        OrderV();
        const bool safe = midRef_[J] || firstSafe_[J];
        unsafe_[slot][o] = !safe;
        if (!safe && t_.gate_in) {  // G's block as FinishKda's exact diagonal block reads it back (no G in GM)
            Sync<HardEvent::V_MTE3>();
            DataCopy(gWsF_[Stage2Regions(t_, slot).gb + 16ull * J * K], g, n);
            Sync<HardEvent::MTE3_V>();  // before the base is formed in its place
        }
        const uint32_t baseRow = safe ? RefRow(J) : 3 * J + 2;  // b's row in gr
        if (safe) {
            Exp(f, d, static_cast<int32_t>(n));
            OrderV();
            Mul(g, kf, f, static_cast<int32_t>(n));
            Sync<HardEvent::V_MTE3>();  // out from g as it is: the base stays there
            DataCopy(gWsF_[op + ColumnOperandAt(J, J)], g, n);
        } else {
            LocalTensor<float> z = outF_.template AllocTensor<float>();
            Duplicate(z, 0.0f, static_cast<int32_t>(n));
            CopyOut(outF_, gWsF_[op + ColumnOperandAt(J, J)], z, n);
            if (below) {
                SubFromRow(f, gr[baseRow * K], g, 16, K);
                OrderV();
                Exp(f, f, static_cast<int32_t>(n));
                OrderV();
                Mul(g, kf, f, static_cast<int32_t>(n));
                OrderV();
            }
            Muls(f, d, -1.0f, static_cast<int32_t>(n));
            OrderV();
            Exp(f, f, static_cast<int32_t>(n));
            OrderV();
        }
        for (uint32_t p = 0; p < 2; ++p) {  // k's row operand, then q's
            LocalTensor<float> y = outF_.template AllocTensor<float>();
            const LocalTensor<float>& src = p == 0 ? kf : qf;
            if (safe) Div(y, src, f, static_cast<int32_t>(n));
            else Mul(y, src, f, static_cast<int32_t>(n));
            CopyOut(outF_, gWsF_[op + uint64_t(32 * J + (p == 0 ? 16 : 0)) * K], y, n);
        }
        if (!below) return;
        kda_blocks::ColumnFactors(d, gr, gr[baseRow * K], J, nb, K);
        for (uint32_t I = J + 1; I < nb; ++I) {
            LocalTensor<float> c = outF_.template AllocTensor<float>();
            OrderV();  // the column factors' writers
            MulByRow(c, g, d[(RefRow(I) - 3 * (J + 1)) * K], 16, K);
            CopyOut(outF_, gWsF_[op + ColumnOperandAt(I, J)], c, n);
        }
    }

    // x (16 rows of K floats, ordered before) times its rows' factors, formed from them (scale over
    // the l2 norms with qk_l2norm, else scale) and Brcb'd into bc; sq 16 x 64 floats of scratch, f 16.
    __aicore__ inline void BlockFactors(const LocalTensor<float>& x, const LocalTensor<float>& sq, const LocalTensor<float>& f,
                                        const LocalTensor<float>& bc, float scale) {
        const bool l2 = t_.qk_l2norm != 0;
        RowNormFactors(f, x, sq, l2, scale, 16, t_.K);
        OrderV();
        BroadcastRows(bc, f, 16);
        OrderV();
        ScaleRows(x, RowScale{l2 || scale != 1.0f, bc}, 16, t_.K);
    }

    // The tiling's safe_span (log2) in G's natural-log units; the row of FormKda's reference rows that
    // is block row I's reference row (its middle or first); the first element of block J's column
    // operand rows of block row I in an operand slot.
    __aicore__ inline float SafeSpan() const { return chunk_intra::kSafeSpan * kLn2; }
    __aicore__ inline uint32_t RefRow(uint32_t I) const { return 3 * I + (midRef_[I] ? 1 : 0); }
    __aicore__ inline uint64_t ColumnOperandAt(uint32_t I, uint32_t J) const {
        return uint64_t(32 * t_.nb + chunk_intra::ColOffset(I) + 16 * J) * t_.K;
    }

    // chunk_forward, KDA, owned block row I (owned_[o]) of unit ch, the core's j-th chunk: the Cube
    // wrote Aqk's and L's columns left of the diagonal block; here the diagonal blocks (the Cube's,
    // masked, or computed exactly when unsafe), L's rows times beta, Aqk's to the pair, L's inverted
    // (X = (I + L_II)^-1): X diag(beta) to the pair's Akk, -X diag(beta) (I > 0: the merges' left
    // factor, L's blocks left of it lacking beta) and diag(beta) X^T to the inverse slot.
    __aicore__ inline void FinishKda(uint64_t ch, uint32_t j, uint32_t I, uint32_t o) {
        const uint32_t BT = t_.BT;
        const Stage2At at = Stage2Regions(t_, j);
        const uint64_t diag = uint64_t(16 * I) * BT + 16 * I;  // the diagonal block's first element
        LocalTensor<float> oa = res_.Get<float>()[32 * t_.K], ol = oa[solve_tril::kBlockElems],
                           x = oa[2 * solve_tril::kBlockElems];
        LocalTensor<float> bcB = bc_.Get<float>()[256];
        OrderV();  // the previous users of res_
        LocalTensor<float> r = CopyIn(inA_, gWsF_[at.res + 512 * I], 512);
        SelectCausal(oa, ol, r, masks_.Get<uint8_t>(), maskBytes_, 0, solve_tril::kBlockElems);
        inA_.FreeTensor(r);
        if (unsafe_[j % OperandSlots(t_)][o]) {  // the Cube's diagonal block is zero there
            ExactDiagonal(ch, j, I, oa, ol);
            OrderV();
        }
        LocalTensor<float> b = CopyIn(inB_, gB_[ch * BT + 16 * I], 16);
        BroadcastRows(bcB, b, 16);
        OrderV();
        MulRows(ol, ol, bcB, 16, 16);
        WriteBlock(gWsT_[at.aqk + diag], oa);
        OrderV();
        inv_.Load(ol);
        inv_.Lower(x);
        OrderV();
        MulByRow(oa, x, b, 16, 16);  // X diag(beta)
        OrderV();
        WriteBlock(gWsT_[at.akk + diag], oa);
        if (I > 0) {
            Muls(b, b, -1.0f, 16);
            OrderV();
        }
        solve_tril::WriteMergeOperands(outF_, outF_, inv_, gWsF_[at.inv], x, I > 0 ? &b : nullptr, &bcB, I, BT);
        inB_.FreeTensor(b);
    }

    // chunk_forward, KDA: a diagonal block whose decay spans more than safe_span ln 2, per pair
    // (kda_blocks::ExactDiagonalRows) from block row I's rows of G, q and k, read again (their factors
    // formed again) into the zero tiles oa / ol (after the two work tiles of res_ it takes: FinishKda).
    // q and k widen into inA_'s buffer after G's rows.
    __aicore__ inline void ExactDiagonal(uint64_t ch, uint32_t j, uint32_t I, const LocalTensor<float>& oa,
                                         const LocalTensor<float>& ol) {
        const uint32_t K = t_.K, BT = t_.BT, HV = t_.HV, n = 16 * K, unit = static_cast<uint32_t>(ch);
        LocalTensor<float> w = res_.Get<float>(), e = w, x = w[n], bc = bc_.Get<float>();
        const uint64_t qk = TokenRow(unit, 16 * I, HV, t_.groups, BT, K);
        LocalTensor<float> g;
        if (t_.gate_in) {  // written by this AIV when it formed the chunk (StageTwoOperands)
            Sync<HardEvent::MTE3_MTE2>();
            g = CopyIn(inA_, gWsF_[Stage2Regions(t_, j).gb + 16ull * I * K], n);
        } else {
            g = CopyInGate(inA_, gG_[GateRow(unit, 16 * I, HV, BT, K)], 16, HV, K);
        }
        LocalTensor<float> qf = g[n], kf = g[2 * n];
        CastInRows(inB_, gQ_[qk], qf, 16, K, TokenPitch(HV, t_.groups, K));
        CastInRows(inB_, gK_[qk], kf, 16, K, TokenPitch(HV, t_.groups, K));
        OrderV();
        BlockFactors(qf, e, x, bc[128], t_.scale);
        BlockFactors(kf, e, x, bc, 1.0f);
        kda_blocks::ExactDiagonalRows(e, x, qf, kf, g, oa, ol, K);
        inA_.FreeTensor(g);
    }

    // A 16 x 16 block (fp32, ordered before) rounded once to T into a BT-wide matrix of the workspace.
    __aicore__ inline void WriteBlock(const GlobalTensor<T>& dst, const LocalTensor<float>& src) {
        const uint32_t eb = sizeof(T);
        LocalTensor<T> y = outT_.template AllocTensor<T>();
        Cast(y, src, RoundMode::CAST_RINT, solve_tril::kBlockElems);
        outT_.EnQue(y);
        y = outT_.template DeQue<T>();
        DataCopy(dst, y,
                 DataCopyParams(16, static_cast<uint16_t>(16 * eb / 32), 0, static_cast<uint16_t>((t_.BT - 16) * eb / 32)));
        outT_.FreeTensor(y);
    }

    // Fused: this AIV's rows [r0, r0 + rows_v) of -I [BT, BT] in T to the workspace, once: zeros, the
    // diagonal set by the scalar unit, one rounding (exact) to T.
    __aicore__ inline void NegIdentityRows() {
        const uint32_t BT = t_.BT, rv = t_.rows_v, r0 = at_.sub * rv;
        LocalTensor<float> f = res_.Get<float>();
        Duplicate(f, 0.0f, static_cast<int32_t>(rv * BT));
        Sync<HardEvent::V_S>();
        for (uint32_t i = 0; i < rv; ++i) f.SetValue(i * BT + r0 + i, -1.0f);
        Sync<HardEvent::S_V>();
        OrderV();  // the zeros too: the scalar writes do not order the vector pipe
        CastOut(outT_, gWsT_[FusedRegions(t_).negI + uint64_t(r0) * BT], f, rv * BT);
    }

    // Fused: rows [r0, r0 + rows_v) of unit (c, h) = ch's X1 = -T(k e_row) (negated: the Cube's v_new
    // = u - w S is then one accumulation; beta is in Akk's columns), kg = T(k e_tail) and qe = T(q e_row)
    // (one e_row for both) to the workspace; q and k times the call's row factors first, when given.
    __aicore__ inline void FormOperands(uint64_t ch, uint32_t r0, uint32_t slot) {
        const uint32_t BT = t_.BT, K = t_.K, rv = t_.rows_v, HV = t_.HV;
        const uint32_t unit = static_cast<uint32_t>(ch);
        const WsAt at = FusedRegions(t_, slot);
        // bc_: GDN's Brcb row, GDN's factor (R x 8, R floats), with the call's row factors Brcb(k's),
        // Brcb(q's) (R x 8 each); no beta (Scratch's bcB unused)
        LocalTensor<float> work = res_.Get<float>(), bc = bc_.Get<float>();
        const wy_rows::Scratch x{work, work[rv * K], bc, bc, bc[rv * 8], LoadScale(gKs_, unit, r0, 9)};
        const RowScale qScale = LoadScale(gQs_, unit, r0, 17);
        // chunk_forward: the rows' factors formed here (the squares in s, the broadcasts where the given
        // ones go), the rows as read and their factors to the slot for stage 2 (ForwardRows)
        OwnFactors<T> kOwn{}, qOwn{};
        if (t_.intra) {
            const bool l2 = t_.qk_l2norm != 0;
            const uint64_t f = Stage2Regions(t_, slot).f + r0;  // slot < OperandSlots: the slot's factors
            kOwn = OwnFactors<T>{true, l2, 1.0f, x.s, bc[rv * 9], gWsT_[at.qk + uint64_t(BT + r0) * K], gWsF_[f + BT]};
            qOwn = OwnFactors<T>{true, l2, t_.scale, x.s, bc[rv * 17], gWsT_[at.qk + uint64_t(r0) * K], gWsF_[f]};
        }
        const wy_rows::Rows rows{rv, K, t_.Kg, HV};
        const uint64_t kAt = TokenRow(unit, r0, HV, t_.groups, BT, K);
        LocalTensor<float> e =
            wy_rows::FormK<T, T>(inB_, inA_, inL_, outT_, outF_, x, gK_[kAt], TokenPitch(HV, t_.groups, K),
                                 gG_[GateRow(unit, r0, HV, BT, t_.Kg)], gG_[GateRow(unit, BT - 1, HV, BT, t_.Kg)],
                                 gWsT_[at.kg + uint64_t(r0) * K], gWsT_[at.x1 + uint64_t(r0) * K], nullptr, rows, kOwn);
        OrderV();  // X1's reads of work before q overwrites it
        const GlobalTensor<T> qe = gWsT_[at.qe + uint64_t(r0) * K];
        if (t_.intra) {  // QeRows with q's own factors
            CastInRows(inB_, gQ_[kAt], work, rv, K, TokenPitch(HV, t_.groups, K));
            OrderV();
            ScaleRowsBy(outT_, outF_, work, qScale, qOwn, rv, K);
            MulGate(work, work, e, x.bcE, rv, K, t_.Kg);
            CastOut(outT_, qe, work, rv * K);
        } else {
            QeRows(inB_, outT_, work, x.bcE, gQ_[kAt], TokenPitch(HV, t_.groups, K), e, qe, rv, K, t_.Kg, qScale);
        }
        inA_.FreeTensor(e);
    }

    // Fused: the factors of rows [r0, r0 + rows_v) of unit u of q_scale or k_scale (gs), Brcb'd into bc_
    // from element rows_v * at; off (nothing read) when the call gave none. Through inE_.
    __aicore__ inline RowScale LoadScale(const GlobalTensor<float>& gs, uint32_t u, uint32_t r0, uint32_t at) {
        if (!t_.qk_scaled) return RowScale{};  // bc_ has no room for the broadcasts then
        return LoadRowScale(inE_, true, gs, ScaleRow(u, r0, t_.HV, t_.groups, t_.BT), t_.rows_v,
                            bc_.Get<float>()[t_.rows_v * at]);
    }

    const ChunkStateTiling t_;
    const AivPlace at_ = ThisAiv();  // known from the start: the launch places the core
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> inA_, inB_, inE_, inL_;
    TQue<QuePosition::VECOUT, 2> outT_;
    TQue<QuePosition::VECOUT, 1> outF_;
    TBuf<TPosition::VECCALC> s_, bc_, res_;
    // chunk_forward's stage 2: its own buffers, the owned block rows (at most two: BT <= 64)
    TBuf<TPosition::VECCALC> masks_, red_;
    solve_tril::BlockInverse16 inv_;
    uint32_t maskBytes_ = 0, owned_[2] = {0, 0}, nOwned_ = 0;
    // KDA's: per operand slot and owned block row, whether its diagonal block is computed exactly; per
    // block row, whether its reference is its middle row (the chunk being formed)
    bool unsafe_[3][2] = {{false, false}, {false, false}, {false, false}};
    bool midRef_[4] = {false, false, false, false};
    bool firstSafe_[4] = {false, false, false, false};  // [block row]: the first row as reference fits the span
    GlobalTensor<float> gU_, gE_, gH0_, gHf_, gVf_, gFin_, gWsF_, gG_, gQs_, gKs_, gB_;
    // chunk_gate_forward: the activation, the value head whose parameters it holds, the raw gate, the lengths
    gate::GateActivation act_;
    uint32_t actHead_ = 0xFFFFFFFFu;
    GlobalTensor<R> gRaw_;
    GlobalTensor<int32_t> gLen_;
    GlobalTensor<T> gHt_, gVt_, gWsT_, gQ_, gK_;
    GlobalTensor<int32_t> gCo_;
};

// The kernel body: T the Cube type (w, kg), H and V the dtypes of h and v_new (float or T). H and V
// decide the output paths; the tiling's h_f32 / v_new_f32 of a checked call say the same.
template <class T, class H, class V>
__aicore__ inline void RunChunkState(GM_ADDR w, GM_ADDR u, GM_ADDR kg, GM_ADDR eLast, GM_ADDR chunkOffsets, GM_ADDR h0, GM_ADDR h,
                                     GM_ADDR vNew, GM_ADDR fin, GM_ADDR ws, const ChunkStateTiling& tiling) {
    static_assert((IsSame<H, float>::value || IsSame<H, T>::value) && (IsSame<V, float>::value || IsSame<V, T>::value),
                  "h and v_new: float or the Cube type");
    ChunkStateTiling t = tiling;
    t.h_f32 = IsSame<H, float>::value ? 1u : 0u;
    t.v_new_f32 = IsSame<V, float>::value ? 1u : 0u;
    RunMixed<ChunkStateCube<T, false>, ChunkStateVector<T, false>>(
        ChunkStateGm{w,       u,       kg,      eLast,   chunkOffsets, h0,      h,       vNew,    fin,     ws,
                     nullptr, nullptr, nullptr, nullptr, nullptr,      nullptr, nullptr, nullptr, nullptr, nullptr},
        t);
}

}  // namespace chunk_state
}  // namespace fla_npu

#endif
