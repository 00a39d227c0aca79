// fla-npu host simulation of Ascend C — the Cube path (AIC cores): GM -> L1 with ND -> NZ,
// InitConstValue, LoadData L1 -> L0A/L0B, Mmad into L0C, Fixpipe L0C -> GM/L1 (ND or NZ).
//
// Fractal layouts (reference/ascendc.md §1.7). A fractal is 16 rows x C0 columns, C0 = 32 bytes /
// sizeof(T) (16 for half/bfloat16_t, 8 for float): 512 bytes in L1/L0A/L0B; the fp32 fractal of
// L0C is 16 x 16 (1024 bytes). Big letter = order of the fractals, small letter = order inside one:
//   L1 (A1/B1)  NZ  what DataCopy(Nd2NzParams) writes: fractals column-major ("N"), each row-major
//                   ("z"); element (r, c) at (c / C0) * dstNzC0Stride * C0 + r * C0 + c % C0.
//   L0A (A2)    A (m x k) in fractals of 16 (m) x C0 (k), rows inside a fractal along m:
//               a2/a3: Zz (fractals row-major);  a5: Nz (fractals column-major) — CubeTraits::l0a.
//   L0B (B2)    B (k x n): Zn — fractals of C0 (k) x 16 (n) in row-major order, each stored
//               n-major (16 rows of n, C0 contiguous k values each), on every SoC.
//   L0C (CO1)   C (m x n, fp32): Nz — 16 x 16 fractals column-major, row-major inside; element
//               (r, c) at (c / 16) * ceil16(m) * 16 + r * 16 + c % 16.
// Pipes: DataCopy GM -> L1 and InitConstValue on L1 are MTE2, LoadData and InitConstValue on
// L0A/L0B are MTE1, Mmad is M, Fixpipe is FIX; every operand goes through the hazard checker.
// Numerics: Mmad multiplies in exact products and accumulates in fp32 with one rounding per
// multiply-add (fmaf, k in increasing order) — fp16/bf16 products are exact in fp32, fp32 inputs
// are IEEE fp32 (no HF32). Fixpipe converts fp32 -> fp16/bf16 with round-to-nearest-even.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "sim_memory.h"

namespace AscendC {

namespace sim {

constexpr uint32_t kFractalRows = 16;    // BLOCK_CUBE: rows of a fractal (and n-columns of B/C)
constexpr uint32_t kFractalBytes = 512;  // one L1/L0A/L0B fractal
template <class T>
constexpr uint32_t kC0 = kBlock / static_cast<uint32_t>(sizeof(T));

enum class Fractal : uint8_t { Zz, Nz, Zn };
inline const char* FractalName(Fractal f) { return f == Fractal::Zz ? "Zz" : f == Fractal::Nz ? "Nz" : "Zn"; }

// Per-SoC Cube traits (one definition, selected by FLA_SIM_SOC; no per-SoC copies of the code).
struct CubeTraits {
    Fractal l0a;         // layout Mmad reads A from (L0A)
    Fractal l0b;         // layout Mmad reads B from (L0B)
    Fractal l0c;         // layout Mmad writes C to (L0C)
    bool fp32Inputs;     // float x float -> float Mmad (IEEE fp32)
    uint32_t l0abAlign;  // Mmad/LoadData operand alignment in L0A/L0B (bytes)
    uint32_t l0cAlign;   // Mmad destination alignment in L0C (bytes): one fp32 fractal
};
inline constexpr CubeTraits kCube{kSocFacts.l0aNz ? Fractal::Nz : Fractal::Zz, Fractal::Zn, Fractal::Nz, true, 512, 1024};

// Element offset of (r, c) in an R x C matrix stored in fractals of fr x fc (R, C padded to them).
inline uint64_t FractalOffset(Fractal f, uint64_t r, uint64_t c, uint64_t R, uint64_t C, uint32_t fr, uint32_t fc) {
    const uint64_t ri = r / fr, rr = r % fr, ci = c / fc, cc = c % fc, n = uint64_t(fr) * fc;
    switch (f) {
        case Fractal::Zz: return (ri * (C / fc) + ci) * n + rr * fc + cc;
        case Fractal::Nz: return (ci * (R / fr) + ri) * n + rr * fc + cc;
        default: return (ri * (C / fc) + ci) * n + cc * fr + rr;  // Zn
    }
}
inline uint64_t CeilTo(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

template <class T>
inline void RequireArena(const LocalTensor<T>& t, ArenaKind want, const char* op, const char* operand, const char* where) {
    const Slot* s = t.SimSlot();
    if (!s) Fail("uninitialised LocalTensor", Fmt("%s of %s was never obtained from a queue or TBuf", operand, op));
    if (s->arena != want)
        Fail("bad Cube operand position",
             Fmt("%s of %s lives in %s (%s); it must be in %s", operand, op, ArenaName(s->arena), s->name.c_str(), where));
}

}  // namespace sim

// ---------------------------------------------------------------------------------------------
// GM (ND, row-major) -> L1 (NZ). Units: nValue rows, dValue / srcDValue / srcNdMatrixStride /
// dstNzMatrixStride elements, dstNzC0Stride / dstNzNStride in C0 units (32-byte rows of the NZ
// matrix). A row's last 32-byte block is zero-filled past dValue (as the device does); rows the
// copy does not reach (padding up to a multiple of 16) keep their contents — pad them yourself.
struct Nd2NzParams {
    uint16_t ndNum = 1;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
    Nd2NzParams() = default;
    Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn, uint16_t srcDValueIn,
                uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn),
          nValue(nValueIn),
          dValue(dValueIn),
          srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn),
          dstNzC0Stride(dstNzC0StrideIn),
          dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
};

