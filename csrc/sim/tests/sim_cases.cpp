// Test kernels of the host simulation: correct kernels that must run and compute the right values,
// and deliberately broken kernels that must fail with a specific message.
//
//   sim_cases_<soc> <case>    exit 0: the case passed (for a broken kernel: its launch failed);
//                             exit 1: a launch failed — the fault message is on stderr;
//                             exit 2: wrong values or counters.
//   sim_cases_<soc> --list    the case names.
// tests/sim/test_sim.py holds the expected outcome and message of every case.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "cube_buffers.h"
#include "kernel_operator.h"
#include "sim_api.h"

using namespace AscendC;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            std::fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
            return 2;                                                               \
        }                                                                           \
    } while (0)

static GM_ADDR G(void* p) { return static_cast<GM_ADDR>(p); }
static uint32_t Bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// SetFlag then WaitFlag of one event and id: orders the event's source pipe before its destination.
template <HardEvent E>
static void SetWait(TEventID id = 0) {
    SetFlag<E>(id);
    WaitFlag<E>(id);
}

// One VECCALC buffer of `bytes` bytes (l: its floats) and, for a kernel with a GM argument x, x bound
// as 64 floats (gx): the setting of most small test kernels.
struct OneUb {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    LocalTensor<float> l;
    GlobalTensor<float> gx;
    explicit OneUb(uint32_t bytes, GM_ADDR x = nullptr) {
        pipe.InitBuffer(b, bytes);
        l = b.Get<float>();
        if (x != nullptr) gx.SetGlobalBuffer((__gm__ float*)x, 64);
    }
};

// Two 256-byte VECCALC buffers (lx, lz) and x, out bound as n floats each (gx, go): the setting of
// the MTE2 -> V -> MTE3 hazard kernels.
struct CopyPair {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    LocalTensor<float> lx, lz;
    GlobalTensor<float> gx, go;
    CopyPair(GM_ADDR x, GM_ADDR out, uint32_t n) {
        pipe.InitBuffer(bx, 256);
        pipe.InitBuffer(bz, 256);
        lx = bx.Get<float>();
        lz = bz.Get<float>();
        gx.SetGlobalBuffer((__gm__ float*)x, n);
        go.SetGlobalBuffer((__gm__ float*)out, n);
    }
};

// =============================================================================================
// Correct kernels
// =============================================================================================

// z = x + y with queues (the EnQue/DeQue pairs are the only synchronisation needed), double buffered.
constexpr int32_t kTile = 256;
extern "C" __global__ __aicore__ void vec_add(GM_ADDR x, GM_ADDR y, GM_ADDR z, int32_t perCore) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> qx, qy;
    TQue<QuePosition::VECOUT, 2> qz;
    pipe.InitBuffer(qx, 2, kTile * sizeof(float));
    pipe.InitBuffer(qy, 2, kTile * sizeof(float));
    pipe.InitBuffer(qz, 2, kTile * sizeof(float));
    const int64_t base = GetBlockIdx() * perCore;
    GlobalTensor<float> gx, gy, gz;
    gx.SetGlobalBuffer((__gm__ float*)x + base, perCore);
    gy.SetGlobalBuffer((__gm__ float*)y + base, perCore);
    gz.SetGlobalBuffer((__gm__ float*)z + base, perCore);
    for (int32_t t = 0; t < perCore / kTile; ++t) {
        LocalTensor<float> lx = qx.AllocTensor<float>(), ly = qy.AllocTensor<float>();
        DataCopy(lx, gx[t * kTile], kTile);
        DataCopy(ly, gy[t * kTile], kTile);
        qx.EnQue(lx);
        qy.EnQue(ly);
        lx = qx.DeQue<float>();
        ly = qy.DeQue<float>();
        LocalTensor<float> lz = qz.AllocTensor<float>();
        Add(lz, lx, ly, kTile);
        qz.EnQue(lz);
        qx.FreeTensor(lx);
        qy.FreeTensor(ly);
        lz = qz.DeQue<float>();
        DataCopy(gz[t * kTile], lz, kTile);
        qz.FreeTensor(lz);
    }
}

static int case_vec_add() {
    const int blocks = 3, per = 4 * kTile, n = blocks * per;
    std::vector<float> x(n), y(n), z(n, NAN);
    for (int i = 0; i < n; ++i) {
        x[i] = 0.5f * i;
        y[i] = 1.0f - i;
    }
    FLA_SIM_LAUNCH(vec_add, KERNEL_TYPE_AIV_ONLY, blocks, G(x.data()), G(y.data()), G(z.data()), per);
    for (int i = 0; i < n; ++i) CHECK(z[i] == x[i] + y[i]);
    // Counters through the C interface.
    CHECK(fla_sim_last_launch_ok() == 1);
    CHECK(std::string(fla_sim_last_kernel()) == "vec_add");
    CHECK(fla_sim_last_core_count() == blocks);
    FlaSimCounters c{}, tot{};
    FlaSimCoreInfo info{};
    for (int i = 0; i < blocks; ++i) {
        CHECK(fla_sim_last_core_counters(i, &c, &info) == 0);
        CHECK(info.core_type == 1 && info.block_idx == i && info.sub_block_idx == 0);
        CHECK(c.gm_to_local_bytes == uint64_t(2 * per * 4));
        CHECK(c.local_to_gm_bytes == uint64_t(per * 4));
        CHECK(c.vector_elem_ops == uint64_t(per));
        CHECK(c.peak_ub_bytes == uint64_t(6 * kTile * 4));
        CHECK(c.peak_l1_bytes == 0 && c.cube_macs == 0);
    }
    CHECK(fla_sim_last_core_counters(blocks, &c, &info) == -1);
    CHECK(fla_sim_last_total_counters(&tot) == 0);
    CHECK(tot.gm_to_local_bytes == uint64_t(2 * n * 4) && tot.local_to_gm_bytes == uint64_t(n * 4));
    CHECK(tot.vector_elem_ops == uint64_t(n) && tot.peak_ub_bytes == uint64_t(6 * kTile * 4));
    CHECK(tot.ws_to_local_bytes == 0 && tot.local_to_ws_bytes == 0);  // no workspace given
    // The same launch with y and z as its workspace: their bytes are counted apart too, for that
    // launch only.
    AscendC::sim::SetNextLaunchWorkspace(y.data(), uint64_t(n) * 4);
    FLA_SIM_LAUNCH(vec_add, KERNEL_TYPE_AIV_ONLY, blocks, G(x.data()), G(y.data()), G(z.data()), per);
    CHECK(fla_sim_last_total_counters(&tot) == 0 && tot.ws_to_local_bytes == uint64_t(n * 4) && tot.local_to_ws_bytes == 0);
    AscendC::sim::SetNextLaunchWorkspace(z.data(), uint64_t(n) * 4);
    FLA_SIM_LAUNCH(vec_add, KERNEL_TYPE_AIV_ONLY, blocks, G(x.data()), G(y.data()), G(z.data()), per);
    CHECK(fla_sim_last_total_counters(&tot) == 0 && tot.ws_to_local_bytes == 0 && tot.local_to_ws_bytes == uint64_t(n * 4));
    FLA_SIM_LAUNCH(vec_add, KERNEL_TYPE_AIV_ONLY, blocks, G(x.data()), G(y.data()), G(z.data()), per);
    CHECK(fla_sim_last_total_counters(&tot) == 0 && tot.ws_to_local_bytes == 0 && tot.local_to_ws_bytes == 0);
    return 0;
}

// Explicit flags over TBufs: MTE2 -> V -> MTE3, and back (V -> MTE2, MTE3 -> V) for the next tile.
// Every count-form float op against the host's float result.
enum OpId {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MAX,
    OP_MIN,
    OP_MULS,
    OP_ADDS,
    OP_MAXS,
    OP_MINS,
    OP_EXP,
    OP_LN,
    OP_ABS,
    OP_SQRT,
    OP_RSQRT,
    OP_RECIP,
    OP_RELU,
    OP_DUP,
    OP_COUNT
};
extern "C" __global__ __aicore__ void vec_ops(GM_ADDR x, GM_ADDR y, GM_ADDR out, int32_t n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz;
    pipe.InitBuffer(bx, n * sizeof(float));
    pipe.InitBuffer(by, n * sizeof(float));
    pipe.InitBuffer(bz, n * sizeof(float));
    LocalTensor<float> lx = bx.Get<float>(), ly = by.Get<float>(), lz = bz.Get<float>();
    GlobalTensor<float> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gy.SetGlobalBuffer((__gm__ float*)y, n);
    go.SetGlobalBuffer((__gm__ float*)out, int64_t(n) * OP_COUNT);
    DataCopy(lx, gx, n);
    DataCopy(ly, gy, n);
    SetWait<HardEvent::MTE2_V>();
    for (int op = 0; op < OP_COUNT; ++op) {
        if (op > 0) {  // lz was read by MTE3 for the previous op
            SetWait<HardEvent::MTE3_V>(1);
        }
        switch (op) {
            case OP_ADD: Add(lz, lx, ly, n); break;
            case OP_SUB: Sub(lz, lx, ly, n); break;
            case OP_MUL: Mul(lz, lx, ly, n); break;
            case OP_DIV: Div(lz, lx, ly, n); break;
            case OP_MAX: Max(lz, lx, ly, n); break;
            case OP_MIN: Min(lz, lx, ly, n); break;
            case OP_MULS: Muls(lz, lx, 0.3f, n); break;
            case OP_ADDS: Adds(lz, lx, -1.25f, n); break;
            case OP_MAXS: Maxs(lz, lx, 0.5f, n); break;
            case OP_MINS: Mins(lz, lx, 0.5f, n); break;
            case OP_EXP: Exp(lz, lx, n); break;
            case OP_LN: Ln(lz, ly, n); break;
            case OP_ABS: Abs(lz, lx, n); break;
            case OP_SQRT: Sqrt(lz, ly, n); break;
            case OP_RSQRT: Rsqrt(lz, ly, n); break;
            case OP_RECIP: Reciprocal(lz, ly, n); break;
            case OP_RELU: Relu(lz, lx, n); break;
            case OP_DUP: Duplicate(lz, 7.5f, n); break;
        }
        SetWait<HardEvent::V_MTE3>();
        DataCopy(go[int64_t(op) * n], lz, n);
    }
}

static int case_vec_ops() {
    const int n = 200;  // 800 bytes: 32-byte multiple
    std::vector<float> x(n), y(n), out(n * OP_COUNT, NAN);
    for (int i = 0; i < n; ++i) {
        x[i] = std::sin(0.37f * i) * 3.0f;
        y[i] = 0.25f + 0.03f * i;
    }
    FLA_SIM_LAUNCH(vec_ops, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(y.data()), G(out.data()), n);
    for (int i = 0; i < n; ++i) {
        const float a = x[i], b = y[i];
        const float expect[OP_COUNT] = {a + b,
                                        a - b,
                                        a * b,
                                        a / b,
                                        a > b ? a : b,
                                        a < b ? a : b,
                                        a * 0.3f,
                                        a + -1.25f,
                                        a > 0.5f ? a : 0.5f,
                                        a < 0.5f ? a : 0.5f,
                                        std::exp(a),
                                        std::log(b),
                                        std::fabs(a),
                                        std::sqrt(b),
                                        1.0f / std::sqrt(b),
                                        1.0f / b,
                                        a > 0 ? a : 0.0f,
                                        7.5f};
        for (int op = 0; op < OP_COUNT; ++op)
            if (Bits(out[op * n + i]) != Bits(expect[op])) {
                std::fprintf(stderr, "op %d element %d: %g != %g\n", op, i, out[op * n + i], expect[op]);
                return 2;
            }
    }
    return 0;
}

// Mask/repeat forms: a [rows x 64] float matrix times a 64-vector broadcast with src1RepStride = 0,
// a lane-bit-mask Add, repeat-form Exp/Muls, Duplicate with a partial mask.
extern "C" __global__ __aicore__ void vec_repeat(GM_ADDR m, GM_ADDR v, GM_ADDR out, int32_t rows) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bm, bv, bo;
    pipe.InitBuffer(bm, rows * 64 * sizeof(float));
    pipe.InitBuffer(bv, 64 * sizeof(float));
    pipe.InitBuffer(bo, 4 * rows * 64 * sizeof(float));
    LocalTensor<float> lm = bm.Get<float>(), lv = bv.Get<float>(), lo = bo.Get<float>();
    GlobalTensor<float> gm, gv, go;
    gm.SetGlobalBuffer((__gm__ float*)m, rows * 64);
    gv.SetGlobalBuffer((__gm__ float*)v, 64);
    go.SetGlobalBuffer((__gm__ float*)out, 4 * rows * 64);
    DataCopy(lm, gm, rows * 64);
    DataCopy(lv, gv, 64);
    SetWait<HardEvent::MTE2_V>();
    const int R = rows * 64;
    // 1) broadcast multiply: each repeat = one row; src1 repeat stride 0.
    Mul(lo, lm, lv, 64, uint8_t(rows), BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    // 2) lanes 0..31 of each row only (bit mask), others keep the Duplicate value.
    Duplicate(lo[R], -1.0f, R);
    uint64_t bitmask[2] = {0x00000000FFFFFFFFull, 0};
    Add(lo[R], lm, lm, bitmask, uint8_t(rows), BinaryRepeatParams());
    // 3) Exp then Muls in repeat form on the whole matrix.
    Exp(lo[2 * R], lm, 64, uint8_t(rows), UnaryRepeatParams());
    PipeBarrier<PIPE_V>();  // Muls reads what Exp wrote (2201: the vector pipe does not order them)
    Muls(lo[2 * R], lo[2 * R], 2.0f, 64, uint8_t(rows), UnaryRepeatParams());
    // 4) Duplicate with a 16-lane mask and block stride 2: lanes 0..7 -> block 0, 8..15 -> block 2.
    Duplicate(lo[3 * R], 0.0f, R);
    Duplicate(lo[3 * R], 3.0f, 16, uint8_t(rows), 2, 8);
    SetWait<HardEvent::V_MTE3>();
    DataCopy(go, lo, 4 * R);
}

