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
//   V     Cast to fp32 (or a UB copy) into a VECOUT buffer; + dt_bias and * coef as row-vector
//         operations (repeat form, one repeat per row, source-1 repeat stride 0; the sigmoid form with
//         both, coef x + coef dt_bias in one FusedMulAdd); the activation as
//         whole-tile count-form operations; the cumsum as len - 1 row additions (fp32, in order);
//   MTE3  DataCopyPad the fp32 rows back to GM.
// The queues' EnQue/DeQue/FreeTensor/AllocTensor are the only MTE2->V, V->MTE3 and back
// synchronisation; the per-tile parameters (TBufs) are ordered with explicit flags.
//
// softplus(x) = max(x, 0) + log1p(exp(-|x|)), with log1p(u) = ln(1 + u) * u / ((1 + u) - 1) (exact to
// a few ulp where ln(1 + u) alone would lose the low bits of u; 0 when 1 + u rounds to 1).
#ifndef FLA_NPU_GATE_CUMSUM_KERNEL_H
#define FLA_NPU_GATE_CUMSUM_KERNEL_H

#include "../common/kernel_frame.h"
#include "../common/vector_order.h"
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
        if (t.has_a_log) Bind(t.H, gALog_, aLog);
        if (t.has_dt_bias) Bind(t.W, gBias_, dtBias);
        if (t.varlen) {
            Bind(2ull * t.num_chunks, gChunks_, chunks);
            gCu_.SetGlobalBuffer((__gm__ int32_t*)cu);
        }
        const uint32_t rows = t.chunk_size, P = t.max_pitch;
        InitQues(pipe_, 2, rows * P * sizeof(T), inQ_);
        InitQues(pipe_, 2, rows * P * sizeof(float), outQ_);
        for (uint32_t i = 0; i < t.num_tmp_bufs; ++i) InitBufs(pipe_, rows * P * sizeof(float), tmp_[i]);
        if (t.has_dt_bias) InitBufs(pipe_, P * sizeof(float), bias_);
        if (t.has_a_log) InitBufs(pipe_, P * sizeof(float), coef_);
        if (t.gate_form == kGateSigmoid) {  // out_scale in one 32-byte block: the numerator of the sigmoid's division
            InitBufs(pipe_, kBlockBytes, scale_);
            Duplicate(scale_.Get<float>(), t.out_scale, static_cast<int32_t>(kBlockBytes / sizeof(float)));
        }
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
                LoadParams(c0, w, curTile != 0xFFFFFFFFu);
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

    // dt_bias and coef = exp(A_log) * coef_scale of columns [c0, c0 + w), once per column tile.
    __aicore__ inline void LoadParams(uint32_t c0, uint32_t w, bool reload) {
        const bool viaMte2 = t_.has_dt_bias || (t_.has_a_log && t_.D == 1);
        if (reload && viaMte2) {  // the vector reads of the previous tile's parameters come first
            Sync<HardEvent::V_MTE2>();
        }
        const uint32_t padElems = (Pad32(w * 4) - w * 4) / 4;
        const DataCopyExtParams row(1, w * 4, 0, 0, 0);
        const DataCopyPadExtParams<float> zeroPad(true, 0, static_cast<uint8_t>(padElems), 0.0f);
        if (t_.has_dt_bias) DataCopyPad(bias_.Get<float>(), gBias_[c0], row, zeroPad);
        if (t_.has_a_log) {
            LocalTensor<float> coef = coef_.Get<float>();
            if (t_.D == 1) {
                DataCopyPad(coef, gALog_[c0], row, zeroPad);
            } else if (t_.heads_per_tile > 0) {  // whole heads, each D (a multiple of 8) columns
                const uint32_t h0 = c0 / t_.D;
                for (uint32_t h = 0; h < w / t_.D; ++h)
                    Duplicate(coef[h * t_.D], gALog_.GetValue(h0 + h), static_cast<int32_t>(t_.D));
            } else {  // a piece of one head
                Duplicate(coef, gALog_.GetValue(c0 / t_.D), static_cast<int32_t>(w));
            }
        }
        if (viaMte2) { Sync<HardEvent::MTE2_V>(); }
        if (t_.has_a_log) {
            LocalTensor<float> coef = coef_.Get<float>();
            OrderV();  // after the Duplicates
            Exp(coef, coef, static_cast<int32_t>(w));
            OrderV();
            if (t_.coef_scale != 1.0f) Muls(coef, coef, t_.coef_scale, static_cast<int32_t>(w));
            if (BiasInCoef()) {  // coef * dt_bias: the sigmoid's argument in one FusedMulAdd (Compute)
                OrderV();
                Mul(bias_.Get<float>(), bias_.Get<float>(), coef, static_cast<int32_t>(w));
            }
        }
    }

    // The sigmoid form with A_log and dt_bias: coef (x + dt_bias) as coef x + (coef dt_bias), bias_
    // holding the product.
    __aicore__ inline bool BiasInCoef() const { return t_.gate_form == kGateSigmoid && t_.has_a_log && t_.has_dt_bias; }

    __aicore__ inline void CopyIn(uint64_t row0, uint32_t len, uint32_t c0, uint32_t w, uint32_t P) {
        LocalTensor<T> x = inQ_.template AllocTensor<T>();
        const uint32_t rowBytes = w * sizeof(T);
        const DataCopyExtParams p(static_cast<uint16_t>(len), rowBytes, (t_.W - w) * sizeof(T),
                                  (P * sizeof(T) - Pad32(rowBytes)) / kBlockBytes, 0);
        const DataCopyPadExtParams<T> pad(true, 0, static_cast<uint8_t>(P - w), T(0.0f));
        DataCopyPad(x, gIn_[row0 * t_.W + c0], p, pad);
        inQ_.EnQue(x);
    }

    // dst[r, 0:w] = dst[r, 0:w] (op) vec[0:w] for the len rows of a tile of pitch P.
    template <bool kMul>
    __aicore__ inline void RowVector(const LocalTensor<float>& y, const LocalTensor<float>& vec, uint32_t len, uint32_t w,
                                     uint32_t P) {
        const uint8_t rep = static_cast<uint8_t>(P / 8);  // row pitch in 32-byte blocks
        for (uint32_t j = 0; j < w; j += kFloatLanes) {
            const uint64_t mask = w - j < kFloatLanes ? w - j : kFloatLanes;
            const BinaryRepeatParams params(1, 1, 1, rep, rep, 0);
            if (kMul) Mul(y[j], y[j], vec[j], mask, static_cast<uint8_t>(len), params);
            else Add(y[j], y[j], vec[j], mask, static_cast<uint8_t>(len), params);
        }
    }

    // y[r, 0:w] = a[0:w] y[r, 0:w] + b[0:w] (RowVector's shape; FusedMulAdd: dst = src0 dst + src1).
    __aicore__ inline void RowMulAdd(const LocalTensor<float>& y, const LocalTensor<float>& a, const LocalTensor<float>& b,
                                     uint32_t len, uint32_t w, uint32_t P) {
        const uint8_t rep = static_cast<uint8_t>(P / 8);
        const BinaryRepeatParams params(1, 1, 1, rep, 0, 0);
        for (uint32_t j = 0; j < w; j += kFloatLanes) {
            const uint64_t mask = w - j < kFloatLanes ? w - j : kFloatLanes;
            FusedMulAdd(y[j], a[j], b[j], mask, static_cast<uint8_t>(len), params);
        }
    }

    __aicore__ inline void Softplus(const LocalTensor<float>& y, int32_t n) {
        LocalTensor<float> u = tmp_[0].Get<float>(), a = tmp_[1].Get<float>(), d = tmp_[2].Get<float>();
        Abs(u, y, n);
        OrderV();
        Muls(u, u, -1.0f, n);
        OrderV();
        Exp(u, u, n);  // u = exp(-|x|) in (0, 1]
        OrderV();
        Adds(a, u, 1.0f, n);  // a = 1 + u (rounded)
        OrderV();
        Adds(d, a, -1.0f, n);  // d = a - 1 (exact)
        OrderV();
        Maxs(d, d, 1e-30f, n);  // 1 + u == 1: ln(a) = 0 below, so the result is 0
        Ln(a, a, n);
        OrderV();
        Div(a, a, d, n);
        OrderV();
        Mul(a, a, u, n);  // log1p(u)
        Relu(y, y, n);
        OrderV();
        Add(y, y, a, n);  // softplus(x)
        OrderV();
    }

    // y[r, 0:w] = out_scale / e[r, 0:w] for the len rows of a tile of pitch P (RowVector's shape): Div
    // with the scale block read by every lane and repeat (strides 0), one repeat per row.
    __aicore__ inline void ScaleOver(const LocalTensor<float>& y, const LocalTensor<float>& e, uint32_t len, uint32_t w,
                                     uint32_t P) {
        const uint8_t rep = static_cast<uint8_t>(P / 8);  // row pitch in 32-byte blocks
        const BinaryRepeatParams params(1, 0, 1, rep, 0, rep);
        for (uint32_t j = 0; j < w; j += kFloatLanes) {
            const uint64_t mask = w - j < kFloatLanes ? w - j : kFloatLanes;
            Div(y[j], scale_.Get<float>(), e[j], mask, static_cast<uint8_t>(len), params);
        }
    }

    __aicore__ inline void Compute(uint32_t len, uint32_t w, uint32_t P) {
        LocalTensor<T> x = inQ_.template DeQue<T>();
        LocalTensor<float> y = outQ_.template AllocTensor<float>();
        const int32_t n = static_cast<int32_t>(len * P);
        if constexpr (IsSame<T, float>::value) DataCopy(y, x, static_cast<uint32_t>(n));
        else Cast(y, x, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
        inQ_.FreeTensor(x);
        OrderV();  // every step below reads what the one before it wrote

        if (t_.has_dt_bias && !BiasInCoef()) {
            RowVector<false>(y, bias_.Get<float>(), len, w, P);
            OrderV();
        }
        if (t_.gate_form == kGateSoftplus) {
            Softplus(y, n);
            RowVector<true>(y, coef_.Get<float>(), len, w, P);  // * -exp(A_log) * scale
            OrderV();
        } else if (t_.gate_form == kGateSigmoid) {
            LocalTensor<float> e = tmp_[0].Get<float>();
            if (t_.has_a_log) {  // -z = -exp(A_log) * x (coef_scale -1)
                if (BiasInCoef()) RowMulAdd(y, coef_.Get<float>(), bias_.Get<float>(), len, w, P);
                else RowVector<true>(y, coef_.Get<float>(), len, w, P);
                OrderV();
                Exp(e, y, n);
            } else {
                Muls(e, y, -1.0f, n);  // -z = -x
                OrderV();
                Exp(e, e, n);
            }
            OrderV();
            Adds(e, e, 1.0f, n);
            OrderV();
            ScaleOver(y, e, len, w, P);  // out_scale * sigmoid(z) = out_scale / (1 + exp(-z))
            OrderV();
        } else if (t_.out_scale != 1.0f) {
            Muls(y, y, t_.out_scale, n);  // none: scale (sigmoid: in its division)
            OrderV();
        }
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
    TBuf<TPosition::VECCALC> bias_, coef_, scale_;
    GlobalTensor<T> gIn_;
    GlobalTensor<float> gOut_, gALog_, gBias_;
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