template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p) {
    using namespace sim;
    BeginOp(PIPE_MTE2, "DataCopy(GM->L1, Nd2NzParams)");
    const char* op = "DataCopy(GM->L1, Nd2NzParams)";
    RequireArena(dst, ArenaKind::L1, op, "dst", "L1 (A1/B1): the simulation converts ND -> NZ into L1 only");
    dst.SimAlign(kBlock, "dst");
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // a NOP on the device
    constexpr uint32_t c0 = kC0<T>;
    if (p.srcDValue < p.dValue)
        Fail("Nd2NzParams", Fmt("srcDValue %u < dValue %u: source rows would overlap", p.srcDValue, p.dValue));
    // The documented ranges (DataCopy（GMToL1随路转换-ND2NZ搬运）.md, table 4): ndNum <= 4095, nValue,
    // dstNzC0Stride, dstNzNStride and dstNzMatrixStride <= 16384 (the uint16 fields hold more).
    if (p.ndNum > 4095 || p.nValue > 16384 || p.dstNzC0Stride > 16384 || p.dstNzNStride > 16384 || p.dstNzMatrixStride > 16384)
        Fail("Nd2NzParams range",
             Fmt("ndNum %u (<= 4095), nValue %u, dstNzC0Stride %u, dstNzNStride %u, dstNzMatrixStride %u (each <= 16384)",
                 p.ndNum, p.nValue, p.dstNzC0Stride, p.dstNzNStride, p.dstNzMatrixStride));
    if (p.dstNzNStride == 0 || p.dstNzC0Stride == 0)
        Fail("Nd2NzParams", Fmt("dstNzC0Stride %u and dstNzNStride %u must be >= 1 (C0 units)", p.dstNzC0Stride, p.dstNzNStride));
    const uint64_t dBlocks = (uint64_t(p.dValue) + c0 - 1) / c0;
    if (dBlocks > 1 && uint64_t(p.dstNzC0Stride) < (uint64_t(p.nValue) - 1) * p.dstNzNStride + 1)
        Fail("Nd2NzParams overlap",
             Fmt("dstNzC0Stride %u rows is less than the %u rows of one C0 column: the NZ columns overlap in L1", p.dstNzC0Stride,
                 p.nValue));
    if (dBlocks > 1 && p.dstNzC0Stride % kFractalRows != 0)
        Fail("Nd2NzParams fractal alignment",
             Fmt("dstNzC0Stride %u rows is not a multiple of 16: the C0 columns of the NZ matrix would not start on a fractal "
                 "boundary "
                 "(LoadData moves whole 16 x C0 fractals of 512 bytes); pad the row count to a multiple of 16",
                 p.dstNzC0Stride));
    if (p.ndNum > 1 && (uint64_t(p.dstNzMatrixStride) * sizeof(T)) % kBlock != 0)
        Fail("Nd2NzParams", Fmt("dstNzMatrixStride %u elements is not a multiple of 32 bytes", p.dstNzMatrixStride));
    const uint64_t dstSpan = (uint64_t(p.ndNum) - 1) * p.dstNzMatrixStride + (dBlocks - 1) * p.dstNzC0Stride * c0 +
                             (uint64_t(p.nValue) - 1) * p.dstNzNStride * c0 + c0;
    const uint64_t srcSpan = (uint64_t(p.ndNum) - 1) * p.srcNdMatrixStride + (uint64_t(p.nValue) - 1) * p.srcDValue + p.dValue;
    T* d = dst.SimData(dstSpan, "dst");
    src.SimCheck(0, srcSpan, op);
    const T* s = src.SimPtr();
    for (uint64_t i = 0; i < p.ndNum; ++i)
        for (uint64_t r = 0; r < p.nValue; ++r)
            for (uint64_t b = 0; b < dBlocks; ++b) {
                const uint64_t dof = i * p.dstNzMatrixStride + b * p.dstNzC0Stride * c0 + r * p.dstNzNStride * c0;
                const uint64_t sof = i * p.srcNdMatrixStride + r * p.srcDValue + b * c0;
                const uint64_t n = std::min<uint64_t>(c0, p.dValue - b * c0);
                dst.SimTouch(dof, c0, true);
                std::memset(static_cast<void*>(d + dof), 0, kBlock);
                std::memcpy(static_cast<void*>(d + dof), s + sof, n * sizeof(T));
            }
    CountGmToLocal(uint64_t(p.ndNum) * p.nValue * p.dValue * sizeof(T), s);
}

