// fla-npu host simulation of Ascend C — language layer, enums, SoC profiles, faults, runtime hooks.
//
// Clean-room: written from the public names and meanings of the Ascend C API only.
// Kernels never include this file directly; they include "kernel_operator.h".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "../common/soc_facts.h"
#include "sim_api.h"

// ---------------------------------------------------------------------------------------------
// SoC selection (compile time, like the device build): -DFLA_SIM_SOC=FLA_SIM_SOC_A2|A3|A5.
#define FLA_SIM_SOC_A2 2
#define FLA_SIM_SOC_A3 3
#define FLA_SIM_SOC_A5 5
#ifndef FLA_SIM_SOC
#define FLA_SIM_SOC FLA_SIM_SOC_A2
#endif
#if FLA_SIM_SOC != FLA_SIM_SOC_A2 && FLA_SIM_SOC != FLA_SIM_SOC_A3 && FLA_SIM_SOC != FLA_SIM_SOC_A5
#error "FLA_SIM_SOC must be FLA_SIM_SOC_A2, FLA_SIM_SOC_A3 or FLA_SIM_SOC_A5"
#endif
// The architecture number kernels may test for SoC traits, as in the device build.
#ifndef __NPU_ARCH__
#if FLA_SIM_SOC == FLA_SIM_SOC_A5
#define __NPU_ARCH__ 3510
#else
#define __NPU_ARCH__ 2201
#endif
#endif

// ---------------------------------------------------------------------------------------------
// Kernel language qualifiers: meaningless on the host.
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __vector__
#define __cube__
#define __mix__(a, b)
#define __inout_pipe__(...)
#define __sync_alias__
#define GM_ADDR uint8_t*

// ---------------------------------------------------------------------------------------------
// Pipes and kernel types (global names, as kernels spell them unqualified).
enum pipe_t : uint8_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_ALL };

enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY = 0,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
};

namespace AscendC {

enum CoreTypeSim : uint8_t { AIC = 0, AIV = 1 };

enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    SPM,
    TSCM,
    MAX,
    LCM = VECCALC,
};
using QuePosition = TPosition;

// HardEvent: source pipe _ destination pipe.
// clang-format off
#define FLA_SIM_HARD_EVENTS(X)                                                                  \
    X(MTE2_MTE1, PIPE_MTE2, PIPE_MTE1) X(MTE1_MTE2, PIPE_MTE1, PIPE_MTE2)                       \
    X(MTE1_M, PIPE_MTE1, PIPE_M) X(M_MTE1, PIPE_M, PIPE_MTE1)                                   \
    X(MTE2_V, PIPE_MTE2, PIPE_V) X(V_MTE2, PIPE_V, PIPE_MTE2)                                   \
    X(MTE3_V, PIPE_MTE3, PIPE_V) X(V_MTE3, PIPE_V, PIPE_MTE3)                                   \
    X(M_V, PIPE_M, PIPE_V) X(V_M, PIPE_V, PIPE_M) X(V_V, PIPE_V, PIPE_V)                        \
    X(MTE3_MTE1, PIPE_MTE3, PIPE_MTE1) X(MTE1_MTE3, PIPE_MTE1, PIPE_MTE3)                       \
    X(MTE1_V, PIPE_MTE1, PIPE_V) X(V_MTE1, PIPE_V, PIPE_MTE1)                                   \
    X(MTE2_M, PIPE_MTE2, PIPE_M) X(M_MTE2, PIPE_M, PIPE_MTE2)                                   \
    X(MTE3_MTE2, PIPE_MTE3, PIPE_MTE2) X(MTE2_MTE3, PIPE_MTE2, PIPE_MTE3)                       \
    X(S_V, PIPE_S, PIPE_V) X(V_S, PIPE_V, PIPE_S)                                               \
    X(S_MTE2, PIPE_S, PIPE_MTE2) X(MTE2_S, PIPE_MTE2, PIPE_S)                                   \
    X(S_MTE3, PIPE_S, PIPE_MTE3) X(MTE3_S, PIPE_MTE3, PIPE_S)                                   \
    X(S_MTE1, PIPE_S, PIPE_MTE1) X(MTE1_S, PIPE_MTE1, PIPE_S)                                   \
    X(M_FIX, PIPE_M, PIPE_FIX) X(FIX_M, PIPE_FIX, PIPE_M)                                       \
    X(FIX_S, PIPE_FIX, PIPE_S) X(S_FIX, PIPE_S, PIPE_FIX)                                       \
    X(M_S, PIPE_M, PIPE_S) X(S_M, PIPE_S, PIPE_M)                                               \
    X(FIX_MTE3, PIPE_FIX, PIPE_MTE3) X(MTE3_FIX, PIPE_MTE3, PIPE_FIX)                           \
    X(FIX_MTE2, PIPE_FIX, PIPE_MTE2) X(MTE2_FIX, PIPE_MTE2, PIPE_FIX)                           \
    X(FIX_MTE1, PIPE_FIX, PIPE_MTE1) X(MTE1_FIX, PIPE_MTE1, PIPE_FIX)                           \
    X(FIX_V, PIPE_FIX, PIPE_V) X(V_FIX, PIPE_V, PIPE_FIX)
