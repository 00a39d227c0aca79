// The inter-chunk state kernel with the WY factors and the chunk output fused in (stages 3, 4 and 5
// of chunked KDA / Gated DeltaNet in one launch): chunk_state_kernel.h's classes fused (kOut); the
// design: chunk_state_tiling.h.
#ifndef FLA_NPU_CHUNK_STATE_OUTPUT_KERNEL_H
#define FLA_NPU_CHUNK_STATE_OUTPUT_KERNEL_H

#include "chunk_state_kernel.h"
#include "chunk_state_output_tiling.h"

namespace fla_npu {
namespace chunk_state_output {

// The kernel body: T the Cube type (q, k, v, akk, aqk and o).
template <class T>
__aicore__ inline void RunChunkStateOutput(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR g, GM_ADDR akk, GM_ADDR aqk, GM_ADDR eLast,
                                           GM_ADDR chunkOffsets, GM_ADDR h0, GM_ADDR qScale, GM_ADDR kScale, GM_ADDR o,
                                           GM_ADDR fin, GM_ADDR ws, const ChunkStateTiling& t) {
    using namespace chunk_state;
    kernel_frame::RunMixed<ChunkStateCube<T, true>, ChunkStateVector<T, true>>(
        ChunkStateGm{nullptr, nullptr, nullptr, eLast, chunkOffsets, h0, nullptr, nullptr, fin,    ws, k,
                     v,       akk,     q,       g,     aqk,          o,  qScale,  kScale,  nullptr},
        t);
}

}  // namespace chunk_state_output
}  // namespace fla_npu

#endif
