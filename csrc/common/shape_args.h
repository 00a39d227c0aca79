// What an op's operator-package tiling hook (`TilingFromShapes`, declared in <op>/<stage>_tiling.h,
// called by the op_host file generated from the op's descriptor) sees of a call: the tensors'
// shapes and dtypes (no data) and the device's launch facts. Plain C++.
#ifndef FLA_NPU_COMMON_SHAPE_ARGS_H
#define FLA_NPU_COMMON_SHAPE_ARGS_H

#include <cstdint>

#include "../include/fla_npu/kernel_types.h"

namespace fla_npu {

// One tensor argument; ndim -1: absent (an optional input not given).
struct ShapeArg {
    int32_t ndim = -1;
    int64_t d[FLA_NPU_MAX_DIMS] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t numel = 0;
    int32_t dtype = -1;  // FlaNpuDtype; -1: the call has no description of it
    bool present() const { return ndim >= 0; }
};

// The device a tiling is for, as the operator package's platform reports it.
struct DeviceFacts {
    uint32_t aiv_cores = 1;  // vector cores
    uint32_t ai_cores = 1;   // AI cores (one AIC + two AIVs each)
    uint32_t ub_bytes = 0;   // usable UB per vector core
    uint32_t l0c_bytes = 0;  // L0C per AI core
    bool cube_fp32 = true;   // the Cube takes float x float inputs (a2, a3 and a5 do)
};

// A hook's last step: the op's ComputeTiling (found through the problem's namespace) on the checked
// problem; nullptr, or its message.
template <typename Problem, typename Tiling>
const char* TilingOrMessage(const Problem& p, Tiling* tiling) {
    const char* err = "";
    return ComputeTiling(p, tiling, &err) != 0 ? err : nullptr;
}

}  // namespace fla_npu

#endif
