// Host tiling of the inter-chunk state kernel (chunk_state_kernel.h), stage 4 of chunked KDA and
// Gated DeltaNet. Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/chunk_state_tiling_test.cpp).
//
// The op, per sequence n and value head h, S = h0[n, h] (or zeros), then for each chunk c of the
// sequence in order (chunks chunk_offsets[n] .. chunk_offsets[n + 1] - 1, read on the device):
//   h[c, h]     = S                                   [K, V]
//   v_new[c, h] = u[c, h] - w[c, h] @ S               [BT, V]
//   S           = diag(e_last[c, h]) S + kg[c, h]^T @ v_new[c, h]
// and final[n, h] = S after the last chunk. w, kg [NC, HV, BT, K] of the Cube type T (fp16 / bf16),
// u [NC, HV, BT, V] fp32, e_last [NC, HV, Kg] fp32 (Kg = K: KDA; Kg = 1: GDN), h0 / final [N, HV,
// K, V] fp32 ([N, HV, V, K] with state_v_first); h and v_new fp32 or T (rounded once on write).
//
// Design (why it is this way):
// - Unit = (sequence, head, V block): sequential over the sequence's chunks, S on chip in fp32 for
//   the whole unit (the GM copy h is output only). V is split into blocks so that every AI core has
//   work when N * HV is below the core count; the split never depends on chunk_offsets' values
//   (the NPU path must not read them on the host), so units of long and short sequences share
//   cores by count, not by length.
// - Mixed kernel (KERNEL_TYPE_MIX_AIC_1_2). The two products (w @ S, kg^T @ v_new) contract over
//   K and over BT; kg's BT is its outer axis, so the Cube needs a transposed load, which LoadData
//   has for 2-byte types only. Hence the Cube runs in T, and every fp32 operand the vector unit
//   hands it is split hi + lo: X_hi = T(X), X_lo = T(X - X_hi), w @ S = w @ S_hi + w @ S_lo
//   (likewise v_new), accumulated in fp32 in L0C. The split keeps about 16 (bf16) or 22 (fp16)
//   bits of S and v_new, so the kernel's own error stays near fp32's and does not grow with the
//   chunk count; w and kg are taken as given in T (the caller rounds them once).
// - Per chunk, AI core b (AIC + 2 AIV, each AIV holds K / 2 rows of S and owns BT / 2 rows of v_new),
//   through the core's GM workspace (a2/a3 move AIV <-> AIC data through GM only):
//     AIV  S_hi, S_lo -> ws;                                       set kFlagS
//          h rows -> GM; fetch u
//     AIC  wait; wS = w @ S_hi + w @ S_lo (fp32) -> ws;              set kFlagWs
//     AIV  wait; v_new = u - wS (fp32); v_hi, v_lo -> ws;            set kFlagV
//          v_new rows -> GM (rounded once)
//     AIC  wait; dS = kg^T @ v_hi + kg^T @ v_lo (fp32) -> ws;        set kFlagDs
//     AIV  wait; S = diag(e_last) S + dS (one FusedMulAdd per element)
//   The outputs and the input fetches run while the other side works, off the chain of
//   hand-offs. The unit's columns run as two lanes (halves) through this sequence, interleaved
//   (AIV S lane 0, S lane 1; AIC wS lane 0 while the AIV splits lane 1; ...), so each side works
//   on one lane while the other works on the other; w and kg are loaded once per chunk for both,
//   before the AIC waits. Each flag (4 per lane) has at most one pending set, and each workspace
//   region is rewritten only after the flag that follows its last read.
// - state_v_first: h0 / final are [V, K]; the AIV moves a column of them to or from a row of S with
//   one DataCopyPad of 4-byte blocks (each element in its own 32-byte block: WholeReduceSum of one
//   lane compacts them, Brcb spreads them), once per unit.
//
// - Fused (chunk_state_output.op.py: the chain's stages 3, 4 and 5 in one launch, when nothing needs
//   w, u, kg, h or v_new; its Akk is (I + L)^-1 diag(beta), the intra-chunk kernel's with akk_beta):
//   per chunk, first the AIVs form their rows of the WY kernel's operands (common/wy_rows.h: X1 =
//   -T(k e_row), negated, kg = T(k e_tail)) and of qe = T(q e_row) (one e_row for both) into the
//   workspace (flag X); the Cube loads v's V block from GM as it is (beta is in Akk) and forms -w =
//   Akk @ X1 straight into L1 (Fixpipe L0C -> L1 NZ, rounded once to T: the WY kernel's w in T,
//   negated). Then the state kernel's chunk step with v_new kept on the Cube: per lane and V tile
//   v_new = u - w S = Akk @ v + (-w) @ S_hi + (-w) @ S_lo, one fp32 accumulation in L0C, Fixpipe'd
//   into L1 as v_hi = T(v_new); -I @ v_hi accumulated onto the same tile is v_new - v_hi exactly
//   (Sterbenz), Fixpipe'd into L1 as v_lo: the halves the AIVs' split forms, so v_new, u and w S
//   never go through GM and each chunk has two hand-offs per lane (S to the Cube, dS back) instead of
//   four. -I comes once per launch from the AIVs (the Cube cannot write a pattern; flag I). After the
//   dS products o = qe @ S_hi + Aqk @ v_hi per lane, Fixpipe'd to o (token-major, rounded once to T):
//   the products the chunk output kernel forms from the h and v_new the state kernel writes in T. So
//   o and final are those of wy_fast (w, kg in T) + chunk_state (h, v_new in T) + chunk_output but for
//   beta's rounding (in Akk's there, in beta k and beta v in wy_fast) and v_new's (u and w S rounded
//   to fp32 apart there). None of w, u, kg, h and v_new is written; q, k, v, G, Akk and Aqk are read
//   once per unit (per V block). The operands go through two workspace slots (a
//   core's j-th chunk in slot j % 2): the AIVs form chunk c + 1's after S(c)'s halves, while the Cube
//   works on chunk c; a slot is rewritten only after the dS flags that follow the Cube's loads of it.
// - L1 layouts: what the Cube loads from GM or the workspace lands in the fractal order its L0 buffer
//   wants, so that it moves from L1 in one LoadData instead of one per fractal row: S's halves and X1
//   (B operands, whole width per product) as row bands (common/chunk_cube.h LoadBands / LoadBBands),
//   Akk, Aqk, -I and qe (A operands) in L0A's order (LoadForA / LoadAOrdered); kg^T's transposing
//   load is one run of fractals as it is. The matrices the Cube writes itself (w, v_hi, v_lo) stay NZ.
//
// Limits: BT in {16, 32, 64}; K and V multiples of 16 in [16, 256]; Kg in {1, K}.
#ifndef FLA_NPU_CHUNK_STATE_TILING_H
#define FLA_NPU_CHUNK_STATE_TILING_H

