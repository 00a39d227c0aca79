// Host tiling of the intra-chunk kernel (chunk_intra_kernel.h), stage 2 of chunked KDA and Gated
// DeltaNet. Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/chunk_intra_tiling_test.cpp).
//
// The op, per chunk c and value head h (chunk layout, every (c, h) independent), with G the
// chunk-local cumulative log decay (natural log, the units of the vector unit's Exp):
//   Aqk[i, j] = sum_d q[i, d] k[j, d] e^(G[i, d] - G[j, d])            j <= i (0 above)
//   L[i, j]   = beta[i] sum_d k[i, d] k[j, d] e^(G[i, d] - G[j, d])    j <  i (0 on and above)
// q, k [NC, HV, BT, K] of the Cube input type T (fp16 or bf16); beta [NC, HV, BT] fp32; G [NC, HV,
// BT, Kg] fp32 (Kg = K: KDA's per-key gate, given token-major [NC, BT, HV, K]; Kg = 1: GDN's scalar
// gate; common/chunk_shapes.h's GateHeadMajor); Aqk, L [NC, HV, BT, BT] fp32
// or T (rounded once on write). G must not increase along a chunk (every FLA gate is a decay).
//
// Exactness for any decaying gate, floored ones included (a per-step log decay of -1000): the
// exponent is never formed as e^G, only as differences, and each Cube product is factored through a
// reference row so that no factor overflows.
//   KDA, block row I (rows [16 I, 16 I + 16), reference row r): the Mmads
//     q_I e^(G_I - G_r)  and  k_I e^(G_I - G_r)  (16 x K each)  @  (k_j e^(G_r - G_j), j < 16 (I + 1))^T
//   give rows I of Aqk and of L / beta_I over the columns up to the diagonal block (beta scales the
//   diagonal block's rows on the AIV and enters the merges through their left factor -X_II beta_I). The column factors of
//   the blocks left of the diagonal are <= 1 (j < r); the kernel forms them as block J's diagonal
//   operand factors times e^(G_r - G_r(J)) <= 1 (its last row's when J's diagonal block is exact),
//   within the bound below. r is the block's middle row 16 I + 8 when
//   max |G_r - G_j| over the diagonal block is at most safe_span ln 2 (G does not increase, so that is
//   max(G_first - G_r, G_r - G_last): three rows read): every factor of the block row is then within
//   2^+-safe_span, and an entry underflows only where its exact value is below 2^-(126 - safe_span)
//   of its operands' product. Otherwise r = 16 I, the first row: row factors <= 1 (i >= r) whatever
//   the gate, and the diagonal block goes through the Cube only when max |G_r - G_j| over it is at
//   most safe_span ln 2; beyond that its column operand rows are zero and the AIV computes the block
//   exactly per pair (e^(G_i - G_j) <= 1 for j <= i). The middle row halves the exponents of a
//   diagonal block's factors: blocks of twice the decay stay on the Cube.
//   GDN: the Cube computes q k^T and k k^T, the AIV multiplies by D[i, j] = e^(G_i - G_j) (j <= i).
//
// Design: one mixed launch (KERNEL_TYPE_MIX_AIC_1_2). AIV sub-block s owns the blocks I with
// (I ^ (I >> 1)) & 1 == s (for BT 64: {0, 3} and {1, 2}: equal operand rows): their row operands
// and outputs, and the column operands of block J for every block row I >= J (each G and k block
// read by its owner only). KDA, per unit (chunk, head): the AIVs form the scaled operands in fp32
// (factors from differences of G, no rounding) into a GM workspace slot; the AIC loads it block row
// by block row (the row operands as 16-row bands, each block row's column operands an NZ matrix of
// its own: L0A's and L0B's fractal order, one LoadData each), runs per block row one fp32 Mmad per
// part (q, k) and writes the columns left of the diagonal block straight to Aqk (Fixpipe: fp32, or
// rounded once to T) and L's to its inverse slot (fp32), the 16 x 16 diagonal blocks to a result
// slot; the AIVs mask those (or compute them exactly). GDN needs no formed operand: the AIC reads q
// and k from GM and writes q k^T and k k^T to the result slot; the AIVs multiply by the decay, mask,
// scale by beta and write Aqk's whole rows, L's columns left of the diagonal block to the inverse
// slot.
// Hand-off: common/chunk_cube.h's Ready / Free flags for the operand slots, and Done (AIC -> AIV)
// for the results; an AIV forms unit i + 1 before it finishes unit i, so the Cube works while the
// AIVs form.
//
// The inverse Akk = (I + L)^-1 in the same launch, by solve_tril's blocked forward substitution
// (solve_tril_tiling.h, tril_inverse.h): the AIV that finishes a diagonal block of L inverts it from UB
// (BlockInverse16) and writes X_bb with the zeros right of it to Akk, -X_bb (KDA: -X_bb diag(beta_b),
// as its L blocks left of the diagonal lack beta) and X_bb^T to the unit's inverse slot, then sets
// Inv (AIV -> AIC); the AIC merges the blocks left of the diagonal into Akk (BlockRowMerge) after
// the products of unit i + MergeLag (below). L reaches GM only in the slot. The inverse slot of
// unit i (i % kInvSlots) is rewritten for unit i + 3 only after Done(i + 3), which the AIC sets
// after the merges of unit i. With akk_beta
// (the fused state kernel's operand, Akk diag(beta)) the AIV writes X_bb diag(beta_b) to Akk and
// diag(beta_b) X_bb^T to the slot: the merges, linear in those, give every block of Akk diag(beta).
//
// Work split: a unit is one (chunk, head) pair, u = c * HV + h; AI core b takes a contiguous range
// (CoreUnits); the output is bit-identical for any core count.
//
// Limits: BT in {16, 32, 64}; K a multiple of 16 in [16, 256]. Float32 q and k are refused; KDA and
// BT 32 and 64 need a Cube that takes float32 (KDA's operands; the merges).
#ifndef FLA_NPU_CHUNK_INTRA_TILING_H
#define FLA_NPU_CHUNK_INTRA_TILING_H