// ---------------------------------------------------------------------------------------------
// Fill L1 or L0A/L0B with a constant: repeatTimes repeats of blockNum blocks, dstGap blocks between
// repeats; a block is 32 bytes in L1 (pipe MTE2) and 512 bytes in L0A/L0B (pipe MTE1).
template <class T>
struct InitConstValueParams {
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue{};
    InitConstValueParams() = default;
    InitConstValueParams(uint16_t repeatTimesIn, uint16_t blockNumIn, uint16_t dstGapIn, T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
};

template <class T, class U>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<U>& p) {
    static_assert(std::is_same_v<T, U>, "fla-npu sim: InitConstValue: the value type must be the tensor's element type");
    using namespace sim;
    const Slot* s = dst.SimSlot();
    const bool l1 = s && s->arena == ArenaKind::L1;
    BeginOp(l1 ? PIPE_MTE2 : PIPE_MTE1, "InitConstValue");
    if (!s || (s->arena != ArenaKind::L1 && s->arena != ArenaKind::L0A && s->arena != ArenaKind::L0B))
        Fail("bad Cube operand position", Fmt("dst of InitConstValue lives in %s; it must be in L1 (A1/B1) or L0A/L0B (A2/B2)",
                                              s ? ArenaName(s->arena) : "no buffer"));
    // Fill.md / 2201到3510架构变更.md: 3510 removed the L0A/L0B initialisation instruction.
    if (!l1 && !kSocFacts.l0FillAllowed)
        Fail("InitConstValue on a5",
             Fmt("dst lives in %s: on a5 (3510) Fill/InitConstValue writes L1 only; fill L1 and LoadData it",
                 ArenaName(s->arena)));
    const uint64_t blk = l1 ? kBlock : kFractalBytes;
    dst.SimAlign(static_cast<uint32_t>(blk), "dst");
    if (p.repeatTimes == 0 || p.blockNum == 0) return;
    const uint64_t pitch = (uint64_t(p.blockNum) + p.dstGap) * blk, len = uint64_t(p.blockNum) * blk;
    TraceBytes(uint64_t(p.repeatTimes) * len,
               l1 ? FLA_SIM_MEM_ONCHIP : (s->arena == ArenaKind::L0A ? FLA_SIM_MEM_L0A : FLA_SIM_MEM_L0B));
    const uint64_t span = (uint64_t(p.repeatTimes) - 1) * pitch + len;
    if (span % sizeof(T)) Fail("InitConstValue", "the filled span is not a whole number of elements");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.SimData(span / sizeof(T), "dst"));
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        dst.SimTouchBytes(r * pitch, len, true);
        for (uint64_t o = 0; o < len; o += sizeof(T)) std::memcpy(d + r * pitch + o, &p.initValue, sizeof(T));
    }
}

