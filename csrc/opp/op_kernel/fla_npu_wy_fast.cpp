// Operator-package entry of FlaNpuWyFast: the mixed Cube + vector kernel body
// (csrc/wy_fast/wy_fast_kernel.h, also behind the sim library's direct entries) with the interface
// CANN's OPP runtime calls: k, v, beta, akk, e_row, e_tail, w, u, kg in the registration's order
// (op_host/fla_npu_wy_fast.cpp), then the workspace and the GM address of the tiling struct the host
// tiling filled. Compiles against the host simulation too (tests/kernels/test_opp_kernel_entries.py).
//
// Dtype: one binary per dtype combination of the registration, with DTYPE_K (half or bfloat16_t)
// defined by the OPP build; see fla_npu_gate_chunk_cumsum.cpp.
//
// Workspace: the host tiling asks for the system workspace (GetLibApiWorkSpaceSize) plus two slots
// per AI core (wy_fast::UserWorkspaceBytes); GetUserWorkspace gives the start of the latter.
#include "kernel_operator.h"
#include "../../wy_fast/wy_fast_kernel.h"

#ifndef DTYPE_K
#error "DTYPE_K (the element type of k, v and akk) is defined by CANN's OPP build, once per dtype combination"
#endif

extern "C" __global__ __aicore__ void fla_npu_wy_fast(GM_ADDR k, GM_ADDR v, GM_ADDR beta, GM_ADDR akk, GM_ADDR eRow, GM_ADDR eTail,
                                                    GM_ADDR w, GM_ADDR u, GM_ADDR kg, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    AscendC::InitSocState();  // the core's global state as the kernel expects it, whatever ran before
    REGISTER_TILING_DEFAULT(fla_npu::wy_fast::WyFastTiling);
    GET_TILING_DATA(t, tiling);
    fla_npu::wy_fast::RunWyFast<DTYPE_K>(k, v, beta, akk, eRow, eTail, w, u, kg, AscendC::GetUserWorkspace(workspace), t);
}