#include "../common/chunk_tiling.h"
#include "../solve_tril/solve_tril_tiling.h"  // MergeSizesOf: the inverse's merges

namespace fla_npu {
namespace chunk_intra {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

// Largest binary exponent of a factor e^(G_r - G_j) inside a diagonal block that still goes through
// the Cube (|G_r - G_j| <= safe_span ln 2), for either input dtype: the operands are fp32 (decay.py's
// safe_span for fp32). Why fp32 operands: the Cube's products are then exact up to fp32 accumulation
// (Aqk's relative RMS error 1.9e-7 where 16-bit operands gave 2.3e-3), and the AIVs spend no cast on
// them; the cost is twice the operand slot's bytes.
constexpr float kSafeSpan = 60.0f;

// Inverse slots per AI core: the merges of unit i run after the products of unit i + MergeLag
// (at most 2), while the AIVs may already write that unit's diagonal blocks.
constexpr uint32_t kInvSlots = 3;

// Passed by value to the kernel (POD; identical layout on host and device).
struct ChunkIntraTiling {
    uint32_t NC, HV, BT, K, Kg;
    uint32_t groups;      // GVA: value heads per q / k head (q, k [NC, HV / groups, BT, K])
    uint32_t elem_bytes;  // sizeof(T): 2
    uint32_t aqk_f32;     // 1: Aqk is float32; 0: T
    uint32_t akk_f32;     // 1: Akk is float32; 0: T
    uint32_t qk_l2norm;   // 1: the rows' factors are their reciprocal l2 norms (times scale for q); 0: scale, 1
    uint32_t akk_beta;    // 1: Akk = (I + L)^-1 diag(beta) (the fused state kernel's operand); 0: (I + L)^-1
    uint32_t num_units;   // NC * HV
    uint32_t block_dim;   // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t nb;                 // BT / 16 block rows
    uint32_t row_rows;           // KDA operand slot: 32 * nb row-operand rows (block row I at 32 I), then
    uint32_t col_rows;           //   16 * nb (nb + 1) / 2 column-operand rows (block row I at 8 I (I + 1))
    uint32_t ws_op_elems;        // one operand slot, floats: (row_rows + col_rows) * K (GDN: 0)
    uint32_t ws_res_elems;       // one result slot, floats: KDA nb diagonal pairs (512 I: q part, beta k part);
                                 //   GDN 2 BT x BT (q k^T rows, then k k^T rows), q q^T after them with qk_l2norm
    uint32_t ws_inv_elems;       // one inverse slot, floats: the merges' (solve_tril's MergeSizesOf), then L
                                 //   [BT, BT] (no slot when BT = 16: no merge)
    uint32_t ws_bytes_per_core;  // two operand slots, two result slots, kInvSlots inverse slots, two gate slots
    uint32_t piece_elems;        // elements of an AIV piece: 16 * max(K, BT)
    float safe_span;             // kSafeSpan
    float scale;                 // q's rows' factor (times the reciprocal norm with qk_l2norm)
    uint32_t gate_in;            // 1: g is the raw gate, G formed in the launch (chunk_gate_intra.op.py; KDA)
    uint32_t gate_form;          //   its activation: gate_cumsum_tiling.h's GateForm, parameters and scales
    uint32_t has_a_log, has_dt_bias;
    float coef_scale, out_scale;
    uint32_t ub_bytes_used, l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
};

// Units between a unit's products and its merges on the AIC (each unit's merges wait for its AIVs'
// Inv): GDN 2, so that the chain products -> finish -> merges spans three units' products (its AIVs
// finish faster than that chain); KDA 1 (bound by its AIVs' work: a lag of 2 only delays the merges).
FLA_NPU_AICORE inline uint32_t MergeLag(const ChunkIntraTiling& t) { return t.Kg != 1 ? 1 : 2; }

// GM workspace the kernel uses: one slice of two operand, two result and kInvSlots inverse slots per launched AI core.
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): ProblemFromShapes (below), then ComputeTiling. nullptr, or the message of the first
// defect.
const char* TilingFromShapes(const ShapeArg* t, int64_t qk_l2norm, float scale, int64_t akk_beta, const DeviceFacts& dev,
                             ChunkIntraTiling* tiling);

// elem_bytes: of q, k.
struct ChunkIntraProblem : chunk_tiling::KeysProblem {
    bool aqk_f32 = true;     // Aqk in float32 (else T)
    bool akk_f32 = true;     // Akk in float32 (else T)
    bool qk_l2norm = false;  // the rows of q and k l2-normalised (their factors: reciprocal norms)
    bool akk_beta = false;   // Akk's columns times beta: (I + L)^-1 diag(beta)
    float scale = 1.0f;      // q's rows' factor (times the norm's)
    // The gate in the launch (FlaNpuChunkGateIntra): g is the raw gate, activated as gate_form says
    bool gate_in = false;
    uint32_t gate_form = 0;  // gate_cumsum_tiling.h's GateForm
    bool has_a_log = false, has_dt_bias = false;
    float lower_bound = 0.0f;
};

// The gate in the launch keeps a unit's G (BT x K fp32) in the UB: K up to this.
constexpr uint32_t kGateInMaxK = 128;

// The gate in the launch with both AIVs owning block rows (BT > 16): each activates the raw rows of
// its own block rows and hands them to the other through a gate slot (BT x K floats, two per core:
// units alternate) of the workspace, after the inverse slots. 0 otherwise.
FLA_NPU_AICORE inline uint32_t GateSlotElems(const ChunkIntraTiling& t) { return t.gate_in && t.nb > 1 ? t.BT * t.K : 0; }

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const ChunkIntraProblem& p, ChunkIntraTiling* t, const char** err);

