// Host tiling pieces shared by the mixed Cube ops in the chunk layout (chunk_output, wy_fast,
// chunk_intra, solve_tril, chunk_state): the fields every problem has, the refusals they share, the
// shape facts common to their Args classes (the split of units over cores: core_split.h).
// Plain C++ (no Ascend C, no CANN), like the tilings that include it.
#ifndef FLA_NPU_CHUNK_TILING_H
#define FLA_NPU_CHUNK_TILING_H

#include "op_tiling.h"

namespace fla_npu {
namespace chunk_tiling {

// What every chunk-layout problem has: NC chunks of BT rows for each of HV heads, whether the SoC's
// Cube takes float x float, and the caller's launch facts. The ops' problems derive from it.
struct ChunkProblem {
    uint32_t NC = 0, HV = 0, BT = 64;
    bool cube_fp32 = true;  // the SoC's Cube takes float x float
    uint32_t core_num = 1;  // AI cores (AIC + 2 AIV) available
    uint32_t ub_bytes = 0;  // usable UB per vector core (0: not checked)
    uint32_t l0c_bytes = soc::kA2.l0cBytes;
};

// A problem over [K, V] heads with a decay of Kg columns (1: GDN, K: KDA) whose Cube inputs are of
// elem_bytes bytes (chunk_output, wy_fast, chunk_state).
struct HeadsProblem : ChunkProblem {
    uint32_t K = 128, V = 128, Kg = 128;
    uint32_t elem_bytes = 2;
};

// Bytes rounded up to whole 32-byte UB blocks.
inline uint64_t Pad32(uint64_t x) { return (x + 31) / 32 * 32; }

// The chunk sizes the chunk kernels take.
inline bool ChunkSizeOk(uint32_t BT) { return BT == 16 || BT == 32 || BT == 64; }

// A head dim the chunk kernels take: a multiple of 16 in [16, max_head_dim].
inline bool HeadDimOk(uint32_t d, uint32_t max_head_dim) { return d >= 16 && d <= max_head_dim && d % 16 == 0; }

// The refusal of Cube inputs of `elem_bytes` bytes by a kernel that takes 2-byte ones: float32 (this
// SoC's Cube takes none; else `fp32_reason`, why the op's kernel takes none), any other type.
// nullptr for 2 bytes.
inline const char* CheckCubeType(uint32_t elem_bytes, bool cube_fp32, const char* fp32_reason) {
    if (elem_bytes == 4) return cube_fp32 ? fp32_reason : "this SoC's Cube takes no float32 inputs; pass float16 or bfloat16";
    if (elem_bytes != 2) return "the Cube inputs must be float16 or bfloat16";
    return nullptr;
}

// The refusals that open the tiling of an op over [K, V] heads, in this order: the Cube type
// (CheckCubeType), the chunk size, the head dims, a decay of neither 1 nor K columns (`kg_message`),
// no core. nullptr when none applies.
inline const char* CheckHeads(const HeadsProblem& p, uint32_t max_head_dim, const char* fp32_reason, const char* kg_message) {
    if (const char* bad = CheckCubeType(p.elem_bytes, p.cube_fp32, fp32_reason)) return bad;
    if (!ChunkSizeOk(p.BT)) return "the chunk size BT must be 16, 32 or 64";
    if (!HeadDimOk(p.K, max_head_dim) || !HeadDimOk(p.V, max_head_dim))
        return "the head dims K and V must be multiples of 16 in [16, 256]";
    if (p.Kg != 1 && p.Kg != p.K) return kg_message;
    if (p.core_num == 0) return "core_num must be positive";
    return nullptr;
}

// A tiling's copy of the problem's shape: NC, HV, BT, K, V, Kg and elem_bytes.
template <typename Tiling>
void CopyHeads(const HeadsProblem& p, Tiling* t) {
    t->NC = p.NC;
    t->HV = p.HV;
    t->BT = p.BT;
    t->K = p.K;
    t->V = p.V;
    t->Kg = p.Kg;
    t->elem_bytes = p.elem_bytes;
}

// The size checks of both front ends: `lead` is the [NC, HV, BT, K] of the op's leading tensor.
inline const char* CheckSizes(const int64_t (&lead)[4], int64_t V, int64_t max_head_dim) {
    if (lead[2] != 16 && lead[2] != 32 && lead[2] != 64) return "the chunk size BT must be 16, 32 or 64";
    const int64_t dims[] = {lead[3], V};
    for (int64_t d : dims)
        if (d < 16 || d > max_head_dim || d % 16 != 0) return "the head dims K and V must be multiples of 16 in [16, 256]";
    if (lead[0] > 0x7FFFFFFF || lead[1] > 0x7FFFFFFF) return "a dimension is too large";
    return nullptr;
}

// A problem's [NC, HV, BT] from checked shapes (`lead`: the [NC, HV, BT, ...] of the op's leading
// tensor) and the caller's launch facts.
inline void SetUnits(const int64_t* lead, uint32_t core_num, uint32_t ub_bytes, uint32_t l0c_bytes, ChunkProblem* p) {
    p->NC = static_cast<uint32_t>(lead[0]);
    p->HV = static_cast<uint32_t>(lead[1]);
    p->BT = static_cast<uint32_t>(lead[2]);
    p->core_num = core_num;
    p->ub_bytes = ub_bytes;
    p->l0c_bytes = l0c_bytes;
}

// The problem for the op's ComputeTiling from checked shapes and the caller's launch facts.
template <typename Problem>
Problem MakeProblem(const int64_t (&lead)[4], int64_t V, int64_t Kg, uint32_t elem_bytes, bool cube_fp32, uint32_t core_num,
                    uint32_t ub_bytes, uint32_t l0c_bytes) {
    Problem p;
    SetUnits(lead, core_num, ub_bytes, l0c_bytes, &p);
    p.K = static_cast<uint32_t>(lead[3]);
    p.V = static_cast<uint32_t>(V);
    p.Kg = static_cast<uint32_t>(Kg);
    p.elem_bytes = elem_bytes;
    p.cube_fp32 = cube_fp32;
    return p;
}

}  // namespace chunk_tiling
}  // namespace fla_npu

#endif
