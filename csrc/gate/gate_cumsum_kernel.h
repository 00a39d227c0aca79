// Gate activation + chunk-local cumsum (stage 1 of chunked KDA / Gated DeltaNet), vector-only.
//
//   out[t, c] = sum over the tokens s <= t of t's chunk of  y[s, c],   y = gate(g[s, c] + dt_bias[c])
//
// with the gate forms of gate_cumsum_tiling.h (none / -exp(A_log) * softplus / lower_bound *
// sigmoid(exp(A_log) * x)) and the caller's scale folded in (1 gives the natural-log units the chunk kernels read). Input fp32,
// fp16 or bf16; everything is computed in fp32 (bf16 has no vector arithmetic on a2/a3); out fp32.
//
// One unit = one chunk (<= BT tokens) x one column tile (see the tiling header). Per unit:
//   MTE2  DataCopyPad the [len, w] tile from GM (rows of w elements, GM row pitch W) into a VECIN
//         buffer, every UB row padded to 32 bytes with zeros;
//   V     Cast to fp32 (or a UB copy) into a VECOUT buffer; the activation (gate_activation.h); the
//         cumsum as len - 1 row additions (fp32, in order);
//   MTE3  DataCopyPad the fp32 rows back to GM.
// The queues' EnQue/DeQue/FreeTensor/AllocTensor are the only MTE2->V, V->MTE3 and back
// synchronisation; the per-tile parameters (TBufs) are ordered with explicit flags.
#ifndef FLA_NPU_GATE_CUMSUM_KERNEL_H
#define FLA_NPU_GATE_CUMSUM_KERNEL_H

#include "../common/kernel_frame.h"
#include "../common/vector_order.h"
#include "gate_activation.h"
#include "gate_cumsum_tiling.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace gate {

using namespace AscendC;
using namespace kernel_frame;  // IsSame, kFloatLanes, Sync, Bind, CoreUnitsOf

template <class T>
class GateChunkCumsum {
  public:
    __aicore__ inline GateChunkCumsum() {}

    __aicore__ inline void Init(GM_ADDR g, GM_ADDR aLog, GM_ADDR dtBias, GM_ADDR cu, GM_ADDR chunks, GM_ADDR out,
                                const GateCumsumTiling& t) {
        t_ = t;
        const uint64_t n = uint64_t(t.B) * t.T * t.W;
        Bind(n, gIn_, g, gOut_, out);
        if (t.varlen) {
            Bind(2ull * t.num_chunks, gChunks_, chunks);
            gCu_.SetGlobalBuffer((__gm__ int32_t*)cu);
        }
        const uint32_t rows = t.chunk_size, P = t.max_pitch;
        InitQues(pipe_, 2, rows * P * sizeof(T), inQ_);
        InitQues(pipe_, 2, rows * P * sizeof(float), outQ_);
        for (uint32_t i = 0; i < t.num_tmp_bufs; ++i) InitBufs(pipe_, rows * P * sizeof(float), tmp_[i]);
        act_.Init(pipe_, P,
                  ActivationForm{t.gate_form, t.has_a_log, t.has_dt_bias, t.D, t.heads_per_tile, t.coef_scale, t.out_scale}, aLog,
                  t.H, dtBias);
    }

    __aicore__ inline void Process() {
        const Units r = CoreUnitsOf(t_, static_cast<uint32_t>(GetBlockIdx()));
        const uint32_t nc = t_.num_chunks;
        uint32_t curTile = 0xFFFFFFFFu;
        for (uint32_t u = r.first; u < r.first + r.count; ++u) {
            const uint32_t tile = u / nc, chunk = u % nc;
            uint32_t c0 = 0, w = 0;
            TileColumns(t_, tile, &c0, &w);
            if (tile != curTile) {
                act_.Load(c0, w, curTile != 0xFFFFFFFFu);
                curTile = tile;
            }
            uint64_t row0 = 0;
            uint32_t len = 0;
            ChunkRows(chunk, &row0, &len);
            if (len == 0) continue;
            const uint32_t P = Pitch(w);
            CopyIn(row0, len, c0, w, P);
            Compute(len, w, P);
            CopyOut(row0, len, c0, w, P);
        }
    }

