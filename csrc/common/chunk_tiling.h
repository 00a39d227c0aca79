// Host tiling pieces shared by the mixed Cube ops in the chunk layout (chunk_output, wy_fast,
// chunk_intra, solve_tril, chunk_state): the fields every problem has, the refusals and the size
// limit they share, the tiling's copy of the shape, the workspace. The split of units over cores:
// core_split.h; the shape checks of the ops' hooks: chunk_shapes.h (host only).
// Plain C++ (no Ascend C, no CANN), like the tilings that include it.
#ifndef FLA_NPU_CHUNK_TILING_H
#define FLA_NPU_CHUNK_TILING_H

#include "op_tiling.h"

namespace fla_npu {
namespace chunk_tiling {

constexpr uint32_t kMaxHeadDim = 256;  // the widest head dim (K, V) the chunk kernels take

// The refusals the chunk ops share (both front ends report them alike).
constexpr const char* kChunkSizeMessage = "the chunk size BT must be 16, 32 or 64";
constexpr const char* kTooLargeMessage = "tensor too large";
constexpr const char* kDimTooLargeMessage = "a dimension is too large";

// What every chunk-layout problem has: NC chunks of BT rows for each of HV heads, whether the SoC's
// Cube takes float x float, and the caller's launch facts. The ops' problems derive from it.
struct ChunkProblem {
    uint32_t NC = 0, HV = 0, BT = 64;
    bool cube_fp32 = true;  // the SoC's Cube takes float x float
    uint32_t core_num = 1;  // AI cores (AIC + 2 AIV) available
    uint32_t ub_bytes = 0;  // usable UB per vector core (0: not checked)
    uint32_t l0c_bytes = soc::kA2.l0cBytes;
};

// A problem over keys of K columns with a decay of Kg columns (1: GDN, K: KDA) whose Cube inputs are
// of elem_bytes bytes (chunk_intra).
struct KeysProblem : ChunkProblem {
    uint32_t K = 128, Kg = 128;
    uint32_t elem_bytes = 2;
    uint32_t groups = 1;  // GVA: value heads per q / k head (the ops reading q or k)
};

// The same with values of V columns: [K, V] heads (chunk_output, wy_fast, chunk_state).
struct HeadsProblem : KeysProblem {
    uint32_t V = 128;
};

// Which head dims an op's shapes carry: none (solve_tril), K (chunk_intra), K and V.
enum class HeadDims { kNone, kK, kKV };

// The chunk sizes the chunk kernels take.
inline bool ChunkSizeOk(int64_t BT) { return BT == 16 || BT == 32 || BT == 64; }

// A head dim the chunk kernels take: a multiple of 16 in [16, kMaxHeadDim].
inline bool HeadDimOk(int64_t d) { return d >= 16 && d <= kMaxHeadDim && d % 16 == 0; }

// The refusal of head dims K (and V, with HeadDims::kKV) the chunk kernels do not take; nullptr
// when they take them (and with HeadDims::kNone).
inline const char* CheckHeadDims(HeadDims dims, int64_t K, int64_t V) {
    if (dims == HeadDims::kK && !HeadDimOk(K)) return "the head dim K must be a multiple of 16 in [16, 256]";
    if (dims == HeadDims::kKV && (!HeadDimOk(K) || !HeadDimOk(V)))
        return "the head dims K and V must be multiples of 16 in [16, 256]";
    return nullptr;
}

// Whether the NC * HV units of `unit_elems` elements each stay within the chunk kernels' counts: a
// unit count of 31 bits, tensors of at most 2^40 elements.
inline bool UnitsFit(const ChunkProblem& p, uint64_t unit_elems) {
    const uint64_t units = uint64_t(p.NC) * p.HV;
    return units <= 0x7FFFFFFFull && units * unit_elems <= (1ull << 40);
}

// The NC * HV units of a problem within UnitsFit.
inline uint32_t Units(const ChunkProblem& p) { return static_cast<uint32_t>(uint64_t(p.NC) * p.HV); }

// The refusal of Cube inputs of `elem_bytes` bytes by a kernel that takes 2-byte ones: float32 (this
// SoC's Cube takes none; else `fp32_reason`, why the op's kernel takes none), any other type.
// nullptr for 2 bytes.
inline const char* CheckCubeType(uint32_t elem_bytes, bool cube_fp32, const char* fp32_reason) {
    if (elem_bytes == 4) return cube_fp32 ? fp32_reason : "this SoC's Cube takes no float32 inputs; pass float16 or bfloat16";
    if (elem_bytes != 2) return "the Cube inputs must be float16 or bfloat16";
    return nullptr;
}

// What an op over heads says when it refuses float32 Cube inputs its SoC's Cube would take (why its
// kernel takes none) and a decay of neither 1 nor K columns (naming its decay tensor).
struct HeadsRefusals {
    const char* fp32_reason;
    const char* kg_message;
};

// The refusals that open the tiling of an op over heads (HeadDims::kK: keys only, or kKV: V is the
// problem's), in this order: the Cube type (CheckCubeType), the chunk size, the head dims, the decay's
// columns, no core, then units beyond UnitsFit(p, unit_elems). nullptr when none applies.
inline const char* CheckHeads(const KeysProblem& p, HeadDims dims, uint32_t V, const HeadsRefusals& why, uint64_t unit_elems) {
    if (const char* bad = CheckCubeType(p.elem_bytes, p.cube_fp32, why.fp32_reason)) return bad;
    if (!ChunkSizeOk(p.BT)) return kChunkSizeMessage;
    if (const char* bad = CheckHeadDims(dims, p.K, V)) return bad;
    if (p.Kg != 1 && p.Kg != p.K) return why.kg_message;
    if (p.core_num == 0) return "core_num must be positive";
    if (!UnitsFit(p, unit_elems)) return kTooLargeMessage;
    return nullptr;
}

// A tiling's copy of the problem's shape: NC, HV, BT, K, Kg and elem_bytes.
template <typename Tiling>
void CopyKeys(const KeysProblem& p, Tiling* t) {
    t->NC = p.NC;
    t->HV = p.HV;
    t->BT = p.BT;
    t->K = p.K;
    t->Kg = p.Kg;
    t->elem_bytes = p.elem_bytes;
}

// The opening of the ComputeTiling of an op over keys (chunk_intra): BeginTiling, the refusals of
// CheckHeads, the problem's shape copied into *t (CopyKeys). 0, or Refuse's code (the message in *err).
template <typename Tiling>
int OpenKeysTiling(const KeysProblem& p, const HeadsRefusals& why, uint64_t unit_elems, Tiling* t, const char** err) {
    BeginTiling(t, err);
    if (const char* bad = CheckHeads(p, HeadDims::kK, 0, why, unit_elems)) return Refuse(err, bad);
    CopyKeys(p, t);
    return 0;
}

// The same for an op over [K, V] heads (chunk_output, wy_fast, chunk_state), V copied too.
template <typename Tiling>
int OpenHeadsTiling(const HeadsProblem& p, const HeadsRefusals& why, uint64_t unit_elems, Tiling* t, const char** err) {
    BeginTiling(t, err);
    if (const char* bad = CheckHeads(p, HeadDims::kKV, p.V, why, unit_elems)) return Refuse(err, bad);
    CopyKeys(p, t);
    t->V = p.V;
    return 0;
}

// The GM workspace of a chunk kernel: a slice of ws_bytes_per_core for each launched AI core (each
// op's header makes it its UserWorkspaceBytes).
template <typename Tiling>
uint64_t UserWorkspaceBytes(const Tiling& t) {
    return uint64_t(t.block_dim) * t.ws_bytes_per_core;
}

}  // namespace chunk_tiling
}  // namespace fla_npu

#endif
