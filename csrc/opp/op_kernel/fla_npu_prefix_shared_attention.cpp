// Operator-package entry of FlaNpuPrefixSharedAttention: the mixed Cube + vector kernel body
// (csrc/prefix_shared_attention/prefix_shared_attention_kernel.h, also behind the sim library's
// direct entries) with the interface CANN's OPP runtime calls: q, k, v, out in the registration's
// order (op_host/fla_npu_prefix_shared_attention.cpp), then the workspace and the GM address of the
// tiling struct the host tiling filled. Compiles against the host simulation too
// (tests/kernels/test_opp_kernel_entries.py).
//
// Dtype: one binary per dtype combination of the registration, with DTYPE_Q (half or bfloat16_t)
// defined by the OPP build; see fla_npu_gate_chunk_cumsum.cpp.
//
// Workspace: the host tiling asks for the system workspace (GetLibApiWorkSpaceSize) plus the
// kernel's per-core S / P / O_j slots and the K/V splits' partial results (psa::UserWorkspaceBytes);
// GetUserWorkspace gives the start of the latter. The splits' merge is the kernel's second phase in
// this one launch (SyncAll over the AIVs), so the package needs no second kernel.
#include "kernel_operator.h"
#include "../../prefix_shared_attention/prefix_shared_attention_kernel.h"

#ifndef DTYPE_Q
#error "DTYPE_Q (the element type of q, k, v and out) is defined by CANN's OPP build, once per dtype combination"
#endif

extern "C" __global__ __aicore__ void fla_npu_prefix_shared_attention(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR out,
                                                                    GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    AscendC::InitSocState();  // the core's global state as the kernel expects it, whatever ran before
    REGISTER_TILING_DEFAULT(fla_npu::psa::PsaTiling);
    GET_TILING_DATA(t, tiling);
    fla_npu::psa::RunPrefixSharedAttention<DTYPE_Q>(q, k, v, out, AscendC::GetUserWorkspace(workspace), t);
}
