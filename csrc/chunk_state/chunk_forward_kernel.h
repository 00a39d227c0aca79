// The chunked Gated DeltaNet forward's stages 2 to 5 in one launch: chunk_state_kernel.h's fused
// classes (kOut) with stage 2 in their chunk loop (the tiling's intra); the design:
// chunk_forward_tiling.h.
#ifndef FLA_NPU_CHUNK_FORWARD_KERNEL_H
#define FLA_NPU_CHUNK_FORWARD_KERNEL_H

#include "chunk_forward_tiling.h"
#include "chunk_state_kernel.h"

namespace fla_npu {
namespace chunk_forward {

// The kernel body: T the Cube type (q, k, v and o).
template <class T>
__aicore__ inline void RunChunkForward(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR g, GM_ADDR beta, GM_ADDR eLast,
                                       GM_ADDR chunkOffsets, GM_ADDR h0, GM_ADDR o, GM_ADDR fin, GM_ADDR ws,
                                       const ChunkStateTiling& t) {
    using namespace chunk_state;
    kernel_frame::RunMixed<ChunkStateCube<T, true>, ChunkStateVector<T, true>>(
        ChunkStateGm{nullptr, nullptr, nullptr, eLast, chunkOffsets, h0, nullptr, nullptr, fin, ws, k,
                     v,       nullptr, q,       g,     nullptr,      o,  nullptr, nullptr, beta},
        t);
}

}  // namespace chunk_forward
}  // namespace fla_npu

#endif
