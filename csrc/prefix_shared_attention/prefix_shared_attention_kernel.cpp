// Kernel entries of the prefix-shared attention forward kernel (prefix_shared_attention_kernel.h),
// launched directly by the entry points generated from prefix_shared_attention.op.py. The operator
// package has its own entry around the same kernel body (fla_npu_prefix_shared_attention, generated from the descriptor by csrc/tools/gen_opp.py).
#include "prefix_shared_attention_kernel.h"

// Kernel entries, one per input dtype.
#define FLA_NPU_PSA_ENTRY(NAME, T)                                                                                  \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR out, GM_ADDR workspace,   \
                                               fla_npu::psa::PsaTiling tiling) {                                  \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                        \
        fla_npu::psa::RunPrefixSharedAttention<T>(q, k, v, out, workspace, tiling);                               \
    }

FLA_NPU_PSA_ENTRY(fla_prefix_shared_attention_f16, half)
FLA_NPU_PSA_ENTRY(fla_prefix_shared_attention_bf16, bfloat16_t)