// clang-format on

enum class HardEvent : uint8_t {
#define FLA_SIM_X(name, src, dst) name,
    FLA_SIM_HARD_EVENTS(FLA_SIM_X)
#undef FLA_SIM_X
        MAX
};
using TEventID = int8_t;

namespace sim {

constexpr int kNumPipes = 7;            // PIPE_S .. PIPE_FIX
constexpr uint32_t kBlock = 32;         // ONE_BLK_SIZE
constexpr uint32_t kRepeatBytes = 256;  // one vector repeat
constexpr uint32_t kMaxRepeat = 255;
constexpr int kEventIdsPerType = 8;  // QUE_MAX_EVENT
constexpr int kCrossCoreFlags = 16;
constexpr int kCrossCoreMaxPending = 15;                      // 4-bit counter
constexpr int kSyncAllFlagFirst = 11, kSyncAllFlagLast = 14;  // used by SyncAll itself
constexpr uint32_t kMmadBarrierFractals = 10;  // accumulating Mmads below this many output fractals need PipeBarrier<PIPE_M>

constexpr pipe_t EventSrc(HardEvent e) {
    switch (e) {
#define FLA_SIM_X(name, src, dst) \
    case HardEvent::name: return src;
        FLA_SIM_HARD_EVENTS(FLA_SIM_X)
#undef FLA_SIM_X
        default: return PIPE_ALL;
    }
}
constexpr pipe_t EventDst(HardEvent e) {
    switch (e) {
#define FLA_SIM_X(name, src, dst) \
    case HardEvent::name: return dst;
        FLA_SIM_HARD_EVENTS(FLA_SIM_X)
#undef FLA_SIM_X
        default: return PIPE_ALL;
    }
}
const char* EventName(HardEvent e);
const char* PipeName(pipe_t p);
const char* PositionName(TPosition p);

// On-chip arenas of one core.
enum class ArenaKind : uint8_t { UB = 0, L1, L0A, L0B, L0C, COUNT };
constexpr int kNumArenas = static_cast<int>(ArenaKind::COUNT);
const char* ArenaName(ArenaKind a);

struct SocProfile {
    const char* name;
    uint32_t arenaBytes[kNumArenas];  // UB, L1, L0A, L0B, L0C: the usable sizes
    bool vectorPipeOrdered;           // false: dependent vector instructions need PipeBarrier<PIPE_V>
};
constexpr SocProfile ProfileOf(const fla_npu::soc::SocFacts& f) {
    return {f.name, {f.ubBytes, f.l1Bytes, f.l0aBytes, f.l0bBytes, f.l0cBytes}, f.vectorPipeOrdered};
}
// Per-SoC sizes: csrc/common/soc_facts.h (the usable sizes of the architecture pages).
inline constexpr SocProfile kProfileA2 = ProfileOf(fla_npu::soc::kA2);
inline constexpr SocProfile kProfileA3 = ProfileOf(fla_npu::soc::kA3);
inline constexpr SocProfile kProfileA5 = ProfileOf(fla_npu::soc::kA5);
// The simulated SoC's facts (kernels' compile-time view, like __NPU_ARCH__ on the device).
#if FLA_SIM_SOC == FLA_SIM_SOC_A5
inline constexpr const fla_npu::soc::SocFacts& kSocFacts = fla_npu::soc::kA5;
inline constexpr const SocProfile& kSoc = kProfileA5;
#elif FLA_SIM_SOC == FLA_SIM_SOC_A3
inline constexpr const fla_npu::soc::SocFacts& kSocFacts = fla_npu::soc::kA3;
inline constexpr const SocProfile& kSoc = kProfileA3;
#else
inline constexpr const fla_npu::soc::SocFacts& kSocFacts = fla_npu::soc::kA2;
inline constexpr const SocProfile& kSoc = kProfileA2;
#endif
inline constexpr bool kSocHasBf16Vector = kSocFacts.bf16VectorArith;

// A simulated-device fault. The launcher catches it on the faulting core, stops the other cores
// and turns the launch into a failure whose message names kernel, core and rule.
struct Fault : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// Thrown into the other cores of a launch once one core faulted; never escapes a launch.
struct Aborted {};
// What a failed launch throws to its caller: what() is the first fault's full message.
struct LaunchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Raise a fault on the current core: "kernel 'k' core AIV3 (block 1, sub 1): <rule>: <detail>".
[[noreturn]] void Fail(const std::string& rule, const std::string& detail);

struct CoreCtx;
CoreCtx* Cur();                  // the calling thread's core; nullptr outside a launch
CoreCtx& Core(const char* api);  // the current core, or a fault if called outside a launch

// Core identity of the calling thread.
CoreTypeSim CurCoreType();
int64_t CurBlockIdx();
int64_t CurBlockNum();
int64_t CurSubBlockIdx();
int64_t CurSubBlockNum();
void DeclareKernelType(KernelMetaType t);

// Every API call starts an operation on a pipe: this ticks the pipe's clock, names the operation
// in hazard reports and stops the core if another core faulted.
void BeginOp(pipe_t pipe, const char* op);

// Counters of the current core (and the size of its current instruction in the trace). `gm`: the
// first GM byte of the move (counted as workspace bytes too when in the launch's workspace).
void CountGmToLocal(uint64_t bytes, const void* gm);
void CountLocalToGm(uint64_t bytes, const void* gm);
// The GM workspace of the next launch on this thread ([base, base + bytes); the generated sim entry
// points give it): its moves are counted apart too (ws_to_local_bytes, local_to_ws_bytes).
void SetNextLaunchWorkspace(const void* base, uint64_t bytes);
void CountVector(uint64_t elems, uint64_t passes);     // passes: 256-byte repeats the vector unit makes
void CountCube(uint64_t macs, uint64_t fractalSteps);  // fractalSteps: 16 x 16 x C0 steps of the Cube

// The trace (sim_api.h): an on-chip move's bytes and where they go (FLA_SIM_MEM_*), and the
// synchronisation records. No-ops unless tracing.
void TraceBytes(uint64_t bytes, uint8_t where);
void TraceSync(uint8_t kind, pipe_t pipe, pipe_t peer, uint32_t key, uint8_t detail = 0);
// The 256-byte repeats a count-form vector instruction over `count` elements of T makes.
template <class T>
constexpr uint64_t VectorPasses(uint64_t count) {
    return (count * sizeof(T) + kRepeatBytes - 1) / kRepeatBytes;
}

}  // namespace sim
}  // namespace AscendC
