// fla-npu host simulation of Ascend C — vector instructions (pipe V, operands in UB).
//
// Two forms per instruction, as on the device:
//   count form        Op(dst, src..., count)                        the first `count` elements;
//   mask/repeat form  Op(dst, src..., mask, repeatTime, params)     `repeatTime` repeats of 256 bytes
//                     (8 blocks of 32 bytes); `mask` selects lanes (a count of leading lanes, or a
//                     128-bit lane mask as uint64_t[2]); block and repeat strides in 32-byte blocks,
//                     0 allowed (broadcast).
// Every operand is checked: live, in UB, 32-byte aligned, in bounds. Results are computed in float
// (integers in int64) and rounded once per instruction to the element type.
// Compare/CompareScalar write bit masks (uint8_t) that Select consumes (see the section below).
// Not simulated yet: the sticky mask state (SetVectorMask/SetMaskCount, isSetMask=false), the
// CmpMask register forms (Compare without dst, GetCmpMask/SetCmpMask, Select without selMask), the
// address-overlap rule, hardware approximations of Exp/Ln/Div (host libm is used).
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "sim_dtype_rules.h"
#include "sim_memory.h"

namespace AscendC {

struct BinaryRepeatParams {
    uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
    bool repeatStrideMode = false, strideSizeMode = false;
    BinaryRepeatParams() = default;
    BinaryRepeatParams(uint8_t dstBlk, uint8_t s0Blk, uint8_t s1Blk, uint8_t dstRep, uint8_t s0Rep, uint8_t s1Rep)
        : dstBlkStride(dstBlk),
          src0BlkStride(s0Blk),
          src1BlkStride(s1Blk),
          dstRepStride(dstRep),
          src0RepStride(s0Rep),
          src1RepStride(s1Rep) {}
};
struct UnaryRepeatParams {
    uint16_t dstBlkStride = 1, srcBlkStride = 1;
    uint8_t dstRepStride = 8, srcRepStride = 8;
    bool repeatStrideMode = false, strideSizeMode = false;
    UnaryRepeatParams() = default;
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep, uint8_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep) {}
};
struct BrcbRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t dstRepStride = 8;
    BrcbRepeatParams() = default;
    BrcbRepeatParams(uint16_t blk, uint16_t rep) : dstBlkStride(blk), dstRepStride(rep) {}
};
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

namespace sim {

template <class T>
using Calc = std::conditional_t<kIsFloatLike<T>, float, int64_t>;
template <class T>
inline Calc<T> Ld(T v) {
    return static_cast<Calc<T>>(v);
}
template <class T>
inline T St(Calc<T> v) {
    if constexpr (kIsFloatLike<T>) return FromFloat<T>(v);
    else return static_cast<T>(v);
}
template <class C>
inline C NanMax(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(a) || std::isnan(b)) return NAN;
    }
    return a > b ? a : b;
}
template <class C>
inline C NanMin(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(a) || std::isnan(b)) return NAN;
    }
    return a < b ? a : b;
}

template <class T>
inline T* VecOperand(const LocalTensor<T>& t, uint64_t n, const char* name) {
    T* p = t.SimData(n, name);
    if (t.SimSlot()->arena != ArenaKind::UB)
        Fail("vector operand not in UB", Fmt("%s lives in %s (%s); vector instructions read and write UB only", name,
                                             ArenaName(t.SimSlot()->arena), t.SimSlot()->name.c_str()));
    t.SimAlign(kBlock, name);
    return p;
}
inline void RequireCount(int64_t count) {
    if (count < 0) Fail("bad count", Fmt("negative element count %lld", (long long)count));
}

// Lane selection of one repeat.
struct LaneMask {
    uint64_t m[2] = {0, 0};
    bool On(uint32_t l) const { return (m[l >> 6] >> (l & 63)) & 1u; }
};
template <class T>
inline LaneMask MaskOfCount(uint64_t mask) {
    const uint64_t lanes = kRepeatBytes / sizeof(T);
    if (mask == 0 || mask > lanes)
        Fail("bad vector mask", Fmt("mask %llu: a repeat of %zu-byte elements has 1..%llu lanes", (unsigned long long)mask,
                                    sizeof(T), (unsigned long long)lanes));
    LaneMask lm;
    lm.m[0] = mask >= 64 ? ~0ull : ((1ull << mask) - 1);
    lm.m[1] = mask > 64 ? (mask - 64 >= 64 ? ~0ull : ((1ull << (mask - 64)) - 1)) : 0;
    return lm;
}
template <class T>
inline LaneMask MaskOfBits(const uint64_t mask[]) {
    LaneMask lm;
    lm.m[0] = mask[0];
    lm.m[1] = sizeof(T) == 2 ? mask[1] : 0;
    if (sizeof(T) == 4 && mask[1] != 0) Fail("bad vector mask", "mask[1] must be 0 for 32-bit elements (64 lanes per repeat)");
    if (lm.m[0] == 0 && lm.m[1] == 0) Fail("bad vector mask", "empty lane mask");
    return lm;
}
template <class T>
inline void CheckIsSetMask(bool isSetMask) {
    if (!isSetMask) Fail("unsupported in simulation", "isSetMask=false (sticky mask registers) is not simulated yet");
}
template <class T>
inline LaneMask MaskOf(uint64_t mask) {
    return MaskOfCount<T>(mask);
}
template <class T>
inline LaneMask MaskOf(const uint64_t mask[]) {
    return MaskOfBits<T>(mask);
}
// The start of a repeat-form vector instruction, either mask form: the op on PIPE_V, its isSetMask
// checked, and the lanes of one repeat (a lane count or a bit mask) returned.
template <class T, class M>
inline LaneMask BeginRepeat(const char* op, bool isSetMask, const M& mask) {
    BeginOp(PIPE_V, op);
    CheckIsSetMask<T>(isSetMask);
    return MaskOf<T>(mask);
}