static int case_vec_repeat() {
    const int rows = 5, R = rows * 64;
    std::vector<float> m(R), v(64), out(4 * R, NAN);
    for (int i = 0; i < R; ++i) m[i] = 0.01f * i - 1.0f;
    for (int j = 0; j < 64; ++j) v[j] = 0.5f + j;
    FLA_SIM_LAUNCH(vec_repeat, KERNEL_TYPE_AIV_ONLY, 1, G(m.data()), G(v.data()), G(out.data()), rows);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < 64; ++j) {
            const int i = r * 64 + j;
            CHECK(out[i] == m[i] * v[j]);
            CHECK(out[R + i] == (j < 32 ? m[i] + m[i] : -1.0f));
            CHECK(out[2 * R + i] == std::exp(m[i]) * 2.0f);
            const bool on = (j < 8) || (j >= 16 && j < 24);
            CHECK(out[3 * R + i] == (on ? 3.0f : 0.0f));
        }
    CHECK(fla_sim_last_core_count() == 1);
    FlaSimCounters c{};
    CHECK(fla_sim_last_core_counters(0, &c, nullptr) == 0);
    // Mul R + Dup R + Add R/2 + Exp R + Muls R + Dup R + Dup 16*rows
    CHECK(c.vector_elem_ops == uint64_t(5 * R + R / 2 + 16 * rows));
    return 0;
}

// FusedMulAdd (dst = src0 * dst + src1): the count form, and the repeat form with one factor per row
// (src0 block stride 0, repeat stride 1: a Brcb'd column) and one factor for every row (src0 strides
// 0), as the state kernels' decay uses them; MulAddDst (dst = src0 * src1 + dst): the count form and the
// repeat form with src0 re-read (repeat stride 0) as the triangular inverse uses it, and the count form
// with dst one of its sources (full rate).
constexpr int kFmaOut = 6;
extern "C" __global__ __aicore__ void vec_fma(GM_ADDR m, GM_ADDR f, GM_ADDR out, int32_t rows) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bm, bf, bo;
    pipe.InitBuffer(bm, rows * 64 * sizeof(float));
    pipe.InitBuffer(bf, rows * 8 * sizeof(float));
    pipe.InitBuffer(bo, kFmaOut * rows * 64 * sizeof(float));
    LocalTensor<float> lm = bm.Get<float>(), lf = bf.Get<float>(), lo = bo.Get<float>();
    GlobalTensor<float> gm, gf, go;
    gm.SetGlobalBuffer((__gm__ float*)m, rows * 64);
    gf.SetGlobalBuffer((__gm__ float*)f, rows * 8);
    go.SetGlobalBuffer((__gm__ float*)out, kFmaOut * rows * 64);
    DataCopy(lm, gm, rows * 64);
    DataCopy(lf, gf, rows * 8);
    SetWait<HardEvent::MTE2_V>();
    const int R = rows * 64;
    for (int i = 0; i < kFmaOut; ++i) Adds(lo[i * R], lm, 1.0f, R);  // dst = m + 1
    PipeBarrier<PIPE_V>();
    FusedMulAdd(lo, lm, lm, R);                                                                  // m (m + 1) + m
    FusedMulAdd(lo[R], lf, lm, 64, uint8_t(rows), BinaryRepeatParams(1, 0, 1, 8, 1, 8));         // f[8 r + j % 8] (m + 1) + m
    FusedMulAdd(lo[2 * R], lf[8], lm, 64, uint8_t(rows), BinaryRepeatParams(1, 0, 1, 8, 0, 8));  // f[8 + j % 8] (m + 1) + m
    MulAddDst(lo[3 * R], lm, lf, R / 8);                                                         // m f + (m + 1), the first R / 8
    MulAddDst(lo[4 * R], lm, lf, 64, uint8_t(rows), BinaryRepeatParams(1, 1, 0, 8, 0, 1));       // m[j] f[8 r + j % 8] + (m + 1)
    MulAddDst(lo[5 * R], lo[5 * R], lm, R);                                                      // (m + 1) m + (m + 1)
    SetWait<HardEvent::V_MTE3>();
    DataCopy(go, lo, kFmaOut * R);
}

static int case_vec_fma() {
    const int rows = 4, R = rows * 64;
    std::vector<float> m(R), f(rows * 8), out(kFmaOut * R, NAN);
    for (int i = 0; i < R; ++i) m[i] = 0.013f * i - 1.5f;
    for (int i = 0; i < rows * 8; ++i) f[i] = 0.75f - 0.1f * i;
    const int prev = fla_sim_set_trace(1);
    FLA_SIM_LAUNCH(vec_fma, KERNEL_TYPE_AIV_ONLY, 1, G(m.data()), G(f.data()), G(out.data()), rows);
    fla_sim_set_trace(prev);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < 64; ++j) {
            const int i = r * 64 + j;
            const float d = m[i] + 1.0f;
            CHECK(Bits(out[i]) == Bits(m[i] * d + m[i]));                  // the product and the sum rounded apart
            CHECK(Bits(out[R + i]) == Bits(f[8 * r + j % 8] * d + m[i]));  // block stride 0: lane j reads j % 8
            CHECK(Bits(out[2 * R + i]) == Bits(f[8 + j % 8] * d + m[i]));
            CHECK(Bits(out[3 * R + i]) == Bits(i < R / 8 ? m[i] * f[i] + d : d));  // count R / 8: the rest untouched
            CHECK(Bits(out[4 * R + i]) == Bits(m[j] * f[8 * r + j % 8] + d));      // src0 repeat stride 0, src1 block stride 0
            CHECK(Bits(out[5 * R + i]) == Bits(d * m[i] + d));
        }
    FlaSimCounters c{};
    CHECK(fla_sim_last_core_counters(0, &c, nullptr) == 0);
    CHECK(c.vector_elem_ops == uint64_t(kFmaOut * R + 5 * R + R / 8));  // the Adds, then the five of R and one of R / 8
    // Passes of the vector instructions in order: every Adds R / 64; the multiply-adds twice their repeats
    // (three different addresses) except the last (dst is src0).
    std::vector<FlaSimTraceRecord> tr(size_t(fla_sim_last_trace_length(0)));
    CHECK(fla_sim_last_trace(0, tr.data(), int64_t(tr.size())) == int64_t(tr.size()));
    std::vector<uint64_t> passes;
    for (const FlaSimTraceRecord& x : tr)
        if (x.kind == FLA_SIM_TRACE_INSTR && x.pipe == 1 && x.amount > 0) passes.push_back(x.passes);  // not the masks
    std::vector<uint64_t> want(kFmaOut, uint64_t(R / 64));
    for (uint64_t p : {2 * R / 64, 2 * rows, 2 * rows, 2 * ((R / 8 + 63) / 64), 2 * rows, R / 64}) want.push_back(uint64_t(p));
    CHECK(passes == want);
    return 0;
}

// fp16 / bf16 numerics: per-instruction rounding and Cast round modes.
extern "C" __global__ __aicore__ void f16_numerics(GM_ADDR hin, GM_ADDR fin, GM_ADDR hout, GM_ADDR bout, GM_ADDR fout) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bh, bf, bo, bb, bff;
    pipe.InitBuffer(bh, 64 * 2);
    pipe.InitBuffer(bf, 64 * 4);
    pipe.InitBuffer(bo, 64 * 2 * 8);
    pipe.InitBuffer(bb, 64 * 2 * 8);
    pipe.InitBuffer(bff, 64 * 4 * 2);
    LocalTensor<half> lh = bh.Get<half>(), lo = bo.Get<half>();
    LocalTensor<float> lf = bf.Get<float>(), lff = bff.Get<float>();
    LocalTensor<bfloat16_t> lb = bb.Get<bfloat16_t>();
    GlobalTensor<half> gh, gho;
    GlobalTensor<float> gf, gfo;
    GlobalTensor<bfloat16_t> gbo;
    gh.SetGlobalBuffer((__gm__ half*)hin, 64);
    gf.SetGlobalBuffer((__gm__ float*)fin, 64);
    gho.SetGlobalBuffer((__gm__ half*)hout, 64 * 8);
    gbo.SetGlobalBuffer((__gm__ bfloat16_t*)bout, 64 * 8);
    gfo.SetGlobalBuffer((__gm__ float*)fout, 64 * 2);
    DataCopy(lh, gh, 64);
    DataCopy(lf, gf, 64);
    SetWait<HardEvent::MTE2_V>();
    Adds(lo, lh, half(1.0f), 64);  // rounded to half per instruction
    Mul(lo[64], lh, lh, 64);
    Cast(lo[128], lf, RoundMode::CAST_RINT, 64);
    Cast(lo[192], lf, RoundMode::CAST_TRUNC, 64);
    Cast(lo[256], lf, RoundMode::CAST_ODD, 64);
    Cast(lb, lf, RoundMode::CAST_RINT, 64);
    Cast(lb[64], lf, RoundMode::CAST_FLOOR, 64);
    Cast(lb[128], lf, RoundMode::CAST_CEIL, 64);
    Cast(lb[192], lf, RoundMode::CAST_ROUND, 64);
    Cast(lb[256], lf, RoundMode::CAST_TRUNC, 64);
    PipeBarrier<PIPE_V>();                        // the next Cast reads lb
    Cast(lff, lb, RoundMode::CAST_NONE, 64);      // bf16 -> float, exact
    Cast(lff[64], lh, RoundMode::CAST_NONE, 64);  // half -> float, exact
    SetWait<HardEvent::V_MTE3>();
    DataCopy(gho, lo, 64 * 5);
    DataCopy(gbo, lb, 64 * 5);
    DataCopy(gfo, lff, 128);
}

static int case_f16_numerics() {
    std::vector<half> h(64), ho(64 * 8);
    std::vector<float> f(64), fo(128);
    std::vector<bfloat16_t> bo(64 * 8);
    for (int i = 0; i < 64; ++i) {
        h[i] = half(2048.0f + 2.0f * (i % 4));      // 2048 + 1 is a tie in half: RNE keeps 2048
        f[i] = 1.0f + float(i) * (1.0f / 4096.0f);  // between bf16/half neighbours
    }
    f[63] = -1.00390625f * 1.5f;  // negative, not representable in bf16
    FLA_SIM_LAUNCH(f16_numerics, KERNEL_TYPE_AIV_ONLY, 1, G(h.data()), G(f.data()), G(ho.data()), G(bo.data()), G(fo.data()));
    CHECK(float(ho[0]) == 2048.0f);  // 2048 + 1 -> tie -> even 2048
    CHECK(float(ho[1]) == 2052.0f);  // 2050 + 1 = 2051 -> tie between 2050, 2052 -> even mantissa 2052
    CHECK(float(ho[64]) == 65504.0f || std::isinf(float(ho[64])));
    CHECK(std::isinf(float(ho[64])));  // 2048^2 overflows half
    for (int i = 0; i < 63; ++i) {
        const double x = f[i];
        // half has 10 fraction bits in [1,2): ulp 2^-10; bf16 7 bits: ulp 2^-7
        const double uh = 1.0 / 1024, ub = 1.0 / 128;
        const double rh = std::nearbyint(x / uh) * uh;  // RNE (host default rounding)
        CHECK(double(float(ho[128 + i])) == rh);
        CHECK(double(float(ho[192 + i])) == std::floor(x / uh) * uh);
        const double fl = std::floor(x / uh) * uh;
        const bool exact = fl == x;
        const bool flOdd = std::fmod(fl / uh, 2.0) != 0;
        CHECK(double(float(ho[256 + i])) == (exact || flOdd ? fl : fl + uh));
        CHECK(double(float(bo[i])) == std::nearbyint(x / ub) * ub);
        CHECK(double(float(bo[64 + i])) == std::floor(x / ub) * ub);
        CHECK(double(float(bo[128 + i])) == std::ceil(x / ub) * ub);
        CHECK(double(float(bo[192 + i])) == std::round(x / ub) * ub);
        CHECK(double(float(bo[256 + i])) == std::trunc(x / ub) * ub);
        CHECK(fo[i] == float(bo[i]));
        CHECK(fo[64 + i] == float(h[i]));
    }
    // Negative value: FLOOR goes away from zero, CEIL and TRUNC toward zero.
    const double x = f[63], ub = 1.0 / 128;
    CHECK(double(float(bo[64 + 63])) == std::floor(x / ub) * ub);
    CHECK(double(float(bo[128 + 63])) == std::ceil(x / ub) * ub);
    CHECK(double(float(bo[256 + 63])) == std::trunc(x / ub) * ub);
    CHECK(float(bo[64 + 63]) < float(bo[256 + 63]));
    return 0;
}

// Reductions and Brcb.
extern "C" __global__ __aicore__ void reduce(GM_ADDR x, GM_ADDR out, int32_t n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, bt;
    pipe.InitBuffer(bx, n * sizeof(float));
    pipe.InitBuffer(bo, 256 * sizeof(float));
    pipe.InitBuffer(bt, n * sizeof(float));
    LocalTensor<float> lx = bx.Get<float>(), lo = bo.Get<float>(), lt = bt.Get<float>();
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    go.SetGlobalBuffer((__gm__ float*)out, 256);
    DataCopy(lx, gx, n);
    SetWait<HardEvent::MTE2_V>();
    Duplicate(lo, 0.0f, 256);
    ReduceMax(lo, lx, lt, n, true);               // lo[0] = max, lo[1] = index bits
    ReduceSum(lo[8], lx, lt, n);                  // lo[8] = sum
    WholeReduceSum(lo[16], lx, 64, 4, 1, 1, 8);   // lo[16..19] = sums of rows 0..3 (64 each)
    WholeReduceMax(lo[24], lx, 64, 4, 1, 1, 8);   // (value, index) pairs at lo[24..31]
    Brcb(lo[64], lx, 1, BrcbRepeatParams(1, 8));  // x[0..7] each into one 8-float block
    SetWait<HardEvent::V_MTE3>();
    DataCopy(go, lo, 256);
}