// ---------------------------------------------------------------------------------------------
// L1 -> L0A/L0B, whole 512-byte fractals (pipe MTE1): fractal i (0 <= i < repeatTimes) is read at
// src + (startIndex + i * srcStride) * 512 bytes and written at dst + i * (1 + dstGap) * 512 bytes.
// ifTranspose transposes each 16 x 16 fractal (2-byte types only; 4-byte transposes go through
// LoadDataWithTranspose, not simulated). addrMode must be 0 (increasing addresses).
struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint8_t sid = 0;
    uint16_t dstGap = 0;
    bool ifTranspose = false;
    uint8_t addrMode = 0;
    LoadData2DParams() = default;
    LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn, uint16_t dstGapIn,
                     bool ifTransposeIn, uint8_t addrModeIn)
        : startIndex(startIndexIn),
          repeatTimes(repeatTimesIn),
          srcStride(srcStrideIn),
          sid(sidIn),
          dstGap(dstGapIn),
          ifTranspose(ifTransposeIn),
          addrMode(addrModeIn) {}
};
using LoadData2dParams = LoadData2DParams;

template <class T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p) {
    using namespace sim;
    BeginOp(PIPE_MTE1, "LoadData");
    RequireArena(src, ArenaKind::L1, "LoadData", "src", "L1 (A1/B1)");
    const Slot* ds = dst.SimSlot();
    if (!ds || (ds->arena != ArenaKind::L0A && ds->arena != ArenaKind::L0B))
        Fail("bad Cube operand position", Fmt("dst of LoadData lives in %s (%s); it must be in L0A (A2) or L0B (B2)",
                                              ds ? ArenaName(ds->arena) : "no buffer", ds ? ds->name.c_str() : "-"));
    dst.SimAlign(kCube.l0abAlign, "dst");
    src.SimAlign(kBlock, "src");
    if (p.addrMode != 0) Fail("LoadData", "addrMode != 0 (decreasing addresses) is not simulated");
    // LoadData_2D.md: on 950 dstGap of LoadData2DParams has no effect (the fractals land contiguously).
    if (kSocFacts.arch == 3510 && p.dstGap != 0)
        Fail("LoadData dstGap on a5", Fmt("dstGap %u: on a5 (3510) LoadData2DParams ignores dstGap", p.dstGap));
    if (p.ifTranspose && sizeof(T) != 2)
        Fail("LoadData transpose",
             Fmt("ifTranspose with %zu-byte elements: LoadData2DParams transposes 16 x 16 fractals of 2-byte "
                 "types only (load B^T from GM instead, or LoadDataWithTranspose — not simulated)",
                 sizeof(T)));
    if (p.repeatTimes == 0) return;
    TraceBytes(uint64_t(p.repeatTimes) * kFractalBytes, ds->arena == ArenaKind::L0A ? FLA_SIM_MEM_L0A : FLA_SIM_MEM_L0B);
    constexpr uint64_t fr = kFractalBytes / sizeof(T);
    const uint64_t srcSpan = (uint64_t(p.startIndex) + (uint64_t(p.repeatTimes) - 1) * p.srcStride + 1) * fr;
    const uint64_t dstSpan = ((uint64_t(p.repeatTimes) - 1) * (1 + uint64_t(p.dstGap)) + 1) * fr;
    const T* s = src.SimData(srcSpan, "src");
    T* d = dst.SimData(dstSpan, "dst");
    T tmp[fr];
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t so = (p.startIndex + i * p.srcStride) * fr, dof = i * (1 + uint64_t(p.dstGap)) * fr;
        src.SimTouch(so, fr, false);
        dst.SimTouch(dof, fr, true);
        if constexpr (sizeof(T) == 2) {
            if (p.ifTranspose) {
                for (uint64_t r = 0; r < 16; ++r)
                    for (uint64_t c = 0; c < 16; ++c) tmp[c * 16 + r] = s[so + r * 16 + c];
            } else {
                std::memcpy(static_cast<void*>(tmp), s + so, kFractalBytes);
            }
        } else {
            std::memcpy(static_cast<void*>(tmp), s + so, kFractalBytes);
        }
        std::memcpy(static_cast<void*>(d + dof), tmp, kFractalBytes);
    }
}