struct Stride {
    uint32_t blk, rep;
};
// Element offset of lane l in repeat r for an operand with the given strides.
template <class T>
inline uint64_t LaneOff(uint32_t r, uint32_t l, Stride s) {
    constexpr uint32_t epb = kBlock / sizeof(T);
    return (uint64_t(r) * s.rep + uint64_t(l / epb) * s.blk) * epb + l % epb;
}
template <class T>
inline uint32_t LastLane(const LaneMask& lm) {
    for (int l = int(kRepeatBytes / sizeof(T)) - 1; l >= 0; --l)
        if (lm.On(uint32_t(l))) return uint32_t(l);
    return 0;
}
template <class T>
inline uint64_t ActiveLanes(const LaneMask& lm) {
    uint64_t n = 0;
    for (uint32_t l = 0; l < kRepeatBytes / sizeof(T); ++l) n += lm.On(l);
    return n;
}
// Validate an operand of a repeat-form instruction and record its accesses (whole 32-byte blocks).
template <class T>
inline T* RepOperand(const LocalTensor<T>& t, const LaneMask& lm, uint8_t repeat, Stride s, bool write, const char* name) {
    constexpr uint32_t epb = kBlock / sizeof(T);
    T* p = VecOperand(t, LaneOff<T>(repeat - 1u, LastLane<T>(lm), s) + 1, name);
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t b = 0; b < 8; ++b) {
            bool any = false;
            for (uint32_t e = 0; e < epb && !any; ++e) any = lm.On(b * epb + e);
            if (any) t.SimTouchBytes((uint64_t(r) * s.rep + uint64_t(b) * s.blk) * kBlock, kBlock, write);
        }
    return p;
}

// kReadsDst: dst is an input too (f(a, b, dst): FusedMulAdd, MulAddDst). Such an instruction runs at half
// the vector rate (twice the passes) unless dst is one of its sources: the unit cannot read three
// different addresses in one cycle (the bank-conflict note of FusedMulAdd.md and MulAddDst.md).
inline uint64_t ReadsDstPasses(const void* d, const void* a, const void* b, uint64_t passes) {
    return d == a || d == b ? passes : 2 * passes;
}
template <class T, class F, bool kReadsDst = false>
inline void BinCount(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, int32_t count,
                     F f) {
    BeginOp(PIPE_V, op);
    RequireCount(count);
    const T* pa = VecOperand(a, count, "src0");
    const T* pb = VecOperand(b, count, "src1");
    T* pd = VecOperand(dst, count, "dst");
    a.SimTouch(0, count, false);
    b.SimTouch(0, count, false);
    if (kReadsDst) dst.SimTouch(0, count, false);
    dst.SimTouch(0, count, true);
    for (int32_t i = 0; i < count; ++i) {
        if constexpr (kReadsDst) pd[i] = St<T>(f(Ld(pa[i]), Ld(pb[i]), Ld(pd[i])));
        else pd[i] = St<T>(f(Ld(pa[i]), Ld(pb[i])));
    }
    const uint64_t passes = VectorPasses<T>(count);
    CountVector(count, kReadsDst ? ReadsDstPasses(pd, pa, pb, passes) : passes);
}
template <class T, class F, bool kReadsDst = false>
inline void BinRepeat(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                      const LaneMask& lm, uint8_t repeat, const BinaryRepeatParams& p, F f) {
    (void)op;  // the wrapper began the operation (BeginRepeat): one instruction, one trace record
    if (repeat == 0) return;
    const Stride sd{p.dstBlkStride, p.dstRepStride}, sa{p.src0BlkStride, p.src0RepStride}, sb{p.src1BlkStride, p.src1RepStride};
    const T* pa = RepOperand(a, lm, repeat, sa, false, "src0");
    const T* pb = RepOperand(b, lm, repeat, sb, false, "src1");
    if (kReadsDst) RepOperand(dst, lm, repeat, sd, false, "dst");
    T* pd = RepOperand(dst, lm, repeat, sd, true, "dst");
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t l = 0; l < kRepeatBytes / sizeof(T); ++l)
            if (lm.On(l)) {
                T& d = pd[LaneOff<T>(r, l, sd)];
                const auto x = Ld(pa[LaneOff<T>(r, l, sa)]), y = Ld(pb[LaneOff<T>(r, l, sb)]);
                if constexpr (kReadsDst) d = St<T>(f(x, y, Ld(d)));
                else d = St<T>(f(x, y));
            }
    CountVector(ActiveLanes<T>(lm) * repeat, kReadsDst ? ReadsDstPasses(pd, pa, pb, repeat) : repeat);
}
template <class T, class F>
inline void UnCount(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& a, int32_t count, F f) {
    BeginOp(PIPE_V, op);
    RequireCount(count);
    const T* pa = VecOperand(a, count, "src");
    T* pd = VecOperand(dst, count, "dst");
    a.SimTouch(0, count, false);
    dst.SimTouch(0, count, true);
    for (int32_t i = 0; i < count; ++i) pd[i] = St<T>(f(Ld(pa[i])));
    CountVector(count, VectorPasses<T>(count));
}
template <class T, class F>
inline void UnRepeat(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LaneMask& lm, uint8_t repeat,
                     const UnaryRepeatParams& p, F f) {
    (void)op;  // the wrapper began the operation (BeginRepeat / BeginOp): one instruction, one trace record
    if (repeat == 0) return;
    const Stride sd{p.dstBlkStride, p.dstRepStride}, sa{p.srcBlkStride, p.srcRepStride};
    const T* pa = RepOperand(a, lm, repeat, sa, false, "src");
    T* pd = RepOperand(dst, lm, repeat, sd, true, "dst");
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t l = 0; l < kRepeatBytes / sizeof(T); ++l)
            if (lm.On(l)) pd[LaneOff<T>(r, l, sd)] = St<T>(f(Ld(pa[LaneOff<T>(r, l, sa)])));
    CountVector(ActiveLanes<T>(lm) * repeat, repeat);
}

}  // namespace sim

