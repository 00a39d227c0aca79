// Chunk output (stage 5 of chunked KDA / Gated DeltaNet), mixed Cube + vector (KERNEL_TYPE_MIX_AIC_1_2).
//
//   o[c, h] = (q[c, h] * e^g[c, h]) @ S[c, h] + Aqk[c, h] @ v_new[c, h]   (g the chunk's gate cumsum, natural log)
//
// Shapes, the work split and why this is a mixed kernel: chunk_output_tiling.h. Per unit (chunk,
// head) u, the i-th of its AI core, workspace slot i % 2:
//   AIV  [i >= 2: wait Free]  its half of the rows of qe = T(fp32(q) * e_row) (KDA: element-wise;
//        GDN: one fp32 factor per row, broadcast with Brcb) to the slot;  set Ready (PIPE_MTE3:
//        after the copies out)
//   AIC  wait Ready (both AIVs); qe from the slot into L1 (ND -> NZ); [if a later unit reuses the
//        slot: set Free (PIPE_MTE2: after that read)]; S, Aqk and v_new from GM into L1;
//        qe and Aqk into L0A; per V-tile: S and v_new columns into L0B (transposing LoadData:
//        L1's NZ fractals of a row-major k x n matrix are the transposes of L0B's Zn fractals),
//        Mmad(init) qe @ S, Mmad(accumulate) Aqk @ v_new into one L0C tile, Fixpipe -> o (fp32, or
//        rounded once to T).
// The slot hand-off (flags Ready / Free), the loads and the V-tile loop are common/chunk_cube.h's,
// shared with the WY kernel (csrc/wy_fast/).
//
// Intra-core order: on the AIC explicit SetFlag/WaitFlag pairs (MTE2 -> MTE1 -> M -> FIX and the
// reverse pairs before each buffer is reused); on the AIVs the queues order MTE2 -> V -> MTE3.
// Every dimension is a multiple of 16, so L1/L0 tiles are whole fractals and nothing is padded.
#ifndef FLA_NPU_CHUNK_OUTPUT_KERNEL_H
#define FLA_NPU_CHUNK_OUTPUT_KERNEL_H

#include "../common/chunk_cube.h"
#include "../common/vector_io.h"
#include "chunk_output_tiling.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace chunk_output {

using namespace AscendC;
using namespace chunk_cube;
using namespace vector_io;

// The kernel's GM arguments (both sides read their own).
struct ChunkOutputGm {
    GmAddr q, g, s, aqk, vNew, out, ws;
};

// ------------------------------------------------------------------------------------------------
// AIC: both products into one L0C tile per V-tile.
// ------------------------------------------------------------------------------------------------
template <class T, class O>
class ChunkOutputCube {
  public:
    __aicore__ inline ChunkOutputCube(const ChunkOutputGm& a, const ChunkOutputTiling& t) : t_(t) {
        const uint32_t BT = t_.BT, K = t_.K, V = t_.V, Vt = t_.v_tile;
        Bind(uint64_t(t_.num_units) * BT * BT, gA_, a.aqk);
        Bind(uint64_t(t_.num_units) * K * V, gS_, a.s);
        Bind(uint64_t(t_.num_units) * BT * V, gVn_, a.vNew, gO_, a.out);
        BindSlots(gWs_, a.ws, static_cast<uint32_t>(GetBlockIdx()), t_.ws_bytes_per_core, t_.ws_slot_elems);
        InitBufs(pipe_, BT * K * sizeof(T), qe1_, qea_);  // L1 and L0A (one arena each): qe, then Aqk
        InitBufs(pipe_, BT * BT * sizeof(T), a1_, aa_);
        InitBufs(pipe_, K * V * sizeof(T), s1_);
        InitBufs(pipe_, BT * V * sizeof(T), v1_);
        InitBufs(pipe_, K * Vt * sizeof(T), sb_);
        InitBufs(pipe_, BT * Vt * sizeof(T), vb_);
        InitBufs(pipe_, BT * Vt * sizeof(float), oc_);
    }

    __aicore__ inline void Process() { ForEachSlotUnit(*this, t_, static_cast<uint32_t>(GetBlockIdx())); }

