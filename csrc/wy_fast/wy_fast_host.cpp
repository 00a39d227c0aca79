// Checks and tiling of the WY kernel's C entry point (flaNpuWyFast, include/fla_npu/kernels.h).
// The entry points around them (two phases, the simulated launch or the aclnn forwarding) are
// generated from wy_fast.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "wy_fast_entry.h"

namespace fla_npu {
namespace wy_fast {

int ValidateAndTile(const FlaNpuTensor* k, const FlaNpuTensor* v, const FlaNpuTensor* beta, const FlaNpuTensor* akk,
                    const FlaNpuTensor* e_row, const FlaNpuTensor* e_tail, const FlaNpuTensor* w, const FlaNpuTensor* u,
                    const FlaNpuTensor* kg, EntryCall* call) {
    const FlaNpuTensor* const* t = call->t;  // k, v, beta, akk, e_row, e_tail, w, u, kg
    if (!CheckAllPresent(kEntry, kTensorNames, t, kTensors)) return FLA_NPU_ERR_INVALID_ARGUMENT;
    // The descriptors' dtypes here; strides, shapes and the tiling: TilingFromShapes, the operator
    // package's hook.
    if (k->dtype != FLA_NPU_FLOAT16 && k->dtype != FLA_NPU_BFLOAT16 && k->dtype != FLA_NPU_FLOAT32)
        return InvalidArgument(kEntry, std::string("`k` must be float16, bfloat16 or float32, got ") + DtypeName(k->dtype));
    if (v->dtype != k->dtype || akk->dtype != k->dtype) return InvalidArgument(kEntry, "`k`, `v` and `akk` must have one dtype");
    for (const FlaNpuTensor* x : {beta, e_row, e_tail, w, u, kg})
        if (x->dtype != FLA_NPU_FLOAT32)
            return InvalidArgument(kEntry, "`beta`, `e_row`, `e_tail`, `w`, `u` and `kg` must be float32");
    return CheckStridesAndTile(kEntry, kTensorNames, t, kTensors, [call](const ShapeArg* a, const DeviceFacts& dev) {
        return TilingFromShapes(a, dev, &call->tiling);
    });
}

}  // namespace wy_fast
}  // namespace fla_npu