// ---- binary: Add Sub Mul Div Max Min ------------------------------------------------------------
#define FLA_SIM_BINARY(NAME, REQUIRE, EXPR)                                                                                     \
    template <typename T>                                                                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const int32_t& count) { \
        REQUIRE(T, #NAME);                                                                                                      \
        sim::BinCount(#NAME, dst, src0, src1, count, [](auto a, auto b) { return EXPR; });                                      \
    }                                                                                                                           \
    template <typename T, bool isSetMask = true>                                                                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask,          \
                     const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {                                        \
        REQUIRE(T, #NAME);                                                                                                      \
        sim::BinRepeat(#NAME, dst, src0, src1, sim::BeginRepeat<T>(#NAME, isSetMask, mask), repeatTime, repeatParams,           \
                       [](auto a, auto b) { return EXPR; });                                                                    \
    }                                                                                                                           \
    template <typename T, bool isSetMask = true>                                                                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask[],        \
                     const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {                                        \
        REQUIRE(T, #NAME);                                                                                                      \
        sim::BinRepeat(#NAME, dst, src0, src1, sim::BeginRepeat<T>(#NAME, isSetMask, mask), repeatTime, repeatParams,           \
                       [](auto a, auto b) { return EXPR; });                                                                    \
    }

FLA_SIM_BINARY(Add, FLA_SIM_REQUIRE_ARITH, a + b)
FLA_SIM_BINARY(Sub, FLA_SIM_REQUIRE_ARITH, a - b)
FLA_SIM_BINARY(Mul, FLA_SIM_REQUIRE_ARITH, a* b)
FLA_SIM_BINARY(Div, FLA_SIM_REQUIRE_FLOAT, a / b)
FLA_SIM_BINARY(Max, FLA_SIM_REQUIRE_ARITH, sim::NanMax(a, b))
FLA_SIM_BINARY(Min, FLA_SIM_REQUIRE_ARITH, sim::NanMin(a, b))
#undef FLA_SIM_BINARY

// ---- FusedMulAdd: dst = src0 * dst + src1 (复合计算/FusedMulAdd.md; half / float, a5 adds bf16) ------------
// The page does not say whether the product is rounded before the sum: the simulation rounds both
// (as Mul then Add would; an assumption, README).
namespace sim {
// dst = src0 * dst + src1, the product rounded before the sum.
constexpr auto kMulAdd = [](auto a, auto b, auto d) {
    const auto p = a * d;
    return p + b;
};
}  // namespace sim
template <typename T>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const int32_t& count) {
    FLA_SIM_REQUIRE_FLOAT(T, "FusedMulAdd");
    sim::BinCount<T, decltype(sim::kMulAdd), true>("FusedMulAdd", dst, src0, src1, count, sim::kMulAdd);
}
template <typename T, bool isSetMask = true>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask,
                        const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    FLA_SIM_REQUIRE_FLOAT(T, "FusedMulAdd");
    sim::BinRepeat<T, decltype(sim::kMulAdd), true>("FusedMulAdd", dst, src0, src1,
                                                    sim::BeginRepeat<T>("FusedMulAdd", isSetMask, mask), repeatTime, repeatParams,
                                                    sim::kMulAdd);
}
template <typename T, bool isSetMask = true>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask[],
                        const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    FLA_SIM_REQUIRE_FLOAT(T, "FusedMulAdd");
    sim::BinRepeat<T, decltype(sim::kMulAdd), true>("FusedMulAdd", dst, src0, src1,
                                                    sim::BeginRepeat<T>("FusedMulAdd", isSetMask, mask), repeatTime, repeatParams,
                                                    sim::kMulAdd);
}

// ---- MulAddDst: dst = src0 * src1 + dst (复合计算/MulAddDst.md; half / float with dst of the same type
// here: the page's half -> float form is not simulated). The product rounded before the sum, as FusedMulAdd.
namespace sim {
constexpr auto kMulAddDst = [](auto a, auto b, auto d) {
    const auto p = a * b;
    return p + d;
};
}  // namespace sim
template <typename T>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const int32_t& count) {
    static_assert(sim::kVecFloatType<T>, "fla-npu sim: MulAddDst: half/float only (MulAddDst.md, every SoC)");
    sim::BinCount<T, decltype(sim::kMulAddDst), true>("MulAddDst", dst, src0, src1, count, sim::kMulAddDst);
}
template <typename T, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask,
                      const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(sim::kVecFloatType<T>, "fla-npu sim: MulAddDst: half/float only (MulAddDst.md, every SoC)");
    sim::BinRepeat<T, decltype(sim::kMulAddDst), true>("MulAddDst", dst, src0, src1,
                                                       sim::BeginRepeat<T>("MulAddDst", isSetMask, mask), repeatTime,
                                                       repeatParams, sim::kMulAddDst);
}