static int case_reduce() {
    const int n = 256;
    std::vector<float> x(n), out(256, NAN);
    for (int i = 0; i < n; ++i) x[i] = float((i * 37) % 101) - 50.0f + 0.25f;
    FLA_SIM_LAUNCH(reduce, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(out.data()), n);
    int am = 0;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        if (x[i] > x[am]) am = i;
        sum += x[i];
    }
    CHECK(out[0] == x[am]);
    uint32_t idx;
    std::memcpy(&idx, &out[1], 4);
    CHECK(idx == uint32_t(am));
    CHECK(std::fabs(out[8] - sum) < 1e-3);
    for (int r = 0; r < 4; ++r) {
        double s = 0;
        int a = r * 64;
        for (int j = 0; j < 64; ++j) {
            s += x[r * 64 + j];
            if (x[r * 64 + j] > x[a]) a = r * 64 + j;
        }
        CHECK(std::fabs(out[16 + r] - s) < 1e-3);
        CHECK(out[24 + 2 * r] == x[a]);
        uint32_t li;
        std::memcpy(&li, &out[25 + 2 * r], 4);
        CHECK(li == uint32_t(a - r * 64));
    }
    for (int b = 0; b < 8; ++b)
        for (int e = 0; e < 8; ++e) CHECK(out[64 + b * 8 + e] == x[b]);
    return 0;
}

// DataCopyParams (32-byte blocks, gaps) and DataCopyPad (byte lengths, padded UB rows).
extern "C" __global__ __aicore__ void copies(GM_ADDR src, GM_ADDR dst, GM_ADDR dst2) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qin;
    TQue<QuePosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, 4096);
    pipe.InitBuffer(qout, 1, 4096);
    GlobalTensor<float> gs, gd, gd2;
    gs.SetGlobalBuffer((__gm__ float*)src, 1024);
    gd.SetGlobalBuffer((__gm__ float*)dst, 1024);
    gd2.SetGlobalBuffer((__gm__ float*)dst2, 1024);
    // 3 blocks of 16 floats (2 x 32 B), GM gap 1 block (8 floats), UB gap 0.
    LocalTensor<float> a = qin.AllocTensor<float>();
    DataCopy(a, gs, DataCopyParams(3, 2, 1, 0));
    qin.EnQue(a);
    a = qin.DeQue<float>();
    LocalTensor<float> b = qout.AllocTensor<float>();
    DataCopy(b, a, 48);  // UB -> UB
    qout.EnQue(b);
    qin.FreeTensor(a);
    b = qout.DeQue<float>();
    DataCopy(gd, b, DataCopyParams(3, 2, 0, 2));  // GM gap 2 blocks (16 floats)
    qout.FreeTensor(b);
    // 4 rows of 5 floats (20 bytes), GM row pitch 7 floats; UB rows padded to 8 floats with 9.0.
    LocalTensor<float> c = qin.AllocTensor<float>();
    DataCopyPad(c, gs, DataCopyExtParams(4, 20, 8, 0, 0), DataCopyPadExtParams<float>(true, 0, 3, 9.0f));
    qin.EnQue(c);
    c = qin.DeQue<float>();
    LocalTensor<float> d = qout.AllocTensor<float>();
    Adds(d, c, 0.0f, 32);
    qout.EnQue(d);
    qin.FreeTensor(c);
    d = qout.DeQue<float>();
    DataCopyPad(gd2, d, DataCopyExtParams(4, 32, 0, 4, 0));       // whole padded rows, GM gap 4 bytes
    DataCopyPad(gd2[512], d, DataCopyExtParams(4, 20, 0, 0, 0));  // rows of 5, packed
    qout.FreeTensor(d);
}

static int case_copies() {
    std::vector<float> s(1024), d(1024, -7.0f), d2(1024, -7.0f);
    for (int i = 0; i < 1024; ++i) s[i] = float(i);
    FLA_SIM_LAUNCH(copies, KERNEL_TYPE_AIV_ONLY, 1, G(s.data()), G(d.data()), G(d2.data()));
    for (int blk = 0; blk < 3; ++blk)
        for (int e = 0; e < 16; ++e) CHECK(d[blk * 32 + e] == s[blk * 24 + e]);
    CHECK(d[16] == -7.0f && d[31] == -7.0f);  // the GM gap is untouched
    for (int r = 0; r < 4; ++r) {
        for (int e = 0; e < 5; ++e) CHECK(d2[r * 9 + e] == s[r * 7 + e]);
        for (int e = 5; e < 8; ++e) CHECK(d2[r * 9 + e] == 9.0f);
        CHECK(d2[r * 9 + 8] == -7.0f || r == 3);
        for (int e = 0; e < 5; ++e) CHECK(d2[512 + r * 5 + e] == s[r * 7 + e]);
    }
    FlaSimCounters c{};
    CHECK(fla_sim_last_core_counters(0, &c, nullptr) == 0);
    CHECK(c.gm_to_local_bytes == uint64_t(3 * 64 + 4 * 20));
    CHECK(c.local_to_gm_bytes == uint64_t(3 * 64 + 4 * 32 + 4 * 20));
    return 0;
}

// Mixed 1:2 kernel: core ids, and a ping-pong protocol over cross-core flags (mode 2).
extern "C" __global__ __aicore__ void mixed_ids(GM_ADDR ids, GM_ADDR data, int32_t rounds) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    __gm__ int32_t* out = (__gm__ int32_t*)ids;
    __gm__ int32_t* buf = (__gm__ int32_t*)data;
    if ASCEND_IS_AIC {
        const int64_t b = GetBlockIdx();
        out[b * 12 + 0] = 100 + int32_t(b);
        out[b * 12 + 1] = int32_t(GetBlockNum());
        out[b * 12 + 2] = int32_t(GetSubBlockIdx());
        for (int32_t r = 0; r < rounds; ++r) {
            buf[b * 4 + 0] = r;  // the AIC produces ...
            buf[b * 4 + 1] = r;
            CrossCoreSetFlag<2, PIPE_FIX>(1);  // ... both AIVs consume
            CrossCoreWaitFlag(2);              // both AIVs have answered
            if (buf[b * 4 + 2] != r + 1000 || buf[b * 4 + 3] != r + 2000) out[b * 12 + 3] = -1;
        }
        return;
    }
    if ASCEND_IS_AIV {
        const int64_t v = GetBlockIdx();
        const int64_t b = v / GetSubBlockNum();
        const int64_t s = GetSubBlockIdx();
        out[b * 12 + 4 + s * 4 + 0] = int32_t(v);
        out[b * 12 + 4 + s * 4 + 1] = int32_t(GetBlockNum());
        out[b * 12 + 4 + s * 4 + 2] = int32_t(s);
        out[b * 12 + 4 + s * 4 + 3] = int32_t(GetTaskRatio());
        for (int32_t r = 0; r < rounds; ++r) {
            CrossCoreWaitFlag(1);
            buf[b * 4 + 2 + s] = buf[b * 4 + s] + 1000 * int32_t(s + 1);
            CrossCoreSetFlag<2, PIPE_MTE3>(2);
        }
    }
}

static int case_mixed_ids() {
    const int blocks = 3;
    std::vector<int32_t> ids(blocks * 12, -9), data(blocks * 4, 0);
    FLA_SIM_LAUNCH(mixed_ids, KERNEL_TYPE_MIX_AIC_1_2, blocks, G(ids.data()), G(data.data()), 40);
    for (int b = 0; b < blocks; ++b) {
        CHECK(ids[b * 12 + 0] == 100 + b && ids[b * 12 + 1] == blocks && ids[b * 12 + 2] == 0);
        CHECK(ids[b * 12 + 3] == -9);  // every round matched
        for (int s = 0; s < 2; ++s) {
            CHECK(ids[b * 12 + 4 + s * 4 + 0] == 2 * b + s);
            CHECK(ids[b * 12 + 4 + s * 4 + 1] == blocks);
            CHECK(ids[b * 12 + 4 + s * 4 + 2] == s);
            CHECK(ids[b * 12 + 4 + s * 4 + 3] == 2);
        }
    }
    CHECK(fla_sim_last_core_count() == 3 * blocks);
    FlaSimCoreInfo info{};
    CHECK(fla_sim_last_core_counters(0, nullptr, &info) == 0 && info.core_type == 0 && info.block_idx == 0);
    CHECK(fla_sim_last_core_counters(2, nullptr, &info) == 0 && info.core_type == 1 && info.block_idx == 1 &&
          info.sub_block_idx == 1);
    return 0;
}

// SyncAll between vector cores: each core publishes, then reads its neighbour's value.
extern "C" __global__ __aicore__ void sync_all(GM_ADDR data, GM_ADDR out) {
    __gm__ int32_t* d = (__gm__ int32_t*)data;
    __gm__ int32_t* o = (__gm__ int32_t*)out;
    const int64_t i = GetBlockIdx(), n = GetBlockNum();
    for (int round = 0; round < 3; ++round) {
        d[i] = int32_t(i * 10 + round);
        SyncAll();
        o[round * n + i] = d[(i + 1) % n];
        SyncAll();
    }
}

static int case_sync_all() {
    const int n = 4;
    std::vector<int32_t> d(n), o(3 * n, -1);
    FLA_SIM_LAUNCH(sync_all, KERNEL_TYPE_AIV_ONLY, n, G(d.data()), G(o.data()));
    for (int r = 0; r < 3; ++r)
        for (int i = 0; i < n; ++i) CHECK(o[r * n + i] == ((i + 1) % n) * 10 + r);
    return 0;
}

// Scalar access to UB after a DMA, with the MTE2 -> S flag (correct), and V -> S.
extern "C" __global__ __aicore__ void scalar_ok(GM_ADDR x, GM_ADDR out) {
    OneUb k(256, x);
    DataCopy(k.l, k.gx, 64);
    SetWait<HardEvent::MTE2_S>();
    const float first = k.l.GetValue(0);
    SetWait<HardEvent::S_V>();
    Muls(k.l, k.l, first, 64);
    SetWait<HardEvent::V_S>();
    ((__gm__ float*)out)[0] = k.l.GetValue(5);
}

static int case_scalar_ok() {
    std::vector<float> x(64), out(1);
    for (int i = 0; i < 64; ++i) x[i] = float(i + 2);
    FLA_SIM_LAUNCH(scalar_ok, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(out.data()));
    CHECK(out[0] == 7.0f * 2.0f);
    return 0;
}

// Fresh buffers read as NaN (poison): a kernel that forgets to fill half of its output.
extern "C" __global__ __aicore__ void poison(GM_ADDR out) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 64 * sizeof(float));
    LocalTensor<float> l = q.AllocTensor<float>();
    Duplicate(l, 1.0f, 32);
    q.EnQue(l);
    l = q.DeQue<float>();
    GlobalTensor<float> go;
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    DataCopy(go, l, 64);
    q.FreeTensor(l);
}

static int case_poison() {
    std::vector<float> out(64, 0.0f);
    FLA_SIM_LAUNCH(poison, KERNEL_TYPE_AIV_ONLY, 1, G(out.data()));
    for (int i = 0; i < 32; ++i) CHECK(out[i] == 1.0f);
    for (int i = 32; i < 64; ++i) CHECK(std::isnan(out[i]));
    return 0;
}

// UB capacity per SoC: 200 KB fits a5 (248 KB) but not a2/a3 (192 KB).
extern "C" __global__ __aicore__ void big_ub() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 200 * 1024);
    Duplicate(b.Get<float>(), 0.0f, 64);
}
static int case_big_ub() {
    FLA_SIM_LAUNCH(big_ub, KERNEL_TYPE_AIV_ONLY, 1);
    FlaSimCounters c{};
    CHECK(fla_sim_last_total_counters(&c) == 0 && c.peak_ub_bytes == 200u * 1024);
    return 0;
}

#if FLA_SIM_SOC == FLA_SIM_SOC_A5
// bf16 vector arithmetic exists on a5.
extern "C" __global__ __aicore__ void bf16_add(GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * 2 * 2);
    LocalTensor<bfloat16_t> l = b.Get<bfloat16_t>();
    GlobalTensor<bfloat16_t> g, go;
    g.SetGlobalBuffer((__gm__ bfloat16_t*)x, 64);
    go.SetGlobalBuffer((__gm__ bfloat16_t*)out, 64);
    DataCopy(l, g, 64);
    SetWait<HardEvent::MTE2_V>();
    Add(l[64], l, l, 64);
    Adds(l[64], l[64], bfloat16_t(1.0f), 64);
    SetWait<HardEvent::V_MTE3>();
    DataCopy(go, l[64], 64);
}
static int case_bf16_add() {
    std::vector<bfloat16_t> x(64), o(64);
    for (int i = 0; i < 64; ++i) x[i] = bfloat16_t(128.0f + i);
    FLA_SIM_LAUNCH(bf16_add, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(o.data()));
    for (int i = 0; i < 64; ++i) {
        const float twice = float(bfloat16_t(2.0f * float(x[i])));
        CHECK(float(o[i]) == float(bfloat16_t(twice + 1.0f)));  // rounded per instruction
    }
    CHECK(float(o[0]) == 256.0f);  // 256 + 1 rounds back to 256 in bf16
    return 0;
}
#endif

// =============================================================================================
// Broken kernels: each must fail with a specific message (see tests/sim/test_sim.py).
// =============================================================================================

// A DataCopy into UB followed by a vector op with no SetFlag/WaitFlag<MTE2_V> in between.
extern "C" __global__ __aicore__ void missing_waitflag(GM_ADDR x, GM_ADDR out, int32_t withFlag) {
    CopyPair k(x, out, 64);
    DataCopy(k.lx, k.gx, 64);
    if (withFlag == 1) {
        SetWait<HardEvent::MTE2_V>();
    } else if (withFlag == 2) {
        PipeBarrier<PIPE_ALL>();
    }
    Add(k.lz, k.lx, k.lx, 64);
    SetWait<HardEvent::V_MTE3>();
    DataCopy(k.go, k.lz, 64);
}
// Launches a CopyPair kernel (x: n ones) with `withFlag`; every output must be 2.
static int RunCopyPair(const char* name, void (*kernel)(GM_ADDR, GM_ADDR, int32_t), uint32_t n, int withFlag) {
    std::vector<float> x(n, 1.0f), out(n);
    sim::Launch(name, KERNEL_TYPE_AIV_ONLY, 1, kernel, G(x.data()), G(out.data()), withFlag);
    for (float v : out) CHECK(v == 2.0f);
    return 0;
}
static int case_hazard_raw_fixed() { return RunCopyPair("missing_waitflag", missing_waitflag, 64, 1); }
static int case_hazard_raw_barrier() { return RunCopyPair("missing_waitflag", missing_waitflag, 64, 2); }
static int case_hazard_raw() { return RunCopyPair("missing_waitflag", missing_waitflag, 64, 0); }

