// KDA's chunked forward, stages 1 to 5 in one launch (chunk_gate_forward.op.py): chunk_forward's kernel
// (chunk_forward_kernel.h) with the tiling's gate_in set, its vector cores forming G and e_last from the
// raw gate (chunk_gate_forward_tiling.h).
#ifndef FLA_NPU_CHUNK_GATE_FORWARD_KERNEL_H
#define FLA_NPU_CHUNK_GATE_FORWARD_KERNEL_H

#include "chunk_gate_forward_tiling.h"
#include "chunk_state_kernel.h"

namespace fla_npu {
namespace chunk_gate_forward {

// The kernel body: T the Cube type (q, k, v and o), R the raw gate's (float or T).
template <class T, class R>
__aicore__ inline void RunChunkGateForward(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR g, GM_ADDR beta, GM_ADDR aLog, GM_ADDR dtBias,
                                           GM_ADDR chunkLen, GM_ADDR chunkOffsets, GM_ADDR h0, GM_ADDR o, GM_ADDR fin, GM_ADDR ws,
                                           const ChunkStateTiling& tiling) {
    using namespace chunk_state;
    ChunkStateTiling t = tiling;
    t.gate_in = 1;
    ChunkStateGm a{nullptr, nullptr, nullptr, nullptr, chunkOffsets, h0, nullptr, nullptr, fin, ws, k,
                   v,       nullptr, q,       g,       nullptr,      o,  nullptr, nullptr, beta};
    a.aLog = aLog;
    a.dtBias = dtBias;
    a.len = chunkLen;
    kernel_frame::RunMixed<ChunkStateCube<T, true>, ChunkStateVector<T, true, R>>(a, t);
}

}  // namespace chunk_gate_forward
}  // namespace fla_npu

#endif