// ---- unary: Exp Ln Abs Sqrt Rsqrt Reciprocal Relu ---------------------------------------------
#define FLA_SIM_UNARY(NAME, REQUIRE, EXPR)                                                                            \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) {                    \
        REQUIRE(T, #NAME);                                                                                            \
        sim::UnCount(#NAME, dst, src, count, [](auto a) { return EXPR; });                                            \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const uint8_t repeatTime,   \
                     const UnaryRepeatParams& repeatParams) {                                                         \
        REQUIRE(T, #NAME);                                                                                            \
        sim::UnRepeat(#NAME, dst, src, sim::BeginRepeat<T>(#NAME, isSetMask, mask), repeatTime, repeatParams,         \
                      [](auto a) { return EXPR; });                                                                   \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[], const uint8_t repeatTime, \
                     const UnaryRepeatParams& repeatParams) {                                                         \
        REQUIRE(T, #NAME);                                                                                            \
        sim::UnRepeat(#NAME, dst, src, sim::BeginRepeat<T>(#NAME, isSetMask, mask), repeatTime, repeatParams,         \
                      [](auto a) { return EXPR; });                                                                   \
    }

FLA_SIM_UNARY(Exp, FLA_SIM_REQUIRE_FLOAT, std::exp(a))
FLA_SIM_UNARY(Ln, FLA_SIM_REQUIRE_FLOAT, std::log(a))
FLA_SIM_UNARY(Abs, FLA_SIM_REQUIRE_FLOAT, std::fabs(a))
FLA_SIM_UNARY(Sqrt, FLA_SIM_REQUIRE_FLOAT, std::sqrt(a))
FLA_SIM_UNARY(Rsqrt, FLA_SIM_REQUIRE_FLOAT, 1.0f / std::sqrt(a))
FLA_SIM_UNARY(Reciprocal, FLA_SIM_REQUIRE_FLOAT, 1.0f / a)
FLA_SIM_UNARY(Relu, FLA_SIM_REQUIRE_ARITH, a > 0 ? a : decltype(a)(0))
#undef FLA_SIM_UNARY

// ---- tensor-scalar: Muls Adds Maxs Mins ---------------------------------------------------------
// The scalar is first converted (rounded) to the element type, as the instruction reads it.
#define FLA_SIM_SCALAR(NAME, EXPR)                                                                                         \
    template <typename T, typename U>                                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, const int32_t& count) {   \
        FLA_SIM_REQUIRE_ARITH(T, #NAME);                                                                                   \
        const auto s = sim::Ld(static_cast<T>(scalarValue));                                                               \
        sim::UnCount(#NAME, dst, src, count, [s](auto a) { return EXPR; });                                                \
    }                                                                                                                      \
    template <typename T, typename U, bool isSetMask = true>                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const U& scalarValue, uint64_t mask,            \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {                                    \
        FLA_SIM_REQUIRE_ARITH(T, #NAME);                                                                                   \
        sim::BeginOp(PIPE_V, #NAME);                                                                                       \
        sim::CheckIsSetMask<T>(isSetMask);                                                                                 \
        const auto s = sim::Ld(static_cast<T>(scalarValue));                                                               \
        sim::UnRepeat(#NAME, dst, src, sim::MaskOfCount<T>(mask), repeatTime, repeatParams, [s](auto a) { return EXPR; }); \
    }

FLA_SIM_SCALAR(Muls, a* s)
FLA_SIM_SCALAR(Adds, a + s)
FLA_SIM_SCALAR(Maxs, sim::NanMax(a, s))
FLA_SIM_SCALAR(Mins, sim::NanMin(a, s))
#undef FLA_SIM_SCALAR

// ---- Duplicate -------------------------------------------------------------------------------
template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count) {
    static_assert(sim::kVecFillType<T>, "fla-npu sim: Duplicate: element type must be 16 or 32 bits");
    sim::BeginOp(PIPE_V, "Duplicate");
    sim::RequireCount(count);
    T* pd = sim::VecOperand(dst, count, "dst");
    dst.SimTouch(0, count, true);
    for (int32_t i = 0; i < count; ++i) pd[i] = scalarValue;
    sim::CountVector(count, sim::VectorPasses<T>(count));
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    static_assert(sim::kVecFillType<T>, "fla-npu sim: Duplicate: element type must be 16 or 32 bits");
    sim::BeginOp(PIPE_V, "Duplicate");
    sim::CheckIsSetMask<T>(isSetMask);
    if (repeatTime == 0) return;
    const sim::LaneMask lm = sim::MaskOfCount<T>(mask);
    const sim::Stride sd{dstBlockStride, dstRepeatStride};
    T* pd = sim::RepOperand(dst, lm, repeatTime, sd, true, "dst");
    for (uint32_t r = 0; r < repeatTime; ++r)
        for (uint32_t l = 0; l < sim::kRepeatBytes / sizeof(T); ++l)
            if (lm.On(l)) pd[sim::LaneOff<T>(r, l, sd)] = scalarValue;
    sim::CountVector(sim::ActiveLanes<T>(lm) * repeatTime, repeatTime);
}

// ---- Cast ------------------------------------------------------------------------------------
namespace sim {
template <class D, class S>
inline void CheckRoundMode(RoundMode m) {
    const bool widenFloat = (std::is_same_v<D, float> && kIsF16<S>);
    const bool toInt = std::is_integral_v<D> && kIsFloatLike<S>;
    const bool toBf16 = std::is_same_v<D, bfloat16_t> && std::is_same_v<S, float>;
    if (widenFloat && m != RoundMode::CAST_NONE)
        Fail("bad Cast round mode", "a widening float Cast is exact: use RoundMode::CAST_NONE");
    if ((toInt || toBf16) && (m == RoundMode::CAST_NONE || m == RoundMode::CAST_ODD))
        Fail("bad Cast round mode", toBf16 ? "float -> bfloat16_t needs CAST_RINT/FLOOR/CEIL/ROUND/TRUNC"
                                           : "a Cast to an integer needs CAST_RINT/FLOOR/CEIL/ROUND/TRUNC");
}
}  // namespace sim

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint32_t count) {
    FLA_SIM_REQUIRE_CAST(T, U);
    sim::BeginOp(PIPE_V, "Cast");
    sim::CheckRoundMode<T, U>(roundMode);
    const U* ps = sim::VecOperand(src, count, "src");
    T* pd = sim::VecOperand(dst, count, "dst");
    src.SimTouch(0, count, false);
    dst.SimTouch(0, count, true);
    std::vector<T> tmp(count);  // dst may overlap src
    for (uint32_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<U>) tmp[i] = sim::FromFloat<T>(static_cast<float>(ps[i]), roundMode);
        else tmp[i] = sim::FromFloat<T>(static_cast<float>(ps[i]), roundMode);
    }
    std::memcpy(pd, tmp.data(), count * sizeof(T));
    sim::CountVector(count, std::max(sim::VectorPasses<T>(count), sim::VectorPasses<U>(count)));
}

// ---- reductions (count form) -----------------------------------------------------------------
namespace sim {
// Pairwise tree over [0, n): deterministic, rounding each step to T (hardware order differs).
template <class T, class F>
inline Calc<T> TreeReduce(const T* p, uint32_t n, F f) {
    std::vector<T> v(p, p + n);
    while (v.size() > 1) {
        std::vector<T> w((v.size() + 1) / 2);
        for (size_t i = 0; i < v.size() / 2; ++i) w[i] = St<T>(f(Ld(v[2 * i]), Ld(v[2 * i + 1])));
        if (v.size() % 2) w.back() = v.back();
        v.swap(w);
    }
    return Ld(v[0]);
}
template <class T, class F>
inline void ReduceCount(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& tmp,
                        int32_t count, bool calIndex, F f) {
    BeginOp(PIPE_V, op);
    if (count <= 0) Fail("bad count", Fmt("%s of %d elements", op, count));
    const T* ps = VecOperand(src, count, "src");
    T* pd = VecOperand(dst, calIndex ? 2 : 1, "dst");
    VecOperand(tmp, 1, "sharedTmpBuffer");
    src.SimTouch(0, count, false);
    tmp.SimTouch(0, 1, true);
    dst.SimTouch(0, calIndex ? 2 : 1, true);
    const Calc<T> r = TreeReduce(ps, uint32_t(count), f);
    pd[0] = St<T>(r);
    if (calIndex) {  // index of the first element equal to the result, stored as integer bits
        uint32_t idx = 0;
        for (int32_t i = 0; i < count; ++i)
            if (Ld(ps[i]) == r) {
                idx = uint32_t(i);
                break;
            }
        if constexpr (sizeof(T) == 4) {
            const uint32_t b = idx;
            std::memcpy(&pd[1], &b, 4);
        } else {
            const uint16_t b = uint16_t(idx);
            std::memcpy(&pd[1], &b, 2);
        }
    }
    CountVector(count, VectorPasses<T>(count));
}
}  // namespace sim

template <typename T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = 0) {
    FLA_SIM_REQUIRE_FLOAT(T, "ReduceMax");
    sim::ReduceCount("ReduceMax", dst, src, sharedTmpBuffer, count, calIndex, [](auto a, auto b) { return sim::NanMax(a, b); });
}
template <typename T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = 0) {
    FLA_SIM_REQUIRE_FLOAT(T, "ReduceMin");
    sim::ReduceCount("ReduceMin", dst, src, sharedTmpBuffer, count, calIndex, [](auto a, auto b) { return sim::NanMin(a, b); });
}
template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count) {
    FLA_SIM_REQUIRE_FLOAT(T, "ReduceSum");
    sim::ReduceCount("ReduceSum", dst, src, sharedTmpBuffer, count, false, [](auto a, auto b) { return a + b; });
}

// ---- WholeReduceSum / WholeReduceMax: one result per repeat ----------------------------------
namespace sim {
template <class T, class F>
inline void WholeReduce(const char* op, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t mask, int32_t repeatTimes,
                        int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, int outElems, bool withIndex, F f) {
    BeginOp(PIPE_V, op);
    if (repeatTimes <= 0 || repeatTimes > int32_t(kMaxRepeat))
        Fail("bad repeat", Fmt("%s with repeatTimes %d (1..255)", op, repeatTimes));
    const LaneMask lm = MaskOfCount<T>(uint64_t(mask));
    const Stride ss{uint32_t(srcBlkStride), uint32_t(srcRepStride)};
    const T* ps = RepOperand(src, lm, uint8_t(repeatTimes), ss, false, "src");
    const uint64_t dstPitch = uint64_t(dstRepStride) * outElems;
    T* pd = VecOperand(dst, dstPitch * (repeatTimes - 1) + outElems, "dst");
    for (int32_t r = 0; r < repeatTimes; ++r) dst.SimTouch(dstPitch * r, outElems, true);
    for (int32_t r = 0; r < repeatTimes; ++r) {
        std::vector<T> lanes;
        std::vector<uint32_t> idx;
        for (uint32_t l = 0; l < kRepeatBytes / sizeof(T); ++l)
            if (lm.On(l)) {
                lanes.push_back(ps[LaneOff<T>(uint32_t(r), l, ss)]);
                idx.push_back(l);
            }
        const Calc<T> v = TreeReduce(lanes.data(), uint32_t(lanes.size()), f);
        pd[dstPitch * r] = St<T>(v);
        if (withIndex) {
            uint32_t at = 0;
            for (size_t i = 0; i < lanes.size(); ++i)
                if (Ld(lanes[i]) == v) {
                    at = idx[i];
                    break;
                }
            if constexpr (sizeof(T) == 4) std::memcpy(&pd[dstPitch * r + 1], &at, 4);
            else {
                const uint16_t b = uint16_t(at);
                std::memcpy(&pd[dstPitch * r + 1], &b, 2);
            }
        }
    }
    CountVector(ActiveLanes<T>(lm) * repeatTimes, repeatTimes);
}
}  // namespace sim

// dstRepStride counts elements of dst.
template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeatTimes,
                           const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride) {
    FLA_SIM_REQUIRE_FLOAT(T, "WholeReduceSum");
    sim::CheckIsSetMask<T>(isSetMask);
    sim::WholeReduce("WholeReduceSum", dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride, 1, false,
                     [](auto a, auto b) { return a + b; });
}
// ORDER_VALUE_INDEX writes (value, index) pairs and dstRepStride counts pairs; ORDER_ONLY_VALUE
// writes values and dstRepStride counts elements.
template <typename T, bool isSetMask = true>
inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeatTimes,
                           const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                           ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
    FLA_SIM_REQUIRE_FLOAT(T, "WholeReduceMax");
    sim::CheckIsSetMask<T>(isSetMask);
    if (order != ReduceOrder::ORDER_VALUE_INDEX && order != ReduceOrder::ORDER_ONLY_VALUE)
        sim::Fail("unsupported in simulation", "WholeReduceMax supports ORDER_VALUE_INDEX and ORDER_ONLY_VALUE");
    const bool pairs = order == ReduceOrder::ORDER_VALUE_INDEX;
    sim::WholeReduce("WholeReduceMax", dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride, pairs ? 2 : 1,
                     pairs, [](auto a, auto b) { return sim::NanMax(a, b); });
}

