// Kernel entries of the gate + chunk-local cumsum kernel (gate_cumsum_kernel.h), launched directly by
// the entry points generated from gate_cumsum.op.py. The operator package has its own entry around
// the same kernel body (fla_npu_gate_chunk_cumsum, generated from the descriptor by csrc/tools/gen_opp.py).
#include "gate_cumsum_kernel.h"

// Kernel entries, one per input dtype. Pointers that the tiling does not use may be null.
#define FLA_NPU_GATE_CUMSUM_ENTRY(NAME, T)                                                                       \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR g, GM_ADDR aLog, GM_ADDR dtBias, GM_ADDR cu, GM_ADDR chunks, \
                                               GM_ADDR out, fla_npu::gate::GateCumsumTiling tiling) {           \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                                        \
        fla_npu::gate::RunGateChunkCumsum<T>(g, aLog, dtBias, cu, chunks, out, tiling);                        \
    }

FLA_NPU_GATE_CUMSUM_ENTRY(fla_gate_chunk_cumsum_f32, float)
FLA_NPU_GATE_CUMSUM_ENTRY(fla_gate_chunk_cumsum_f16, half)
FLA_NPU_GATE_CUMSUM_ENTRY(fla_gate_chunk_cumsum_bf16, bfloat16_t)
