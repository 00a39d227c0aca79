// Chunk output (stage 5 of chunked KDA / Gated DeltaNet), mixed Cube + vector (KERNEL_TYPE_MIX_AIC_1_2).
//
//   o[c, h] = (q[c, h] * e_row[c, h]) @ S[c, h] + Aqk[c, h] @ v_new[c, h]
//
// Shapes, the work split and why this is a mixed kernel: chunk_output_tiling.h. Per unit (chunk,
// head) u, the i-th of its AI core, workspace slot i % 2:
//   AIV  [i >= 2: wait Free]  its half of the rows of qe = T(fp32(q) * e_row) (KDA: element-wise;
//        GDN: one fp32 factor per row, broadcast with Brcb) and of T(S) (fp32 -> T, in pieces) to
//        the slot;  set Ready (PIPE_MTE3: after the copies out)
//   AIC  wait Ready (both AIVs); qe and T(S) from the slot into L1 (ND -> NZ); [if a later unit
//        reuses the slot: set Free (PIPE_MTE2: after those reads)]; Aqk and v_new from GM into L1;
//        qe and Aqk into L0A; per V-tile: T(S) and v_new columns into L0B (transposing LoadData:
//        L1's NZ fractals of a row-major k x n matrix are the transposes of L0B's Zn fractals),
//        Mmad(init) qe @ S, Mmad(accumulate) Aqk @ v_new into one L0C tile, Fixpipe -> o (fp32).
// Flag counts balance: the AIVs wait Free count - 2 times, the AIC sets it count - 2 times, and
// at most two sets of either flag are ever pending.
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX and the
// reverse pairs before each buffer is reused); on the AIVs the queues order MTE2 -> V -> MTE3.
// Every dimension is a multiple of 16, so L1/L0 tiles are whole fractals and nothing is padded.
#ifndef FLA_NPU_CHUNK_OUTPUT_KERNEL_H
#define FLA_NPU_CHUNK_OUTPUT_KERNEL_H

#include "kernel_operator.h"
#include "chunk_output_tiling.h"

namespace fla_npu {
namespace chunk_output {

using namespace AscendC;

constexpr uint16_t kFlagReady = 0, kFlagFree = 1;
constexpr uint32_t kFloatLanes = 64;  // fp32 lanes of one 256-byte repeat

template <HardEvent E> __aicore__ inline void Sync() {
    SetFlag<E>(0);
    WaitFlag<E>(0);
}

// ------------------------------------------------------------------------------------------------
// AIC: both products into one L0C tile per V-tile.
// ------------------------------------------------------------------------------------------------
template <class T>
class ChunkOutputCube {
public:
    __aicore__ inline ChunkOutputCube() {}

    __aicore__ inline void Init(GM_ADDR aqk, GM_ADDR vNew, GM_ADDR out, GM_ADDR ws, const ChunkOutputTiling& t) {
        t_ = t;
        const uint64_t units = t.num_units;
        gA_.SetGlobalBuffer((__gm__ T*)aqk, units * t.BT * t.BT);
        gVn_.SetGlobalBuffer((__gm__ T*)vNew, units * t.BT * t.V);
        gO_.SetGlobalBuffer((__gm__ float*)out, units * t.BT * t.V);
        gWs_.SetGlobalBuffer((__gm__ T*)((__gm__ uint8_t*)ws + uint64_t(GetBlockIdx()) * t.ws_bytes_per_core),
                             2ull * t.ws_slot_elems);
        const uint32_t BT = t.BT, K = t.K, V = t.V, Vt = t.v_tile;
        pipe_.InitBuffer(qe1_, BT * K * sizeof(T));
        pipe_.InitBuffer(a1_, BT * BT * sizeof(T));
        pipe_.InitBuffer(s1_, K * V * sizeof(T));
        pipe_.InitBuffer(v1_, BT * V * sizeof(T));
        pipe_.InitBuffer(qea_, BT * K * sizeof(T));
        pipe_.InitBuffer(aa_, BT * BT * sizeof(T));
        pipe_.InitBuffer(sb_, K * Vt * sizeof(T));
        pipe_.InitBuffer(vb_, BT * Vt * sizeof(T));
        pipe_.InitBuffer(oc_, BT * Vt * sizeof(float));
    }