// ---- Brcb: each of 8 source elements per repeat fills one 32-byte block --------------------------
template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime, const BrcbRepeatParams& p) {
    static_assert(sim::kVecFillType<T>, "fla-npu sim: Brcb: element type must be 16 or 32 bits");
    sim::BeginOp(PIPE_V, "Brcb");
    if (repeatTime == 0) return;
    constexpr uint32_t epb = sim::kBlock / sizeof(T);
    const T* ps = sim::VecOperand(src, uint64_t(repeatTime) * 8, "src");
    const uint64_t last = (uint64_t(repeatTime - 1) * p.dstRepStride + 7ull * p.dstBlkStride) * epb + epb;
    T* pd = sim::VecOperand(dst, last, "dst");
    src.SimTouch(0, uint64_t(repeatTime) * 8, false);
    std::vector<T> in(ps, ps + uint64_t(repeatTime) * 8);
    for (uint32_t r = 0; r < repeatTime; ++r)
        for (uint32_t b = 0; b < 8; ++b) {
            const uint64_t off = (uint64_t(r) * p.dstRepStride + uint64_t(b) * p.dstBlkStride) * epb;
            dst.SimTouch(off, epb, true);
            for (uint32_t e = 0; e < epb; ++e) pd[off + e] = in[r * 8 + b];
        }
    sim::CountVector(uint64_t(repeatTime) * 8 * epb, repeatTime);
}

