// Kernel entries of the intra-chunk kernel (chunk_intra_kernel.h), launched directly by the entry
// points generated from chunk_intra.op.py.
#include "chunk_intra_kernel.h"

// Kernel entries, one per Cube input type.
#define FLA_NPU_CHUNK_INTRA_ENTRY(NAME, T)                                                                           \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR q, GM_ADDR k, GM_ADDR beta, GM_ADDR g, GM_ADDR aqk, GM_ADDR l, \
                                               GM_ADDR workspace, fla_npu::chunk_intra::ChunkIntraTiling tiling) {   \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                           \
        fla_npu::chunk_intra::RunChunkIntra<T>(q, k, beta, g, aqk, l, workspace, tiling);                            \
    }

FLA_NPU_CHUNK_INTRA_ENTRY(fla_chunk_intra_f16, half)
FLA_NPU_CHUNK_INTRA_ENTRY(fla_chunk_intra_bf16, bfloat16_t)
