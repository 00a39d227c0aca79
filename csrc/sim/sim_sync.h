// fla-npu host simulation of Ascend C — synchronisation.
//
// Intra-core: every pipe (S, V, M, MTE1, MTE2, MTE3, FIX) keeps a vector clock. SetFlag<src_dst>
// snapshots src's clock, WaitFlag<src_dst> merges the snapshot into dst's clock, PipeBarrier<PIPE_ALL>
// merges all clocks. The hazard checker (runtime.cpp, Touch) uses these clocks to decide whether an
// access is ordered after the previous accesses of other pipes.
// Cross-core: CrossCoreSetFlag/CrossCoreWaitFlag are 4-bit counting semaphores (at most 15 pending
// sets); a wait that can never be satisfied is reported as a deadlock naming who waits on what.
#pragma once

#include "sim_memory.h"

namespace AscendC {
namespace sim {
void SetFlagImpl(HardEvent evt, int32_t id);
void WaitFlagImpl(HardEvent evt, int32_t id);
void PipeBarrierImpl(pipe_t pipe);
void CrossCoreSetFlagImpl(int mode, pipe_t pipe, uint16_t flagId);
void CrossCoreWaitFlagImpl(int mode, pipe_t pipe, uint16_t flagId);
void SyncAllImpl(bool aivOnly);
}  // namespace sim

template <HardEvent event>
inline void SetFlag(int32_t eventID) {
    sim::SetFlagImpl(event, eventID);
}
template <HardEvent event>
inline void WaitFlag(int32_t eventID) {
    sim::WaitFlagImpl(event, eventID);
}
template <pipe_t pipe>
inline void PipeBarrier() {
    sim::PipeBarrierImpl(pipe);
}
template <bool isAIVOnly = true>
inline void SyncAll() {
    sim::SyncAllImpl(isAIVOnly);
}
template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId) {
    sim::CrossCoreSetFlagImpl(modeId, pipe, flagId);
}
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId) {
    sim::CrossCoreWaitFlagImpl(modeId, pipe, flagId);
}

inline int64_t GetBlockIdx() { return sim::CurBlockIdx(); }
inline int64_t GetBlockNum() { return sim::CurBlockNum(); }
inline int64_t GetSubBlockIdx() { return sim::CurSubBlockIdx(); }
inline int64_t GetSubBlockNum() { return sim::CurSubBlockNum(); }
inline int64_t GetTaskRatio() { return sim::CurCoreType() == AIV ? sim::CurSubBlockNum() : 1; }
inline int64_t GetTaskRation() { return GetTaskRatio(); }  // older spelling

// Kernel entries call this first: on the device it resets the AI core's global state that an
// earlier kernel may have left behind (atomic mode, mask mode, LoadData padding/boundaries, the AIV
// mask; API page InitSocState). Every simulated launch starts from a fresh core, and the sim does not
// model that sticky state, so there is nothing to reset here.
__aicore__ inline void InitSocState() {}

}  // namespace AscendC

// `if ASCEND_IS_AIC { ... }`: a runtime test of the simulated core's type (on the device the source
// is compiled once per core type and this is `if constexpr`).
#define ASCEND_IS_AIC (::AscendC::sim::CurCoreType() == ::AscendC::AIC)
#define ASCEND_IS_AIV (::AscendC::sim::CurCoreType() == ::AscendC::AIV)
#define ASCEND_IS_NOT_AIC (::AscendC::sim::CurCoreType() != ::AscendC::AIC)
#define ASCEND_IS_NOT_AIV (::AscendC::sim::CurCoreType() != ::AscendC::AIV)
#define KERNEL_TASK_TYPE_DEFAULT(t) ::AscendC::sim::DeclareKernelType(t)