// The shape checks shared by the op's front ends (the C entry point chunk_intra_host.cpp checks
// dtypes and strides, then runs TilingFromShapes): on the call's tensors (q, k [NC, HV, BT, K], beta
// [NC, HV, BT], g [NC, HV, BT, 1 or K], aqk and akk [NC, HV, BT, BT], q_scale and k_scale [NC, HQ, BT]) their ranks,
// shapes and sizes (BT 16/32/64, K a multiple of 16 up to 256, NC and HV fit 31 bits), then *p with the device's launch facts and
// the types by the dtypes of q and aqk, the attributes (qk_l2norm and akk_beta 0 or 1). nullptr, or the message of the
// first defect (static, without the op's name).
const char* ProblemFromShapes(const ShapeArg* t, int64_t qk_l2norm, float scale, int64_t akk_beta, const DeviceFacts& dev,
                              ChunkIntraProblem* p);

// The AIV sub-block that owns block I (its row operands and outputs, and its column operands for every
// block row from I on): equal operand rows for BT 64 ({0, 3} / {1, 2}: 2 x 32 + 5 x 16 each), 64 / 48
// for BT 32, everything on sub-block 0 for BT 16.
FLA_NPU_AICORE inline uint32_t BlockRowOwner(uint32_t I) { return (I ^ (I >> 1)) & 1u; }

// The AIV's fp32 operand buffers (KDA), 16 x K floats each: two queues of two (the row operands; the
// column operands of the blocks below the diagonal) for K up to 128, one queue of one above (UB).
FLA_NPU_AICORE inline uint32_t OperandBuffers(uint32_t K) { return K > 128 ? 1u : 4u; }

// First row of block row I's column operand in the KDA operand slot (after the row operands).
FLA_NPU_AICORE inline uint32_t ColOffset(uint32_t I) { return 8u * I * (I + 1u); }

}  // namespace chunk_intra
}  // namespace fla_npu

#endif