    __aicore__ inline void Process() {
        uint32_t first = 0, count = 0;
        CoreUnits(t_, static_cast<uint32_t>(GetBlockIdx()), &first, &count);
        for (uint32_t i = 0; i < count; ++i) Unit(first + i, i % 2, i + 2 < count);
    }

private:
    // A (m x k) from L1 NZ (fractal (i along m, j along k) at j * mFrac + i) into L0A in the SoC's
    // layout: a2/a3 Zz (one LoadData per fractal row), a5 Nz (the L1 order as it is).
    __aicore__ inline void LoadA(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t m, uint32_t k) {
        constexpr uint32_t fr = 512 / sizeof(T), c0 = 32 / sizeof(T);
        const uint32_t mFrac = m / 16, kFrac = k / c0;
#if __NPU_ARCH__ == 3510
        LoadData(a2, a1, LoadData2dParams(0, static_cast<uint8_t>(mFrac * kFrac), 1, 0, 0, false, 0));
#else
        for (uint32_t i = 0; i < mFrac; ++i)
            LoadData(a2[i * kFrac * fr], a1[i * fr],
                     LoadData2dParams(0, static_cast<uint8_t>(kFrac), static_cast<uint16_t>(mFrac), 0, 0, false, 0));
#endif
    }

    // B = columns [v0, v0 + n) of a row-major k x V matrix held in L1 as NZ (16 x 16 fractals,
    // column-major: fractal (row block r, column block c) at c * k / 16 + r) into L0B's Zn (fractal
    // (r, c) at r * n / 16 + c, each stored n-major): one transposing LoadData per row block.
    __aicore__ inline void LoadB(const LocalTensor<T>& b2, const LocalTensor<T>& b1, uint32_t k, uint32_t v0, uint32_t n) {
        constexpr uint32_t fr = 512 / sizeof(T);
        const uint32_t kFrac = k / 16, nFrac = n / 16;
        for (uint32_t r = 0; r < kFrac; ++r)
            LoadData(b2[r * nFrac * fr], b1[((v0 / 16) * kFrac + r) * fr],
                     LoadData2dParams(0, static_cast<uint8_t>(nFrac), static_cast<uint16_t>(kFrac), 0, 0, true, 0));
    }

    __aicore__ inline void Unit(uint32_t u, uint32_t slot, bool slotReused) {
        const uint32_t BT = t_.BT, K = t_.K, V = t_.V;
        const uint64_t base = uint64_t(slot) * t_.ws_slot_elems;
        LocalTensor<T> qe1 = qe1_.Get<T>(), a1 = a1_.Get<T>(), s1 = s1_.Get<T>(), v1 = v1_.Get<T>();
        LocalTensor<T> qea = qea_.Get<T>(), aa = aa_.Get<T>(), sb = sb_.Get<T>(), vb = vb_.Get<T>();
        LocalTensor<float> oc = oc_.Get<float>();

        CrossCoreWaitFlag(kFlagReady);  // both AIVs wrote their rows of the slot
        Sync<HardEvent::MTE1_MTE2>();   // the previous unit's LoadData have read L1
        DataCopy(qe1, gWs_[base], Nd2NzParams(1, static_cast<uint16_t>(BT), static_cast<uint16_t>(K), 0,
                                              static_cast<uint16_t>(K), static_cast<uint16_t>(BT), 1, 0));
        DataCopy(s1, gWs_[base + uint64_t(BT) * K], Nd2NzParams(1, static_cast<uint16_t>(K), static_cast<uint16_t>(V), 0,
                                                                static_cast<uint16_t>(V), static_cast<uint16_t>(K), 1, 0));
        if (slotReused) CrossCoreSetFlag<2, PIPE_MTE2>(kFlagFree);  // the slot is read: the AIVs may refill it
        DataCopy(a1, gA_[uint64_t(u) * BT * BT], Nd2NzParams(1, static_cast<uint16_t>(BT), static_cast<uint16_t>(BT), 0,
                                                             static_cast<uint16_t>(BT), static_cast<uint16_t>(BT), 1, 0));
        DataCopy(v1, gVn_[uint64_t(u) * BT * V], Nd2NzParams(1, static_cast<uint16_t>(BT), static_cast<uint16_t>(V), 0,
                                                             static_cast<uint16_t>(V), static_cast<uint16_t>(BT), 1, 0));
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();      // the previous unit's Mmads have read L0A / L0B
        LoadA(qea, qe1, BT, K);
        LoadA(aa, a1, BT, BT);
        for (uint32_t v0 = 0; v0 < V; v0 += t_.v_tile) {
            const uint32_t n = V - v0 < t_.v_tile ? V - v0 : t_.v_tile;
            if (v0 > 0) Sync<HardEvent::M_MTE1>();  // the previous V-tile's Mmads have read L0B
            LoadB(sb, s1, K, v0, n);
            LoadB(vb, v1, BT, v0, n);
            Sync<HardEvent::MTE1_M>();
            Sync<HardEvent::FIX_M>();   // the previous Fixpipe has read oc
            Mmad(oc, qea, sb, MmadParams(static_cast<uint16_t>(BT), static_cast<uint16_t>(n), static_cast<uint16_t>(K), 0, false, true));
            Mmad(oc, aa, vb, MmadParams(static_cast<uint16_t>(BT), static_cast<uint16_t>(n), static_cast<uint16_t>(BT), 0, false, false));
            Sync<HardEvent::M_FIX>();
            Fixpipe(gO_[uint64_t(u) * BT * V + v0], oc,
                    FixpipeParamsV220(static_cast<uint16_t>(n), static_cast<uint16_t>(BT), static_cast<uint16_t>(BT), V, false));
        }
    }

