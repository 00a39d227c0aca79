// Host tiling of the triangular-inverse kernel; see solve_tril_tiling.h.
#include "solve_tril_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace solve_tril {

int ComputeTiling(const SolveTrilProblem& p, SolveTrilTiling* t, const char** err) {
    BeginTiling(t, err);
    if (p.in_bytes != 4) return Refuse(err, "L must be float32");
    if (p.out_kind != kOutFloat32 && p.out_kind != kOutFloat16 && p.out_kind != kOutBfloat16)
        return Refuse(err, "Akk must be float32, float16 or bfloat16");
    if (!chunk_tiling::ChunkSizeOk(p.BT)) return Refuse(err, chunk_tiling::kChunkSizeMessage);
    if (!p.cube_fp32 && p.BT > kBlock)
        return Refuse(err, "this SoC's Cube takes no float32 inputs (the merges of the diagonal blocks need them)");
    if (p.core_num == 0) return Refuse(err, "core_num must be positive");
    if (!chunk_tiling::UnitsFit(p, uint64_t(p.BT) * p.BT)) return Refuse(err, chunk_tiling::kTooLargeMessage);

    t->NC = p.NC;
    t->HV = p.HV;
    t->BT = p.BT;
    t->nb = p.BT / kBlock;
    t->out_kind = p.out_kind;
    t->out_bytes = p.out_kind == kOutFloat32 ? 4 : 2;
    core_split::SplitUnits(chunk_tiling::Units(p), p.core_num, t);

    // AIV (per diagonal block): the L block in, its Brcb (one 32-byte block per element), X, the
    // scratch row products, the identity; out: X_bb (output type), -X_bb and X_bb^T (fp32); the
    // zeros written right of the diagonal blocks (16 x (BT - 16) of the output type).
    const uint32_t side = p.BT - kBlock;
    t->ub_bytes_used =
        kBlockElems * 4 * 4 + kBlockElems * 32 + kBlockElems * t->out_bytes + kBlockElems * 4 * 2 + kBlock * side * t->out_bytes;
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the merges' buffers; the workspace: two of their slots (MergeSizesOf).
    if (t->nb > 1) {
        const MergeSizes m = MergeSizesOf(p.BT);
        t->l1_bytes_used = m.l1;
        t->l0a_bytes_used = m.l0a;
        t->l0b_bytes_used = m.l0b;
        t->l0c_bytes_used = m.l0c;
        if (CheckCubeBuffers(*t, p.l0c_bytes, err) != 0) return -1;
        t->ws_nx_off = m.nx_off;
        t->ws_rt_off = m.rt_off;
        t->ws_slot_elems = m.elems;
        t->ws_bytes_per_core = 2 * t->ws_slot_elems * 4;
    }
    return 0;
}

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* ProblemFromShapes(const ShapeArg* a, const DeviceFacts& dev, SolveTrilProblem* p) {
    const ShapeArg &l = a[0], &akk = a[1];
    if (!RanksAre(a, {4, 4})) return "`l` and `akk` must be 4-D (chunk layout [NC, HV, BT, BT])";
    if (l.d[2] != l.d[3]) return "`l` must be [NC, HV, BT, BT]";
    if (!SameShape(akk, l)) return "`akk` must have the shape of `l`";
    // l is float32, akk float32, float16 or bfloat16 (the registration's; the C entry point checks them).
    p->in_bytes = 4;
    p->out_kind = akk.dtype == FLA_NPU_FLOAT16 ? kOutFloat16 : akk.dtype == FLA_NPU_BFLOAT16 ? kOutBfloat16 : kOutFloat32;
    return chunk_tiling::SizedUnits(l.d, dev, p);
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, SolveTrilTiling* tiling) {
    SolveTrilProblem p;
    return TilingOrMessage(ProblemFromShapes(a, dev, &p), p, tiling);
}

}  // namespace solve_tril
}  // namespace fla_npu
