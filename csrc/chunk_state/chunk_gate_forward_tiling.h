// Host tiling of KDA's chunked forward in one launch (chunk_gate_forward.op.py): chunk_forward's tiling
// (chunk_forward_tiling.h) with gate_in. Plain C++: no Ascend C, no CANN, no simulation.
//
// Design: chunk_forward's launch with KDA's stage 2, whose vector cores take the raw gate instead of G
// and e_last. Forming a chunk's operands, each vector core activates the raw rows of its own blocks
// (chunk_intra's BlockRowOwner; gate/gate_activation.h: the gate cumsum kernel's arithmetic), zeroes
// the rows at or past the chunk's length and sums each block within (the blocks side by side); the
// first, middle and last sums of each block go to the other vector core through an exchange slot of the
// workspace (two per core: chunks alternate; a mode-1 flag meets both sets); then each block's total is
// carried into the next: into every row of the own blocks and the three rows of every block, which are
// what the factored operands need (the reference rows) and the chunk's last row, whose e^G is e_last.
// chunk_gate_intra's vector cores form G with the same operations in the same order (they exchange the
// activated rows and carry into the rows each reads), so o and final are bit for bit those of
// chunk_gate_intra followed by chunk_state_output. Each vector core keeps its e_last row in the
// workspace until its state update two chunks later; a diagonal block computed exactly reads its G
// block back from the workspace. With BT 16 the second vector core owns no block and forms the gate of
// the one block for its e_last alone. This replaces the gate kernel's launch, G's write and its reads:
// the raw gate is read once.
//
// Limits: chunk_forward's with KDA's gate (K up to 128).
#ifndef FLA_NPU_CHUNK_GATE_FORWARD_TILING_H
#define FLA_NPU_CHUNK_GATE_FORWARD_TILING_H

#include "chunk_state_tiling.h"

namespace fla_npu {
namespace chunk_gate_forward {

using chunk_state::ChunkStateTiling;  // the one tiling struct of the state ops
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call: chunk_forward's checks on q, k, v, beta, chunk_offsets,
// h0, o and final with g the raw per-key gate [NC, BT, HV, K], then the gate's: gate_form 0..2
// (softplus needs a_log), a_log [HV], dt_bias HV * K elements, chunk_len [NC]. nullptr, or the message
// of the first defect (static, without the op's name).
const char* TilingFromShapes(const ShapeArg* t, int64_t gate_form, float lower_bound, int64_t qk_l2norm, float scale,
                             int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling);

}  // namespace chunk_gate_forward
}  // namespace fla_npu

#endif