#include "../common/chunk_tiling.h"
#include "../solve_tril/solve_tril_tiling.h"  // MergeSizesOf: the inverse's merges (chunk_forward)

namespace fla_npu {
namespace chunk_state {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

constexpr uint32_t kMaxVBlock = 128;  // widest V block: WholeReduceSum / Brcb repeat counts stay below 256

// Passed by value to the kernel (POD; identical layout on host and device).
struct ChunkStateTiling {
    uint32_t N, HV, NC, BT, K, V, Kg;
    uint32_t elem_bytes;  // sizeof(T): 2
    uint32_t has_h0, state_v_first;
    uint32_t h_f32, v_new_f32;  // output dtypes: 1 float32, 0 T
    uint32_t fused_output;      // 1: the WY factors and o fused in (chunk_state_output), no h / v_new
    uint32_t groups;            // GVA of q and k (fused): value heads per q / k head
    uint32_t qk_scaled;         // fused: 1 when q_scale and k_scale (per-row factors of q and k) are given
    uint32_t num_vb;            // V blocks per (sequence, head)
    uint32_t v_block;           // columns of every V block but the last
    uint32_t v_last;            // columns of the last one (multiple of 16)
    uint32_t num_units;         // N * HV * num_vb
    uint32_t block_dim;         // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t rows_k;       // K / 2 rows of S per AIV
    uint32_t rows_v;       // BT / 2 rows of v_new per AIV
    uint32_t vec_rows;     // max(rows_k, rows_v): rows of the AIV's staging buffers
    uint32_t spread_rows;  // rows of S per state_v_first piece (8 x v_block floats each)
    uint32_t n_tile;       // columns per L0B / L0C tile (multiple of 16)
    uint32_t ws_t_elems;   // per core, elements of T: S_hi, S_lo [K, v_block], then v_hi, v_lo [BT, v_block]
                           // (fused: -I [BT, BT], two slots of qe, X1, kg [BT, K])
    uint32_t ws_f_elems;   // per core, floats after them: wS [BT, v_block], dS [K, v_block] (fused: dS only)
    uint32_t ws_bytes_per_core;
    uint32_t ub_bytes_used, l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
    // chunk_forward (fused and intra: stage 2 in the launch too): q's and k's rows normalised and scaled
    // in the kernel, BT / 16 block rows (the workspace regions: chunk_state_kernel.h Stage2Regions)
    uint32_t intra;
    uint32_t qk_l2norm;
    float scale;
    uint32_t nb;
    // chunk_gate_forward (intra, KDA): g is the raw gate, G and e_last formed in the launch (the
    // activation: gate_cumsum_tiling.h's GateForm, parameters and scales)
    uint32_t gate_in;
    uint32_t gate_form;
    uint32_t has_a_log, has_dt_bias;
    float coef_scale, out_scale;
};

// The AIC's buffers whose sizes stage 2 in the launch (intra) changes, in bytes: w's place in L0A (also
// stage 2's A: GDN q's or k's rows, KDA a block row's q and k operands in fp32; the merges' fp32 A), the
// first B tile (also GDN's k^T, KDA's fp32 column operands of a block row, the merges' B), the C tile
// (also a BT x BT product and the merges' C). eb: sizeof(T); kda: the per-key gate (Kg = K).
struct CubeBuffers {
    uint32_t wa, b2a, oc;
};
FLA_NPU_AICORE inline uint32_t MaxOf(uint32_t a, uint32_t b) { return a > b ? a : b; }
FLA_NPU_AICORE inline CubeBuffers CubeBuffersOf(uint32_t K, uint32_t BT, uint32_t eb, uint32_t n_tile, bool intra,
                                                bool kda = false) {
    const uint32_t rows = MaxOf(K, BT);
    CubeBuffers c{BT * K * eb, rows * n_tile * eb, rows * n_tile * 4};
    if (!intra) return c;
    const solve_tril::MergeSizes m = solve_tril::MergeSizesOf(BT);
    const bool merges = BT > 16;
    c.wa = MaxOf(MaxOf(c.wa, merges ? m.l0a : 0), kda ? 2 * 16 * K * 4 : 0);
    c.b2a = MaxOf(MaxOf(c.b2a, K * BT * (kda ? 4 : eb)), merges ? m.l0b : 0);
    c.oc = MaxOf(MaxOf(MaxOf(c.oc, BT * BT * 4), merges ? m.l0c : 0), kda ? 2 * 16 * BT * 4 : 0);
    return c;
}

// The AIV buffers whose sizes stage 2 in the launch (intra) raises, in elements. GDN: the result rows
// of a block row (32 x BT floats), G's rows and q's and k's row factors (3 BT floats), the work tiles
// (the decay, Aqk's and L's rows, the diagonal block and its inverse: 48 BT + 512 floats), the rows
// written (16 x BT, floats or T) and the broadcasts (G's and beta's rows of a block row: 16 x 8 floats
// each). KDA (kda: Kg = K, operands of 16-row blocks): forming, the two owned blocks' G, the
// reference rows of every block row (first, middle, last) and the chunk's last row ((33 + 3 nb) K
// floats), finishing, a block's G, q and k widened (48 K): 48 K floats; no gate buffer; four 16 x K work
// tiles (k and q widened, the exponents and their factors; finishing: two, and a diagonal block's Aqk,
// L and inverse); 16 x K rows written; the broadcasts of four 16-row factors; a block's rows of q or k
// as read, or of the raw gate in float32 (32 x K elements of T: in, GDN none).
struct Stage2Ub {
    uint32_t res, gate, work, rows, bc, in;
};
FLA_NPU_AICORE inline Stage2Ub Stage2UbOf(uint32_t BT, bool intra, uint32_t K = 0, bool kda = false) {
    if (!intra) return Stage2Ub{0, 0, 0, 0, 0, 0};
    if (kda) {
        const uint32_t work = MaxOf(64 * K, 32 * K + 3 * solve_tril::kBlockElems);
        return Stage2Ub{48 * K, 0, work, 16 * K, 4 * 16 * 8, 32 * K};  // (33 + 3 nb) K <= 48 K for BT <= 64
    }
    return Stage2Ub{32 * BT, 3 * BT, 48 * BT + 2 * solve_tril::kBlockElems, 16 * BT, 2 * 16 * 8, 0};
}

// The fused kernels' fp32 output buffers (two, so that a copy out runs while the next result forms),
// floats each: a lane's final state (m = vec_rows rows: with state_v_first spread 8 floats per element
// over m / 8 rows at a time; a lane at most (vb / 16 + 1) / 2 x 16 columns: Lanes), at least half of
// the unfused kernel's one (m x vb), and stage 2's rows.
FLA_NPU_AICORE inline uint32_t FusedOutFElems(uint32_t m, uint32_t vb, uint32_t rows) {
    return MaxOf(m * ((vb / 16 + 1) / 2 * 16), rows);
}

// KDA with stage 2 in the launch: the fp32 operand slot of a chunk (chunk_intra's layout: 32 nb row
// operand rows, then 8 nb (nb + 1) column operand rows, of K floats).
FLA_NPU_AICORE inline uint32_t KdaOperandElems(uint32_t BT, uint32_t K) {
    const uint32_t nb = BT / 16;
    return (32 * nb + 8 * nb * (nb + 1)) * K;
}

// KDA with stage 2 in the launch keeps K up to this (its fp32 column operands fill L0B's first tile).
constexpr uint32_t kKdaIntraMaxK = 128;

// KDA with the gate in the launch (gate_in), floats of the workspace after the fp32 operand slots: two
// exchange slots of the block rows' first, middle and last rows of G summed within their block (3 nb K
// each; a core's chunks alternate), then per operand slot each vector core's e_last row (2 K), then
// per operand slot the G blocks its exactly computed diagonal blocks read back (BT K).
FLA_NPU_AICORE inline uint32_t GateInElems(uint32_t BT, uint32_t K) { return 2 * 3 * (BT / 16) * K + 3 * 2 * K + 3 * BT * K; }

// GM workspace the kernel uses: one slice per launched AI core.
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): ProblemFromShapes (below), then ComputeTiling. nullptr, or the message of the first
// defect.
const char* TilingFromShapes(const ShapeArg* t, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling);

// elem_bytes: of w, kg (the Cube type); N sequences.
struct ChunkStateProblem : chunk_tiling::HeadsProblem {
    uint32_t N = 0;
    bool has_h0 = false, state_v_first = false;
    bool h_f32 = true, v_new_f32 = true;
    bool fused_output = false;
    bool qk_scaled = false;  // fused: per-row factors of q and k given
    bool intra = false;      // fused, chunk_forward: stage 2 in the launch, beta given, no Akk / Aqk
    bool qk_l2norm = false;  // intra: l2-normalise q's and k's rows in the kernel
    float scale = 1.0f;      // intra: q's rows times scale
    // intra, KDA: g the raw gate, activated as gate_form says (chunk_gate_forward_tiling.h)
    bool gate_in = false;
    uint32_t gate_form = 0;
    bool has_a_log = false, has_dt_bias = false;
    float lower_bound = 0.0f;
};

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const ChunkStateProblem& p, ChunkStateTiling* t, const char** err);

