// Kernel entry of the triangular-inverse kernel (solve_tril_kernel.h), launched directly by the entry
// points generated from solve_tril.op.py. L is float32; the output type is the tiling's out_kind.
#include "solve_tril_kernel.h"

extern "C" __global__ __aicore__ void fla_solve_tril_f32(GM_ADDR l, GM_ADDR akk, GM_ADDR workspace,
                                                         fla_npu::solve_tril::SolveTrilTiling tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    using namespace fla_npu::solve_tril;
    if (tiling.out_kind == kOutFloat16) {
        RunSolveTril<half>(l, akk, workspace, tiling);
    } else if (tiling.out_kind == kOutBfloat16) {
        RunSolveTril<bfloat16_t>(l, akk, workspace, tiling);
    } else {
        RunSolveTril<float>(l, akk, workspace, tiling);
    }
}
