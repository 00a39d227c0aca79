// Host tiling of the triangular-inverse kernel (solve_tril_kernel.h), the second half of stage 2
// of chunked KDA and Gated DeltaNet. Plain C++: no Ascend C, no CANN, no simulation; unit-tested on
// the host (tests/solve_tril_tiling_test.cpp).
//
// The op, per chunk c and value head h (chunk layout, every (c, h) independent):
//   Akk[c, h] = (I + L[c, h])^-1
// L [NC, HV, BT, BT] float32, strictly lower triangular: only the part below the diagonal is read
// (what lies on and above it is ignored, whatever it holds). Akk [NC, HV, BT, BT] float32, float16 or
// bfloat16 (rounded once on write): unit lower triangular, exact zeros above the diagonal.
//
// Design: blocked forward substitution, one mixed launch (KERNEL_TYPE_MIX_AIC_1_2). With 16 x 16
// diagonal blocks b (nb = BT / 16 of them) and X = Akk:
//   AIV  X_bb = (I + L_bb)^-1 and its transpose by forward / backward substitution in fp32 (the
//        vector unit; the diagonal is one: no division), written: X_bb and the zeros right of it to
//        Akk; what the Cube reads of it to the core's workspace slot: -X_bb (b > 0) and X_bb^T
//        (b < nb - 1) on the diagonal of XT, the transpose of X, which the Cube completes block
//        column by block column (its zero blocks are never written: the Cube fills them in L1).
//   AIC  for each block row i = 1 .. nb-1, with n = 16 i and XT[:n, :n] the transpose of the inverse
//        of the leading n x n block (complete in the slot once block rows < i are done):
//          R^T     = XT  @ L[i, :n]^T          (n x 16; to the slot)
//          X[i,:n] = (-X_ii) @ R               (16 x n; to Akk, rounded once)
//          X[i,:n]^T = R^T @ (-X_ii)^T         (n x 16; to the slot's XT, when i < nb - 1)
//        fp32 x fp32 Mmads with fp32 accumulation. Every Cube operand is handed over row-major with
//        the right operand as its transpose (B^T), so that no fp32 fractal needs a transposing load
//        (LoadData transposes 2-byte types only): that is why the vector side also forms X_bb^T.
// BT = 16 has no merge: the AIVs alone write Akk (units alternate between the two AIVs of a core).
// Extra GM traffic per unit: the slot round trip (XT's upper blocks, -X_bb, R^T); L is read once,
// and only its block-lower part (the blocks above the diagonal are never read).
//
// Work split: a unit is one (chunk, head) pair, u = c * HV + h; AI core b takes a contiguous range
// (CoreUnits); the output is bit-identical for any core count. The AIV sub-block s of a core inverts
// the diagonal blocks [s nb / 2, (s + 1) nb / 2) of each of its units.
//
// Limits: BT in {16, 32, 64}; L float32 (the Cube reads it as it is); a Cube that takes float32
// inputs (a2, a3, a5).
#ifndef FLA_NPU_SOLVE_TRIL_TILING_H
#define FLA_NPU_SOLVE_TRIL_TILING_H

#include "../common/chunk_tiling.h"

namespace fla_npu {
namespace solve_tril {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

constexpr uint32_t kBlock = 16;  // side of a diagonal block
constexpr uint32_t kBlockElems = kBlock * kBlock;

// The Cube merges' buffers and workspace slot for chunks of BT > 16 rows (block row i, n = 16 i <=
// BT - 16): XT [n, n], L[i, :n] [16, n], R^T [n, 16] and -X_ii in L1; the largest A (XT), B (16 x n)
// and C (n x 16) in L0 (bytes); the slot (fp32 elements): XT [BT, BT] at 0, -X_bb (nb blocks of
// 16 x 16) at nx_off, R^T [BT - 16, 16] at rt_off, `elems` in all. Shared with the intra-chunk
// kernel, which inverts its L in its own launch.
struct MergeSizes {
    uint32_t l1, l0a, l0b, l0c;
    uint32_t nx_off, rt_off, elems;
};
FLA_NPU_AICORE inline MergeSizes MergeSizesOf(uint32_t BT) {
    const uint32_t side = BT - kBlock, nx = BT * BT, rt = nx + BT / kBlock * kBlockElems;
    return MergeSizes{(side * side + 2 * kBlock * side + kBlockElems) * 4,
                      (side * side > kBlockElems ? side * side : kBlockElems) * 4,
                      kBlock * side * 4,
                      kBlock * side * 4,
                      nx,
                      rt,
                      rt + side * kBlock};
}

// Output element types (SolveTrilTiling::out_kind).
constexpr uint32_t kOutFloat32 = 0, kOutFloat16 = 1, kOutBfloat16 = 2;

// Passed by value to the kernel (POD; identical layout on host and device).
struct SolveTrilTiling {
    uint32_t NC, HV, BT;
    uint32_t nb;         // diagonal blocks per chunk: BT / 16
    uint32_t out_kind;   // kOutFloat32 / kOutFloat16 / kOutBfloat16
    uint32_t out_bytes;  // sizeof the output element
    uint32_t num_units;  // NC * HV
    uint32_t block_dim;  // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t ws_nx_off;          // slot layout (fp32 elements): XT [BT, BT] at 0, -X_bb at ws_nx_off
    uint32_t ws_rt_off;          //   (nb blocks of 16 x 16), R^T [(BT - 16), 16] at ws_rt_off
    uint32_t ws_slot_elems;      // one slot (0 when BT = 16: no merge)
    uint32_t ws_bytes_per_core;  // two slots
    uint32_t ub_bytes_used, l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
};

// GM workspace the kernel uses: one slice of two slots per launched AI core.
using chunk_tiling::UserWorkspaceBytes;

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): ProblemFromShapes (below), then ComputeTiling. nullptr, or the message of the first
// defect.
const char* TilingFromShapes(const ShapeArg* t, const DeviceFacts& dev, SolveTrilTiling* tiling);

struct SolveTrilProblem : chunk_tiling::ChunkProblem {
    uint32_t in_bytes = 4;  // of L: float32 only
    uint32_t out_kind = kOutFloat32;
};

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const SolveTrilProblem& p, SolveTrilTiling* t, const char** err);

// The shape checks shared by the op's front ends (the C entry point solve_tril_host.cpp checks
// dtypes and strides, then runs TilingFromShapes): on the call's tensors (l [NC, HV, BT, BT], akk
// its shape) their ranks, shapes and sizes (BT 16/32/64, NC and HV fit 31 bits), then *p with the
// device's launch facts and the types by the dtypes of l and akk. nullptr, or the message of the
// first defect (static, without the op's name).
const char* ProblemFromShapes(const ShapeArg* t, const DeviceFacts& dev, SolveTrilProblem* p);

}  // namespace solve_tril
}  // namespace fla_npu

#endif
