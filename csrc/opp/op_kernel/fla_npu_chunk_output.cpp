// Operator-package entry of FlaNpuChunkOutput: the mixed Cube + vector kernel body
// (csrc/chunk_output/chunk_output_kernel.h, also behind the sim library's direct entries) with the
// interface CANN's OPP runtime calls: q, e_row, s, aqk, v_new, out in the registration's order
// (op_host/fla_npu_chunk_output.cpp), then the workspace and the GM address of the tiling struct the
// host tiling filled. Compiles against the host simulation too (tests/kernels/test_opp_kernel_entries.py).
//
// Dtype: one binary per dtype combination of the registration, with DTYPE_Q (half or bfloat16_t)
// defined by the OPP build; see fla_npu_gate_chunk_cumsum.cpp.
//
// Workspace: the host tiling asks for the system workspace (GetLibApiWorkSpaceSize) plus two slots
// per AI core (chunk_output::UserWorkspaceBytes); GetUserWorkspace gives the start of the latter.
#include "kernel_operator.h"
#include "../../chunk_output/chunk_output_kernel.h"

#ifndef DTYPE_Q
#error "DTYPE_Q (the element type of q, aqk and v_new) is defined by CANN's OPP build, once per dtype combination"
#endif

extern "C" __global__ __aicore__ void fla_npu_chunk_output(GM_ADDR q, GM_ADDR eRow, GM_ADDR s, GM_ADDR aqk, GM_ADDR vNew,
                                                         GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    AscendC::InitSocState();  // the core's global state as the kernel expects it, whatever ran before
    REGISTER_TILING_DEFAULT(fla_npu::chunk_output::ChunkOutputTiling);
    GET_TILING_DATA(t, tiling);
    fla_npu::chunk_output::RunChunkOutput<DTYPE_Q>(q, eRow, s, aqk, vNew, out, AscendC::GetUserWorkspace(workspace), t);
}
