// Host tiling pieces shared by the mixed Cube ops in the chunk layout (chunk_output, wy_fast,
// chunk_intra, solve_tril, chunk_state): the split of (chunk, head) units over AI cores, the shape
// facts common to their Args classes and the fields every problem has.
// Plain C++ (no Ascend C, no CANN), like the tilings that include it.
#ifndef FLA_NPU_CHUNK_TILING_H
#define FLA_NPU_CHUNK_TILING_H

#include <cstdint>

namespace fla_npu {
namespace chunk_tiling {

// Bytes rounded up to whole 32-byte UB blocks.
inline uint64_t Pad32(uint64_t x) { return (x + 31) / 32 * 32; }

// The chunk sizes the chunk kernels take.
inline bool ChunkSizeOk(uint32_t BT) { return BT == 16 || BT == 32 || BT == 64; }

// A head dim the chunk kernels take: a multiple of 16 in [16, max_head_dim].
inline bool HeadDimOk(uint32_t d, uint32_t max_head_dim) { return d >= 16 && d <= max_head_dim && d % 16 == 0; }

// Splits `num_units` over min(num_units, core_num) AI cores in contiguous ranges (read back by the
// op's CoreUnits); sets t->num_units, block_dim, units_per_core, units_rem.
template <typename Tiling>
void SplitUnits(uint32_t num_units, uint32_t core_num, Tiling* t) {
    t->num_units = num_units;
    t->block_dim = t->num_units < core_num ? t->num_units : core_num;
    if (t->block_dim > 0) {
        t->units_per_core = t->num_units / t->block_dim;
        t->units_rem = t->num_units % t->block_dim;
    }
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

// A problem's [NC, HV, BT] from checked shapes: `lead` is the [NC, HV, BT, ...] of the op's leading
// tensor.
template <typename Problem>
void SetUnits(const int64_t* lead, Problem* p) {
    p->NC = static_cast<uint32_t>(lead[0]);
    p->HV = static_cast<uint32_t>(lead[1]);
    p->BT = static_cast<uint32_t>(lead[2]);
}

// A problem's launch facts: the caller's AI cores, UB and L0C.
template <typename Problem>
void SetLaunchFacts(uint32_t core_num, uint32_t ub_bytes, uint32_t l0c_bytes, Problem* p) {
    p->core_num = core_num;
    p->ub_bytes = ub_bytes;
    p->l0c_bytes = l0c_bytes;
}

// The problem for the op's ComputeTiling from checked shapes and the caller's launch facts.
template <typename Problem>
Problem MakeProblem(const int64_t (&lead)[4], int64_t V, int64_t Kg, uint32_t elem_bytes, bool cube_fp32, uint32_t core_num,
                    uint32_t ub_bytes, uint32_t l0c_bytes) {
    Problem p;
    SetUnits(lead, &p);
    p.K = static_cast<uint32_t>(lead[3]);
    p.V = static_cast<uint32_t>(V);
    p.Kg = static_cast<uint32_t>(Kg);
    p.elem_bytes = elem_bytes;
    p.cube_fp32 = cube_fp32;
    SetLaunchFacts(core_num, ub_bytes, l0c_bytes, &p);
    return p;
}

}  // namespace chunk_tiling
}  // namespace fla_npu

#endif