// Write after read: the next tile's DataCopy overwrites a buffer the vector unit may still read.
extern "C" __global__ __aicore__ void missing_war_flag(GM_ADDR x, GM_ADDR out, int32_t withFlag) {
    CopyPair k(x, out, 128);
    for (int t = 0; t < 2; ++t) {
        if (t > 0 && withFlag) SetWait<HardEvent::V_MTE2>();
        DataCopy(k.lx, k.gx[t * 64], 64);
        SetWait<HardEvent::MTE2_V>();
        if (t > 0) SetWait<HardEvent::MTE3_V>();
        Muls(k.lz, k.lx, 2.0f, 64);
        SetWait<HardEvent::V_MTE3>();
        DataCopy(k.go[t * 64], k.lz, 64);
    }
}
static int case_hazard_war_fixed() { return RunCopyPair("missing_war_flag", missing_war_flag, 128, 1); }
static int case_hazard_war() { return RunCopyPair("missing_war_flag", missing_war_flag, 128, 0); }

// A scalar read of UB right after the DMA that fills it (needs MTE2_S).
extern "C" __global__ __aicore__ void scalar_hazard(GM_ADDR x, GM_ADDR out) {
    OneUb k(256, x);
    DataCopy(k.l, k.gx, 64);
    ((__gm__ float*)out)[0] = k.l.GetValue(3);
}
static int case_hazard_scalar() {
    std::vector<float> x(64, 1.0f), out(1);
    FLA_SIM_LAUNCH(scalar_hazard, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(out.data()));
    return 0;
}

// The queue pair is the synchronisation: using a VECIN tensor without EnQue/DeQue is a hazard.
extern "C" __global__ __aicore__ void queue_skipped(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    LocalTensor<float> l = q.AllocTensor<float>();
    DataCopy(l, gx, 64);
    Exp(l, l, 64);
    q.FreeTensor(l);
}

// DataCopy of 10 floats = 40 bytes: violates the 32-byte rule.
extern "C" __global__ __aicore__ void copy_unaligned_count(GM_ADDR x) {
    OneUb k(256, x);
    DataCopy(k.l, k.gx, 10);
}

// A vector operand starting 12 bytes into a buffer.
extern "C" __global__ __aicore__ void misaligned_operand() {
    OneUb k(1024);
    Duplicate(k.l, 1.0f, 256);
    Add(k.l[3], k.l[64], k.l[128], 32);
}

// Same rule for a DataCopy destination.
extern "C" __global__ __aicore__ void misaligned_copy(GM_ADDR x) {
    OneUb k(1024, x);
    DataCopy(k.l[4], k.gx, 16);
}

// Two 128 KB buffers exceed UB on every SoC.
extern "C" __global__ __aicore__ void ub_overflow() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 128 * 1024);
}

extern "C" __global__ __aicore__ void double_free() {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> l = q.AllocTensor<float>();
    q.FreeTensor(l);
    q.FreeTensor(l);
}

extern "C" __global__ __aicore__ void use_after_free() {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> l = q.AllocTensor<float>();
    Duplicate(l, 1.0f, 64);
    q.FreeTensor(l);
    Adds(l, l, 1.0f, 64);
}

extern "C" __global__ __aicore__ void deque_empty() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> l = q.DeQue<float>();
    (void)l;
}

extern "C" __global__ __aicore__ void alloc_exhausted() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    LocalTensor<float> b = q.AllocTensor<float>();
    LocalTensor<float> c = q.AllocTensor<float>();
    (void)a;
    (void)b;
    (void)c;
}

extern "C" __global__ __aicore__ void wait_without_set() { WaitFlag<HardEvent::V_MTE3>(2); }

extern "C" __global__ __aicore__ void unbalanced_set() { SetFlag<HardEvent::MTE3_MTE2>(1); }

// The AIVs wait on a flag the AIC never sets.
extern "C" __global__ __aicore__ void cross_deadlock() {
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(1);
        return;
    }
    CrossCoreWaitFlag(1);
    CrossCoreWaitFlag(3);
}

// The AIC runs ahead: 16 sets with nobody waiting overflow the 4-bit counter.
extern "C" __global__ __aicore__ void cross_overflow() {
    if ASCEND_IS_AIC {
        for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_FIX>(5);
        return;
    }
}
// SyncAll uses cross-core flag ids 11..14 itself (SyncAll.md): a kernel may not.
extern "C" __global__ __aicore__ void cross_reserved_id() {
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(12);
        return;
    }
    CrossCoreWaitFlag(12);
}
// Cross-core flags need a mixed kernel type: in an AIV-only kernel the scheduler is off.
extern "C" __global__ __aicore__ void cross_in_aiv_only() {
    CrossCoreSetFlag<0, PIPE_MTE3>(3);
    CrossCoreWaitFlag(3);
}
// 3510 has no L0A/L0B fill instruction (Fill.md): InitConstValue into L0A faults on a5 only.
extern "C" __global__ __aicore__ void fill_l0a() {
    TPipe pipe;
    TBuf<TPosition::A2> b;
    pipe.InitBuffer(b, 512);
    InitConstValue(b.Get<half>(), InitConstValueParams<half>(1, 1, 0, half(0.0f)));
}
// On 2201 a vector instruction reading another's result needs PipeBarrier<PIPE_V> (PipeBarrier(ISASI).md).
extern "C" __global__ __aicore__ void vector_order_missing() {
    OneUb k(64 * sizeof(float));
    Duplicate(k.l, 1.0f, 64);
    Exp(k.l, k.l, 64);
}
// 15 pending sets are legal.
extern "C" __global__ __aicore__ void cross_fifteen() {
    if ASCEND_IS_AIC {
        for (int i = 0; i < 15; ++i) CrossCoreSetFlag<2, PIPE_FIX>(5);
        return;
    }
    for (int i = 0; i < 15; ++i) CrossCoreWaitFlag(5);
}

// Only block 0 reaches the SyncAll.
extern "C" __global__ __aicore__ void syncall_deadlock() {
    if (GetBlockIdx() == 0) SyncAll();
}

extern "C" __global__ __aicore__ void type_mismatch() { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2); }

extern "C" __global__ __aicore__ void gm_out_of_range(GM_ADDR x) {
    OneUb k(1024, x);
    DataCopy(k.l, k.gx[32], 64);
}

extern "C" __global__ __aicore__ void bad_cast_mode() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    LocalTensor<float> f = a.Get<float>();
    Duplicate(f, 1.0f, 64);
    Cast(b.Get<bfloat16_t>(), f, RoundMode::CAST_NONE, 64);
}

// A vector op on an AIC core's buffer: UB does not exist on the Cube core.
extern "C" __global__ __aicore__ void ub_on_aic() {
    if ASCEND_IS_AIC {
        TPipe pipe;
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 256);
    }
}

// Bad repeat-form mask: 65 lanes of float.
extern "C" __global__ __aicore__ void bad_mask() {
    OneUb k(1024);
    Duplicate(k.l, 1.0f, 256);
    Add(k.l, k.l, k.l, 65, 1, BinaryRepeatParams());
}

// =============================================================================================
// Cube path
// =============================================================================================

static uint32_t CeilU(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// Deterministic values in [-1, 1), rounded to T.
template <class T>
static std::vector<T> RandomMatrix(size_t n, uint32_t seed) {
    std::vector<T> v(n);
    uint32_t s = seed;
    for (size_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        v[i] = T(float(int32_t(s >> 8) % 4096) / 2048.0f - 1.0f + 1.0f / 4096.0f * float(i % 7));
    }
    return v;
}

// L1 holds an A tile (mPad x kPad) as NZ: fractal (i along m, j along k) at j * mFrac + i. Load it
// into L0A in the SoC's layout: a2/a3 Zz (fractal i * kFrac + j: one LoadData per fractal row, stepping
// over the mFrac fractals of an L1 column), a5 Nz (the L1 order as it is: one LoadData).
template <class T>
static void LoadA(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t mPad, uint32_t kPad, bool flipLayout) {
    constexpr uint32_t fr = 512 / sizeof(T), c0 = 32 / sizeof(T);
    const uint32_t mFrac = mPad / 16, kFrac = kPad / c0;
    bool nz = __NPU_ARCH__ == 3510;
    if (flipLayout) nz = !nz;
    if (nz) {
        LoadData(a2, a1, LoadData2dParams(0, uint8_t(mFrac * kFrac), 1, 0, 0, false, 0));
    } else {
        for (uint32_t i = 0; i < mFrac; ++i)
            LoadData(a2[i * kFrac * fr], a1[i * fr], LoadData2dParams(0, uint8_t(kFrac), uint16_t(mFrac), 0, 0, false, 0));
    }
}

template <class O>
static constexpr QuantMode_t QuantFor() {
    return std::is_same_v<O, float> ? NoQuant : std::is_same_v<O, half> ? F322F16 : F322BF16;
}

// Cube-only tiled matmul C[M,N] = A[M,K] · B with 32 x 32 x 32 tiles, accumulating over K in L0C.
// B is given as [K,N] (bT = 0: ND -> NZ with k along rows, then LoadData transposes each 16 x 16
// fractal into L0B's Zn; 2-byte types) or as B^T [N,K] (bT = 1: the NZ fractals are already Zn's).
// Tails: M and N tiles are padded to 16 rows/columns (padding rows of C are garbage and never
// written out); K is padded to C0 inside a row by ND -> NZ, and for B [K,N] the padding rows up to 16
// are zeroed with InitConstValue first. Explicit flags over TBufs; bug selects a broken variant:
//   1 no MTE1_M between LoadData and Mmad, 2 no M_FIX before Fixpipe, 3 the other SoC's L0A layout,
//   4 Fixpipe quantPre NoQuant into a 16-bit output, 5 no InitConstValue of B's K padding rows,
//   6 no M_MTE1 before LoadData overwrites L0A/L0B that the previous Mmad reads (WAR).
template <class T, class O>
static void cube_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, int32_t M, int32_t N, int32_t K, int32_t bT, int32_t bug) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    constexpr uint32_t BM = 32, BN = 32, BK = 32, c0 = 32 / sizeof(T), fr = 512 / sizeof(T);
    TPipe pipe;
    CubeBuffers cb(pipe, BM * BK * sizeof(T), BK * BN * sizeof(T), BM * BN * sizeof(float));
    LocalTensor<T> a1 = cb.a1.Get<T>(), b1 = cb.b1.Get<T>(), a2 = cb.a2.Get<T>(), b2 = cb.b2.Get<T>();
    LocalTensor<float> lc = cb.c.Get<float>();
    GlobalTensor<T> gA, gB;
    GlobalTensor<O> gC;
    gA.SetGlobalBuffer((__gm__ T*)a, uint64_t(M) * K);
    gB.SetGlobalBuffer((__gm__ T*)b, uint64_t(K) * N);
    gC.SetGlobalBuffer((__gm__ O*)c, uint64_t(M) * N);
    const int32_t nT = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * nT;
    int32_t iter = 0;
    bool firstTile = true;
    for (int32_t t = int32_t(GetBlockIdx()); t < tiles; t += int32_t(GetBlockNum())) {
        const uint32_t m0 = (t / nT) * BM, n0 = (t % nT) * BN;
        const uint32_t mLen = std::min<uint32_t>(BM, M - m0), nLen = std::min<uint32_t>(BN, N - n0);
        const uint32_t mPad = CeilU(mLen, 16), nPad = CeilU(nLen, 16);
        for (uint32_t k0 = 0; k0 < uint32_t(K); k0 += BK, ++iter) {
            const uint32_t kLen = std::min<uint32_t>(BK, K - k0), kPad = CeilU(kLen, c0), kRows = CeilU(kLen, 16);
            if (iter > 0) {  // L1 is reused: the previous LoadData must have read it
                SetWait<HardEvent::MTE1_MTE2>();
            }
            if (mLen != mPad) {  // Mmad reads whole fractals: A's padding rows must be zero, not NaN
                InitConstValue(a1, InitConstValueParams<T>(1, uint16_t(mPad * kPad * sizeof(T) / 32), 0, T(0)));
                PipeBarrier<PIPE_MTE2>();
            }
            DataCopy(a1, gA[uint64_t(m0) * K + k0], Nd2NzParams(1, mLen, kLen, 0, K, mPad, 1, 0));
            if (bT) {
                if (nLen != nPad) {  // B^T's padding rows (n) are read by the Cube: zero, not NaN
                    InitConstValue(b1, InitConstValueParams<T>(1, uint16_t(nPad * kPad * sizeof(T) / 32), 0, T(0)));
                    PipeBarrier<PIPE_MTE2>();
                }
                DataCopy(b1, gB[uint64_t(n0) * K + k0], Nd2NzParams(1, nLen, kLen, 0, K, nPad, 1, 0));
            } else {
                if (kLen != kRows && bug != 5)
                    InitConstValue(b1, InitConstValueParams<T>(1, uint16_t(kRows * nPad * sizeof(T) / 32), 0, T(0)));
                DataCopy(b1, gB[uint64_t(k0) * N + n0], Nd2NzParams(1, kLen, nLen, 0, N, kRows, 1, 0));
            }
            SetWait<HardEvent::MTE2_MTE1>();
            if (iter > 0 && bug != 6) {  // L0A/L0B are reused: the previous Mmad must have read them
                SetWait<HardEvent::M_MTE1>();
            }
            LoadA(a2, a1, mPad, kPad, bug == 3);
            if (bT) {
                LoadData(b2, b1, LoadData2dParams(0, uint8_t((kPad / c0) * (nPad / 16)), 1, 0, 0, false, 0));
            } else {
                for (uint32_t j = 0; j < kRows / 16; ++j)
                    LoadData(b2[j * (nPad / 16) * fr], b1[j * fr],
                             LoadData2dParams(0, uint8_t(nPad / 16), uint16_t(kRows / 16), 0, 0, true, 0));
            }
            if (bug != 1) SetWait<HardEvent::MTE1_M>();
            if (k0 == 0 && !firstTile) {  // L0C is reused: the previous Fixpipe must have read it
                SetWait<HardEvent::FIX_M>();
            }
            if (k0 > 0 && (mLen / 16) * (nLen / 16) < 10 && bug != 7) PipeBarrier<PIPE_M>();  // accumulating (Mmad.md)
            // m = 1 would be GEMV mode (A read as ND): run the zero-padded 16 rows instead.
            const uint32_t mCube = mLen == 1 && bug != 8 ? mPad : mLen;
            Mmad(lc, a2, b2, MmadParams(uint16_t(mCube), uint16_t(nLen), uint16_t(kLen), 0, false, k0 == 0));
        }
        if (bug != 2) SetWait<HardEvent::M_FIX>();
        FixpipeParamsV220 fp(uint16_t(nLen), uint16_t(mLen), uint16_t(mPad), uint32_t(N), false);
        fp.quantPre = bug == 4 ? NoQuant : QuantFor<O>();
        Fixpipe<O, float, CFG_ROW_MAJOR>(gC[uint64_t(m0) * N + n0], lc, fp);
        firstTile = false;
    }
}

