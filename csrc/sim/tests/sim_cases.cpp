// Test kernels of the host simulation: correct kernels that must run and compute the right values,
// and deliberately broken kernels that must fail with a specific message.
//
//   sim_cases_<soc> <case>    exit 0: the case passed (for a broken kernel: its launch failed);
//                             exit 1: a launch failed — the fault message is on stderr;
//                             exit 2: wrong values or counters.
//   sim_cases_<soc> --list    the case names.
// tests/sim/test_sim.py holds the expected outcome and message of every case.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "sim_api.h"

using namespace AscendC;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
            return 2;                                                             \
        }                                                                         \
    } while (0)

static GM_ADDR G(void* p) { return static_cast<GM_ADDR>(p); }
static uint32_t Bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

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
    for (int i = 0; i < n; ++i) { x[i] = 0.5f * i; y[i] = 1.0f - i; }
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
    return 0;
}

// Explicit flags over TBufs: MTE2 -> V -> MTE3, and back (V -> MTE2, MTE3 -> V) for the next tile.
// Every count-form float op against the host's float result.
enum OpId { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, OP_MULS, OP_ADDS, OP_MAXS, OP_MINS, OP_EXP, OP_LN, OP_ABS, OP_SQRT,
            OP_RSQRT, OP_RECIP, OP_RELU, OP_DUP, OP_COUNT };
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
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    for (int op = 0; op < OP_COUNT; ++op) {
        if (op > 0) {  // lz was read by MTE3 for the previous op
            SetFlag<HardEvent::MTE3_V>(1);
            WaitFlag<HardEvent::MTE3_V>(1);
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
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(go[int64_t(op) * n], lz, n);
    }
}