// ---------------------------------------------------------------------------------------------
// C (L0C) = A (L0A) x B (L0B) [+ C]. m, n, k are the real sizes (<= 4095); the unit computes whole
// fractals: A is read as ceil16(m) x ceil(k/C0)*C0, B as ceil(k/C0)*C0 x ceil16(n), C written as
// ceil16(m) x ceil16(n) fp32 — padding lanes of A/B along k must be zero (ND->NZ zero-fills the
// C0 tail of a row; padding rows must be filled by the kernel, e.g. InitConstValue), padding rows
// and columns of C are garbage. cmatrixInitVal = true: C = A·B; false: C += A·B.
struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;  // deprecated; must be false here
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;  // fine-grained M <-> FIX handshake: not simulated, must be 0
    bool kDirectionAlign = false;
    bool cmatrixSource = false;  // true: initial C from the bias table (C2): not simulated
    bool cmatrixInitVal = true;  // true: C = A·B; false: C += A·B
    MmadParams() = default;
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn, bool enWinogradAIn,
               bool enWinogradBIn)
        : m(mIn),
          n(nIn),
          k(kIn),
          isBias(isBiasIn),
          fmOffset(fmOffsetIn),
          enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn),
          enWinogradB(enWinogradBIn) {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn, bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn) {}
};

namespace sim {
// Mmad.md: a NaN among the Cube's inputs may raise an execution error on the device, so the
// simulation faults on one — including the padding of a fractal the unit reads but the kernel
// never wrote (fresh buffers are NaN-poisoned): pad with zeros before the Mmad.
inline void RequireFinite(const std::vector<float>& v, uint64_t kp, const char* operand, bool columnMajor = false) {
    for (uint64_t i = 0; i < v.size(); ++i)
        if (std::isnan(v[i])) {
            const uint64_t outer = i / kp, kk = i % kp;
            Fail(
                "Mmad NaN input",
                Fmt("%s holds NaN at %s %llu, k %llu (of the fractals the Cube reads, padding included): the device may raise an "
                    "execution error; fill padding with zeros (e.g. InitConstValue) before the Mmad",
                    operand, columnMajor ? "column" : "row", static_cast<unsigned long long>(outer),
                    static_cast<unsigned long long>(kk)));
        }
}
// Cube dtype rules (reference/ascendc.md §1.9): half x half, bfloat16 x bfloat16 and (where the SoC
// has it) float x float, all accumulating into float. int8/int4 inputs are not simulated.
template <class C, class A, class B>
constexpr bool kMmadTypes =
    std::is_same_v<C, float> && std::is_same_v<A, B> &&
    (std::is_same_v<A, half> || std::is_same_v<A, bfloat16_t> || (std::is_same_v<A, float> && kCube.fp32Inputs));
}  // namespace sim

