// fla-npu host simulation of Ascend C — 16-bit float types and exact rounding.
//
// half and bfloat16_t are stored as their IEEE bit patterns. Every simulated vector instruction
// computes in float and rounds its result once to the element type, so fp16/bf16 results carry the
// per-instruction rounding of the device (for + - * / sqrt a single rounding of the float result is
// exact, float having more than twice the bits of either type).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace AscendC {

enum class RoundMode : uint8_t {
    CAST_NONE = 0,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD,
};

namespace sim {

// Round a finite or non-finite float to an IEEE binary format with `expBits`/`mantBits` and return
// its bit pattern. Modes: RINT = nearest-even, ROUND = nearest, ties away from zero, FLOOR/CEIL
// toward -inf/+inf, TRUNC toward zero, ODD = von Neumann rounding to odd. CAST_NONE means RINT.
inline uint32_t EncodeFloat(float f, int expBits, int mantBits, RoundMode mode) {
    const uint32_t expMax = (1u << expBits) - 1;
    const int bias = static_cast<int>((1u << (expBits - 1)) - 1);
    const int emin = 1 - bias, emax = bias;
    const uint32_t signBit = 1u << (expBits + mantBits);
    uint32_t fb;
    std::memcpy(&fb, &f, 4);
    const bool neg = (fb >> 31) != 0;
    const uint32_t sign = neg ? signBit : 0u;
    if (std::isnan(f)) return (expMax << mantBits) | (1u << (mantBits - 1)) | sign;
    if (std::isinf(f)) return sign | (expMax << mantBits);
    const double a = std::fabs(static_cast<double>(f));
    if (a == 0.0) return sign;
    int e;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    e -= 1;             // a = m' * 2^e, m' in [1, 2)
    const int ue = (e < emin ? emin : e) - mantBits;
    const double q = std::ldexp(a, -ue);  // exact
    double lo = std::floor(q);
    const double frac = q - lo;
    bool up = false;
    switch (mode) {
        case RoundMode::CAST_NONE:
        case RoundMode::CAST_RINT: up = frac > 0.5 || (frac == 0.5 && std::fmod(lo, 2.0) != 0.0); break;
        case RoundMode::CAST_ROUND: up = frac >= 0.5; break;
        case RoundMode::CAST_TRUNC: up = false; break;
        case RoundMode::CAST_FLOOR: up = neg && frac > 0.0; break;
        case RoundMode::CAST_CEIL: up = !neg && frac > 0.0; break;
        case RoundMode::CAST_ODD:
            if (frac > 0.0 && std::fmod(lo, 2.0) == 0.0) lo += 1.0;
            break;
    }
    const double n = lo + (up ? 1.0 : 0.0);
    const double v = std::ldexp(n, ue);
    const double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, -mantBits), emax);
    if (v > maxFinite) {
        const bool toInf = mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_ROUND ||
                           (mode == RoundMode::CAST_FLOOR && neg) || (mode == RoundMode::CAST_CEIL && !neg);
        if (toInf) return sign | (expMax << mantBits);
        return sign | ((expMax - 1) << mantBits) | ((1u << mantBits) - 1);
    }
    if (v == 0.0) return sign;
    int ve;
    std::frexp(v, &ve);
    ve -= 1;
    if (ve < emin) {  // subnormal
        const uint32_t mant = static_cast<uint32_t>(std::ldexp(v, mantBits - emin));
        return sign | mant;
    }
    const uint32_t mant = static_cast<uint32_t>(std::ldexp(v, mantBits - ve)) - (1u << mantBits);
    return sign | (static_cast<uint32_t>(ve + bias) << mantBits) | mant;
}

inline float DecodeHalf(uint16_t h) {
    const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float v;
    if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
    else if (exp == 31) v = mant ? NAN : INFINITY;
    else v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}
inline float DecodeBf16(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace sim
}  // namespace AscendC

// The device's 16-bit float types (half: 5 exponent, 10 mantissa bits; bfloat16_t: 8 and 7), one
// template for both. Conversions from float round to nearest even; arithmetic on scalars goes through
// float (kernel scalar code, not vector instructions).
template <int kExpBits, int kMantBits, float (*kDecode)(uint16_t)>
struct Float16Type {
    uint16_t bits = 0;
    Float16Type() = default;
    Float16Type(float f)
        : bits(static_cast<uint16_t>(AscendC::sim::EncodeFloat(f, kExpBits, kMantBits, AscendC::RoundMode::CAST_RINT))) {}
    operator float() const { return kDecode(bits); }
    static Float16Type FromBits(uint16_t b) {
        Float16Type h;
        h.bits = b;
        return h;
    }
};
using half = Float16Type<5, 10, AscendC::sim::DecodeHalf>;
using bfloat16_t = Float16Type<8, 7, AscendC::sim::DecodeBf16>;
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit float types must be 2 bytes");

namespace AscendC {
namespace sim {

template <class T>
constexpr bool kIsF16 = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
template <class T>
constexpr bool kIsFloatLike = std::is_same_v<T, float> || kIsF16<T>;

// Round a float result to T with `mode` (per-instruction rounding).
template <class T>
inline T FromFloat(float f, RoundMode mode = RoundMode::CAST_RINT) {
    if constexpr (std::is_same_v<T, float>) {
        return f;
    } else if constexpr (std::is_same_v<T, half>) {
        return half::FromBits(static_cast<uint16_t>(EncodeFloat(f, 5, 10, mode)));
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        return bfloat16_t::FromBits(static_cast<uint16_t>(EncodeFloat(f, 8, 7, mode)));
    } else {  // integers: round then saturate
        double r;
        switch (mode) {
            case RoundMode::CAST_FLOOR: r = std::floor(f); break;
            case RoundMode::CAST_CEIL: r = std::ceil(f); break;
            case RoundMode::CAST_ROUND: r = std::round(f); break;
            case RoundMode::CAST_TRUNC: r = std::trunc(f); break;
            default: r = std::nearbyint(f); break;
        }
        if (std::isnan(r)) return T(0);
        const double lo = static_cast<double>(std::numeric_limits<T>::min());
        const double hi = static_cast<double>(std::numeric_limits<T>::max());
        return static_cast<T>(r < lo ? lo : (r > hi ? hi : r));
    }
}
template <class T>
inline float ToFloat(T v) {
    return static_cast<float>(v);
}

}  // namespace sim
}  // namespace AscendC
