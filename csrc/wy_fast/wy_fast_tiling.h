// Host tiling of the WY kernel (wy_fast_kernel.h), stage 3 of chunked KDA and Gated DeltaNet.
// Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host (tests/wy_fast_tiling_test.cpp).
//
// The op, per chunk c and value head h (chunk layout, every (c, h) independent):
//   w[c, h]  = Akk[c, h] @ (beta[c, h] * k[c, h] * e^g[c, h])
//   u[c, h]  = Akk[c, h] @ (beta[c, h] * v[c, h])
//   kg[c, h] = k[c, h] * e^(g[c, h, BT - 1] - g[c, h])
// k [NC, HV, BT, K], v [NC, HV, BT, V], Akk [NC, HV, BT, BT] (lower triangular, unit diagonal, read
// as given) of the Cube input type T (fp16 or bf16); beta [NC, HV, BT], g [NC, HV, BT, Kg] (the
// chunk-local gate cumsum in natural-log units; Kg = K: KDA, given token-major [NC, BT, HV, K]; Kg = 1: GDN,
// broadcast over K; common/chunk_shapes.h's GateHeadMajor) fp32; w, kg [NC,
// HV, BT, K] and u [NC, HV, BT, V] fp32. The decay factors are formed here, from g (Sub + Exp on the
// vector unit), not read: e^g and e^(g_last - g) would be two more tensors of g's size to write
// and read.
//
// Design: one mixed launch (KERNEL_TYPE_MIX_AIC_1_2), the structure of chunk_output (its hand-off,
// loads and tile loop are shared: common/chunk_cube.h). The Cube's right-hand operands need vector
// work (the row scaling by beta and e^g, one rounding to T), so the AIVs form them in fp32 and
// hand them over through a per-core GM workspace slot (a2/a3 AIV -> AIC is GM); kg needs no Cube
// and is written by the AIVs directly. Extra GM traffic: the slot round trip, 2 * BT * (K + V) *
// sizeof(T) bytes per unit; everything else is read once, w, u and kg written once.
//   AIV  sub-block s, rows [s BT/2, (s+1) BT/2): e_row = e^g, e_tail = e^(g_last - g) (its rows of
//        g, the chunk's last row); X1 = T(beta k e_row), X2 = T(beta v) into the slot (fp32
//        multiplies, one rounding each); kg = fp32(k) e_tail to GM;  flag Ready ->
//   AIC  X1, X2 from the slot and Akk from GM into L1 (ND -> NZ), Akk into L0A; per N-tile
//        Mmad(init) Akk @ X1 -> Fixpipe w, then Akk @ X2 -> Fixpipe u (fp32 accumulation).
//
// Work split: a unit is one (chunk, head) pair, u = c * HV + h; AI core b takes a contiguous range
// (CoreUnits); the output is bit-identical for any core count.
//
// Limits: BT in {16, 32, 64}; K and V multiples of 16 in [16, 256]. Float32 Cube inputs are refused
// (X1 and X2 reach L0B through a transposing LoadData, which exists for 2-byte types only).
#ifndef FLA_NPU_WY_FAST_TILING_H
#define FLA_NPU_WY_FAST_TILING_H

#include "../common/chunk_tiling.h"

namespace fla_npu {
namespace wy_fast {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

// Passed by value to the kernel (POD; identical layout on host and device).
struct WyFastTiling {
    uint32_t NC, HV, BT, K, V, Kg;
    uint32_t groups;      // GVA: value heads per k head (k [NC, HV / groups, BT, K])
    uint32_t elem_bytes;  // sizeof(T): 2
    uint32_t num_units;   // NC * HV
    uint32_t block_dim;   // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t rows_per_aiv;       // BT / 2 rows per AIV
    uint32_t vec_elems;          // elements of each AIV row buffer: rows_per_aiv * max(K, V)
    uint32_t n_tile;             // columns per L0B / L0C tile (multiple of 16)
    uint32_t ws_slot_elems;      // one workspace slot, elements of T: X1 [BT, K] then X2 [BT, V]
    uint32_t ws_bytes_per_core;  // two slots
    uint32_t ub_bytes_used, l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
};

// GM workspace the kernel uses: one slice of two slots per launched AI core.
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): ProblemFromShapes (below), then ComputeTiling. nullptr, or the message of the first
// defect.
const char* TilingFromShapes(const ShapeArg* t, const DeviceFacts& dev, WyFastTiling* tiling);

// elem_bytes: of k, v, Akk.
struct WyFastProblem : chunk_tiling::HeadsProblem {};

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const WyFastProblem& p, WyFastTiling* t, const char** err);

// The shape checks shared by the op's two front ends (the C entry point wy_fast_host.cpp checks
// dtypes and strides, then runs TilingFromShapes): on the call's tensors (k [NC, HV, BT, K], v [NC,
// HV, BT, V], beta [NC, HV, BT], akk [NC, HV, BT, BT], g [NC, HV, BT, 1 or K], w and
// kg the shape of k, u that of v) their ranks, shapes and sizes (BT 16/32/64, K and V multiples of 16
// up to 256, NC and HV fit 31 bits), then *p with the device's launch facts. nullptr, or the message
// of the first defect (static, without the op's name).
const char* ProblemFromShapes(const ShapeArg* t, const DeviceFacts& dev, WyFastProblem* p);

}  // namespace wy_fast
}  // namespace fla_npu

#endif
