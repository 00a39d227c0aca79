// Checks and tiling of the triangular-inverse kernel's C entry point (flaNpuSolveTril,
// include/fla_npu/kernels.h). The entry points around them (two phases, the simulated launch or the
// aclnn forwarding) are generated from solve_tril.op.py by csrc/tools/gen_op_entry.py.
#include <string>

#include "../common/api_common.h"
#include "solve_tril_entry.h"

namespace fla_npu {
namespace solve_tril {

int ValidateAndTile(const FlaNpuTensor* l, const FlaNpuTensor* akk, EntryCall* call) {
    // The descriptors' dtypes here; strides, shapes and the tiling: TilingFromShapes, the operator
    // package's hook.
    if (l->dtype != FLA_NPU_FLOAT32)
        return InvalidArgument(kEntry,
                               std::string("`l` must be float32 (the Cube reads it as it is), got ") + DtypeName(l->dtype));
    if (!CheckDtype(kEntry, "akk", akk, {FLA_NPU_FLOAT32, FLA_NPU_FLOAT16, FLA_NPU_BFLOAT16}))
        return FLA_NPU_ERR_INVALID_ARGUMENT;
    return TileCall(kEntry, kTensorNames, kTensors, call);
}

}  // namespace solve_tril
}  // namespace fla_npu