// Rounding bound of one output: fp32 accumulation (one rounding per multiply-add, |partial| <= S)
// then one rounding to the output type.
template <class O>
static double OutUlp() {
    return std::is_same_v<O, float> ? std::ldexp(1.0, -24) : std::is_same_v<O, half> ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
}

// Runs the matmul and checks values and counters; returns 0 when right, 2 when wrong.
template <class T, class O>
static int RunMatmul(int M, int N, int K, int bT, int blocks, int bug) {
    const std::vector<T> A = RandomMatrix<T>(size_t(M) * K, 7), B = RandomMatrix<T>(size_t(K) * N, 11);
    std::vector<O> C(size_t(M) * N, O(NAN));
    sim::Launch("cube_matmul", KERNEL_TYPE_AIC_ONLY, blocks, cube_matmul<T, O>, G((void*)A.data()), G((void*)B.data()),
                G(C.data()), M, N, K, bT, bug);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double ref = 0, s = 0;
            for (int k = 0; k < K; ++k) {
                const double av = float(A[size_t(i) * K + k]);
                const double bv = bT ? float(B[size_t(j) * K + k]) : float(B[size_t(k) * N + j]);
                ref += av * bv;
                s += std::fabs(av * bv);
            }
            const double acc = K * std::ldexp(1.0, -24) * s;
            const double bound = acc + OutUlp<O>() * (std::fabs(ref) + acc) + 1e-30;
            const double got = float(C[size_t(i) * N + j]);
            if (!(std::fabs(got - ref) <= bound)) {
                if (bug != 3 && bug != 5 && bug != 8)
                    std::fprintf(stderr, "C[%d,%d] = %.9g, expected %.9g +- %.3g\n", i, j, got, ref, bound);
                return 2;
            }
        }
    const int BM = 32, BN = 32, mT = (M + BM - 1) / BM, nT = (N + BN - 1) / BN;
    FlaSimCounters tot{}, c{};
    FlaSimCoreInfo info{};
    CHECK(fla_sim_last_core_count() == blocks);
    CHECK(fla_sim_last_total_counters(&tot) == 0);
    const uint64_t cubeRows = uint64_t(M) + (M % BM == 1 ? 15 : 0);  // a 1-row tile runs as 16 rows (not GEMV)
    CHECK(tot.cube_macs == cubeRows * N * K);
    CHECK(tot.gm_to_local_bytes == (uint64_t(M) * K * nT + uint64_t(K) * N * mT) * sizeof(T));
    CHECK(tot.local_to_gm_bytes == uint64_t(M) * N * sizeof(O));
    CHECK(tot.vector_elem_ops == 0 && tot.peak_ub_bytes == 0);
    CHECK(tot.peak_l0a_bytes == BM * 32 * sizeof(T) && tot.peak_l0c_bytes == BM * BN * 4);
    for (int i = 0; i < blocks; ++i) {
        CHECK(fla_sim_last_core_counters(i, &c, &info) == 0 && info.core_type == 0);
        const uint64_t myTiles = uint64_t((mT * nT - i + blocks - 1) / blocks);
        CHECK(c.cube_macs <= myTiles * BM * BN * uint64_t(K) && (myTiles == 0 || c.cube_macs > 0));
    }
    return 0;
}

static int case_cube_matmul_f16() { return RunMatmul<half, half>(50, 37, 70, 0, 3, 0); }
static int case_cube_matmul_bf16() { return RunMatmul<bfloat16_t, bfloat16_t>(45, 70, 33, 0, 2, 0); }
static int case_cube_matmul_bf16_bt() { return RunMatmul<bfloat16_t, float>(33, 40, 100, 1, 3, 0); }
static int case_cube_matmul_f16_bt() { return RunMatmul<half, bfloat16_t>(64, 20, 17, 1, 1, 0); }
static int case_cube_matmul_f32() { return RunMatmul<float, float>(37, 29, 45, 1, 2, 0); }
// The L0A layout is a SoC trait: a kernel that loads A in the other SoC's layout computes garbage.
static int case_cube_layout_trait() { return RunMatmul<half, half>(64, 32, 64, 0, 1, 3) == 2 ? 0 : 2; }
// Mmad reads whole fractals along k: B's padding rows (not written by ND -> NZ, poisoned = NaN) must
// be zeroed by the kernel; a NaN Cube input faults (Mmad.md: it may raise an execution error).
static int case_cube_k_pad_missing() { return RunMatmul<half, half>(32, 32, 20, 0, 1, 5); }
// m = 1 switches the Cube to GEMV mode (GEMV.md): A is read as one ND row, so a 1-row tile loaded
// as fractals computes the wrong values.
static int case_cube_gemv_mode() { return RunMatmul<bfloat16_t, float>(33, 40, 100, 1, 1, 8) == 2 ? 0 : 2; }
// Accumulating Mmads with (m/16)*(n/16) < 10 and no PipeBarrier<PIPE_M> between them.
static int case_cube_missing_m_barrier() { return RunMatmul<half, half>(32, 32, 70, 0, 1, 7); }
static int case_cube_missing_mte1_m() { return RunMatmul<half, half>(50, 37, 70, 0, 1, 1); }
static int case_cube_missing_m_mte1() { return RunMatmul<half, half>(50, 37, 70, 0, 1, 6); }
static int case_cube_missing_m_fix() { return RunMatmul<bfloat16_t, bfloat16_t>(20, 20, 20, 0, 1, 2); }
static int case_cube_fixpipe_quant() { return RunMatmul<half, half>(16, 16, 16, 0, 1, 4); }
static int case_cube_f32_transpose() { return RunMatmul<float, float>(16, 16, 16, 0, 1, 0); }

// Mixed 1:2, flash-attention-like: per block the AIC loads K once, then for each 32-row tile of Q
// computes S = Q·K^T (fp16 in, fp32 out) into one of two GM workspace slots and signals both AIVs
// (flag 0); each AIV scales its 16 rows (vector, fp32) into the output and releases the slot (flag 1).
// Before reusing a slot the AIC waits for its release; at the end it drains the last releases.
extern "C" __global__ __aicore__ void cube_mixed(GM_ADDR q, GM_ADDR k, GM_ADDR ws, GM_ADDR out, int32_t M, int32_t N, int32_t D,
                                                 float scale) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    constexpr int32_t R = 32;
    const int32_t tiles = (M + R - 1) / R, nb = int32_t(GetBlockNum());
    const int32_t blk = ASCEND_IS_AIV ? int32_t(GetBlockIdx() / GetSubBlockNum()) : int32_t(GetBlockIdx());
    const int32_t rounds = tiles > blk ? (tiles - blk + nb - 1) / nb : 0;
    GlobalTensor<float> gws, gout;
    gws.SetGlobalBuffer((__gm__ float*)ws + int64_t(blk) * 2 * R * N, 2 * R * N);
    gout.SetGlobalBuffer((__gm__ float*)out, int64_t(M) * N);
    if ASCEND_IS_AIC {
        const uint32_t nPad = CeilU(N, 16), dPad = CeilU(D, 16);
        TPipe pipe;
        CubeBuffers cb(pipe, R * dPad * 2, nPad * dPad * 2, R * nPad * 4);
        LocalTensor<half> q1 = cb.a1.Get<half>(), k1 = cb.b1.Get<half>(), a2 = cb.a2.Get<half>(), b2 = cb.b2.Get<half>();
        LocalTensor<float> lc = cb.c.Get<float>();
        GlobalTensor<half> gq, gk;
        gq.SetGlobalBuffer((__gm__ half*)q, int64_t(M) * D);
        gk.SetGlobalBuffer((__gm__ half*)k, int64_t(N) * D);
        if (rounds > 0) {               // K^T once per block: rows = keys (n), C0 along d: already L0B's Zn fractals
            if (uint32_t(N) != nPad) {  // the key padding rows are read by the Cube: zero, not NaN
                InitConstValue(k1, InitConstValueParams<half>(1, uint16_t(nPad * dPad * sizeof(half) / 32), 0, half(0.0f)));
                PipeBarrier<PIPE_MTE2>();
            }
            DataCopy(k1, gk, Nd2NzParams(1, uint16_t(N), uint16_t(D), 0, uint16_t(D), uint16_t(nPad), 1, 0));
            SetWait<HardEvent::MTE2_MTE1>(1);
            LoadData(b2, k1, LoadData2dParams(0, uint8_t((dPad / 16) * (nPad / 16)), 1, 0, 0, false, 0));
        }
        for (int32_t r = 0; r < rounds; ++r) {
            const int32_t m0 = (blk + r * nb) * R, mLen = std::min(R, M - m0);
            const uint32_t mPad = CeilU(mLen, 16);
            if (r > 0) SetWait<HardEvent::MTE1_MTE2>();
            if (uint32_t(mLen) != mPad) {
                InitConstValue(q1, InitConstValueParams<half>(1, uint16_t(mPad * dPad * sizeof(half) / 32), 0, half(0.0f)));
                PipeBarrier<PIPE_MTE2>();
            }
            DataCopy(q1, gq[int64_t(m0) * D], Nd2NzParams(1, uint16_t(mLen), uint16_t(D), 0, uint16_t(D), uint16_t(mPad), 1, 0));
            SetWait<HardEvent::MTE2_MTE1>();
            if (r > 0) SetWait<HardEvent::M_MTE1>();
            LoadA(a2, q1, mPad, dPad, false);
            SetWait<HardEvent::MTE1_M>();
            if (r > 0) SetWait<HardEvent::FIX_M>();
            Mmad(lc, a2, b2, MmadParams(uint16_t(mLen), uint16_t(N), uint16_t(D), 0, false, true));
            SetWait<HardEvent::M_FIX>();
            if (r >= 2) CrossCoreWaitFlag(1);  // both AIVs released this slot (round r - 2)
            Fixpipe(gws[int64_t(r % 2) * R * N], lc,
                    FixpipeParamsV220(uint16_t(N), uint16_t(mLen), uint16_t(mPad), uint32_t(N), false));
            CrossCoreSetFlag<2, PIPE_FIX>(0);
        }
        for (int32_t r = std::max(0, rounds - 2); r < rounds; ++r) CrossCoreWaitFlag(1);
    }
    if ASCEND_IS_AIV {
        TPipe pipe;
        TQue<QuePosition::VECIN, 1> qi;
        TQue<QuePosition::VECOUT, 1> qo;
        pipe.InitBuffer(qi, 1, 16 * N * 4);
        pipe.InitBuffer(qo, 1, 16 * N * 4);
        const int32_t sub = int32_t(GetSubBlockIdx());
        for (int32_t r = 0; r < rounds; ++r) {
            const int32_t m0 = (blk + r * nb) * R, mLen = std::min(R, M - m0);
            const int32_t cnt = std::max(0, std::min(16, mLen - sub * 16));
            CrossCoreWaitFlag(0);
            if (cnt > 0) {
                LocalTensor<float> li = qi.AllocTensor<float>();
                DataCopy(li, gws[int64_t(r % 2) * R * N + sub * 16 * N], uint32_t(cnt * N));
                qi.EnQue(li);
                li = qi.DeQue<float>();
                LocalTensor<float> lo = qo.AllocTensor<float>();
                Muls(lo, li, scale, cnt * N);
                qo.EnQue(lo);
                qi.FreeTensor(li);
                lo = qo.DeQue<float>();
                DataCopy(gout[int64_t(m0 + sub * 16) * N], lo, uint32_t(cnt * N));
                qo.FreeTensor(lo);
            }
            CrossCoreSetFlag<2, PIPE_MTE3>(1);
        }
    }
}

static int case_cube_mixed() {
    const int M = 80, N = 40, D = 40, blocks = 2;
    const float scale = 0.125f;
    const std::vector<half> Q = RandomMatrix<half>(size_t(M) * D, 3), Kt = RandomMatrix<half>(size_t(N) * D, 5);
    std::vector<float> ws(size_t(blocks) * 2 * 32 * N, NAN), out(size_t(M) * N, NAN);
    FLA_SIM_LAUNCH(cube_mixed, KERNEL_TYPE_MIX_AIC_1_2, blocks, G((void*)Q.data()), G((void*)Kt.data()), G(ws.data()),
                   G(out.data()), M, N, D, scale);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double ref = 0, s = 0;
            for (int d = 0; d < D; ++d) {
                const double p = double(float(Q[size_t(i) * D + d])) * double(float(Kt[size_t(j) * D + d]));
                ref += p;
                s += std::fabs(p);
            }
            ref *= scale;
            const double bound = scale * D * std::ldexp(1.0, -24) * s + std::ldexp(1.0, -23) * std::fabs(ref) + 1e-30;
            CHECK(std::fabs(double(out[size_t(i) * N + j]) - ref) <= bound);
        }
    FlaSimCounters tot{}, c{};
    FlaSimCoreInfo info{};
    CHECK(fla_sim_last_total_counters(&tot) == 0);
    CHECK(tot.cube_macs == uint64_t(M) * N * D);
    CHECK(tot.local_to_gm_bytes == 2ull * M * N * 4);  // S by the AICs, out by the AIVs
    CHECK(tot.gm_to_local_bytes == (uint64_t(blocks) * N * D + uint64_t(M) * D) * 2 + uint64_t(M) * N * 4);
    CHECK(tot.vector_elem_ops == uint64_t(M) * N);
    const int rowsOf[2] = {32 + 16, 32};  // block 0: tiles 0 and 2 (16-row tail); block 1: tile 1
    for (int i = 0; i < fla_sim_last_core_count(); ++i) {
        CHECK(fla_sim_last_core_counters(i, &c, &info) == 0);
        if (info.core_type == 0) {  // K read once per AIC, Q rows once
            CHECK(c.gm_to_local_bytes == (uint64_t(N) * D + uint64_t(rowsOf[info.block_idx]) * D) * 2);
            CHECK(c.cube_macs == uint64_t(rowsOf[info.block_idx]) * N * D);
        } else {
            CHECK(c.cube_macs == 0);
        }
    }
    return 0;
}

