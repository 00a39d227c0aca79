// Operator-package entry of FlaNpuGateChunkCumsum: the gate + chunk-local cumsum kernel body
// (csrc/gate/gate_cumsum_kernel.h, also behind the sim library's direct entries) with the interface
// CANN's OPP runtime calls: the inputs and outputs in the registration's order
// (op_host/fla_npu_gate_chunk_cumsum.cpp), then the workspace and the GM address of the tiling
// struct the host tiling filled. Absent optional inputs presumably arrive as null (not confirmed); the
// body reads only those the tiling marks used. Compiles against the host simulation too
// (tests/kernels/test_opp_kernel_entries.py).
//
// Dtype: the OPP binary build compiles this file once per dtype combination of the registration and
// defines DTYPE_<INPUT> for each (DTYPE_G: float, half or bfloat16_t); the runtime picks the binary
// by the call's dtypes. So each binary instantiates the body for its DTYPE_G only, without a tiling
// key or a runtime branch (a tiling key would put all three instantiations in every binary).
#include "kernel_operator.h"
#include "../../gate/gate_cumsum_kernel.h"

#ifndef DTYPE_G
#error "DTYPE_G (the element type of g) is defined by CANN's OPP build, once per dtype combination"
#endif

extern "C" __global__ __aicore__ void fla_npu_gate_chunk_cumsum(GM_ADDR g, GM_ADDR a_log, GM_ADDR dt_bias,
                                                              GM_ADDR cu_seqlens, GM_ADDR chunk_indices, GM_ADDR out,
                                                              GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    AscendC::InitSocState();  // the core's global state as the kernel expects it, whatever ran before
    REGISTER_TILING_DEFAULT(fla_npu::gate::GateCumsumTiling);
    GET_TILING_DATA(t, tiling);
    (void)workspace;  // the kernel needs none (the tiling asks for 0 bytes)
    fla_npu::gate::RunGateChunkCumsum<DTYPE_G>(g, a_log, dt_bias, cu_seqlens, chunk_indices, out, t);
}
