// Host tiling of the intra-chunk kernel with KDA's gate in its launch (chunk_gate_intra.op.py):
// chunk_intra's tiling (chunk_intra_tiling.h) with gate_in. Plain C++: no Ascend C, no CANN, no
// simulation.
//
// Design: chunk_intra's launch, whose vector cores take the raw gate instead of G. Per unit (chunk,
// value head) each AIV forms the unit's whole G in its UB: the raw rows of its own block rows
// (BlockRowOwner) in 16-row pieces through the G queue, widened to fp32 and activated
// (gate/gate_activation.h: the gate cumsum kernel's arithmetic), handed to the other AIV through a gate
// slot of the workspace (two per core: units alternate; a cross-AIV flag meets both sets), the other's
// pieces read back; rows at or past the chunk's length zeroed, then summed (fp32: within each 16-row
// block in order, the blocks side by side, then each block's total carried into the next: within
// float32 rounding of the gate cumsum kernel's in-order sums; both AIVs the same, so that they choose the
// same reference rows). BT 16 (one AIV owns the block row) activates alone. G then stays in the UB for the unit's
// operands (chunk_intra reads it from GM); each AIV writes its owned block rows of G (padding rows hold
// the last row's value: their terms are zero) and the owner of the last block row e_last = e^(G[BT -
// 1]): what the fused state kernel (FlaNpuChunkStateOutput) reads. A diagonal block computed exactly (a
// decay too wide for the Cube) reads its G back from the G output, written by the same AIV a unit
// earlier. Unit u + 1's G is formed while the AIC multiplies unit u's operands (activated before unit u
// - 1's outputs, summed after them). This replaces the gate cumsum's launch and G's reads by
// chunk_intra: the raw gate is read once, G written once.
//
// Limits: chunk_intra's, KDA only (g [NC, BT, HV, K]), K up to kGateInMaxK (the UB).
#ifndef FLA_NPU_CHUNK_GATE_INTRA_TILING_H
#define FLA_NPU_CHUNK_GATE_INTRA_TILING_H

#include "chunk_intra_tiling.h"

namespace fla_npu {
namespace chunk_gate_intra {

using chunk_intra::ChunkIntraTiling;  // the one tiling struct of the intra-chunk kernel
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call: chunk_intra's checks on q, k, beta, g (the raw gate, G's
// shape), aqk, akk, q_scale and k_scale, then the gate's: gate_form 0..2 (softplus needs a_log), a_log
// [HV], dt_bias HV * K elements, chunk_len [NC], G the shape of g, e_last [NC, HV, K]. nullptr, or the
// message of the first defect (static, without the op's name).
const char* TilingFromShapes(const ShapeArg* t, int64_t gate_form, float lower_bound, int64_t qk_l2norm, float scale,
                             int64_t akk_beta, const DeviceFacts& dev, ChunkIntraTiling* tiling);

}  // namespace chunk_gate_intra
}  // namespace fla_npu

#endif
