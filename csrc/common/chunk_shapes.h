// The shape side of the chunk-layout ops' tiling hooks (TilingFromShapes in <stage>_tiling.cpp: the
// shape checks both front ends share, then the op's ComputeTiling): the checks the ops have in
// common and the problem made of a checked call. Host only (the kernels include chunk_tiling.h, not
// this); plain C++.
#ifndef FLA_NPU_CHUNK_SHAPES_H
#define FLA_NPU_CHUNK_SHAPES_H

#include <initializer_list>

#include "../gate/gate_cumsum_tiling.h"  // the gate forms (RawGateProblem)
#include "chunk_tiling.h"
#include "shape_args.h"

namespace fla_npu {
namespace chunk_tiling {

// Whether the first `n` tensors of a call all have the [NC, HV] of the first, the op's leading one.
inline bool ShareUnits(const ShapeArg* a, int n) {
    for (int i = 1; i < n; ++i)
        if (a[i].d[0] != a[0].d[0] || a[i].d[1] != a[0].d[1]) return false;
    return true;
}

// A token-major chunk tensor [NC, BT, H, D] (row r of chunk c, head h: the token layout itself for
// whole chunks) described as its head-major [NC, H, BT, D], the order the shape checks read.
inline ShapeArg HeadMajor(const ShapeArg& x) {
    ShapeArg h = x;
    h.d[1] = x.d[2];
    h.d[2] = x.d[1];
    return h;
}

// The gate cumsum G the chunk kernels read: KDA token-major [NC, BT, HV, K] (rows of K floats HV K
// apart, as the gate kernel writes them: no copy into the chunk layout), GDN head-major [NC, HV, BT,
// 1] (one float per row: a unit's rows contiguous). As head-major [NC, HV, BT, Kg] for the shared
// checks.
inline ShapeArg GateHeadMajor(const ShapeArg& g) { return g.ndim == 4 && g.d[3] != 1 ? HeadMajor(g) : g; }
constexpr const char* kGateShapeMessage = "`g` must be [NC, BT, HV, K] (KDA, token-major) or [NC, HV, BT, 1] (GDN)";

// Whether the rows of a token-major tensor, H * D elements apart, are within the 16-bit strides of
// the loads (LoadNz's source row pitch).
inline bool TokenPitchOk(const ShapeArg& x) { return x.d[2] * x.d[3] <= 0xFFFF; }

// The checks of G (`g` as the call gives it) against the chunk size BT and the key dim K: its rows,
// its columns (1 or K) and, KDA, its row pitch HV K within the loads' 16-bit strides. nullptr, or
// the message.
inline const char* CheckGate(const ShapeArg& g, int64_t BT, int64_t K) {
    const ShapeArg h = GateHeadMajor(g);
    if (h.d[2] != BT || (h.d[3] != 1 && h.d[3] != K)) return kGateShapeMessage;
    if (h.d[3] != 1 && !TokenPitchOk(g)) return "`g`: HV * K must be at most 65535 (a row stride of the loads)";
    return nullptr;
}

// The optional per-row factors of q and k (`qs`, `ks`: q_scale, k_scale [NC, HQ, BT], both or neither;
// absent: ndim -1) of a call whose q is `q` (head-major [NC, HQ, BT, K]). *present says whether they
// were given. nullptr, or the message.
inline const char* CheckRowScales(const ShapeArg& qs, const ShapeArg& ks, const ShapeArg& q, bool* present) {
    *present = qs.present();
    if (qs.present() != ks.present()) return "`q_scale` and `k_scale` must be given together";
    if (*present &&
        (qs.ndim != 3 || ks.ndim != 3 || !DimsAre(qs, {q.d[0], q.d[1], q.d[2]}) || !DimsAre(ks, {q.d[0], q.d[1], q.d[2]})))
        return "`q_scale` and `k_scale` must be [NC, HQ, BT] (a factor per row of `q` and `k`)";
    return nullptr;
}

// Whether the tensors a[i] of `idx` all have the [NC, HV] of the first of them.
inline bool ShareUnitsOf(const ShapeArg* a, std::initializer_list<int> idx) {
    const ShapeArg& first = a[*idx.begin()];
    for (int i : idx)
        if (a[i].d[0] != first.d[0] || a[i].d[1] != first.d[1]) return false;
    return true;
}

// GVA: q or k [NC, HQ, BT, K] of a call over HV value heads (`heads`: a value-side tensor's [NC,
// HV, ...]), value head h reading q / k head h / (HV / HQ). *lead = q's dims with HV for HQ (the
// problem is over value heads), *groups = HV / HQ. nullptr, or the message.
inline const char* GroupedHeads(const char* message, const ShapeArg& qk, const ShapeArg& heads, int64_t* lead, uint32_t* groups) {
    if (qk.d[0] != heads.d[0] || qk.d[1] <= 0 || heads.d[1] % qk.d[1] != 0) return message;
    lead[0] = qk.d[0];
    lead[1] = heads.d[1];
    lead[2] = qk.d[2];
    lead[3] = qk.d[3];
    *groups = static_cast<uint32_t>(heads.d[1] / qk.d[1]);
    return nullptr;
}

// The size checks of both front ends on `lead`, the [NC, HV, BT, K] of the op's leading tensor (V:
// the op's value head dim, with HeadDims::kKV), in this order: the chunk size, the head dims
// (CheckHeadDims), NC and HV within 31 bits. nullptr, or the message.
inline const char* CheckSizes(const int64_t* lead, HeadDims dims, int64_t V = 0) {
    if (!ChunkSizeOk(lead[2])) return kChunkSizeMessage;
    if (const char* bad = CheckHeadDims(dims, lead[3], V)) return bad;
    if (lead[0] > 0x7FFFFFFF || lead[1] > 0x7FFFFFFF) return kDimTooLargeMessage;
    return nullptr;
}

// The bytes of the Cube inputs of a call whose leading Cube input is `x`: the registrations take
// float16 / bfloat16 only; the C entry points pass float32 here too (refused by ComputeTiling with
// the op's reason).
inline uint32_t CubeElemBytes(const ShapeArg& x) { return x.dtype == FLA_NPU_FLOAT32 ? 4u : 2u; }

// A problem's [NC, HV, BT] from checked shapes (`lead`: the [NC, HV, BT, ...] of the op's leading
// tensor) and the launch facts of the device (its AI cores, UB, L0C, whether its Cube takes float32).
inline void SetUnits(const int64_t* lead, const DeviceFacts& dev, ChunkProblem* p) {
    p->NC = static_cast<uint32_t>(lead[0]);
    p->HV = static_cast<uint32_t>(lead[1]);
    p->BT = static_cast<uint32_t>(lead[2]);
    p->cube_fp32 = dev.cube_fp32;
    p->core_num = dev.ai_cores;
    p->ub_bytes = dev.ub_bytes;
    p->l0c_bytes = dev.l0c_bytes;
}

// The same and the keys (`lead`: [NC, HV, BT, K]) with a decay of Kg columns, Cube inputs of
// elem_bytes bytes.
inline void SetKeys(const int64_t* lead, int64_t Kg, uint32_t elem_bytes, const DeviceFacts& dev, KeysProblem* p) {
    SetUnits(lead, dev, p);
    p->K = static_cast<uint32_t>(lead[3]);
    p->Kg = static_cast<uint32_t>(Kg);
    p->elem_bytes = elem_bytes;
}

// The same with values of V columns.
inline void SetHeads(const int64_t* lead, int64_t V, int64_t Kg, uint32_t elem_bytes, const DeviceFacts& dev, HeadsProblem* p) {
    SetKeys(lead, Kg, elem_bytes, dev, p);
    p->V = static_cast<uint32_t>(V);
}

// The last step of an op's shape checks, after its own: the size checks (CheckSizes: no head dim,
// K, or K and V), then *p's shape and launch facts (SetUnits, SetKeys, SetHeads). nullptr, or the
// size checks' message.
inline const char* SizedUnits(const int64_t* lead, const DeviceFacts& dev, ChunkProblem* p) {
    if (const char* bad = CheckSizes(lead, HeadDims::kNone)) return bad;
    SetUnits(lead, dev, p);
    return nullptr;
}

inline const char* SizedKeys(const int64_t* lead, int64_t Kg, uint32_t elem_bytes, const DeviceFacts& dev, KeysProblem* p) {
    if (const char* bad = CheckSizes(lead, HeadDims::kK)) return bad;
    SetKeys(lead, Kg, elem_bytes, dev, p);
    return nullptr;
}

inline const char* SizedHeads(const int64_t* lead, int64_t V, int64_t Kg, uint32_t elem_bytes, const DeviceFacts& dev,
                              HeadsProblem* p) {
    if (const char* bad = CheckSizes(lead, HeadDims::kKV, V)) return bad;
    SetHeads(lead, V, Kg, elem_bytes, dev, p);
    return nullptr;
}

// The tiling hook (TilingFromShapes) of a chunk op whose arguments are its tensors alone: the op's
// ProblemFromShapes, then its ComputeTiling (both found in the op's namespace through `Problem`).
template <typename Problem, typename Tiling>
const char* TilingOfShapes(const ShapeArg* a, const DeviceFacts& dev, Tiling* tiling) {
    Problem p;
    return TilingOrMessage(ProblemFromShapes(a, dev, &p), p, tiling);
}

// The checks of a launch that takes KDA's raw gate in the chunk layout with the gate's parameters
// (chunk_gate_intra, chunk_gate_forward; the messages are their C entry points'): gate_form 0..2
// (softplus needs a_log), a_log [HV], dt_bias HV * K elements, chunk_len [NC]; then the problem's gate
// fields (gate_in, gate_form, has_a_log, has_dt_bias, lower_bound). nullptr, or the message.
template <class Problem>
inline const char* RawGateProblem(int64_t gate_form, float lower_bound, const ShapeArg& a_log, const ShapeArg& dt_bias,
                                  const ShapeArg& len, int64_t NC, int64_t HV, int64_t K, Problem* p) {
    if (gate_form < 0 || gate_form > gate::kGateSigmoid) return "`gate_form` must be 0 (none), 1 (softplus) or 2 (sigmoid)";
    if (gate_form == gate::kGateSoftplus && !a_log.present()) return "the softplus gate (`gate_form` 1) needs `a_log`";
    if (a_log.present() && a_log.numel != HV) return "`a_log` must have HV elements (one per value head)";
    if (dt_bias.present() && dt_bias.numel != HV * K) return "`dt_bias` must have HV * K elements";
    if (len.ndim != 1 || len.d[0] != NC) return "`chunk_len` must be [NC] (the valid rows of each chunk)";
    p->gate_in = true;
    p->gate_form = static_cast<uint32_t>(gate_form);
    p->has_a_log = a_log.present();
    p->has_dt_bias = dt_bias.present();
    p->lower_bound = lower_bound;
    return nullptr;
}

}  // namespace chunk_tiling
}  // namespace fla_npu

#endif