template <class C, class A, class B>
inline void Mmad(const LocalTensor<C>& dst, const LocalTensor<A>& fm, const LocalTensor<B>& filter, const MmadParams& p) {
    static_assert(sim::kMmadTypes<C, A, B>,
                  "fla-npu sim: Mmad: supported are half x half, bfloat16_t x bfloat16_t and float x float into a float L0C "
                  "(int8/int4 Cube inputs are not simulated)");
    using namespace sim;
    BeginOp(PIPE_M, "Mmad");
    RequireArena(dst, ArenaKind::L0C, "Mmad", "dst", "L0C (CO1)");
    RequireArena(fm, ArenaKind::L0A, "Mmad", "fm (A)", "L0A (A2)");
    RequireArena(filter, ArenaKind::L0B, "Mmad", "filter (B)", "L0B (B2)");
    if (p.unitFlag != 0)
        Fail("Mmad", "unitFlag != 0 is not simulated: synchronise M -> FIX with SetFlag/WaitFlag<HardEvent::M_FIX>");
    if (p.cmatrixSource || p.isBias) Fail("Mmad", "a bias / C2 source of the initial C is not simulated");
    if (p.m > 4095 || p.n > 4095 || p.k > 4095)
        Fail("Mmad shape", Fmt("m %u, n %u, k %u: each must be in [0, 4095]", p.m, p.n, p.k));
    fm.SimAlign(kCube.l0abAlign, "fm (A)");
    filter.SimAlign(kCube.l0abAlign, "filter (B)");
    dst.SimAlign(kCube.l0cAlign, "dst");
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    constexpr uint32_t c0 = kC0<A>;
    const uint64_t mp = CeilTo(p.m, kFractalRows), np = CeilTo(p.n, kFractalRows), kp = CeilTo(p.k, c0);
    const A* a = fm.SimData(mp * kp, "fm (A)");
    const B* b = filter.SimData(kp * np, "filter (B)");
    C* c = dst.SimData(mp * np, "dst");
    fm.SimTouch(0, mp * kp, false);
    filter.SimTouch(0, kp * np, false);
    if (!p.cmatrixInitVal) dst.SimTouch(0, mp * np, false);
    dst.SimTouch(0, mp * np, true);
    NoteMmad(dst.SimSlot(), dst.SimByteOff(), mp * np * sizeof(C), !p.cmatrixInitVal, p.m, p.n);
    // m == 1 is GEMV mode (GEMV.md): the Cube reads A as one ND row of k elements from the start
    // of L0A, not as fractals; the other rows of the result are not computed.
    const bool gemv = p.m == 1;
    std::vector<float> av(mp * kp, 0.0f), bv(kp * np);  // A row-major m x k, B column-major (n x k)
    for (uint64_t i = 0; i < (gemv ? 1 : mp); ++i)
        for (uint64_t j = 0; j < kp; ++j)
            av[i * kp + j] = static_cast<float>(a[gemv ? j : FractalOffset(kCube.l0a, i, j, mp, kp, kFractalRows, c0)]);
    for (uint64_t j = 0; j < kp; ++j)
        for (uint64_t l = 0; l < np; ++l)
            bv[l * kp + j] = static_cast<float>(b[FractalOffset(kCube.l0b, j, l, kp, np, c0, kFractalRows)]);
    RequireFinite(av, kp, "fm (A, L0A)");
    RequireFinite(bv, kp, "filter (B, L0B)", true);
    for (uint64_t i = 0; i < mp; ++i)
        for (uint64_t l = 0; l < np; ++l) {
            const uint64_t co = FractalOffset(kCube.l0c, i, l, mp, np, kFractalRows, kFractalRows);
            float acc = p.cmatrixInitVal ? 0.0f : c[co];
            const float* ar = &av[i * kp];
            const float* bc = &bv[l * kp];
            for (uint64_t j = 0; j < kp; ++j) acc = std::fmaf(ar[j], bc[j], acc);
            c[co] = acc;
        }
    CountCube(uint64_t(p.m) * p.n * p.k, (mp / kFractalRows) * (np / kFractalRows) * (kp / c0));
}

// ---------------------------------------------------------------------------------------------
// Fixpipe: L0C -> GM or L1 (pipe FIX). Element (r, c), r < mSize, c < nSize, is read at
// (c / 16) * srcStride * 16 + r * 16 + c % 16 of src (srcStride: rows between two 16-column blocks,
// normally ceil16(m)); CFG_ROW_MAJOR writes it at r * dstStride + c (NZ -> ND, dstStride in
// elements), CFG_NZ at (c / 16) * dstStride * 16 + r * 16 + c % 16 (dstStride in 32-byte rows). quantPre:
// NoQuant (float out), F322F16 (half out), F322BF16 (bfloat16_t out), round-to-nearest-even;
// reluEn clamps at 0 first.
enum QuantMode_t : uint8_t { NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 };
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
};
inline constexpr FixpipeConfig CFG_NZ{CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR{CO2Layout::ROW_MAJOR};

struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;  // C0 rows (16 elements) between consecutive 16-column blocks of src
    uint32_t dstStride = 0;  // ND: elements between consecutive rows of dst
    QuantMode_t quantPre = NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
    FixpipeParamsV220() = default;
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
};