    ChunkOutputTiling t_{};
    TPipe pipe_;
    TBuf<TPosition::A1> qe1_, a1_;
    TBuf<TPosition::B1> s1_, v1_;
    TBuf<TPosition::A2> qea_, aa_;
    TBuf<TPosition::B2> sb_, vb_;
    TBuf<TPosition::CO1> oc_;
    GlobalTensor<T> gA_, gVn_, gWs_;
    GlobalTensor<float> gO_;
};

// ------------------------------------------------------------------------------------------------
// AIV: the Cube operands that need vector work, half of each per sub-block.
// ------------------------------------------------------------------------------------------------
template <class T>
class ChunkOutputVector {
public:
    __aicore__ inline ChunkOutputVector() {}

    __aicore__ inline void Init(GM_ADDR q, GM_ADDR eRow, GM_ADDR s, GM_ADDR ws, const ChunkOutputTiling& t) {
        t_ = t;
        block_ = static_cast<uint32_t>(GetBlockIdx() / GetSubBlockNum());
        sub_ = static_cast<uint32_t>(GetSubBlockIdx());
        const uint64_t units = t.num_units;
        gQ_.SetGlobalBuffer((__gm__ T*)q, units * t.BT * t.K);
        gE_.SetGlobalBuffer((__gm__ float*)eRow, units * t.BT * t.Kg);
        gS_.SetGlobalBuffer((__gm__ float*)s, units * t.K * t.V);
        gWs_.SetGlobalBuffer((__gm__ T*)((__gm__ uint8_t*)ws + uint64_t(block_) * t.ws_bytes_per_core), 2ull * t.ws_slot_elems);
        pipe_.InitBuffer(inT_, 1, t.vec_elems * sizeof(T));
        pipe_.InitBuffer(inF_, 1, t.vec_elems * sizeof(float));
        pipe_.InitBuffer(outT_, 1, t.vec_elems * sizeof(T));
        pipe_.InitBuffer(work_, t.vec_elems * sizeof(float));
        if (t.Kg == 1) pipe_.InitBuffer(brcb_, t.rows_per_aiv * 8 * sizeof(float));
    }

