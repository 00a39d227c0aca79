// The gate's activation on fp32 tiles, shared by the gate cumsum kernel (gate_cumsum_kernel.h) and the
// intra-chunk kernel with the gate in its launch (chunk_intra/chunk_gate_intra.op.py). Per column c of
// a tile (head h = c / D):
//   x = y + dt_bias[c];  none: y = out_scale x;  softplus: y = coef softplus(x);
//   sigmoid: y = out_scale / (1 + exp(coef x))  (coef = exp(A_log[h]) coef_scale, or -1 without A_log)
// the scales folded as gate_cumsum_tiling.h's coef_scale / out_scale say. Everything in fp32 (bf16 has
// no vector arithmetic on a2 / a3).
//
// Row-vector operations (dt_bias, coef) use the repeat form, one repeat per row, source-1 repeat stride
// 0 (Add.md / Mul.md "tensor前n个数据计算" with BinaryRepeatParams); the activation itself whole-tile
// count-form operations. softplus(x) = max(x, 0) + log1p(exp(-|x|)), with log1p(u) = ln(1 + u) * u /
// ((1 + u) - 1) (exact to a few ulp where ln(1 + u) alone would lose the low bits of u; 0 when 1 + u
// rounds to 1).
#ifndef FLA_NPU_GATE_ACTIVATION_H
#define FLA_NPU_GATE_ACTIVATION_H

#include "../common/kernel_frame.h"
#include "../common/vector_order.h"
#include "gate_cumsum_tiling.h"
#include "kernel_operator.h"

namespace fla_npu {
namespace gate {

using namespace AscendC;
using namespace kernel_frame;  // kFloatLanes, Sync, Bind, InitBufs

// What the activation of one call is (from the op's tiling).
struct ActivationForm {
    uint32_t form;  // GateForm
    uint32_t has_a_log, has_dt_bias;
    uint32_t D;               // columns per head
    uint32_t heads_per_tile;  // > 0: a tile is whole heads; 0: a piece of one head
    float coef_scale, out_scale;
};

class GateActivation {
  public:
    // The parameter buffers (P floats each: the widest tile's pitch) and the GM parameters: a_log
    // [H], dt_bias [H * D] (each when the form uses it).
    __aicore__ inline void Init(TPipe& pipe, uint32_t P, const ActivationForm& f, GM_ADDR aLog, uint32_t heads, GM_ADDR dtBias) {
        f_ = f;
        if (f.has_a_log) {
            Bind(heads, gALog_, aLog);
            InitBufs(pipe, P * sizeof(float), coef_);
        }
        if (f.has_dt_bias) {
            Bind(uint64_t(heads) * f.D, gBias_, dtBias);
            InitBufs(pipe, P * sizeof(float), bias_);
        }
        if (f.form == kGateSigmoid) {  // out_scale in one 32-byte block: the numerator of the sigmoid's division
            InitBufs(pipe, kBlockBytes, scale_);
            Duplicate(scale_.Get<float>(), f.out_scale, static_cast<int32_t>(kBlockBytes / sizeof(float)));
        }
    }

    // dt_bias and coef = exp(A_log) * coef_scale of columns [c0, c0 + w); `reload`: after an earlier
    // Load, whose parameters the vector unit may still read.
    __aicore__ inline void Load(uint32_t c0, uint32_t w, bool reload) {
        const bool viaMte2 = f_.has_dt_bias || (f_.has_a_log && f_.D == 1);
        if (reload && viaMte2) {  // the vector reads of the previous parameters come first
            Sync<HardEvent::V_MTE2>();
        }
        const uint32_t padElems = (Pad32(w * 4) - w * 4) / 4;
        const DataCopyExtParams row(1, w * 4, 0, 0, 0);
        const DataCopyPadExtParams<float> zeroPad(true, 0, static_cast<uint8_t>(padElems), 0.0f);
        if (f_.has_dt_bias) DataCopyPad(bias_.Get<float>(), gBias_[c0], row, zeroPad);
        if (f_.has_a_log) {
            LocalTensor<float> coef = coef_.Get<float>();
            if (f_.D == 1) {
                DataCopyPad(coef, gALog_[c0], row, zeroPad);
            } else if (f_.heads_per_tile > 0) {  // whole heads, each D (a multiple of 8) columns
                const uint32_t h0 = c0 / f_.D;
                for (uint32_t h = 0; h < w / f_.D; ++h)
                    Duplicate(coef[h * f_.D], gALog_.GetValue(h0 + h), static_cast<int32_t>(f_.D));
            } else {  // a piece of one head
                Duplicate(coef, gALog_.GetValue(c0 / f_.D), static_cast<int32_t>(w));
            }
        }
        if (viaMte2) { Sync<HardEvent::MTE2_V>(); }
        if (f_.has_a_log) {
            LocalTensor<float> coef = coef_.Get<float>();
            OrderV();  // after the Duplicates
            Exp(coef, coef, static_cast<int32_t>(w));
            OrderV();
            if (f_.coef_scale != 1.0f) Muls(coef, coef, f_.coef_scale, static_cast<int32_t>(w));
            if (BiasInCoef()) {  // coef * dt_bias: the sigmoid's argument in one FusedMulAdd (Apply)
                OrderV();
                Mul(bias_.Get<float>(), bias_.Get<float>(), coef, static_cast<int32_t>(w));
            }
        }
    }

    // y (len rows of w columns, pitch P, fp32; its pad columns included) = the activated gate of the
    // columns Load took. tmp: ActivationTmpTiles(form) scratch tiles (gate_cumsum_tiling.h) of y's size. Ends ordered (OrderV).
    __aicore__ inline void Apply(const LocalTensor<float>& y, uint32_t len, uint32_t w, uint32_t P,
                                 const LocalTensor<float>* tmp) {
        const int32_t n = static_cast<int32_t>(len * P);
        if (f_.has_dt_bias && !BiasInCoef()) {
            RowVector<false>(y, bias_.Get<float>(), len, w, P);
            OrderV();
        }
        if (f_.form == kGateSoftplus) {
            Softplus(y, n, tmp);
            RowVector<true>(y, coef_.Get<float>(), len, w, P);  // * -exp(A_log) * scale
            OrderV();
        } else if (f_.form == kGateSigmoid) {
            const LocalTensor<float>& e = tmp[0];
            if (f_.has_a_log) {  // -z = -exp(A_log) * x (coef_scale -1)
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
        } else if (f_.out_scale != 1.0f) {
            Muls(y, y, f_.out_scale, n);  // none: scale (sigmoid: in its division)
            OrderV();
        }
    }

  private:
    __aicore__ inline static uint32_t Pad32(uint32_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

    // The sigmoid form with A_log and dt_bias: coef (x + dt_bias) as coef x + (coef dt_bias), bias_
    // holding the product.
    __aicore__ inline bool BiasInCoef() const { return f_.form == kGateSigmoid && f_.has_a_log && f_.has_dt_bias; }

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

    __aicore__ inline void Softplus(const LocalTensor<float>& y, int32_t n, const LocalTensor<float>* tmp) {
        const LocalTensor<float>&u = tmp[0], &a = tmp[1], &d = tmp[2];
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

    ActivationForm f_{};
    TBuf<TPosition::VECCALC> bias_, coef_, scale_;
    GlobalTensor<float> gALog_, gBias_;
};

}  // namespace gate
}  // namespace fla_npu

#endif