namespace sim {
// Elements per unit of an NZ output's dstStride (2-byte outputs): a 32-byte row on 2201, an element on 3510.
inline constexpr uint64_t kNzDstStrideElems = kSocFacts.arch == 3510 ? 1 : 16;
inline const char* QuantName(QuantMode_t q) {
    static const char* qn[] = {"NoQuant",     "F322F16",      "F322BF16", "DEQF16", "VDEQF16",
                               "QF322B8_PRE", "VQF322B8_PRE", "REQ8",     "VREQ8"};
    return q <= VREQ8 ? qn[q] : "?";
}
// Checks shared by both destinations; returns the source (nullptr when mSize or nSize is 0) and
// records the FIX pipe's reads of L0C.
template <class T, class U>
inline const U* FixpipeSource(const LocalTensor<U>& src, const FixpipeParamsV220& p, CO2Layout format) {
    RequireArena(src, ArenaKind::L0C, "Fixpipe", "src", "L0C (CO1)");
    if (p.unitFlag != 0)
        Fail("Fixpipe", "unitFlag != 0 is not simulated: synchronise M -> FIX with SetFlag/WaitFlag<HardEvent::M_FIX>");
    if (p.ndNum != 1) Fail("Fixpipe", Fmt("ndNum %u: only ndNum = 1 is simulated", p.ndNum));
    if (p.isChannelSplit) Fail("Fixpipe", "isChannelSplit is not simulated");
    const QuantMode_t want = std::is_same_v<T, float> ? NoQuant : std::is_same_v<T, half> ? F322F16 : F322BF16;
    if (p.quantPre != want)
        Fail("Fixpipe quantisation mode", Fmt("quantPre %s with a %s destination: float needs NoQuant, half F322F16, bfloat16_t "
                                              "F322BF16 (other modes are not simulated)",
                                              QuantName(p.quantPre),
                                              std::is_same_v<T, float>  ? "float"
                                              : std::is_same_v<T, half> ? "half"
                                                                        : "bfloat16_t"));
    src.SimAlign(64, "src");
    if (p.mSize == 0 || p.nSize == 0) return nullptr;
    if (p.srcStride < p.mSize)
        Fail("Fixpipe fractal parameters",
             Fmt("srcStride %u rows < mSize %u: the 16-column blocks of the NZ source overlap", p.srcStride, p.mSize));
    if (format == CO2Layout::ROW_MAJOR && p.dstStride < p.nSize)
        Fail("Fixpipe", Fmt("dstStride %u < nSize %u: destination rows overlap", p.dstStride, p.nSize));
    if (format == CO2Layout::NZ && uint64_t(p.dstStride) * kNzDstStrideElems < uint64_t(p.mSize) * 16)
        Fail("Fixpipe", Fmt("NZ output: dstStride %u (%s between 16-column blocks) is less than the mSize %u rows of a block: "
                            "the blocks overlap",
                            p.dstStride, kNzDstStrideElems == 1 ? "elements on a5" : "32-byte rows", p.mSize));
    if (format == CO2Layout::COLUMN_MAJOR) Fail("Fixpipe", "COLUMN_MAJOR output is not simulated");
    const uint64_t blocks = (uint64_t(p.nSize) + 15) / 16, pitch = uint64_t(p.srcStride) * 16;
    const U* s = src.SimData((blocks - 1) * pitch + uint64_t(p.mSize) * 16, "src");
    for (uint64_t b = 0; b < blocks; ++b) src.SimTouch(b * pitch, uint64_t(p.mSize) * 16, false);
    return s;
}
// Destination element offset of (r, c). ROW_MAJOR (NZ -> ND): r * dstStride + c. NZ (the L0C
// fractal order kept; 2-byte outputs, whose C0 is the fractal's 16 columns): (c / 16) * dstStride * u
// + r * 16 + c % 16, where dstStride counts 32-byte rows (u = 16) on 2201 and elements (u = 1) on
// 3510 (Fixpipe（L0C到L1数据搬运）.md, NZ2NZ.md; that a FixpipeParamsV220 on 3510 is read in elements
// is the library's conversion, not stated by the pages: an assumption).
inline uint64_t FixpipeDstOff(CO2Layout f, const FixpipeParamsV220& p, uint64_t r, uint64_t c) {
    return f == CO2Layout::NZ ? (c / 16) * uint64_t(p.dstStride) * kNzDstStrideElems + r * 16 + c % 16 : r * p.dstStride + c;
}
inline uint64_t FixpipeDstSpan(CO2Layout f, const FixpipeParamsV220& p) {
    if (f == CO2Layout::NZ) return FixpipeDstOff(f, p, p.mSize - 1u, (p.nSize - 1u) / 16 * 16) + 16;
    return FixpipeDstOff(f, p, p.mSize - 1u, p.nSize - 1u) + 1;
}
template <class T>
inline T FixpipeValue(const float* s, const FixpipeParamsV220& p, uint64_t r, uint64_t c) {
    float v = s[(c / 16) * uint64_t(p.srcStride) * 16 + r * 16 + c % 16];
    if (p.reluEn && v < 0.0f) v = 0.0f;
    return FromFloat<T>(v, RoundMode::CAST_RINT);
}
template <class T>
constexpr bool kFixpipeOut = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;

// The Fixpipe forms the simulation has, to GM and to L1: a compile error names any other.
template <class T, class U, const FixpipeConfig& config>
constexpr void CheckFixpipeForm() {
    static_assert(std::is_same_v<U, float>, "fla-npu sim: Fixpipe: the simulated L0C source is float (int32 is not simulated)");
    static_assert(kFixpipeOut<T>,
                  "fla-npu sim: Fixpipe: simulated outputs are float (NoQuant), half (F322F16) and bfloat16_t (F322BF16)");
    static_assert(config.format != CO2Layout::NZ || sizeof(T) == 2,
                  "fla-npu sim: Fixpipe: NZ output is simulated for half/bfloat16_t (a float NZ output needs channel split: not "
                  "simulated)");
}
}  // namespace sim

