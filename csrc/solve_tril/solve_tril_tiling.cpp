// Host tiling of the triangular-inverse kernel; see solve_tril_tiling.h.
#include "solve_tril_tiling.h"

#include <cstring>

#include "../common/chunk_tiling.h"
#include "../common/shape_args.h"

namespace fla_npu {
namespace solve_tril {

namespace {
uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }
}  // namespace

int ComputeTiling(const SolveTrilProblem& p, SolveTrilTiling* t, const char** err) {
    static const char* kOk = "";
    *err = kOk;
    std::memset(t, 0, sizeof(*t));
    if (p.in_bytes != 4) return Refuse(err, "L must be float32");
    if (p.out_kind != kOutFloat32 && p.out_kind != kOutFloat16 && p.out_kind != kOutBfloat16)
        return Refuse(err, "Akk must be float32, float16 or bfloat16");
    if (!chunk_tiling::ChunkSizeOk(p.BT)) return Refuse(err, "the chunk size BT must be 16, 32 or 64");
    if (!p.cube_fp32 && p.BT > kBlock)
        return Refuse(err, "this SoC's Cube takes no float32 inputs (the merges of the diagonal blocks need them)");
    if (p.core_num == 0) return Refuse(err, "core_num must be positive");
    const uint64_t units = uint64_t(p.NC) * p.HV;
    if (units > 0x7FFFFFFFull || units * p.BT * p.BT > (1ull << 40)) return Refuse(err, "tensor too large");

    t->NC = p.NC;
    t->HV = p.HV;
    t->BT = p.BT;
    t->nb = p.BT / kBlock;
    t->out_kind = p.out_kind;
    t->out_bytes = p.out_kind == kOutFloat32 ? 4 : 2;
    core_split::SplitUnits(static_cast<uint32_t>(units), p.core_num, t);

    // AIV (per diagonal block): the L block in, its Brcb (one 32-byte block per element), X, the
    // scratch row products, the identity; out: X_bb (output type), -X_bb and X_bb^T (fp32); the
    // zeros written right of the diagonal blocks (16 x (BT - 16) of the output type).
    const uint32_t side = p.BT - kBlock;
    t->ub_bytes_used =
        kBlockElems * 4 * 4 + kBlockElems * 32 + kBlockElems * t->out_bytes + kBlockElems * 4 * 2 + kBlock * side * t->out_bytes;
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC (block row i, n = 16 i <= BT - 16): XT [n, n], L[i, :n] [16, n], R^T [n, 16], -X_ii in L1;
    // the largest A (XT), B (16 x n) and C (n x 16) in L0.
    if (t->nb > 1) {
        t->l1_bytes_used = (side * side + 2 * kBlock * side + kBlockElems) * 4;
        t->l0a_bytes_used = Max(side * side, kBlockElems) * 4;
        t->l0b_bytes_used = kBlock * side * 4;
        t->l0c_bytes_used = kBlock * side * 4;
        if (t->l1_bytes_used > p.l1_bytes || t->l0a_bytes_used > kL0abBytes || t->l0b_bytes_used > kL0abBytes ||
            t->l0c_bytes_used > p.l0c_bytes)
            return Refuse(err, "L1 / L0 too small");
        t->ws_nx_off = p.BT * p.BT;
        t->ws_rt_off = t->ws_nx_off + t->nb * kBlockElems;
        t->ws_slot_elems = t->ws_rt_off + side * kBlock;
        t->ws_bytes_per_core = 2 * t->ws_slot_elems * 4;
    }
    return 0;
}

// ---- SolveTrilArgs: the messages are the C entry point's (include/fla_npu/kernels.h) ------------

const char* SolveTrilArgs::SetRanks(int32_t l, int32_t akk) {
    if (l != 4 || akk != 4) return "`l` and `akk` must be 4-D (chunk layout [NC, HV, BT, BT])";
    return nullptr;
}

const char* SolveTrilArgs::SetShapes(const int64_t* l, const int64_t* akk) {
    if (l[2] != l[3]) return "`l` must be [NC, HV, BT, BT]";
    if (std::memcmp(l, akk, sizeof(int64_t) * 4) != 0) return "`akk` must have the shape of `l`";
    std::memcpy(l_, l, sizeof(l_));
    return nullptr;
}

const char* SolveTrilArgs::CheckSizes() const {
    if (l_[2] != 16 && l_[2] != 32 && l_[2] != 64) return "the chunk size BT must be 16, 32 or 64";
    if (l_[0] > 0x7FFFFFFF || l_[1] > 0x7FFFFFFF) return "a dimension is too large";
    return nullptr;
}

SolveTrilProblem SolveTrilArgs::Problem(uint32_t in_bytes, uint32_t out_kind, bool cube_fp32, uint32_t core_num,
                                        uint32_t ub_bytes, uint32_t l0c_bytes) const {
    SolveTrilProblem p;
    chunk_tiling::SetUnits(l_, core_num, ub_bytes, l0c_bytes, &p);
    p.in_bytes = in_bytes;
    p.out_kind = out_kind;
    p.cube_fp32 = cube_fp32;
    return p;
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, SolveTrilTiling* tiling) {
    // l, akk
    SolveTrilArgs checked;
    const char* bad = nullptr;
    if ((bad = checked.SetRanks(a[0].ndim, a[1].ndim))) return bad;
    if ((bad = checked.SetShapes(a[0].d, a[1].d))) return bad;
    if ((bad = checked.CheckSizes())) return bad;
    // l is float32, akk float32, float16 or bfloat16 (the registration's; the C entry point checks them).
    const uint32_t out_kind = a[1].dtype == FLA_NPU_FLOAT16    ? kOutFloat16
                              : a[1].dtype == FLA_NPU_BFLOAT16 ? kOutBfloat16
                                                               : kOutFloat32;
    return TilingOrMessage(checked.Problem(4, out_kind, dev.cube_fp32, dev.ai_cores, dev.ub_bytes, dev.l0c_bytes), tiling);
}

}  // namespace solve_tril
}  // namespace fla_npu