static int case_vec_ops() {
    const int n = 200;  // 800 bytes: 32-byte multiple
    std::vector<float> x(n), y(n), out(n * OP_COUNT, NAN);
    for (int i = 0; i < n; ++i) { x[i] = std::sin(0.37f * i) * 3.0f; y[i] = 0.25f + 0.03f * i; }
    FLA_SIM_LAUNCH(vec_ops, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(y.data()), G(out.data()), n);
    for (int i = 0; i < n; ++i) {
        const float a = x[i], b = y[i];
        const float expect[OP_COUNT] = {a + b, a - b, a * b, a / b, a > b ? a : b, a < b ? a : b, a * 0.3f, a + -1.25f,
                                        a > 0.5f ? a : 0.5f, a < 0.5f ? a : 0.5f, std::exp(a), std::log(b), std::fabs(a),
                                        std::sqrt(b), 1.0f / std::sqrt(b), 1.0f / b, a > 0 ? a : 0.0f, 7.5f};
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
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    const int R = rows * 64;
    // 1) broadcast multiply: each repeat = one row; src1 repeat stride 0.
    Mul(lo, lm, lv, 64, uint8_t(rows), BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    // 2) lanes 0..31 of each row only (bit mask), others keep the Duplicate value.
    Duplicate(lo[R], -1.0f, R);
    uint64_t bitmask[2] = {0x00000000FFFFFFFFull, 0};
    Add(lo[R], lm, lm, bitmask, uint8_t(rows), BinaryRepeatParams());
    // 3) Exp then Muls in repeat form on the whole matrix.
    Exp(lo[2 * R], lm, 64, uint8_t(rows), UnaryRepeatParams());
    Muls(lo[2 * R], lo[2 * R], 2.0f, 64, uint8_t(rows), UnaryRepeatParams());
    // 4) Duplicate with a 16-lane mask and block stride 2: lanes 0..7 -> block 0, 8..15 -> block 2.
    Duplicate(lo[3 * R], 0.0f, R);
    Duplicate(lo[3 * R], 3.0f, 16, uint8_t(rows), 2, 8);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
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
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Adds(lo, lh, half(1.0f), 64);                 // rounded to half per instruction
    Mul(lo[64], lh, lh, 64);
    Cast(lo[128], lf, RoundMode::CAST_RINT, 64);
    Cast(lo[192], lf, RoundMode::CAST_TRUNC, 64);
    Cast(lo[256], lf, RoundMode::CAST_ODD, 64);
    Cast(lb, lf, RoundMode::CAST_RINT, 64);
    Cast(lb[64], lf, RoundMode::CAST_FLOOR, 64);
    Cast(lb[128], lf, RoundMode::CAST_CEIL, 64);
    Cast(lb[192], lf, RoundMode::CAST_ROUND, 64);
    Cast(lb[256], lf, RoundMode::CAST_TRUNC, 64);
    Cast(lff, lb, RoundMode::CAST_NONE, 64);      // bf16 -> float, exact
    Cast(lff[64], lh, RoundMode::CAST_NONE, 64);  // half -> float, exact
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gho, lo, 64 * 5);
    DataCopy(gbo, lb, 64 * 5);
    DataCopy(gfo, lff, 128);
}

static int case_f16_numerics() {
    std::vector<half> h(64), ho(64 * 8);
    std::vector<float> f(64), fo(128);
    std::vector<bfloat16_t> bo(64 * 8);
    for (int i = 0; i < 64; ++i) {
        h[i] = half(2048.0f + 2.0f * (i % 4));       // 2048 + 1 is a tie in half: RNE keeps 2048
        f[i] = 1.0f + float(i) * (1.0f / 4096.0f);   // between bf16/half neighbours
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
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Duplicate(lo, 0.0f, 256);
    ReduceMax(lo, lx, lt, n, true);        // lo[0] = max, lo[1] = index bits
    ReduceSum(lo[8], lx, lt, n);           // lo[8] = sum
    WholeReduceSum(lo[16], lx, 64, 4, 1, 1, 8);  // lo[16..19] = sums of rows 0..3 (64 each)
    WholeReduceMax(lo[24], lx, 64, 4, 1, 1, 8);  // (value, index) pairs at lo[24..31]
    Brcb(lo[64], lx, 1, BrcbRepeatParams(1, 8)); // x[0..7] each into one 8-float block
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, lo, 256);
}

static int case_reduce() {
    const int n = 256;
    std::vector<float> x(n), out(256, NAN);
    for (int i = 0; i < n; ++i) x[i] = float((i * 37) % 101) - 50.0f + 0.25f;
    FLA_SIM_LAUNCH(reduce, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(out.data()), n);
    int am = 0;
    double sum = 0;
    for (int i = 0; i < n; ++i) { if (x[i] > x[am]) am = i; sum += x[i]; }
    CHECK(out[0] == x[am]);
    uint32_t idx;
    std::memcpy(&idx, &out[1], 4);
    CHECK(idx == uint32_t(am));
    CHECK(std::fabs(out[8] - sum) < 1e-3);
    for (int r = 0; r < 4; ++r) {
        double s = 0;
        int a = r * 64;
        for (int j = 0; j < 64; ++j) { s += x[r * 64 + j]; if (x[r * 64 + j] > x[a]) a = r * 64 + j; }
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
    DataCopyPad(gd2, d, DataCopyExtParams(4, 32, 0, 4, 0));   // whole padded rows, GM gap 4 bytes
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
            buf[b * 4 + 0] = r;       // the AIC produces ...
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
    CHECK(fla_sim_last_core_counters(2, nullptr, &info) == 0 && info.core_type == 1 && info.block_idx == 1 && info.sub_block_idx == 1);
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> l = b.Get<float>();
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    DataCopy(l, gx, 64);
    SetFlag<HardEvent::MTE2_S>(0);
    WaitFlag<HardEvent::MTE2_S>(0);
    const float first = l.GetValue(0);
    SetFlag<HardEvent::S_V>(0);
    WaitFlag<HardEvent::S_V>(0);
    Muls(l, l, first, 64);
    SetFlag<HardEvent::V_S>(0);
    WaitFlag<HardEvent::V_S>(0);
    ((__gm__ float*)out)[0] = l.GetValue(5);
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
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Add(l[64], l, l, 64);
    Adds(l[64], l[64], bfloat16_t(1.0f), 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
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
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    pipe.InitBuffer(bx, 256);
    pipe.InitBuffer(bz, 256);
    LocalTensor<float> lx = bx.Get<float>(), lz = bz.Get<float>();
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    go.SetGlobalBuffer((__gm__ float*)out, 64);
    DataCopy(lx, gx, 64);
    if (withFlag == 1) {
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
    } else if (withFlag == 2) {
        PipeBarrier<PIPE_ALL>();
    }
    Add(lz, lx, lx, 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(go, lz, 64);
}
static int run_missing_waitflag(int withFlag) {
    std::vector<float> x(64, 1.0f), out(64);
    FLA_SIM_LAUNCH(missing_waitflag, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(out.data()), withFlag);
    for (float v : out) CHECK(v == 2.0f);
    return 0;
}
static int case_hazard_raw_fixed() { return run_missing_waitflag(1); }
static int case_hazard_raw_barrier() { return run_missing_waitflag(2); }
static int case_hazard_raw() { return run_missing_waitflag(0); }

// Write after read: the next tile's DataCopy overwrites a buffer the vector unit may still read.
extern "C" __global__ __aicore__ void missing_war_flag(GM_ADDR x, GM_ADDR out, int32_t withFlag) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    pipe.InitBuffer(bx, 256);
    pipe.InitBuffer(bz, 256);
    LocalTensor<float> lx = bx.Get<float>(), lz = bz.Get<float>();
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer((__gm__ float*)x, 128);
    go.SetGlobalBuffer((__gm__ float*)out, 128);
    for (int t = 0; t < 2; ++t) {
        if (t > 0 && withFlag) {
            SetFlag<HardEvent::V_MTE2>(0);
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        DataCopy(lx, gx[t * 64], 64);
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
        if (t > 0) {
            SetFlag<HardEvent::MTE3_V>(0);
            WaitFlag<HardEvent::MTE3_V>(0);
        }
        Muls(lz, lx, 2.0f, 64);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(go[t * 64], lz, 64);
    }
}
static int run_war(int withFlag) {
    std::vector<float> x(128, 1.0f), out(128);
    FLA_SIM_LAUNCH(missing_war_flag, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()), G(out.data()), withFlag);
    for (float v : out) CHECK(v == 2.0f);
    return 0;
}
static int case_hazard_war_fixed() { return run_war(1); }
static int case_hazard_war() { return run_war(0); }

// A scalar read of UB right after the DMA that fills it (needs MTE2_S).
extern "C" __global__ __aicore__ void scalar_hazard(GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> l = b.Get<float>();
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    DataCopy(l, gx, 64);
    ((__gm__ float*)out)[0] = l.GetValue(3);
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
static int case_hazard_queue_skipped() {
    std::vector<float> x(64, 1.0f);
    FLA_SIM_LAUNCH(queue_skipped, KERNEL_TYPE_AIV_ONLY, 2, G(x.data()));
    return 0;
}

// DataCopy of 10 floats = 40 bytes: violates the 32-byte rule.
extern "C" __global__ __aicore__ void copy_unaligned_count(GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    DataCopy(b.Get<float>(), gx, 10);
}
static int case_copy_unaligned_count() {
    std::vector<float> x(64, 1.0f);
    FLA_SIM_LAUNCH(copy_unaligned_count, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()));
    return 0;
}

// A vector operand starting 12 bytes into a buffer.
extern "C" __global__ __aicore__ void misaligned_operand() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> l = b.Get<float>();
    Duplicate(l, 1.0f, 256);
    Add(l[3], l[64], l[128], 32);
}
static int case_misaligned_operand() {
    FLA_SIM_LAUNCH(misaligned_operand, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

// Same rule for a DataCopy destination.
extern "C" __global__ __aicore__ void misaligned_copy(GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    DataCopy(b.Get<float>()[4], gx, 16);
}
static int case_misaligned_copy() {
    std::vector<float> x(64, 1.0f);
    FLA_SIM_LAUNCH(misaligned_copy, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()));
    return 0;
}

// Two 128 KB buffers exceed UB on every SoC.
extern "C" __global__ __aicore__ void ub_overflow() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 128 * 1024);
}
static int case_ub_overflow() {
    FLA_SIM_LAUNCH(ub_overflow, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

extern "C" __global__ __aicore__ void double_free() {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> l = q.AllocTensor<float>();
    q.FreeTensor(l);
    q.FreeTensor(l);
}
static int case_double_free() {
    FLA_SIM_LAUNCH(double_free, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
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
static int case_use_after_free() {
    FLA_SIM_LAUNCH(use_after_free, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

extern "C" __global__ __aicore__ void deque_empty() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> l = q.DeQue<float>();
    (void)l;
}
static int case_deque_empty() {
    FLA_SIM_LAUNCH(deque_empty, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

extern "C" __global__ __aicore__ void alloc_exhausted() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    LocalTensor<float> b = q.AllocTensor<float>();
    LocalTensor<float> c = q.AllocTensor<float>();
    (void)a; (void)b; (void)c;
}
static int case_alloc_exhausted() {
    FLA_SIM_LAUNCH(alloc_exhausted, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

extern "C" __global__ __aicore__ void wait_without_set() {
    WaitFlag<HardEvent::V_MTE3>(2);
}
static int case_wait_without_set() {
    FLA_SIM_LAUNCH(wait_without_set, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

extern "C" __global__ __aicore__ void unbalanced_set() {
    SetFlag<HardEvent::MTE3_MTE2>(1);
}
static int case_unbalanced_set() {
    FLA_SIM_LAUNCH(unbalanced_set, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

// The AIVs wait on a flag the AIC never sets.
extern "C" __global__ __aicore__ void cross_deadlock() {
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(1);
        return;
    }
    CrossCoreWaitFlag(1);
    CrossCoreWaitFlag(3);
}
static int case_cross_deadlock() {
    FLA_SIM_LAUNCH(cross_deadlock, KERNEL_TYPE_MIX_AIC_1_2, 2);
    return 0;
}

// The AIC runs ahead: 16 sets with nobody waiting overflow the 4-bit counter.
extern "C" __global__ __aicore__ void cross_overflow() {
    if ASCEND_IS_AIC {
        for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_FIX>(5);
        return;
    }
}
static int case_cross_overflow() {
    FLA_SIM_LAUNCH(cross_overflow, KERNEL_TYPE_MIX_AIC_1_2, 1);
    return 0;
}
// 15 pending sets are legal.
extern "C" __global__ __aicore__ void cross_fifteen() {
    if ASCEND_IS_AIC {
        for (int i = 0; i < 15; ++i) CrossCoreSetFlag<2, PIPE_FIX>(5);
        return;
    }
    for (int i = 0; i < 15; ++i) CrossCoreWaitFlag(5);
}
static int case_cross_fifteen() {
    FLA_SIM_LAUNCH(cross_fifteen, KERNEL_TYPE_MIX_AIC_1_2, 2);
    return 0;
}

// Only block 0 reaches the SyncAll.
extern "C" __global__ __aicore__ void syncall_deadlock() {
    if (GetBlockIdx() == 0) SyncAll();
}
static int case_syncall_deadlock() {
    FLA_SIM_LAUNCH(syncall_deadlock, KERNEL_TYPE_AIV_ONLY, 3);
    return 0;
}

extern "C" __global__ __aicore__ void type_mismatch() {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
}
static int case_kernel_type_mismatch() {
    FLA_SIM_LAUNCH(type_mismatch, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

extern "C" __global__ __aicore__ void gm_out_of_range(GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    GlobalTensor<float> gx;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    DataCopy(b.Get<float>(), gx[32], 64);
}
static int case_gm_out_of_range() {
    std::vector<float> x(64, 1.0f);
    FLA_SIM_LAUNCH(gm_out_of_range, KERNEL_TYPE_AIV_ONLY, 1, G(x.data()));
    return 0;
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
static int case_bad_cast_mode() {
    FLA_SIM_LAUNCH(bad_cast_mode, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

// A vector op on an AIC core's buffer: UB does not exist on the Cube core.
extern "C" __global__ __aicore__ void ub_on_aic() {
    if ASCEND_IS_AIC {
        TPipe pipe;
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 256);
    }
}
static int case_ub_on_aic() {
    FLA_SIM_LAUNCH(ub_on_aic, KERNEL_TYPE_MIX_AIC_1_2, 1);
    return 0;
}

// Bad repeat-form mask: 65 lanes of float.
extern "C" __global__ __aicore__ void bad_mask() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> l = b.Get<float>();
    Duplicate(l, 1.0f, 256);
    Add(l, l, l, 65, 1, BinaryRepeatParams());
}
static int case_bad_mask() {
    FLA_SIM_LAUNCH(bad_mask, KERNEL_TYPE_AIV_ONLY, 1);
    return 0;
}

// =============================================================================================
static const std::map<std::string, std::function<int()>>& Cases() {
    static const std::map<std::string, std::function<int()>> cases = {
        {"vec_add", case_vec_add},
        {"vec_ops", case_vec_ops},
        {"vec_repeat", case_vec_repeat},
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
        {"hazard_queue_skipped", case_hazard_queue_skipped},
        {"copy_unaligned_count", case_copy_unaligned_count},
        {"misaligned_operand", case_misaligned_operand},
        {"misaligned_copy", case_misaligned_copy},
        {"ub_overflow", case_ub_overflow},
        {"double_free", case_double_free},
        {"use_after_free", case_use_after_free},
        {"deque_empty", case_deque_empty},
        {"alloc_exhausted", case_alloc_exhausted},
        {"wait_without_set", case_wait_without_set},
        {"unbalanced_set", case_unbalanced_set},
        {"cross_deadlock", case_cross_deadlock},
        {"cross_overflow", case_cross_overflow},
        {"cross_fifteen", case_cross_fifteen},
        {"syncall_deadlock", case_syncall_deadlock},
        {"kernel_type_mismatch", case_kernel_type_mismatch},
        {"gm_out_of_range", case_gm_out_of_range},
        {"bad_cast_mode", case_bad_cast_mode},
        {"ub_on_aic", case_ub_on_aic},
        {"bad_mask", case_bad_mask},
    };
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