    __aicore__ inline void Process() {
        uint32_t first = 0, count = 0;
        CoreUnits(t_, block_, &first, &count);
        for (uint32_t i = 0; i < count; ++i) {
            if (i >= 2) CrossCoreWaitFlag(kFlagFree);  // the Cube has read slot i % 2 (unit i - 2)
            const uint64_t base = uint64_t(i % 2) * t_.ws_slot_elems;
            FormQe(first + i, base);
            CastS(first + i, base + uint64_t(t_.BT) * t_.K);
            CrossCoreSetFlag<2, PIPE_MTE3>(kFlagReady);
        }
    }

private:
    // Rows [r0, r0 + R) of qe = T(fp32(q) * e_row): one fp32 multiply, one rounding to T.
    __aicore__ inline void FormQe(uint32_t u, uint64_t dst) {
        const uint32_t R = t_.rows_per_aiv, K = t_.K, r0 = sub_ * R, n = R * K;
        LocalTensor<T> x = inT_.template AllocTensor<T>();
        DataCopy(x, gQ_[(uint64_t(u) * t_.BT + r0) * K], n);
        inT_.EnQue(x);
        LocalTensor<float> e = inF_.template AllocTensor<float>();
        DataCopy(e, gE_[(uint64_t(u) * t_.BT + r0) * t_.Kg], R * t_.Kg);
        inF_.EnQue(e);
        x = inT_.template DeQue<T>();
        e = inF_.template DeQue<float>();
        LocalTensor<float> w = work_.Get<float>();
        Cast(w, x, RoundMode::CAST_NONE, n);
        inT_.FreeTensor(x);
        if (t_.Kg == K) {
            Mul(w, w, e, static_cast<int32_t>(n));
        } else {  // GDN: row r times e[r]; Brcb puts e[r] in its own 32-byte block, read with stride 0
            LocalTensor<float> bc = brcb_.Get<float>();
            Brcb(bc, e, static_cast<uint8_t>(R / 8), BrcbRepeatParams(1, 8));
            const uint8_t rowBlk = static_cast<uint8_t>(K * sizeof(float) / 32);
            const BinaryRepeatParams perRow(1, 1, 0, rowBlk, rowBlk, 1);
            for (uint32_t c = 0; c < K; c += kFloatLanes) {
                const uint64_t mask = K - c < kFloatLanes ? K - c : kFloatLanes;
                Mul(w[c], w[c], bc, mask, static_cast<uint8_t>(R), perRow);
            }
        }
        inF_.FreeTensor(e);
        LocalTensor<T> y = outT_.template AllocTensor<T>();
        Cast(y, w, RoundMode::CAST_RINT, n);
        outT_.EnQue(y);
        y = outT_.template DeQue<T>();
        DataCopy(gWs_[dst + uint64_t(r0) * K], y, n);
        outT_.FreeTensor(y);
    }

    // Rows [k0, k0 + K / 2) of T(S), in pieces of s_piece_rows rows.
    __aicore__ inline void CastS(uint32_t u, uint64_t dst) {
        const uint32_t V = t_.V, k0 = sub_ * t_.s_rows_per_aiv;
        for (uint32_t r = 0; r < t_.s_rows_per_aiv; r += t_.s_piece_rows) {
            const uint32_t rows = t_.s_rows_per_aiv - r < t_.s_piece_rows ? t_.s_rows_per_aiv - r : t_.s_piece_rows;
            const uint32_t n = rows * V;
            LocalTensor<float> f = inF_.template AllocTensor<float>();
            DataCopy(f, gS_[(uint64_t(u) * t_.K + k0 + r) * V], n);
            inF_.EnQue(f);
            f = inF_.template DeQue<float>();
            LocalTensor<T> y = outT_.template AllocTensor<T>();
            Cast(y, f, RoundMode::CAST_RINT, n);
            inF_.FreeTensor(f);
            outT_.EnQue(y);
            y = outT_.template DeQue<T>();
            DataCopy(gWs_[dst + uint64_t(k0 + r) * V], y, n);
            outT_.FreeTensor(y);
        }
    }

    ChunkOutputTiling t_{};
    uint32_t block_ = 0, sub_ = 0;
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> inT_, inF_;
    TQue<QuePosition::VECOUT, 1> outT_;
    TBuf<TPosition::VECCALC> work_, brcb_;
    GlobalTensor<T> gQ_, gWs_;
    GlobalTensor<float> gE_, gS_;
};

template <class T>
__aicore__ inline void RunChunkOutput(GM_ADDR q, GM_ADDR eRow, GM_ADDR s, GM_ADDR aqk, GM_ADDR vNew, GM_ADDR out, GM_ADDR ws,
                                      const ChunkOutputTiling& t) {
    if ASCEND_IS_AIC {
        ChunkOutputCube<T> op;
        op.Init(aqk, vNew, out, ws, t);
        op.Process();
    }
    if ASCEND_IS_AIV {
        ChunkOutputVector<T> op;
        op.Init(q, eRow, s, ws, t);
        op.Process();
    }
}

}  // namespace chunk_output
}  // namespace fla_npu

#endif