// GM -> L1: ND (plain DataCopy) and ND -> NZ, read back with GetValue (scalar pipe, after MTE2_S).
// NZ: element (r, c) at (c / 16) * 16 * 16 + r * 16 + c % 16 for a 16-row column pitch; the C0 tail
// of each row is zero-filled; rows the copy does not reach stay poisoned.
extern "C" __global__ __aicore__ void cube_l1_copies(GM_ADDR a, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::A1> bnz;
    TBuf<TPosition::B1> bnd;
    pipe.InitBuffer(bnz, 16 * 32 * 2);
    pipe.InitBuffer(bnd, 64 * 2);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 3 * 20);
    LocalTensor<half> nz = bnz.Get<half>(), nd = bnd.Get<half>();
    DataCopy(nz, ga, Nd2NzParams(1, 3, 20, 0, 20, 16, 1, 0));
    DataCopy(nd, ga, 48);
    SetWait<HardEvent::MTE2_S>();
    __gm__ uint16_t* o = (__gm__ uint16_t*)out;
    for (uint32_t i = 0; i < 16 * 32; ++i) o[i] = nz.GetValue(i).bits;
    for (uint32_t i = 0; i < 48; ++i) o[16 * 32 + i] = nd.GetValue(i).bits;
}
static int case_cube_l1_copies() {
    std::vector<half> a(3 * 20);
    for (int i = 0; i < 60; ++i) a[i] = half(float(i + 1));
    std::vector<uint16_t> out(16 * 32 + 48, 0x1234);
    FLA_SIM_LAUNCH(cube_l1_copies, KERNEL_TYPE_AIC_ONLY, 1, G(a.data()), G(out.data()));
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 32; ++c) {
            const uint16_t got = out[(c / 16) * 256 + r * 16 + c % 16];
            if (r < 3 && c < 20) CHECK(got == a[r * 20 + c].bits);
            else if (r < 3) CHECK(got == 0);  // zero-filled C0 tail
            else CHECK(got == 0xFFFF);        // not reached: poison
        }
    for (int i = 0; i < 48; ++i) CHECK(out[512 + i] == a[i].bits);
    FlaSimCounters tot{};
    CHECK(fla_sim_last_total_counters(&tot) == 0 && tot.gm_to_local_bytes == (60 + 48) * 2 &&
          tot.peak_l1_bytes == 16 * 32 * 2 + 128);
    return 0;
}

// L0A holds 64 KB on every profile: two 40 KB buffers do not fit.
extern "C" __global__ __aicore__ void cube_l0a_overflow() {
    TPipe pipe;
    TQue<QuePosition::A2, 2> q;
    pipe.InitBuffer(q, 2, 40 * 1024);
}

// ND -> NZ with a C0-column pitch of 20 rows: the NZ columns do not start on 16-row fractals.
extern "C" __global__ __aicore__ void cube_nd2nz_unaligned(GM_ADDR a) {
    TPipe pipe;
    TBuf<TPosition::A1> b;
    pipe.InitBuffer(b, 32 * 48 * 2);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 20 * 40);
    DataCopy(b.Get<half>(), ga, Nd2NzParams(1, 20, 40, 0, 40, 20, 1, 0));
}
static int case_cube_nd2nz_unaligned() {
    std::vector<half> a(20 * 40, half(1.0f));
    FLA_SIM_LAUNCH(cube_nd2nz_unaligned, KERNEL_TYPE_AIC_ONLY, 1, G(a.data()));
    return 0;
}

// Two 16 x 16 ND matrices into L1 NZ matrices 16400 elements apart: beyond dstNzMatrixStride's
// documented range (<= 16384).
extern "C" __global__ __aicore__ void cube_nd2nz_range(GM_ADDR a) {
    TPipe pipe;
    TBuf<TPosition::A1> b;
    pipe.InitBuffer(b, (16400 + 256) * 2);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 2 * 16 * 16);
    DataCopy(b.Get<half>(), ga, Nd2NzParams(2, 16, 16, 256, 16, 16, 1, 16400));
}
static int case_cube_nd2nz_range() {
    std::vector<half> a(2 * 16 * 16, half(1.0f));
    FLA_SIM_LAUNCH(cube_nd2nz_range, KERNEL_TYPE_AIC_ONLY, 1, G(a.data()));
    return 0;
}

// LoadData into L0A half a fractal (256 bytes) in: L0A operands are 512-byte aligned.
extern "C" __global__ __aicore__ void cube_loaddata_misaligned(GM_ADDR a) {
    TPipe pipe;
    TBuf<TPosition::A1> b1;
    TBuf<TPosition::A2> b2;
    pipe.InitBuffer(b1, 16 * 16 * 2);
    pipe.InitBuffer(b2, 2 * 16 * 16 * 2);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 16 * 16);
    LocalTensor<half> l1 = b1.Get<half>();
    DataCopy(l1, ga, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    SetWait<HardEvent::MTE2_MTE1>();
    LoadData(b2.Get<half>()[128], l1, LoadData2dParams(0, 1, 1, 0, 0, false, 0));
}
static int case_cube_loaddata_misaligned() {
    std::vector<half> a(16 * 16, half(1.0f));
    FLA_SIM_LAUNCH(cube_loaddata_misaligned, KERNEL_TYPE_AIC_ONLY, 1, G(a.data()));
    return 0;
}

// =============================================================================================
// Compare / CompareScalar / Select
// =============================================================================================

static bool HostCmp(int m, float a, float b) {
    switch (m) {
        case 0: return a < b;
        case 1: return a > b;
        case 2: return a == b;
        case 3: return a <= b;
        case 4: return a >= b;
        default: return !(a == b);
    }
}
static const CMPMODE kModes[6] = {CMPMODE::LT, CMPMODE::GT, CMPMODE::EQ, CMPMODE::LE, CMPMODE::GE, CMPMODE::NE};

// The setting of the Compare / Select kernels: x, y (float) and hx (half) copied into UB (lx, ly, lh)
// and ordered before the vector unit; UB for the mask bits, z (float) and hz (half), whose outputs are
// gb, gz and gho (the element counts and the mask bytes as given).
struct CmpSelectSet {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bh, bbits, bz, bhz;
    LocalTensor<float> lx, ly, lz;
    LocalTensor<half> lh, lhz;
    LocalTensor<uint8_t> bits;
    GlobalTensor<float> gx, gy, gz;
    GlobalTensor<half> ghx, gho;
    GlobalTensor<uint8_t> gb;
    CmpSelectSet(GM_ADDR x, uint32_t nx, GM_ADDR y, uint32_t ny, GM_ADDR hx, uint32_t nh, GM_ADDR bitsOut, uint32_t bitBytes,
                 GM_ADDR zOut, uint32_t nz, GM_ADDR hOut) {
        pipe.InitBuffer(bx, nx * 4);
        pipe.InitBuffer(by, ny * 4);
        pipe.InitBuffer(bh, nh * 2);
        pipe.InitBuffer(bbits, bitBytes);
        pipe.InitBuffer(bz, nz * 4);
        pipe.InitBuffer(bhz, nh * 2);
        lx = bx.Get<float>();
        ly = by.Get<float>();
        lz = bz.Get<float>();
        lh = bh.Get<half>();
        lhz = bhz.Get<half>();
        bits = bbits.Get<uint8_t>();
        gx.SetGlobalBuffer((__gm__ float*)x, nx);
        gy.SetGlobalBuffer((__gm__ float*)y, ny);
        ghx.SetGlobalBuffer((__gm__ half*)hx, nh);
        gb.SetGlobalBuffer((__gm__ uint8_t*)bitsOut, bitBytes);
        gz.SetGlobalBuffer((__gm__ float*)zOut, nz);
        gho.SetGlobalBuffer((__gm__ half*)hOut, nh);
        DataCopy(lx, gx, nx);
        DataCopy(ly, gy, ny);
        DataCopy(lh, ghx, nh);
        SetWait<HardEvent::MTE2_V>();
    }
};

// Count forms: Compare and CompareScalar in every CMPMODE (with NaNs and equal values), float and
// half; Select in VSEL_TENSOR_TENSOR_MODE (max by mask), VSEL_TENSOR_SCALAR_MODE and
// VSEL_CMPMASK_SPR (the first 64 bits for every repeat).
constexpr int32_t kCmpN = 128;
extern "C" __global__ __aicore__ void vec_compare_select(GM_ADDR x, GM_ADDR y, GM_ADDR hx, GM_ADDR bitsOut, GM_ADDR zOut,
                                                         GM_ADDR hOut) {
    CmpSelectSet k(x, kCmpN, y, kCmpN, hx, kCmpN, bitsOut, 14 * 32, zOut, 3 * kCmpN, hOut);
    Duplicate(k.bits.ReinterpretCast<int16_t>(), int16_t(0x5555), 14 * 16);  // bytes past each 16-byte mask keep 0x55
    for (int m = 0; m < 6; ++m) {
        Compare(k.bits[m * 32], k.lx, k.ly, kModes[m], kCmpN);
        CompareScalar(k.bits[(6 + m) * 32], k.lx, 0.5f, kModes[m], kCmpN);
    }
    CompareScalar(k.bits[12 * 32], k.lh, half(-0.25f), CMPMODE::GE, kCmpN);             // half: 128 elements = 256 bytes
    PipeBarrier<PIPE_V>();                                                              // Select reads the compare k.bits
    Select(k.lz, k.bits[1 * 32], k.lx, k.ly, SELMODE::VSEL_TENSOR_TENSOR_MODE, kCmpN);  // x > y ? x : y
    Select(k.lz[kCmpN], k.bits[(6 + 1) * 32], k.lx, -7.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, kCmpN);  // x > 0.5 ? x : -7
    Select(k.lz[2 * kCmpN], k.bits[0], k.lx, k.ly, SELMODE::VSEL_CMPMASK_SPR, kCmpN);                 // bit i % 64 of (x < y)
    Select(k.lhz, k.bits[12 * 32], k.lh, half(2.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, kCmpN);
    SetWait<HardEvent::V_MTE3>();
    DataCopy(k.gb, k.bits, 14 * 32);
    DataCopy(k.gz, k.lz, 3 * kCmpN);
    DataCopy(k.gho, k.lhz, kCmpN);
}

static int case_vec_compare_select() {
    const int n = kCmpN;
    std::vector<float> x(n), y(n), z(3 * n, 123.0f);
    std::vector<half> hx(n), ho(n);
    std::vector<uint8_t> bits(14 * 32, 0xEE);
    for (int i = 0; i < n; ++i) {
        x[i] = 0.25f * float((i * 37) % 11) - 1.0f;
        y[i] = 0.25f * float((i * 53) % 9) - 0.75f;
        hx[i] = half(0.125f * float((i * 29) % 13) - 0.75f);
    }
    x[5] = NAN;
    y[7] = NAN;
    x[9] = 0.5f;
    FLA_SIM_LAUNCH(vec_compare_select, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(y.data()), G(hx.data()), G(bits.data()),
                   G(z.data()), G(ho.data()));
    auto bit = [&](int slot, int i) { return (bits[slot * 32 + i / 8] >> (i % 8)) & 1; };
    for (int m = 0; m < 6; ++m) {
        for (int i = 0; i < n; ++i) {
            CHECK(bit(m, i) == HostCmp(m, x[i], y[i]));
            CHECK(bit(6 + m, i) == HostCmp(m, x[i], 0.5f));
        }
        for (int b = 16; b < 32; ++b) CHECK(bits[m * 32 + b] == 0x55 && bits[(6 + m) * 32 + b] == 0x55);  // untouched
    }
    CHECK(bit(5, 5) == 1 && bit(2, 5) == 0 && bit(4, 7) == 0 && bit(8, 9) == 1);  // NaN: only NE; 0.5 == 0.5
    for (int i = 0; i < n; ++i) CHECK(bit(12, i) == (float(hx[i]) >= -0.25f));
    for (int i = 0; i < n; ++i) {
        CHECK(Bits(z[i]) == Bits(x[i] > y[i] ? x[i] : y[i]));
        CHECK(Bits(z[n + i]) == Bits(x[i] > 0.5f ? x[i] : -7.0f));
        const int j = i % 64;
        CHECK(Bits(z[2 * n + i]) == Bits(x[j] < y[j] ? x[i] : y[i]));
        CHECK(ho[i].bits == (float(hx[i]) >= -0.25f ? hx[i] : half(2.0f)).bits);
    }
    FlaSimCounters c{};
    CHECK(fla_sim_last_core_counters(0, &c, nullptr) == 0);
    CHECK(c.vector_elem_ops == uint64_t(14 * 16 + 13 * n + 4 * n));  // Duplicate + 13 compares + 4 selects
    return 0;
}

// Mask/repeat forms: Compare of a [2 x 64] float matrix against a broadcast row (src1RepStride 0)
// on lanes 0..31 only (their other bits are written 0); Select in VSEL_TENSOR_TENSOR_MODE with a
// count mask of 48 lanes (lanes 48..63 keep dst), consuming 64 bits per repeat; VSEL_CMPMASK_SPR
// (the same 64 bits every repeat); CompareScalar and scalar Select on half (128 lanes per repeat).
extern "C" __global__ __aicore__ void vec_select_repeat(GM_ADDR x, GM_ADDR row, GM_ADDR hx, GM_ADDR bitsOut, GM_ADDR zOut,
                                                        GM_ADDR hOut) {
    CmpSelectSet k(x, 128, row, 64, hx, 256, bitsOut, 3 * 32, zOut, 2 * 128, hOut);
    uint64_t low32[2] = {0xFFFFFFFFull, 0};
    Compare(k.bits, k.lx, k.ly, CMPMODE::LT, low32, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 0));  // 16 bytes
    CompareScalar(k.bits[32], k.lh, half(0.0f), CMPMODE::GT, 128, 2, UnaryRepeatParams());     // 32 bytes
    Duplicate(k.lz, -1.0f, 2 * 128);
    PipeBarrier<PIPE_V>();  // Select reads the compare k.bits
    Select(k.lz, k.bits, k.lx, k.lx, SELMODE::VSEL_TENSOR_TENSOR_MODE, 48, 2, BinaryRepeatParams());  // own value either way
    Select(k.lz[128], k.bits, k.lx, k.ly, SELMODE::VSEL_CMPMASK_SPR, 64, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    Duplicate(k.lhz, half(9.0f), 256);
    Select(k.lhz, k.bits[32], k.lh, half(0.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, 128, 2, BinaryRepeatParams());  // ReLU
    SetWait<HardEvent::V_MTE3>();
    DataCopy(k.gb, k.bits, 3 * 32);
    DataCopy(k.gz, k.lz, 2 * 128);
    DataCopy(k.gho, k.lhz, 256);
}

static int case_vec_select_repeat() {
    std::vector<float> x(128), row(64), z(256, 0.0f);
    std::vector<half> hx(256), ho(256);
    std::vector<uint8_t> bits(96, 0xEE);
    for (int i = 0; i < 128; ++i) x[i] = 0.5f * float((i * 17) % 13) - 3.0f;
    for (int j = 0; j < 64; ++j) row[j] = 0.5f * float((j * 5) % 7) - 1.5f;
    for (int i = 0; i < 256; ++i) hx[i] = half(0.25f * float((i * 11) % 9) - 1.0f);
    FLA_SIM_LAUNCH(vec_select_repeat, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(row.data()), G(hx.data()), G(bits.data()),
                   G(z.data()), G(ho.data()));
    auto bit = [&](int byteOff, int i) { return (bits[byteOff + i / 8] >> (i % 8)) & 1; };
    for (int r = 0; r < 2; ++r)
        for (int l = 0; l < 64; ++l) CHECK(bit(0, r * 64 + l) == (l < 32 && x[r * 64 + l] < row[l]));
    for (int i = 0; i < 256; ++i) CHECK(bit(32, i) == (float(hx[i]) > 0.0f));
    for (int r = 0; r < 2; ++r)
        for (int l = 0; l < 64; ++l) {
            const int i = r * 64 + l;
            CHECK(z[i] == (l < 48 ? x[i] : -1.0f));
            CHECK(z[128 + i] == (bit(0, l) ? x[i] : row[l]));  // repeat 1 reuses repeat 0's bits
        }
    for (int i = 0; i < 256; ++i) CHECK(ho[i].bits == (float(hx[i]) > 0.0f ? hx[i] : half(0.0f)).bits);
    FlaSimCounters c{};
    CHECK(fla_sim_last_core_counters(0, &c, nullptr) == 0);
    CHECK(c.vector_elem_ops == uint64_t(64 + 256 + 256 + 96 + 128 + 256 + 256));
    return 0;
}

// ReLU by Select, with queues over two cores: y = (x > 0) ? x : 0, equal to Relu bit for bit.
extern "C" __global__ __aicore__ void vec_relu_select(GM_ADDR x, GM_ADDR y, int32_t perCore) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TQue<QuePosition::VECOUT, 1> qy;
    TBuf<TPosition::VECCALC> bmask;
    pipe.InitBuffer(qx, 1, perCore * sizeof(float));
    pipe.InitBuffer(qy, 1, perCore * sizeof(float));
    pipe.InitBuffer(bmask, perCore / 8);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * perCore, perCore);
    gy.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * perCore, perCore);
    LocalTensor<float> lx = qx.AllocTensor<float>();
    DataCopy(lx, gx, perCore);
    qx.EnQue(lx);
    lx = qx.DeQue<float>();
    LocalTensor<uint8_t> mask = bmask.Get<uint8_t>();
    LocalTensor<float> ly = qy.AllocTensor<float>();
    CompareScalar(mask, lx, 0.0f, CMPMODE::GT, perCore);
    PipeBarrier<PIPE_V>();  // Select reads the compare bits
    Select(ly, mask, lx, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, perCore);
    qy.EnQue(ly);
    qx.FreeTensor(lx);
    ly = qy.DeQue<float>();
    DataCopy(gy, ly, perCore);
    qy.FreeTensor(ly);
}
static int case_vec_relu_select() {
    const int blocks = 2, per = 512, n = blocks * per;
    std::vector<float> x(n), y(n, NAN);
    for (int i = 0; i < n; ++i) x[i] = float((i * 7919) % 201 - 100) / 16.0f;
    x[3] = -0.0f;
    FLA_SIM_LAUNCH(vec_relu_select, KERNEL_TYPE_AIV_ONLY, blocks, G(x.data()), G(y.data()), per);
    for (int i = 0; i < n; ++i) CHECK(Bits(y[i]) == Bits(x[i] > 0.0f ? x[i] : 0.0f));
    FlaSimCounters tot{};
    CHECK(fla_sim_last_total_counters(&tot) == 0 && tot.vector_elem_ops == uint64_t(2 * n));
    return 0;
}

