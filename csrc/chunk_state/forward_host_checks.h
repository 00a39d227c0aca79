// The checks both one-launch forwards' C entry points (chunk_forward_host.cpp,
// chunk_gate_forward_host.cpp) make first, of their attribute state_v_first and their Cube tensors.
#ifndef FLA_NPU_CHUNK_STATE_FORWARD_HOST_CHECKS_H
#define FLA_NPU_CHUNK_STATE_FORWARD_HOST_CHECKS_H

#include "../common/api_common.h"

namespace fla_npu {
namespace chunk_state {

// state_v_first 0 or 1; q, k, v and o of one dtype, float16 or bfloat16 (float32 refused with the
// reason). FLA_NPU_OK, or the error set for `entry`.
inline int CheckForwardCubeArgs(const char* entry, const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* v,
                                const FlaNpuTensor* o, int32_t state_v_first) {
    if (state_v_first != 0 && state_v_first != 1) return InvalidArgument(entry, "`state_v_first` must be 0 or 1");
    if (k->dtype == FLA_NPU_FLOAT32)
        return InvalidArgument(entry,
                               "float32 Cube inputs are not supported: q, k and v must be float16 or bfloat16 (the Cube's "
                               "transposing loads exist for 2-byte types only)");
    if (!CheckDtype(entry, "k", k, {FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16})) return FLA_NPU_ERR_INVALID_ARGUMENT;
    for (const FlaNpuTensor* x : {q, v, o})
        if (x->dtype != k->dtype) return InvalidArgument(entry, "`q`, `k`, `v` and `o` must have one dtype");
    return FLA_NPU_OK;
}

}  // namespace chunk_state
}  // namespace fla_npu

#endif