// ---- Compare / CompareScalar / Select ------------------------------------------------------------
// Compare writes one bit per element into a uint8_t tensor: element i -> bit i % 8 of byte i / 8
// (little-endian bit order), 1 when the comparison holds. IEEE semantics: with a NaN operand only
// NE holds. Count form: count * sizeof(T) must be a multiple of 256 bytes (whole repeats), as the
// API documents; the dst holds count / 8 bytes. Mask/repeat form: repeat r writes its
// 256 / sizeof(T) bits contiguously at byte r * 256 / sizeof(T) / 8 of dst (dst strides are not
// used); bits of lanes the mask switches off are written 0 (a simulation choice).
// Select: bit 1 takes src0, bit 0 takes src1 (a tensor, or a scalar in VSEL_TENSOR_SCALAR_MODE).
// VSEL_CMPMASK_SPR uses the first 256 / sizeof(T) bits of selMask for every repeat; the other two
// modes consume selMask contiguously (element i of the count form, lane l of repeat r: bit
// r * 256 / sizeof(T) + l). In the mask/repeat form lanes the mask switches off keep dst.
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

namespace sim {
inline const char* CmpModeName(CMPMODE m) {
    static const char* n[] = {"LT", "GT", "EQ", "LE", "GE", "NE"};
    return static_cast<uint8_t>(m) < 6 ? n[static_cast<uint8_t>(m)] : "?";
}
inline const char* SelModeName(SELMODE m) {
    static const char* n[] = {"VSEL_CMPMASK_SPR", "VSEL_TENSOR_SCALAR_MODE", "VSEL_TENSOR_TENSOR_MODE"};
    return static_cast<uint8_t>(m) < 3 ? n[static_cast<uint8_t>(m)] : "?";
}
template <class C>
inline bool CmpEval(CMPMODE m, C a, C b) {
    switch (m) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        case CMPMODE::NE: return !(a == b);
    }
    Fail("bad CMPMODE", Fmt("cmpMode %u is not one of LT GT EQ LE GE NE", unsigned(m)));
}
inline bool BitAt(const uint8_t* p, uint64_t i) { return (p[i >> 3] >> (i & 7)) & 1u; }

template <class T>
inline void CmpCountRule(const char* op, uint32_t count) {
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    if (bytes % kRepeatBytes != 0)
        Fail(std::string(op) + " count alignment",
             Fmt("count %u x %zu bytes = %llu bytes is not a multiple of 256 bytes: the count form of %s compares whole 256-byte "
                 "repeats (%u elements of this type); round the count up to a multiple of %u and size the operands for it",
                 count, sizeof(T), (unsigned long long)bytes, op, unsigned(kRepeatBytes / sizeof(T)),
                 unsigned(kRepeatBytes / sizeof(T))));
}

