// fla-npu host simulation of Ascend C — per-SoC dtype rules of vector instructions, checked at
// compile time like the device compiler does (reference/ascendc.md §1.9): on a2/a3 (arch 2201) the
// vector unit has no bf16 arithmetic (kernels Cast to float, compute, Cast back); a5 (3510) has it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "sim_base.h"
#include "sim_dtypes.h"

namespace AscendC {
namespace sim {
template <class T>
constexpr bool kIsBf16 = std::is_same_v<T, bfloat16_t>;
template <class T>
constexpr bool kVecArithType =
    std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>;
template <class T>
constexpr bool kVecFloatType = std::is_same_v<T, half> || std::is_same_v<T, float>;
template <class T>
constexpr bool kVecFillType = sizeof(T) == 2 || sizeof(T) == 4;
// Compare/CompareScalar sources and Select operands: half/float on a2/a3 (arch 2201); a5 (3510)
// adds bfloat16_t and the 8/16/32-bit integers.
template <class T>
constexpr bool kVecCmpInt = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int16_t> ||
                            std::is_same_v<T, uint16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;
template <class T>
constexpr bool kVecCmpType = kVecFloatType<T> || (kSocHasBf16Vector && (kIsBf16<T> || kVecCmpInt<T>));
template <class T>
constexpr bool kVecSelType = kVecFloatType<T> || (kSocHasBf16Vector && (kIsBf16<T> || (kVecCmpInt<T> && sizeof(T) >= 2)));
// Select's selMask: a bit mask held in unsigned integers.
template <class U>
constexpr bool kSelMaskType =
    std::is_same_v<U, uint8_t> || std::is_same_v<U, uint16_t> || std::is_same_v<U, uint32_t> || std::is_same_v<U, uint64_t>;

template <class D, class S>
constexpr bool kCastPair =
    (std::is_same_v<D, half> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && std::is_same_v<S, half>) ||
    (std::is_same_v<D, bfloat16_t> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && std::is_same_v<S, bfloat16_t>) ||
    (std::is_same_v<D, int32_t> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && std::is_same_v<S, int32_t>) ||
    (std::is_same_v<D, int32_t> && std::is_same_v<S, half>) || (std::is_same_v<D, half> && std::is_same_v<S, int16_t>) ||
    (std::is_same_v<D, int16_t> && std::is_same_v<S, half>) ||
    (kSocHasBf16Vector &&
     ((std::is_same_v<D, half> && std::is_same_v<S, bfloat16_t>) || (std::is_same_v<D, bfloat16_t> && std::is_same_v<S, half>)));
}  // namespace sim
}  // namespace AscendC

#define FLA_SIM_BF16_RULE(T, OP)                                                    \
    static_assert(!::AscendC::sim::kIsBf16<T> || ::AscendC::sim::kSocHasBf16Vector, \
                  "fla-npu sim: " OP                                                \
                  ": bf16 vector arithmetic is not supported on a2/a3 (NPU arch "   \
                  "2201); Cast to float, compute in float, Cast back")

// Arithmetic/compare instructions: half, float, int16, int32 (+ bf16 where the SoC has it).
#define FLA_SIM_REQUIRE_ARITH(T, OP)                                              \
    FLA_SIM_BF16_RULE(T, OP);                                                     \
    static_assert(::AscendC::sim::kIsBf16<T> || ::AscendC::sim::kVecArithType<T>, \
                  "fla-npu sim: " OP ": element type not supported by this vector instruction")

// Transcendental/division instructions: half, float (+ bf16 where the SoC has it).
#define FLA_SIM_REQUIRE_FLOAT(T, OP)                                              \
    FLA_SIM_BF16_RULE(T, OP);                                                     \
    static_assert(::AscendC::sim::kIsBf16<T> || ::AscendC::sim::kVecFloatType<T>, \
                  "fla-npu sim: " OP ": element type not supported (half/float only)")

#define FLA_SIM_REQUIRE_CAST(D, S)                 \
    static_assert(::AscendC::sim::kCastPair<D, S>, \
                  "fla-npu sim: Cast: this source/destination type pair is not supported on this SoC")

// Compare/CompareScalar: the source type per SoC, the destination a uint8_t bit mask.
#define FLA_SIM_REQUIRE_CMP(T, U, OP)                                                                            \
    static_assert(::AscendC::sim::kVecCmpType<T>, "fla-npu sim: " OP                                             \
                                                  ": source type not supported on this SoC (a2/a3: half/float; " \
                                                  "a5 adds bfloat16_t and 8/16/32-bit integers)");               \
    static_assert(std::is_same_v<U, uint8_t>, "fla-npu sim: " OP ": the destination bit mask must be a uint8_t tensor")

// Select: the data type per SoC, the selMask an unsigned integer tensor of bits.
#define FLA_SIM_REQUIRE_SEL(T, U)                                                                    \
    static_assert(::AscendC::sim::kVecSelType<T>,                                                    \
                  "fla-npu sim: Select: element type not supported on this SoC (a2/a3: half/float; " \
                  "a5 adds bfloat16_t and 16/32-bit integers)");                                     \
    static_assert(::AscendC::sim::kSelMaskType<U>,                                                   \
                  "fla-npu sim: Select: selMask must be a uint8_t/uint16_t/uint32_t/uint64_t tensor of bits")