// Masked row max: rows of 64 floats, an element counts where x > t (elementwise threshold); the
// others become -inf by Select, then ReduceMax per row. A row with no valid element gives -inf.
extern "C" __global__ __aicore__ void vec_masked_max(GM_ADDR x, GM_ADDR t, GM_ADDR out, int32_t rows) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bt, bm, bs, bw, bo;
    const int32_t n = rows * 64;
    pipe.InitBuffer(bx, n * 4);
    pipe.InitBuffer(bt, n * 4);
    pipe.InitBuffer(bm, n / 8);
    pipe.InitBuffer(bs, n * 4);
    pipe.InitBuffer(bw, 64 * 4);
    pipe.InitBuffer(bo, rows * 8 * 4);
    LocalTensor<float> lx = bx.Get<float>(), lt = bt.Get<float>(), ls = bs.Get<float>(), lw = bw.Get<float>(),
                       lo = bo.Get<float>();
    LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
    GlobalTensor<float> gx, gt, go;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gt.SetGlobalBuffer((__gm__ float*)t, n);
    go.SetGlobalBuffer((__gm__ float*)out, rows * 8);
    DataCopy(lx, gx, n);
    DataCopy(lt, gt, n);
    SetWait<HardEvent::MTE2_V>();
    Compare(lm, lx, lt, CMPMODE::GT, n);
    PipeBarrier<PIPE_V>();  // Select reads the compare bits
    Select(ls, lm, lx, -INFINITY, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    PipeBarrier<PIPE_V>();  // ReduceMax reads the selected rows
    for (int32_t r = 0; r < rows; ++r) ReduceMax(lo[r * 8], ls[r * 64], lw, 64);
    SetWait<HardEvent::V_MTE3>();
    DataCopy(go, lo, rows * 8);
}
static int case_vec_masked_max() {
    const int rows = 4, n = rows * 64;
    std::vector<float> x(n), t(n), out(rows * 8, 0.0f);
    for (int i = 0; i < n; ++i) {
        x[i] = float((i * 31) % 97) / 8.0f - 6.0f;
        t[i] = float((i * 13) % 23) / 4.0f - 2.0f;
    }
    for (int j = 0; j < 64; ++j) t[2 * 64 + j] = 100.0f;  // row 2: nothing valid
    FLA_SIM_LAUNCH(vec_masked_max, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(t.data()), G(out.data()), rows);
    for (int r = 0; r < rows; ++r) {
        float m = -INFINITY;
        for (int j = 0; j < 64; ++j)
            if (x[r * 64 + j] > t[r * 64 + j]) m = std::max(m, x[r * 64 + j]);
        CHECK(Bits(out[r * 8]) == Bits(m));
    }
    CHECK(std::isinf(out[16]) && out[16] < 0);
    return 0;
}

// The setting of the two broken Compare / Select kernels: n floats of 1 in UB (a) and a 32-byte mask (m).
struct OnesAndMask {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bm;
    LocalTensor<float> a;
    LocalTensor<uint8_t> m;
    explicit OnesAndMask(uint32_t n) {
        pipe.InitBuffer(ba, n * 4);
        pipe.InitBuffer(bm, 32);
        a = ba.Get<float>();
        m = bm.Get<uint8_t>();
        Duplicate(a, 1.0f, n);
    }
};

// Broken: a Compare count of 100 floats (400 bytes) is not a whole number of 256-byte repeats.
extern "C" __global__ __aicore__ void compare_count_unaligned() {
    OnesAndMask k(128);
    Compare(k.m, k.a, k.a, CMPMODE::EQ, 100);
}

// Broken: a scalar src1 with VSEL_TENSOR_TENSOR_MODE.
extern "C" __global__ __aicore__ void select_mode_mismatch() {
    OnesAndMask k(64);
    PipeBarrier<PIPE_V>();
    CompareScalar(k.m, k.a, 0.0f, CMPMODE::GT, 64);
    Select(k.a, k.m, k.a, 0.0f, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
}

// Fixpipe L0C -> L1: C1 = A · B1 (half in, fp32 in L0C) goes to L1 as NZ half (CFG_NZ, F322F16),
// and becomes the A operand of C2 = C1 · B2 without a GM round trip (LoadData reads it after
// FIX_MTE1). C1 also goes to GM as NZ (CFG_NZ) and to L1 as ND float (CFG_ROW_MAJOR, read back by
// GetValue after FIX_S). Small integer inputs make every result exact. B1, B2 are given as B^T [N, K].
// bug 1: no FIX_MTE1 between the Fixpipe into L1 and the LoadData that reads it.
constexpr uint32_t kFxM = 32, kFxN = 32, kFxK = 32;
extern "C" __global__ __aicore__ void cube_fixpipe_l1(GM_ADDR a, GM_ADDR b1t, GM_ADDR b2t, GM_ADDR c1nz, GM_ADDR c1nd, GM_ADDR c2,
                                                      int32_t bug) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    TPipe pipe;
    TBuf<TPosition::A1> bA1, bC1;
    TBuf<TPosition::B1> bB1, bND;
    TBuf<TPosition::A2> bA2;
    TBuf<TPosition::B2> bB2;
    TBuf<TPosition::CO1> bC;
    pipe.InitBuffer(bA1, kFxM * kFxK * 2);
    pipe.InitBuffer(bC1, kFxM * kFxN * 2);
    pipe.InitBuffer(bB1, kFxK * kFxN * 2);
    pipe.InitBuffer(bND, kFxM * kFxN * 4);
    pipe.InitBuffer(bA2, kFxM * kFxK * 2);
    pipe.InitBuffer(bB2, kFxK * kFxN * 2);
    pipe.InitBuffer(bC, kFxM * kFxN * 4);
    LocalTensor<half> a1 = bA1.Get<half>(), c1 = bC1.Get<half>(), b1 = bB1.Get<half>(), a2 = bA2.Get<half>(),
                      b2 = bB2.Get<half>();
    LocalTensor<float> nd = bND.Get<float>(), lc = bC.Get<float>();
    GlobalTensor<half> gA, gB1, gB2, gC1;
    GlobalTensor<float> gC2;
    gA.SetGlobalBuffer((__gm__ half*)a, kFxM * kFxK);
    gB1.SetGlobalBuffer((__gm__ half*)b1t, kFxN * kFxK);
    gB2.SetGlobalBuffer((__gm__ half*)b2t, kFxN * kFxK);
    gC1.SetGlobalBuffer((__gm__ half*)c1nz, kFxM * kFxN);
    gC2.SetGlobalBuffer((__gm__ float*)c2, kFxM * kFxN);
    const uint8_t fracs = uint8_t((kFxK / 16) * (kFxN / 16));
    // C1 = A · B1
    DataCopy(a1, gA, Nd2NzParams(1, kFxM, kFxK, 0, kFxK, kFxM, 1, 0));
    DataCopy(b1, gB1, Nd2NzParams(1, kFxN, kFxK, 0, kFxK, kFxN, 1, 0));
    SetWait<HardEvent::MTE2_MTE1>();
    LoadA(a2, a1, kFxM, kFxK, false);
    LoadData(b2, b1, LoadData2dParams(0, fracs, 1, 0, 0, false, 0));
    SetWait<HardEvent::MTE1_M>();
    Mmad(lc, a2, b2, MmadParams(kFxM, kFxN, kFxK, 0, false, true));
    SetWait<HardEvent::M_FIX>();
    // NZ: dstStride = the distance between 16-column blocks: in 32-byte rows on 2201, in elements on 3510.
    const uint32_t nzStride = __NPU_ARCH__ == 3510 && bug != 2 ? kFxM * 16 : kFxM;
    FixpipeParamsV220 fh(kFxN, kFxM, kFxM, nzStride, false);
    fh.quantPre = F322F16;
    Fixpipe<half, float, CFG_NZ>(c1, lc, fh);
    Fixpipe<half, float, CFG_NZ>(gC1, lc, fh);
    Fixpipe<float, float, CFG_ROW_MAJOR>(nd, lc, FixpipeParamsV220(kFxN, kFxM, kFxM, kFxN, false));
    // C2 = C1 · B2: B2 replaces B1 in L1 (after the LoadData that read B1), C1 is A straight from L1.
    SetWait<HardEvent::MTE1_MTE2>();
    DataCopy(b1, gB2, Nd2NzParams(1, kFxN, kFxK, 0, kFxK, kFxN, 1, 0));
    SetWait<HardEvent::MTE2_MTE1>();
    if (bug != 1) SetWait<HardEvent::FIX_MTE1>();
    SetFlag<HardEvent::M_MTE1>(0);  // L0A/L0B were read by the first Mmad
    WaitFlag<HardEvent::M_MTE1>(0);
    LoadA(a2, c1, kFxM, kFxN, false);
    LoadData(b2, b1, LoadData2dParams(0, fracs, 1, 0, 0, false, 0));
    SetWait<HardEvent::MTE1_M>();
    SetFlag<HardEvent::FIX_M>(0);  // L0C was read by the Fixpipes
    WaitFlag<HardEvent::FIX_M>(0);
    Mmad(lc, a2, b2, MmadParams(kFxM, kFxN, kFxN, 0, false, true));
    SetWait<HardEvent::M_FIX>();
    Fixpipe<float, float, CFG_ROW_MAJOR>(gC2, lc, FixpipeParamsV220(kFxN, kFxM, kFxM, kFxN, false));
    SetWait<HardEvent::FIX_S>();
    __gm__ float* o = (__gm__ float*)c1nd;
    for (uint32_t i = 0; i < kFxM * kFxN; ++i) o[i] = nd.GetValue(i);
}
static int run_fixpipe_l1(int bug) {
    const int M = kFxM, N = kFxN, K = kFxK;
    std::vector<half> A(M * K), B1(N * K), B2(N * K), C1nz(M * N, half(-99.0f));
    std::vector<float> C1nd(M * N, NAN), C2(M * N, NAN);
    for (int i = 0; i < M * K; ++i) A[i] = half(float((i * 7 + 3) % 5 - 2));
    for (int i = 0; i < N * K; ++i) B1[i] = half(float((i * 11 + 1) % 5 - 2));
    for (int i = 0; i < N * K; ++i) B2[i] = half(float((i * 13 + 2) % 5 - 2));
    FLA_SIM_LAUNCH(cube_fixpipe_l1, KERNEL_TYPE_AIC_ONLY, 1, G(A.data()), G(B1.data()), G(B2.data()), G(C1nz.data()),
                   G(C1nd.data()), G(C2.data()), bug);
    std::vector<float> c1(M * N), c2(M * N);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float s = 0;
            for (int k = 0; k < K; ++k) s += float(A[i * K + k]) * float(B1[j * K + k]);
            c1[i * N + j] = s;
        }
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float s = 0;
            for (int k = 0; k < N; ++k) s += c1[i * N + k] * float(B2[j * N + k]);
            c2[i * N + j] = s;
        }
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            CHECK(C1nd[i * N + j] == c1[i * N + j]);
            CHECK(float(C1nz[(j / 16) * M * 16 + i * 16 + j % 16]) == c1[i * N + j]);  // NZ in GM
            CHECK(C2[i * N + j] == c2[i * N + j]);
        }
    FlaSimCounters tot{};
    CHECK(fla_sim_last_total_counters(&tot) == 0);
    CHECK(tot.cube_macs == uint64_t(2 * M * N * K));
    CHECK(tot.local_to_gm_bytes == uint64_t(M * N * 2 + M * N * 4));  // the L1 Fixpipes count no GM bytes
    CHECK(tot.gm_to_local_bytes == uint64_t(3 * M * K * 2));
    return 0;
}
static int case_cube_fixpipe_l1() { return run_fixpipe_l1(0); }
static int case_cube_missing_fix_mte1() { return run_fixpipe_l1(1); }
// An NZ Fixpipe with 2201's dstStride (32-byte rows) on 3510, where it counts elements: the blocks overlap.
static int case_fixpipe_nz_stride_units() { return run_fixpipe_l1(2); }

