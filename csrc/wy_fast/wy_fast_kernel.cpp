// Kernel entries of the WY kernel (wy_fast_kernel.h), launched directly by the entry points generated
// from wy_fast.op.py. The operator package has its own entry around the same kernel body
// (fla_npu_wy_fast, generated from the descriptor by csrc/tools/gen_opp.py).
#include "wy_fast_kernel.h"

// Kernel entries, one per Cube input type.
#define FLA_NPU_WY_FAST_ENTRY(NAME, T)                                                                               \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR k, GM_ADDR v, GM_ADDR beta, GM_ADDR akk, GM_ADDR eRow,         \
                                               GM_ADDR eTail, GM_ADDR w, GM_ADDR u, GM_ADDR kg, GM_ADDR workspace,   \
                                               fla_npu::wy_fast::WyFastTiling tiling) {                             \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                           \
        fla_npu::wy_fast::RunWyFast<T>(k, v, beta, akk, eRow, eTail, w, u, kg, workspace, tiling);                   \
    }

FLA_NPU_WY_FAST_ENTRY(fla_wy_fast_f16, half)
FLA_NPU_WY_FAST_ENTRY(fla_wy_fast_bf16, bfloat16_t)