  private:
    // UB row pitch (elements) of a w-column tile: input rows and fp32 rows on 32-byte boundaries.
    __aicore__ inline uint32_t Pitch(uint32_t w) const {
        const uint32_t align = kBlockBytes / sizeof(T);
        return (w + align - 1) / align * align;
    }
    __aicore__ inline static uint32_t Pad32(uint32_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

    // Tokens of a chunk: first token row (index into the B * T rows) and length.
    __aicore__ inline void ChunkRows(uint32_t chunk, uint64_t* row0, uint32_t* len) const {
        const uint32_t BT = t_.chunk_size;
        if (!t_.varlen) {
            const uint32_t b = chunk / t_.chunks_per_seq, j = chunk % t_.chunks_per_seq;
            *row0 = uint64_t(b) * t_.T + uint64_t(j) * BT;
            const uint32_t left = t_.T - j * BT;
            *len = left < BT ? left : BT;
            return;
        }
        const int32_t n = gChunks_.GetValue(2ull * chunk), j = gChunks_.GetValue(2ull * chunk + 1);
        const int64_t bos = gCu_.GetValue(n), eos = gCu_.GetValue(n + 1);
        const int64_t start = bos + int64_t(j) * BT;
        *row0 = static_cast<uint64_t>(start);
        const int64_t left = eos - start;
        *len = left <= 0 ? 0u : (left < BT ? static_cast<uint32_t>(left) : BT);
    }

    __aicore__ inline void CopyIn(uint64_t row0, uint32_t len, uint32_t c0, uint32_t w, uint32_t P) {
        LocalTensor<T> x = inQ_.template AllocTensor<T>();
        const uint32_t rowBytes = w * sizeof(T);
        const DataCopyExtParams p(static_cast<uint16_t>(len), rowBytes, (t_.W - w) * sizeof(T),
                                  (P * sizeof(T) - Pad32(rowBytes)) / kBlockBytes, 0);
        const DataCopyPadExtParams<T> pad(true, 0, static_cast<uint8_t>(P - w), T(0.0f));
        DataCopyPad(x, gIn_[row0 * t_.W + c0], p, pad);
        inQ_.EnQue(x);
    }

    __aicore__ inline void Compute(uint32_t len, uint32_t w, uint32_t P) {
        LocalTensor<T> x = inQ_.template DeQue<T>();
        LocalTensor<float> y = outQ_.template AllocTensor<float>();
        const int32_t n = static_cast<int32_t>(len * P);
        if constexpr (IsSame<T, float>::value) DataCopy(y, x, static_cast<uint32_t>(n));
        else Cast(y, x, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
        inQ_.FreeTensor(x);
        OrderV();  // every step below reads what the one before it wrote

        LocalTensor<float> tmp[3];
        for (uint32_t i = 0; i < t_.num_tmp_bufs; ++i) tmp[i] = tmp_[i].Get<float>();
        act_.Apply(y, len, w, P, tmp);
        for (uint32_t r = 1; r < len; ++r) {  // row r reads row r - 1's sum
            Add(y[r * P], y[r * P], y[(r - 1) * P], static_cast<int32_t>(w));
            OrderV();
        }
        outQ_.EnQue(y);
    }

    __aicore__ inline void CopyOut(uint64_t row0, uint32_t len, uint32_t c0, uint32_t w, uint32_t P) {
        LocalTensor<float> y = outQ_.template DeQue<float>();
        const uint32_t rowBytes = w * 4;
        const DataCopyExtParams p(static_cast<uint16_t>(len), rowBytes, (P * 4 - Pad32(rowBytes)) / kBlockBytes, (t_.W - w) * 4,
                                  0);
        DataCopyPad(gOut_[row0 * t_.W + c0], y, p);
        outQ_.FreeTensor(y);
    }

    GateCumsumTiling t_{};
    TPipe pipe_;
    TQue<QuePosition::VECIN, 2> inQ_;
    TQue<QuePosition::VECOUT, 2> outQ_;
    TBuf<TPosition::VECCALC> tmp_[3];
    GateActivation act_;
    GlobalTensor<T> gIn_;
    GlobalTensor<float> gOut_;
    GlobalTensor<int32_t> gChunks_, gCu_;
};

template <class T>
__aicore__ inline void RunGateChunkCumsum(GM_ADDR g, GM_ADDR aLog, GM_ADDR dtBias, GM_ADDR cu, GM_ADDR chunks, GM_ADDR out,
                                          const GateCumsumTiling& tiling) {
    GateChunkCumsum<T> op;
    op.Init(g, aLog, dtBias, cu, chunks, out, tiling);
    op.Process();
}

}  // namespace gate
}  // namespace fla_npu

#endif
