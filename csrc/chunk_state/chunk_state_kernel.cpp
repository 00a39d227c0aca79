// Kernel entries of the inter-chunk state kernel (chunk_state_kernel.h), launched directly by the
// entry points generated from chunk_state.op.py.
#include "chunk_state_kernel.h"

// Kernel entries, one per Cube input type (the dtype of w and kg).
#define FLA_NPU_CHUNK_STATE_ENTRY(NAME, T)                                                                            \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR w, GM_ADDR u, GM_ADDR kg, GM_ADDR eLast, GM_ADDR chunkOffsets,  \
                                               GM_ADDR h0, GM_ADDR h, GM_ADDR vNew, GM_ADDR fin, GM_ADDR workspace,   \
                                               fla_npu::chunk_state::ChunkStateTiling tiling) {                     \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                           \
        fla_npu::chunk_state::RunChunkState<T>(w, u, kg, eLast, chunkOffsets, h0, h, vNew, fin, workspace, tiling);  \
    }

FLA_NPU_CHUNK_STATE_ENTRY(fla_chunk_state_f16, half)
FLA_NPU_CHUNK_STATE_ENTRY(fla_chunk_state_bf16, bfloat16_t)
