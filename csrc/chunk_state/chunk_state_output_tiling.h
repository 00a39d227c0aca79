// Host tiling of the inter-chunk state kernel with the chunk output fused in (chunk_state_output.op.py):
// the state kernel's tiling (chunk_state_tiling.h, its fused_output design note) on this op's call.
// Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/chunk_state_output_tiling_test.cpp).
#ifndef FLA_NPU_CHUNK_STATE_OUTPUT_TILING_H
#define FLA_NPU_CHUNK_STATE_OUTPUT_TILING_H

#include "chunk_state_tiling.h"

namespace fla_npu {
namespace chunk_state_output {

using chunk_state::ChunkStateTiling;  // the one tiling struct of both state ops
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call: the state kernel's shape checks (chunk_state::StateProblem)
// and those of q [NC, BT, HQ, K] (HV a multiple of HQ), g (GateHeadMajor), aqk [NC, HV, BT, BT] and
// o [NC, BT, HV, V], then chunk_state::ComputeTiling with the fused output. nullptr, or the message of
// the first defect (static, without the op's name).
const char* TilingFromShapes(const ShapeArg* t, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling);

}  // namespace chunk_state_output
}  // namespace fla_npu

#endif