// b == nullptr: compare against the scalar s.
template <class T>
inline void CmpCount(const char* op, const LocalTensor<uint8_t>& dst, const LocalTensor<T>& a, const LocalTensor<T>* b, T s,
                     CMPMODE m, uint32_t count) {
    BeginOp(PIPE_V, op);
    CmpCountRule<T>(op, count);
    if (count == 0) return;
    const T* pa = VecOperand(a, count, "src0");
    const T* pb = b ? VecOperand(*b, count, "src1") : nullptr;
    uint8_t* pd = VecOperand(dst, count / 8, "dst");
    a.SimTouch(0, count, false);
    if (b) b->SimTouch(0, count, false);
    dst.SimTouch(0, count / 8, true);
    std::vector<uint8_t> bits(count / 8, 0);
    for (uint32_t i = 0; i < count; ++i)
        if (CmpEval(m, Ld(pa[i]), pb ? Ld(pb[i]) : Ld(s))) bits[i >> 3] |= uint8_t(1u << (i & 7));
    std::memcpy(pd, bits.data(), bits.size());
    CountVector(count, VectorPasses<T>(count));
}
template <class T>
inline void CmpRepeat(const char* op, const LocalTensor<uint8_t>& dst, const LocalTensor<T>& a, const LocalTensor<T>* b, T s,
                      CMPMODE m, const LaneMask& lm, uint8_t repeat, Stride sa, Stride sb) {
    static_assert(sizeof(T) >= 2, "fla-npu sim: the mask/repeat form of Compare is simulated for 16/32-bit sources only");
    (void)op;  // the wrapper began the operation
    if (repeat == 0) return;
    constexpr uint32_t lanes = kRepeatBytes / sizeof(T), bytesPer = lanes / 8;
    const T* pa = RepOperand(a, lm, repeat, sa, false, "src0");
    const T* pb = b ? RepOperand(*b, lm, repeat, sb, false, "src1") : nullptr;
    uint8_t* pd = VecOperand(dst, uint64_t(repeat) * bytesPer, "dst");
    dst.SimTouch(0, uint64_t(repeat) * bytesPer, true);
    std::vector<uint8_t> bits(uint64_t(repeat) * bytesPer, 0);
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t l = 0; l < lanes; ++l)
            if (lm.On(l) && CmpEval(m, Ld(pa[LaneOff<T>(r, l, sa)]), pb ? Ld(pb[LaneOff<T>(r, l, sb)]) : Ld(s))) {
                const uint64_t i = uint64_t(r) * lanes + l;
                bits[i >> 3] |= uint8_t(1u << (i & 7));
            }
    std::memcpy(pd, bits.data(), bits.size());
    CountVector(ActiveLanes<T>(lm) * repeat, repeat);
}

