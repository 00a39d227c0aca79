// Host tiling of the chunk output kernel (chunk_output_kernel.h), stage 5 of chunked KDA and
// Gated DeltaNet. Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/chunk_output_tiling_test.cpp).
//
// The op, per chunk c and value head h (chunk layout, every (c, h) independent):
//   o[c, h] = (q[c, h] * e_row[c, h]) @ S[c, h] + Aqk[c, h] @ v_new[c, h],   e_row = e^g
// q [NC, HV, BT, K], g [NC, HV, BT, Kg] (the chunk-local gate cumsum in natural-log units; Kg = K: KDA,
// given token-major [NC, BT, HV, K]; Kg = 1: GDN, broadcast over K; common/chunk_shapes.h's
// GateHeadMajor; its factor formed here, by Exp on the AIVs), S [NC, HV, K, V] (chunk-start
// states, as the state kernel writes them rounded once to T), Aqk [NC, HV, BT, BT] (lower
// triangular, read as given), v_new [NC, HV, BT, V]; o [NC, BT, HV, V] fp32 or T (rounded
// once; token-major: the chunks of B whole-chunk sequences are their token layout [B, T, HV, V]).
// q, S, Aqk, v_new are of the Cube input type T (fp16 or bf16); g is fp32.
//
// Design: one mixed launch (KERNEL_TYPE_MIX_AIC_1_2), chosen over a Cube-only kernel with a separate
// vector pre-pass because the operand that needs vector work (q * e_row) then goes through GM once,
// in a per-core workspace slot the Cube reads right after, instead of through a full-size
// intermediate tensor and a second launch. On a2/a3 the AIV and AIC exchange data only through GM
// (a5's UB -> L1 path is not modelled by the simulation), so that slot costs 2 * BT * K * sizeof(T)
// extra bytes per unit; everything else is read once, o written once.
//   AIV  sub-block s forms rows [s BT/2, (s+1) BT/2) of qe = T(q * e_row) (fp32 multiply, one
//        rounding) into the core's workspace slot;  flag Ready ->
//   AIC  loads qe, S, Aqk, v_new (ND -> NZ into L1), and per V-tile of v_tile columns computes
//        both products into ONE L0C tile: Mmad(init) qe @ S, Mmad(accumulate) Aqk @ v_new; one
//        Fixpipe writes o (fp32, or rounded once to T). All multiply-adds of the products run on the Cube.
// Two workspace slots per core let the AIVs prepare unit i + 1 while the Cube works on unit i.
//
// Work split: a *unit* is one (chunk, head) pair, u = c * HV + h; AI core b takes a contiguous range
// (CoreUnits). No reduction crosses units and each unit's instructions do not depend on which core
// runs it, so the output is bit-identical for any core count.
//
// Limits: BT in {16, 32, 64}; K and V multiples of 16 in [16, 256] (whole 16 x 16 fractals: no
// padding rows in L1, and 32-byte vector rows). Float32 Cube inputs are refused: S and v_new are the
// Cube's B operands and reach L0B through a transposing LoadData, which exists for 2-byte types only
// (the 4-byte LoadDataWithTranspose is not modelled by the host simulation); and on a SoC whose Cube
// takes no fp32 inputs (problem.cube_fp32 false) they would be refused anyway.
#ifndef FLA_NPU_CHUNK_OUTPUT_TILING_H
#define FLA_NPU_CHUNK_OUTPUT_TILING_H

#include "../common/chunk_tiling.h"

namespace fla_npu {
namespace chunk_output {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

// Passed by value to the kernel (POD; identical layout on host and device).
struct ChunkOutputTiling {
    uint32_t NC, HV, BT, K, V, Kg;
    uint32_t groups;      // GVA: value heads per q head (q [NC, HV / groups, BT, K])
    uint32_t elem_bytes;  // sizeof(T): 2
    uint32_t num_units;   // NC * HV
    uint32_t block_dim;   // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t rows_per_aiv;       // BT / 2 rows of qe per AIV (rows_per_aiv * K elements per UB buffer)
    uint32_t v_tile;             // V columns per L0B / L0C tile (multiple of 16)
    uint32_t ws_slot_elems;      // one workspace slot, elements of T: qe [BT, K]
    uint32_t ws_bytes_per_core;  // two slots
    uint32_t ub_bytes_used, l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
};

// GM workspace the kernel uses: one slice of two slots per launched AI core.
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): ProblemFromShapes (below), then ComputeTiling. nullptr, or the message of the first
// defect.
const char* TilingFromShapes(const ShapeArg* t, const DeviceFacts& dev, ChunkOutputTiling* tiling);

// elem_bytes: of q, S, Aqk, v_new.
struct ChunkOutputProblem : chunk_tiling::HeadsProblem {};

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const ChunkOutputProblem& p, ChunkOutputTiling* t, const char** err);

// The argument checks that depend only on shapes, shared by the op's two front ends (the C entry
// point chunk_output_host.cpp checks dtypes and strides, then runs TilingFromShapes): on the call's
// tensors (q [NC, HV, BT, K], g [NC, HV, BT, 1 or K], s [NC, HV, K, V], aqk [NC, HV, BT, BT],
// v_new [NC, HV, BT, V], out [NC, BT, HV, V]) their ranks (all 4), shapes and sizes (BT 16/32/64,
// K and V multiples of 16 up to 256, NC and HV fit 31 bits), then *p with the device's launch facts.
// nullptr, or the message of the first defect (static, without the op's name).
const char* ProblemFromShapes(const ShapeArg* t, const DeviceFacts& dev, ChunkOutputProblem* p);

}  // namespace chunk_output
}  // namespace fla_npu

#endif
