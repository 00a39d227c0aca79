// Host tiling of the chunked KDA / Gated DeltaNet forward's stages 2 to 5 in one launch (chunk_forward.op.py):
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
// state and output products on them. Stage 2 runs two chunks ahead of the recurrence, so that it
// fills the vector cores' wait between handing over a chunk's S and receiving its dS instead of
// lengthening that chain. Per unit, first: the AIVs form chunks c0 and c0 + 1 (set X each), the
// Cube multiplies both (wait X, set Stage2 each), the AIVs finish c0 (wait Stage2, set Inverse).
// Then per chunk c (a core's j-th):
//   AIC  wait Inverse, merges(c); WY(c); per lane v_new and dS (wait S, set dS);
//        wait X, stage 2's products of c + 2 (set Stage2); o(c)
//   AIV  S's halves (set S); form c + 2's operands (set X);
//        wait Stage2, finish stage 2 of c + 1 (set Inverse); wait dS, S update
// (forming before finishing: the Cube's products of c + 2 then wait for the form only, not also for
// the finish of c + 1, which waits for the Cube's products of c + 1.)
// No cycle: each wait is on a flag set earlier in the other side's order. Regions (each rewritten only
// after the flags that follow its last read): three operand slots (j % 3: qe, X1, kg, [q; k] and the
// row factors), two result slots, two inverse slots and two pairs of Aqk and Akk (j % 2). On the
// device a race between the cores on GM is not seen by the simulation: these reuse distances are
// the argument, checked chunk by chunk in chunk_state_kernel.h's comments.
//
// KDA (a per-key decay, Kg = K): its stage 2 needs factored operands (chunk_intra_tiling.h), so the
// vector cores read each block they own (chunk_intra's BlockRowOwner) of k, q and G once and form from
// it both the state operands' rows and chunk_intra's fp32 operands (operand slot j % 3, KdaOperandElems;
// the reference rows of the block rows they do not own read apart); the Cube multiplies them block row
// by block row, writes the columns left of each diagonal block to the pair's Aqk (T) and L's to the
// inverse slot, the diagonal blocks to the result slot; the vector cores mask those (or compute them
// exactly, per pair, when their decay exceeds the safe span) and invert them. Bit for bit chunk_intra
// (akk_beta) followed by chunk_state_output: the same operations in the same order.
//
// Limits: chunk_state's; KDA K up to 128 (kKdaIntraMaxK); BT 32 and 64 need a Cube that takes float32
// (the merges), KDA every BT (its operands).
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

// TilingFromShapes' checks: nullptr and *p (the problem ComputeTiling takes), or the message.
const char* ProblemFromShapes(const ShapeArg* t, int64_t qk_l2norm, float scale, int64_t state_v_first, const DeviceFacts& dev,
                              chunk_state::ChunkStateProblem* p);

}  // namespace chunk_forward
}  // namespace fla_npu

#endif
