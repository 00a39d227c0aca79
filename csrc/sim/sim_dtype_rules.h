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
template <class T> constexpr bool kIsBf16 = std::is_same_v<T, bfloat16_t>;
template <class T> constexpr bool kVecArithType =
    std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>;
template <class T> constexpr bool kVecFloatType = std::is_same_v<T, half> || std::is_same_v<T, float>;
template <class T> constexpr bool kVecFillType = sizeof(T) == 2 || sizeof(T) == 4;

template <class D, class S> constexpr bool kCastPair =
    (std::is_same_v<D, half> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && std::is_same_v<S, half>) ||
    (std::is_same_v<D, bfloat16_t> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && std::is_same_v<S, bfloat16_t>) ||
    (std::is_same_v<D, int32_t> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && std::is_same_v<S, int32_t>) ||
    (std::is_same_v<D, int32_t> && std::is_same_v<S, half>) || (std::is_same_v<D, half> && std::is_same_v<S, int16_t>) ||
    (std::is_same_v<D, int16_t> && std::is_same_v<S, half>) ||
    (kSocHasBf16Vector && ((std::is_same_v<D, half> && std::is_same_v<S, bfloat16_t>) ||
                           (std::is_same_v<D, bfloat16_t> && std::is_same_v<S, half>)));
}  // namespace sim
}  // namespace AscendC

#define FLA_SIM_BF16_RULE(T, OP)                                                                   \
    static_assert(!::AscendC::sim::kIsBf16<T> || ::AscendC::sim::kSocHasBf16Vector,                \
                  "fla-npu sim: " OP ": bf16 vector arithmetic is not supported on a2/a3 (NPU arch " \
                  "2201); Cast to float, compute in float, Cast back")

// Arithmetic/compare instructions: half, float, int16, int32 (+ bf16 where the SoC has it).
#define FLA_SIM_REQUIRE_ARITH(T, OP)                                                               \
    FLA_SIM_BF16_RULE(T, OP);                                                                      \
    static_assert(::AscendC::sim::kIsBf16<T> || ::AscendC::sim::kVecArithType<T>,                  \
                  "fla-npu sim: " OP ": element type not supported by this vector instruction")

// Transcendental/division instructions: half, float (+ bf16 where the SoC has it).
#define FLA_SIM_REQUIRE_FLOAT(T, OP)                                                               \
    FLA_SIM_BF16_RULE(T, OP);                                                                      \
    static_assert(::AscendC::sim::kIsBf16<T> || ::AscendC::sim::kVecFloatType<T>,                  \
                  "fla-npu sim: " OP ": element type not supported (half/float only)")

#define FLA_SIM_REQUIRE_CAST(D, S)                                                                 \
    static_assert(::AscendC::sim::kCastPair<D, S>,                                                 \
                  "fla-npu sim: Cast: this source/destination type pair is not supported on this SoC")