// The shape checks of the op's front ends (the C entry point chunk_state_host.cpp checks dtypes and
// strides, then runs TilingFromShapes): state_v_first 0 or 1; the ranks of the call's tensors (w, u,
// kg, h, v_new, final 4-D, e_last 3-D, chunk_offsets 1-D, h0 absent (ndim -1) or 4-D), their shapes
// and sizes (BT 16/32/64, K and V multiples of 16 up to 256, counts fit 31 bits); then *p with the
// device's launch facts, h and v_new float32 or not by their dtypes. nullptr, or the message of the
// first defect (static, without the op's name).
const char* ProblemFromShapes(const ShapeArg* t, int64_t state_v_first, const DeviceFacts& dev, ChunkStateProblem* p);

// The fused ops' checks of q, k [NC, BT, HQ, K] and v, o [NC, BT, HV, V] (token-major, as given: qt, kt,
// vt, o): the row strides, q's shape, HQ dividing HV, v's BT; lead = k's head-major [NC, HV, BT, K]
// with the value heads, *groups = HV / HQ. nullptr, or the message.
const char* TokenMajorHeads(const ShapeArg& qt, const ShapeArg& kt, const ShapeArg& vt, const ShapeArg& o, int64_t* lead,
                            uint32_t* groups);

// The C entry point's refusal of float32 w / kg.
constexpr const char* kFloat32CubeMessage =
    "float32 `w` and `kg` are not supported: the Cube reads them as float16 or bfloat16 (its transposing "
    "load of kg exists for 2-byte types only); round them once to the Cube dtype";

// The checks both state ops make of their state arguments, against the [NC, HV, BT, K] `lead` of the
// op's keys and its value dim V: state_v_first 0 or 1, e_last [NC, HV, 1 or K], chunk_offsets [N + 1],
// h0 (absent: ndim -1) and final [N, HV, K, V] ([N, HV, V, K] with state_v_first), then the sizes and
// *p but for the output dtypes and the fused fields. nullptr, or the message.
const char* StateArgs(const int64_t* lead, int64_t V, const ShapeArg& e_last, const ShapeArg& chunk_offsets, const ShapeArg& h0,
                      const ShapeArg& final_state, int64_t state_v_first, const DeviceFacts& dev, ChunkStateProblem* p);

}  // namespace chunk_state
}  // namespace fla_npu

#endif