// An operator-package entry (sim_tiling.h): the tiling read from GM with REGISTER_TILING_DEFAULT +
// GET_TILING_DATA (and a prefix of it with GET_TILING_DATA_WITH_STRUCT), the user workspace after the
// system one. y = x * scale, and the first tile of y also written to the user workspace.
struct OppCaseTiling {
    uint32_t n;
    float scale;
};
struct OppCaseHead {
    uint32_t n;
};
extern "C" __global__ __aicore__ void opp_entry(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    REGISTER_TILING_DEFAULT(OppCaseTiling);
    GET_TILING_DATA(t, tiling);
    GET_TILING_DATA_WITH_STRUCT(OppCaseHead, head, tiling);
    if (head.n != t.n) return;  // leaves y unwritten: the test fails
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TQue<QuePosition::VECOUT, 1> qy;
    pipe.InitBuffer(qx, 1, kTile * sizeof(float));
    pipe.InitBuffer(qy, 1, kTile * sizeof(float));
    GlobalTensor<float> gx, gy, gw;
    gx.SetGlobalBuffer((__gm__ float*)x, t.n);
    gy.SetGlobalBuffer((__gm__ float*)y, t.n);
    gw.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), kTile);
    for (uint32_t i = 0; i < t.n / kTile; ++i) {
        LocalTensor<float> lx = qx.AllocTensor<float>();
        DataCopy(lx, gx[i * kTile], kTile);
        qx.EnQue(lx);
        lx = qx.DeQue<float>();
        LocalTensor<float> ly = qy.AllocTensor<float>();
        Muls(ly, lx, t.scale, kTile);
        qx.FreeTensor(lx);
        qy.EnQue(ly);
        ly = qy.DeQue<float>();
        DataCopy(gy[i * kTile], ly, kTile);
        if (i == 0) DataCopy(gw, ly, kTile);
        qy.FreeTensor(ly);
    }
}
static int run_opp_entry(bool nullTiling) {
    const OppCaseTiling t{4 * kTile, -0.5f};
    std::vector<uint8_t> tilingGm(sizeof(t));  // what the runtime copies into GM
    std::memcpy(tilingGm.data(), &t, sizeof(t));
    std::vector<float> x(t.n), y(t.n, NAN);
    for (uint32_t i = 0; i < t.n; ++i) x[i] = 0.25f * float(i) - 3.0f;
    const uint64_t sys = sim::kSysWorkspaceBytes, user = kTile * sizeof(float);
    std::vector<uint8_t> ws(sys + user, 0xAB);
    CHECK(GetUserWorkspace(nullptr) == nullptr);
    FLA_SIM_LAUNCH(opp_entry, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(y.data()), G(ws.data()),
                   nullTiling ? nullptr : G(tilingGm.data()));
    for (uint32_t i = 0; i < t.n; ++i) CHECK(y[i] == x[i] * t.scale);
    CHECK(std::memcmp(ws.data() + sys, y.data(), user) == 0);
    for (uint64_t i = 0; i < sys; ++i) CHECK(ws[i] == 0xAB);  // the system workspace is not the kernel's
    return 0;
}
static int case_opp_entry() { return run_opp_entry(false); }
static int case_opp_tiling_null() { return run_opp_entry(true); }

// =============================================================================================
// Cases that are one launch and nothing more (most broken kernels: the launch must fail with the
// message tests/sim/test_sim.py expects; a few correct ones, checked by the launch succeeding): the
// case, the kernel's name and function, its type and core count. A kernel with a GM argument gets x,
// 64 floats of 1.
struct LaunchOnly {
    const char* name;
    const char* kernel;
    KernelMetaType type;
    uint32_t blocks;
    void (*plain)();
    void (*withX)(GM_ADDR);

    int Run() const {
        std::vector<float> x(64, 1.0f);
        if (withX != nullptr) sim::Launch(kernel, type, blocks, withX, G(x.data()));
        else sim::Launch(kernel, type, blocks, plain);
        return 0;
    }
};
static const LaunchOnly kLaunchOnly[] = {
    {"hazard_queue_skipped", "queue_skipped", KERNEL_TYPE_AIV_ONLY, 2, nullptr, queue_skipped},
    {"copy_unaligned_count", "copy_unaligned_count", KERNEL_TYPE_AIV_ONLY, 1, nullptr, copy_unaligned_count},
    {"misaligned_operand", "misaligned_operand", KERNEL_TYPE_AIV_ONLY, 1, misaligned_operand, nullptr},
    {"misaligned_copy", "misaligned_copy", KERNEL_TYPE_AIV_ONLY, 1, nullptr, misaligned_copy},
    {"ub_overflow", "ub_overflow", KERNEL_TYPE_AIV_ONLY, 1, ub_overflow, nullptr},
    {"double_free", "double_free", KERNEL_TYPE_AIV_ONLY, 1, double_free, nullptr},
    {"use_after_free", "use_after_free", KERNEL_TYPE_AIV_ONLY, 1, use_after_free, nullptr},
    {"deque_empty", "deque_empty", KERNEL_TYPE_AIV_ONLY, 1, deque_empty, nullptr},
    {"alloc_exhausted", "alloc_exhausted", KERNEL_TYPE_AIV_ONLY, 1, alloc_exhausted, nullptr},
    {"wait_without_set", "wait_without_set", KERNEL_TYPE_AIV_ONLY, 1, wait_without_set, nullptr},
    {"unbalanced_set", "unbalanced_set", KERNEL_TYPE_AIV_ONLY, 1, unbalanced_set, nullptr},
    {"cross_deadlock", "cross_deadlock", KERNEL_TYPE_MIX_AIC_1_2, 2, cross_deadlock, nullptr},
    {"cross_overflow", "cross_overflow", KERNEL_TYPE_MIX_AIC_1_2, 1, cross_overflow, nullptr},
    {"cross_reserved_id", "cross_reserved_id", KERNEL_TYPE_MIX_AIC_1_2, 1, cross_reserved_id, nullptr},
    {"cross_in_aiv_only", "cross_in_aiv_only", KERNEL_TYPE_AIV_ONLY, 2, cross_in_aiv_only, nullptr},
    {"fill_l0a", "fill_l0a", KERNEL_TYPE_AIC_ONLY, 1, fill_l0a, nullptr},
    {"vector_order_missing", "vector_order_missing", KERNEL_TYPE_AIV_ONLY, 1, vector_order_missing, nullptr},
    {"cross_fifteen", "cross_fifteen", KERNEL_TYPE_MIX_AIC_1_2, 2, cross_fifteen, nullptr},
    {"syncall_deadlock", "syncall_deadlock", KERNEL_TYPE_AIV_ONLY, 3, syncall_deadlock, nullptr},
    {"kernel_type_mismatch", "type_mismatch", KERNEL_TYPE_AIV_ONLY, 1, type_mismatch, nullptr},
    {"gm_out_of_range", "gm_out_of_range", KERNEL_TYPE_AIV_ONLY, 1, nullptr, gm_out_of_range},
    {"bad_cast_mode", "bad_cast_mode", KERNEL_TYPE_AIV_ONLY, 1, bad_cast_mode, nullptr},
    {"ub_on_aic", "ub_on_aic", KERNEL_TYPE_MIX_AIC_1_2, 1, ub_on_aic, nullptr},
    {"bad_mask", "bad_mask", KERNEL_TYPE_AIV_ONLY, 1, bad_mask, nullptr},
    {"cube_l0a_overflow", "cube_l0a_overflow", KERNEL_TYPE_AIC_ONLY, 1, cube_l0a_overflow, nullptr},
    {"compare_count_unaligned", "compare_count_unaligned", KERNEL_TYPE_AIV_ONLY, 1, compare_count_unaligned, nullptr},
    {"select_mode_mismatch", "select_mode_mismatch", KERNEL_TYPE_AIV_ONLY, 1, select_mode_mismatch, nullptr},
};

static std::map<std::string, std::function<int()>> WithLaunchOnly(std::map<std::string, std::function<int()>> cases) {
    for (const LaunchOnly& c : kLaunchOnly) cases.emplace(c.name, [&c] { return c.Run(); });
    return cases;
}

static const std::map<std::string, std::function<int()>>& Cases() {
    static const std::map<std::string, std::function<int()>> cases = WithLaunchOnly({
        {"vec_add", case_vec_add},
        {"vec_ops", case_vec_ops},
        {"vec_repeat", case_vec_repeat},
        {"vec_fma", case_vec_fma},
        {"f16_numerics", case_f16_numerics},
        {"reduce", case_reduce},
        {"copies", case_copies},
        {"mixed_ids", case_mixed_ids},
        {"sync_all", case_sync_all},
        {"scalar_ok", case_scalar_ok},
        {"poison", case_poison},
        {"big_ub", case_big_ub},
#if FLA_SIM_SOC == FLA_SIM_SOC_A5
        {"bf16_add", case_bf16_add},
#endif
        {"hazard_raw_fixed", case_hazard_raw_fixed},
        {"hazard_raw", case_hazard_raw},
        {"hazard_raw_barrier", case_hazard_raw_barrier},
        {"hazard_war_fixed", case_hazard_war_fixed},
        {"hazard_war", case_hazard_war},
        {"hazard_scalar", case_hazard_scalar},
        {"cube_matmul_f16", case_cube_matmul_f16},
        {"cube_matmul_bf16", case_cube_matmul_bf16},
        {"cube_matmul_bf16_bt", case_cube_matmul_bf16_bt},
        {"cube_matmul_f16_bt", case_cube_matmul_f16_bt},
        {"cube_matmul_f32", case_cube_matmul_f32},
        {"cube_layout_trait", case_cube_layout_trait},
        {"cube_mixed", case_cube_mixed},
        {"cube_k_pad_missing", case_cube_k_pad_missing},
        {"cube_l1_copies", case_cube_l1_copies},
        {"cube_missing_mte1_m", case_cube_missing_mte1_m},
        {"cube_missing_m_fix", case_cube_missing_m_fix},
        {"cube_missing_m_mte1", case_cube_missing_m_mte1},
        {"cube_fixpipe_quant", case_cube_fixpipe_quant},
        {"cube_f32_transpose", case_cube_f32_transpose},
        {"cube_nd2nz_unaligned", case_cube_nd2nz_unaligned},
        {"cube_nd2nz_range", case_cube_nd2nz_range},
        {"cube_loaddata_misaligned", case_cube_loaddata_misaligned},
        {"vec_compare_select", case_vec_compare_select},
        {"vec_select_repeat", case_vec_select_repeat},
        {"vec_relu_select", case_vec_relu_select},
        {"vec_masked_max", case_vec_masked_max},
        {"cube_fixpipe_l1", case_cube_fixpipe_l1},
        {"cube_missing_fix_mte1", case_cube_missing_fix_mte1},
        {"fixpipe_nz_stride_units", case_fixpipe_nz_stride_units},
        {"cube_missing_m_barrier", case_cube_missing_m_barrier},
        {"cube_gemv_mode", case_cube_gemv_mode},
        {"opp_entry", case_opp_entry},
        {"opp_tiling_null", case_opp_tiling_null},
    });
    return cases;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <case>|--list\n", argv[0]);
        return 64;
    }
    const std::string name = argv[1];
    if (name == "--list") {
        for (const auto& kv : Cases()) std::printf("%s\n", kv.first.c_str());
        return 0;
    }
    auto it = Cases().find(name);
    if (it == Cases().end()) {
        std::fprintf(stderr, "unknown case %s\n", name.c_str());
        return 64;
    }
    try {
        return it->second();
    } catch (const sim::LaunchError& e) {
        // The C interface must report the same failure.
        if (fla_sim_last_launch_ok() != 0 || std::string(fla_sim_last_error()) != e.what()) {
            std::fprintf(stderr, "C interface disagrees with the LaunchError\n");
            return 3;
        }
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
