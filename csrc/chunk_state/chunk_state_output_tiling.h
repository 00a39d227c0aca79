// Host tiling of the inter-chunk state kernel with the WY factors and the chunk output fused in
// (chunk_state_output.op.py): the state kernel's tiling (chunk_state_tiling.h, its fused design note)
// on this op's call. Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/chunk_state_output_tiling_test.cpp).
#ifndef FLA_NPU_CHUNK_STATE_OUTPUT_TILING_H
#define FLA_NPU_CHUNK_STATE_OUTPUT_TILING_H

#include "chunk_state_tiling.h"

namespace fla_npu {
namespace chunk_state_output {

using chunk_state::ChunkStateTiling;  // the one tiling struct of both state ops
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call: the shapes of q, k [NC, BT, HQ, K] and v, o [NC, BT, HV,
// V] (token-major, HV a multiple of HQ), beta [NC, HV, BT], g (CheckGate), akk and aqk [NC, HV, BT,
// BT], then the state arguments (chunk_state::StateArgs: e_last, chunk_offsets, h0, final) and
// chunk_state::ComputeTiling with the fused WY and output. nullptr, or the message of the first defect
// (static, without the op's name).
const char* TilingFromShapes(const ShapeArg* t, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling);

}  // namespace chunk_state_output
}  // namespace fla_npu

#endif