inline void SelModeRule(SELMODE mode, bool scalar) {
    if (scalar && mode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        Fail("Select mode",
             Fmt("selMode %s with a scalar src1: a scalar selects only in VSEL_TENSOR_SCALAR_MODE", SelModeName(mode)));
    if (!scalar && mode != SELMODE::VSEL_CMPMASK_SPR && mode != SELMODE::VSEL_TENSOR_TENSOR_MODE)
        Fail("Select mode",
             Fmt("selMode %s with a tensor src1: use VSEL_TENSOR_TENSOR_MODE or VSEL_CMPMASK_SPR", SelModeName(mode)));
}
// Read the bits of selMask the instruction consumes (bits [0, nbits)).
template <class U>
inline const uint8_t* SelMaskBits(const LocalTensor<U>& m, uint64_t nbits) {
    const uint64_t bytes = (nbits + 7) / 8;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(VecOperand(m, (bytes + sizeof(U) - 1) / sizeof(U), "selMask"));
    m.SimTouchBytes(0, bytes, false);
    return p;
}
template <class T, class U>
inline void SelCount(const LocalTensor<T>& dst, const LocalTensor<U>& sel, const LocalTensor<T>& a, const LocalTensor<T>* b, T s,
                     SELMODE mode, uint32_t count) {
    BeginOp(PIPE_V, "Select");
    SelModeRule(mode, b == nullptr);
    if (count == 0) return;
    constexpr uint32_t lanes = kRepeatBytes / sizeof(T);
    const bool spr = mode == SELMODE::VSEL_CMPMASK_SPR;
    const uint8_t* pm = SelMaskBits(sel, spr ? std::min<uint32_t>(count, lanes) : count);
    const T* pa = VecOperand(a, count, "src0");
    const T* pb = b ? VecOperand(*b, count, "src1") : nullptr;
    T* pd = VecOperand(dst, count, "dst");
    a.SimTouch(0, count, false);
    if (b) b->SimTouch(0, count, false);
    dst.SimTouch(0, count, true);
    std::vector<T> tmp(count);
    for (uint32_t i = 0; i < count; ++i) tmp[i] = BitAt(pm, spr ? i % lanes : i) ? pa[i] : (pb ? pb[i] : s);
    std::memcpy(static_cast<void*>(pd), tmp.data(), uint64_t(count) * sizeof(T));
    CountVector(count, VectorPasses<T>(count));
}
template <class T, class U>
inline void SelRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& sel, const LocalTensor<T>& a, const LocalTensor<T>* b, T s,
                      SELMODE mode, const LaneMask& lm, uint8_t repeat, const BinaryRepeatParams& p) {
    SelModeRule(mode, b == nullptr);
    if (repeat == 0) return;
    constexpr uint32_t lanes = kRepeatBytes / sizeof(T);
    const bool spr = mode == SELMODE::VSEL_CMPMASK_SPR;
    const Stride sd{p.dstBlkStride, p.dstRepStride}, sa{p.src0BlkStride, p.src0RepStride}, sb{p.src1BlkStride, p.src1RepStride};
    const uint8_t* pm = SelMaskBits(sel, spr ? lanes : uint64_t(repeat) * lanes);
    const T* pa = RepOperand(a, lm, repeat, sa, false, "src0");
    const T* pb = b ? RepOperand(*b, lm, repeat, sb, false, "src1") : nullptr;
    T* pd = RepOperand(dst, lm, repeat, sd, true, "dst");
    for (uint32_t r = 0; r < repeat; ++r)
        for (uint32_t l = 0; l < lanes; ++l)
            if (lm.On(l)) {
                const bool bit = BitAt(pm, spr ? l : uint64_t(r) * lanes + l);
                pd[LaneOff<T>(r, l, sd)] = bit ? pa[LaneOff<T>(r, l, sa)] : (pb ? pb[LaneOff<T>(r, l, sb)] : s);
            }
    CountVector(ActiveLanes<T>(lm) * repeat, repeat);
}
}  // namespace sim

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t count) {
    FLA_SIM_REQUIRE_CMP(T, U, "Compare");
    sim::CmpCount<T>("Compare", dst, src0, &src1, T{}, cmpMode, count);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    FLA_SIM_REQUIRE_CMP(T, U, "Compare");
    sim::CmpRepeat<T>("Compare", dst, src0, &src1, T{}, cmpMode, sim::BeginRepeat<T>("Compare", isSetMask, mask), repeatTime,
                      sim::Stride{repeatParams.src0BlkStride, repeatParams.src0RepStride},
                      sim::Stride{repeatParams.src1BlkStride, repeatParams.src1RepStride});
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    FLA_SIM_REQUIRE_CMP(T, U, "Compare");
    sim::CmpRepeat<T>("Compare", dst, src0, &src1, T{}, cmpMode, sim::BeginRepeat<T>("Compare", isSetMask, mask), repeatTime,
                      sim::Stride{repeatParams.src0BlkStride, repeatParams.src0RepStride},
                      sim::Stride{repeatParams.src1BlkStride, repeatParams.src1RepStride});
}
template <typename T, typename U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          uint32_t count) {
    FLA_SIM_REQUIRE_CMP(T, U, "CompareScalar");
    sim::CmpCount<T>("CompareScalar", dst, src0, nullptr, src1Scalar, cmpMode, count);
}
template <typename T, typename U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          const uint64_t mask[], uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    FLA_SIM_REQUIRE_CMP(T, U, "CompareScalar");
    sim::CmpRepeat<T>("CompareScalar", dst, src0, nullptr, src1Scalar, cmpMode,
                      sim::BeginRepeat<T>("CompareScalar", isSetMask, mask), repeatTime,
                      sim::Stride{repeatParams.srcBlkStride, repeatParams.srcRepStride}, sim::Stride{0, 0});
}
template <typename T, typename U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          const uint64_t mask, uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    FLA_SIM_REQUIRE_CMP(T, U, "CompareScalar");
    sim::CmpRepeat<T>("CompareScalar", dst, src0, nullptr, src1Scalar, cmpMode,
                      sim::BeginRepeat<T>("CompareScalar", isSetMask, mask), repeatTime,
                      sim::Stride{repeatParams.srcBlkStride, repeatParams.srcRepStride}, sim::Stride{0, 0});
}
// Newer CANN spells CompareScalar "Compares".
template <typename T, typename U>
inline void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode, uint32_t count) {
    CompareScalar(dst, src0, src1Scalar, cmpMode, count);
}

// Select, count form: tensor/tensor (VSEL_TENSOR_TENSOR_MODE, VSEL_CMPMASK_SPR) and tensor/scalar
// (VSEL_TENSOR_SCALAR_MODE).
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count) {
    FLA_SIM_REQUIRE_SEL(T, U);
    sim::SelCount<T, U>(dst, selMask, src0, &src1, T{}, selMode, count);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1, SELMODE selMode,
                   uint32_t count) {
    FLA_SIM_REQUIRE_SEL(T, U);
    sim::SelCount<T, U>(dst, selMask, src0, nullptr, src1, selMode, count);
}
// Select, mask/repeat form.
#define FLA_SIM_SELECT_REPEAT(SRC1_DECL, SRC1_PTR, SRC1_VAL, MASK_DECL, MASK_OF)                                        \
    template <typename T, typename U, bool isSetMask = true>                                                            \
    inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, SRC1_DECL, \
                       SELMODE selMode, MASK_DECL, uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {        \
        FLA_SIM_REQUIRE_SEL(T, U);                                                                                      \
        sim::BeginOp(PIPE_V, "Select");                                                                                 \
        sim::CheckIsSetMask<T>(isSetMask);                                                                              \
        sim::SelRepeat<T, U>(dst, selMask, src0, SRC1_PTR, SRC1_VAL, selMode, MASK_OF, repeatTime, repeatParams);       \
    }
FLA_SIM_SELECT_REPEAT(const LocalTensor<T>& src1, &src1, T{}, const uint64_t mask[], sim::MaskOfBits<T>(mask))
FLA_SIM_SELECT_REPEAT(const LocalTensor<T>& src1, &src1, T{}, const uint64_t mask, sim::MaskOfCount<T>(mask))
FLA_SIM_SELECT_REPEAT(T src1, nullptr, src1, const uint64_t mask[], sim::MaskOfBits<T>(mask))
FLA_SIM_SELECT_REPEAT(T src1, nullptr, src1, const uint64_t mask, sim::MaskOfCount<T>(mask))
#undef FLA_SIM_SELECT_REPEAT

}  // namespace AscendC
