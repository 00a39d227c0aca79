// Kernel entries of the chunk output kernel (chunk_output_kernel.h), launched directly by
// the entry points generated from chunk_output.op.py. The operator package has its own entry around
// the same kernel body (fla_npu_chunk_output, generated from the descriptor by csrc/tools/gen_opp.py).
#include "chunk_output_kernel.h"

// Kernel entries, one per Cube input type.
#define FLA_NPU_CHUNK_OUTPUT_ENTRY(NAME, T)                                                                        \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR q, GM_ADDR eRow, GM_ADDR s, GM_ADDR aqk, GM_ADDR vNew,     \
                                               GM_ADDR out, GM_ADDR workspace,                                   \
                                               fla_npu::chunk_output::ChunkOutputTiling tiling) {               \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                       \
        fla_npu::chunk_output::RunChunkOutput<T>(q, eRow, s, aqk, vNew, out, workspace, tiling);                 \
    }

FLA_NPU_CHUNK_OUTPUT_ENTRY(fla_chunk_output_f16, half)
FLA_NPU_CHUNK_OUTPUT_ENTRY(fla_chunk_output_bf16, bfloat16_t)