    __aicore__ inline void Unit(uint32_t u, uint32_t slot, bool slotReused) {
        const uint32_t BT = t_.BT, K = t_.K, V = t_.V;
        const uint64_t base = uint64_t(slot) * t_.ws_slot_elems;
        LocalTensor<T> qe1 = qe1_.Get<T>(), a1 = a1_.Get<T>(), s1 = s1_.Get<T>(), v1 = v1_.Get<T>();
        LocalTensor<T> qea = qea_.Get<T>(), aa = aa_.Get<T>();

        TakeSlot(gWs_[base], slotReused, qe1, BT, K);
        LoadNz(s1, gS_[uint64_t(u) * K * V], K, V);
        LoadNz(a1, gA_[uint64_t(u) * BT * BT], BT, BT);
        LoadNz(v1, gVn_[uint64_t(u) * BT * V], BT, V);
        Sync<HardEvent::MTE2_MTE1>();
        Sync<HardEvent::M_MTE1>();  // the previous unit's Mmads have read L0A / L0B
        LoadA(qea, qe1, BT, K);
        LoadA(aa, a1, BT, BT);
        // Both products into one L0C tile per V-tile: qe @ S (init), then Aqk @ v_new (accumulate).
        const CubeProduct<T> prods[2] = {{qea, s1, sb_.Get<T>(), K}, {aa, v1, vb_.Get<T>(), BT}};
        // o token-major [NC, BT, HV, V]: the unit's rows HV V apart
        TileProducts(oc_.Get<float>(), gO_[TokenRow(u, 0, t_.HV, 1, BT, V)], TokenPitch(t_.HV, 1, V), BT, V, t_.v_tile, prods);
    }

  private:
    const ChunkOutputTiling t_;
    TPipe pipe_;
    TBuf<TPosition::A1> qe1_, a1_;
    TBuf<TPosition::B1> s1_, v1_;
    TBuf<TPosition::A2> qea_, aa_;
    TBuf<TPosition::B2> sb_, vb_;
    TBuf<TPosition::CO1> oc_;
    GlobalTensor<T> gA_, gS_, gVn_, gWs_;
    GlobalTensor<O> gO_;
};

// ------------------------------------------------------------------------------------------------
// AIV: the Cube operand that needs vector work (qe), half of its rows per sub-block.
// ------------------------------------------------------------------------------------------------
template <class T>
class ChunkOutputVector {
  public:
    __aicore__ inline ChunkOutputVector(const ChunkOutputGm& a, const ChunkOutputTiling& t) : t_(t) {
        const uint64_t units = t_.num_units, rows = units * t_.BT;
        Bind(rows / t_.groups * t_.K, gQ_, a.q);  // q: HV / groups heads (GVA)
        Bind(rows * t_.Kg, gG_, a.g);
        BindSlots(gWs_, a.ws, at_.block, t_.ws_bytes_per_core, t_.ws_slot_elems);
        const uint32_t n = t_.rows_per_aiv * t_.K;  // its rows of qe, in each buffer
        InitQues(pipe_, 1, n * sizeof(T), inT_);
        InitQues(pipe_, 1, n * sizeof(float), inF_);
        InitQues(pipe_, 1, n * sizeof(T), outT_);
        InitBufs(pipe_, n * sizeof(float), work_);
        if (t_.Kg == 1) InitBufs(pipe_, t_.rows_per_aiv * 8 * sizeof(float), brcb_);
    }

    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, at_.block);
        for (uint32_t i = 0; i < r.count; ++i) {
            SlotProducer::Acquire(i);
            const uint64_t base = uint64_t(i % 2) * t_.ws_slot_elems;
            FormQe(r.first + i, base);
            SlotProducer::Ready();
        }
    }

  private:
    // Rows [r0, r0 + R) of unit u's qe (FormQe) to the slot at dst; q token-major: rows HV / groups K apart.
    __aicore__ inline void FormQe(uint32_t u, uint64_t dst) {
        const uint32_t R = t_.rows_per_aiv, K = t_.K, r0 = at_.sub * R;
        chunk_cube::FormQe(inT_, inF_, outT_, work_.Get<float>(), (t_.Kg == 1 ? brcb_ : work_).Get<float>(),  // bc: GDN only
                           gQ_[TokenRow(u, r0, t_.HV, t_.groups, t_.BT, K)], TokenPitch(t_.HV, t_.groups, K),
                           gG_[GateRow(u, r0, t_.HV, t_.BT, t_.Kg)], gWs_[dst + uint64_t(r0) * K], R, K, t_.Kg, t_.HV);
    }

    const ChunkOutputTiling t_;
    const AivPlace at_ = ThisAiv();  // known from the start: the launch places the core
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> inT_, inF_;
    TQue<QuePosition::VECOUT, 1> outT_;
    TBuf<TPosition::VECCALC> work_, brcb_;
    GlobalTensor<T> gQ_, gWs_;
    GlobalTensor<float> gG_;
};

// The kernel body: T the Cube type (q, s, aqk, v_new), O the dtype of out (float or T).
template <class T, class O>
__aicore__ inline void RunChunkOutput(GM_ADDR q, GM_ADDR g, GM_ADDR s, GM_ADDR aqk, GM_ADDR vNew, GM_ADDR out, GM_ADDR ws,
                                      const ChunkOutputTiling& t) {
    static_assert(IsSame<O, float>::value || IsSame<O, T>::value, "out: float or the Cube type");
    RunMixed<ChunkOutputCube<T, O>, ChunkOutputVector<T>>(ChunkOutputGm{q, g, s, aqk, vNew, out, ws}, t);
}

}  // namespace chunk_output
}  // namespace fla_npu

#endif