// L0C -> GM (pipe FIX). CFG_ROW_MAJOR: NZ -> ND; CFG_NZ: the NZ order kept (2-byte outputs).
template <class T, class U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p) {
    sim::CheckFixpipeForm<T, U, config>();
    using namespace sim;
    BeginOp(PIPE_FIX, "Fixpipe");
    const U* s = FixpipeSource<T>(src, p, config.format);
    if (!s) return;
    dst.SimCheck(0, FixpipeDstSpan(config.format, p), "Fixpipe dst");
    T* d = dst.SimPtr();
    for (uint64_t r = 0; r < p.mSize; ++r)
        for (uint64_t c = 0; c < p.nSize; ++c) d[FixpipeDstOff(config.format, p, r, c)] = FixpipeValue<T>(s, p, r, c);
    CountLocalToGm(uint64_t(p.mSize) * p.nSize * sizeof(T), d);
}

// L0C -> L1 (A1/B1; pipe FIX, the hazard checker records the L1 writes: a LoadData of that region
// needs SetFlag/WaitFlag<HardEvent::FIX_MTE1>, and a Fixpipe over L1 a previous LoadData read needs
// MTE1_FIX). CFG_NZ writes the NZ layout LoadData reads (for an mSize x nSize result with
// dstStride = ceil16(mSize) it is exactly what Nd2NzParams with dstNzC0Stride = ceil16(mSize)
// writes, except that rows mSize..ceil16(mSize) of each block are not written); CFG_ROW_MAJOR
// writes ND rows of dstStride elements. No GM bytes are counted.
template <class T, class U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p) {
    sim::CheckFixpipeForm<T, U, config>();
    using namespace sim;
    BeginOp(PIPE_FIX, "Fixpipe(L0C->L1)");
    RequireArena(dst, ArenaKind::L1, "Fixpipe", "dst", "L1 (A1/B1) or GM (L0C -> UB, a5, is not simulated)");
    dst.SimAlign(kBlock, "dst");
    const U* s = FixpipeSource<T>(src, p, config.format);
    if (!s) return;
    TraceBytes(uint64_t(p.mSize) * p.nSize * sizeof(T), FLA_SIM_MEM_ONCHIP);
    T* d = dst.SimData(FixpipeDstSpan(config.format, p), "dst");
    if (config.format == CO2Layout::NZ) {
        for (uint64_t b = 0; b < (uint64_t(p.nSize) + 15) / 16; ++b)
            dst.SimTouch(b * p.dstStride * kNzDstStrideElems, uint64_t(p.mSize) * 16, true);
    } else {
        for (uint64_t r = 0; r < p.mSize; ++r) dst.SimTouch(r * p.dstStride, p.nSize, true);
    }
    for (uint64_t r = 0; r < p.mSize; ++r)
        for (uint64_t c = 0; c < p.nSize; ++c) d[FixpipeDstOff(config.format, p, r, c)] = FixpipeValue<T>(s, p, r, c);
}

}  // namespace AscendC
