// What an op's operator-package tiling hook (`TilingFromShapes`, declared in <op>/<stage>_tiling.h,
// called by the op_host file generated from the op's descriptor) sees of a call: the tensors'
// shapes and dtypes (no data) and the device's launch facts. Plain C++.
#ifndef FLA_NPU_COMMON_SHAPE_ARGS_H
#define FLA_NPU_COMMON_SHAPE_ARGS_H

#include <cstdint>
#include <initializer_list>

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

// Whether the call's tensors a[0], a[1], ... have the ranks `ranks`, in order.
inline bool RanksAre(const ShapeArg* a, std::initializer_list<int32_t> ranks) {
    for (int32_t r : ranks)
        if ((a++)->ndim != r) return false;
    return true;
}

// Whether the leading dims of x are `dims`.
inline bool DimsAre(const ShapeArg& x, std::initializer_list<int64_t> dims) {
    const int64_t* d = x.d;
    for (int64_t n : dims)
        if (*d++ != n) return false;
    return true;
}

// Whether x and y have one shape.
inline bool SameShape(const ShapeArg& x, const ShapeArg& y) {
    if (x.ndim != y.ndim) return false;
    for (int32_t i = 0; i < x.ndim; ++i)
        if (x.d[i] != y.d[i]) return false;
    return true;
}

// A hook's last step: the op's ComputeTiling (found through the problem's namespace) on the checked
// problem; nullptr, or its message.
template <typename Problem, typename Tiling>
const char* TilingOrMessage(const Problem& p, Tiling* tiling) {
    const char* err = "";
    return ComputeTiling(p, tiling, &err) != 0 ? err : nullptr;
}

// The same after the op's shape checks: their message (`shape_message`; nullptr: none), else the op's
// ComputeTiling on the problem they made.
template <typename Problem, typename Tiling>
const char* TilingOrMessage(const char* shape_message, const Problem& p, Tiling* tiling) {
    return shape_message != nullptr ? shape_message : TilingOrMessage(p, tiling);
}

}  // namespace fla_npu

#endif
