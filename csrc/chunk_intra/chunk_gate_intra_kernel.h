// The intra-chunk kernel with KDA's gate in its launch (chunk_gate_intra.op.py): chunk_intra's kernel
// (chunk_intra_kernel.h) with the tiling's gate_in set, its vector cores forming G from the raw gate
// (chunk_gate_intra_tiling.h). Aqk and Akk in T.
#ifndef FLA_NPU_CHUNK_GATE_INTRA_KERNEL_H
#define FLA_NPU_CHUNK_GATE_INTRA_KERNEL_H

#include "chunk_gate_intra_tiling.h"
#include "chunk_intra_kernel.h"

namespace fla_npu {
namespace chunk_gate_intra {

// The kernel body: T the Cube input type (q, k, aqk, akk), R the raw gate's (float or T).
template <class T, class R>
__aicore__ inline void RunChunkGateIntra(GM_ADDR q, GM_ADDR k, GM_ADDR beta, GM_ADDR g, GM_ADDR aLog, GM_ADDR dtBias,
                                         GM_ADDR chunkLen, GM_ADDR aqk, GM_ADDR akk, GM_ADDR qScale, GM_ADDR kScale, GM_ADDR gate,
                                         GM_ADDR eLast, GM_ADDR ws, const ChunkIntraTiling& tiling) {
    ChunkIntraTiling t = tiling;
    t.aqk_f32 = t.akk_f32 = 0;
    t.gate_in = 1;
    kernel_frame::RunMixed<chunk_intra::ChunkIntraCube<T, T>, chunk_intra::ChunkIntraVector<T, R>>(
        chunk_intra::ChunkIntraGm{q, k, beta, g, aqk, akk, qScale, kScale, ws, aLog, dtBias, chunkLen, gate, eLast}, t);
}

}  // namespace chunk_gate_intra
}  // namespace fla_npu

#endif
