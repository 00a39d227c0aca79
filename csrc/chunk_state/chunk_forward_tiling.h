// Host tiling of the chunked Gated DeltaNet forward's stages 2 to 5 in one launch (chunk_forward.op.py):
// the fused state kernel's tiling (chunk_state_tiling.h) with stage 2 in the launch (intra: the
// workspace's stage-2 regions, the buffers that finishing it takes). Plain C++: no Ascend C, no CANN,
// no simulation.
//
// Design: the fused kernel's chunk loop (chunk_state_tiling.h) with stage 2 of the next chunk in it.
// The vector cores read q, k, g and beta once per chunk, as the fused kernel's do, form X1, kg and
// qe, and also write q's and k's rows as read (T) and their factors (l2 norm, scale) to the operand
// slot; the Cube multiplies [q; k] k^T from there into a result slot; the vector cores finish stage 2
// as chunk_intra's GDN rows do (decay, the factors, masks, beta, the 16 x 16 diagonal blocks
// inverted) into the chunk's pair of Aqk and Akk regions (T) and the inverse slot: the products and
// roundings of chunk_intra followed by chunk_state_output (but the norms' sums of squares, added here
// by the vector cores, there from the Cube's diagonals); the Cube merges the inverse's blocks
// left of the diagonal (solve_tril's BlockRowMerge) into the pair's Akk and runs the chunk's WY,
// state and output products on them. Order per chunk c of a unit (the first chunk's stage 2 before):
//   AIC  wait Inverse, merges(c); WY(c); per lane v_new and dS (flags S, dS); o(c);
//        wait X, stage 2's products of c + 1, set Stage2
//   AIV  S's halves (set S); form c + 1's operands (set X); wait dS, S update;
//        wait Stage2, finish stage 2 of c + 1, set Inverse
// No cycle: each wait is on a flag set earlier in the other side's order. One result and one inverse
// slot suffice (a chunk's are rewritten only after the flags that follow their reads); Aqk and Akk
// alternate between two pairs (a core's j-th chunk: pair j % 2) as the operand slots do.
//
// Limits: chunk_state's, with a scalar decay per row (Kg = 1) only; BT 32 and 64 need a Cube that
// takes float32 (the merges).
#ifndef FLA_NPU_CHUNK_FORWARD_TILING_H
#define FLA_NPU_CHUNK_FORWARD_TILING_H

#include "chunk_state_tiling.h"

namespace fla_npu {
namespace chunk_forward {

using chunk_state::ChunkStateTiling;  // the one tiling struct of the state ops
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call: the shapes of q, k [NC, BT, HQ, K] and v, o [NC, BT, HV,
// V] (token-major, HV a multiple of HQ), g [NC, HV, BT, 1], beta [NC, HV, BT], qk_l2norm 0 / 1, then
// the state arguments (chunk_state::StateArgs: e_last, chunk_offsets, h0, final) and
// chunk_state::ComputeTiling with the fused WY and output and stage 2 in the launch. nullptr, or the
// message of the first defect (static, without the op's name).
const char* TilingFromShapes(const ShapeArg* t, int64_t qk_l2norm, float scale, int64_t state_v_first, const DeviceFacts& dev,
                             ChunkStateTiling* tiling);

}  // namespace chunk_forward
}  // namespace fla_npu

#endif
