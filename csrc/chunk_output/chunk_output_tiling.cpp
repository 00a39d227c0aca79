// Host tiling of the chunk output kernel; see chunk_output_tiling.h.
#include "chunk_output_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace chunk_output {

int ComputeTiling(const ChunkOutputProblem& p, ChunkOutputTiling* t, const char** err) {
    static constexpr chunk_tiling::HeadsRefusals kWhy = {
        "float32 Cube inputs are not supported: S and v_new reach the Cube through a transposing load that exists for "
        "2-byte types only; pass float16 or bfloat16",
        "g must have 1 or K columns"};
    if (chunk_tiling::OpenHeadsTiling(p, kWhy, uint64_t(p.K) * p.V, t, err) != 0) return -1;
    t->groups = p.groups;
    core_split::SplitUnits(chunk_tiling::Units(p), p.core_num, t);

    // AIV: half of qe's rows.
    t->rows_per_aiv = p.BT / 2;
    const uint64_t n = uint64_t(t->rows_per_aiv) * p.K;
    // q in (T), g in (fp32; e_row formed in place), the fp32 work tile, the T out tile, one Brcb block per row.
    t->ub_bytes_used = static_cast<uint32_t>(Pad32(n * p.elem_bytes) * 2 + Pad32(n * 4) * 2 +
                                             (p.Kg == 1 ? Pad32(uint64_t(t->rows_per_aiv) * 8 * 4) : 0));
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the V-tile is the widest multiple of 16 whose B operands (S and v_new columns) fit L0B.
    uint32_t vt = soc::kL0abBytes / ((p.K + p.BT) * p.elem_bytes) / 16 * 16;
    t->v_tile = vt < p.V ? vt : p.V;
    t->l1_bytes_used = (p.BT * p.K + p.K * p.V + p.BT * p.BT + p.BT * p.V) * p.elem_bytes;
    t->l0a_bytes_used = (p.BT * p.K + p.BT * p.BT) * p.elem_bytes;
    t->l0b_bytes_used = (p.K + p.BT) * t->v_tile * p.elem_bytes;
    t->l0c_bytes_used = p.BT * t->v_tile * 4;
    if (CheckCubeBuffers(*t, p.l0c_bytes, err) != 0) return -1;
    t->ws_slot_elems = p.BT * p.K;
    t->ws_bytes_per_core = 2 * t->ws_slot_elems * p.elem_bytes;
    return 0;
}

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* ProblemFromShapes(const ShapeArg* a, const DeviceFacts& dev, ChunkOutputProblem* p) {
    const ShapeArg &qt = a[0], &s = a[2], &aqk = a[3], &v_new = a[4], &out = a[5];
    const ShapeArg q = chunk_tiling::HeadMajor(qt);  // q is token-major [NC, BT, HQ, K]
    ShapeArg heads[6];                               // the call with g head-major, for the shared checks
    for (int i = 0; i < 6; ++i) heads[i] = a[i];
    const ShapeArg& g = heads[1] = chunk_tiling::GateHeadMajor(a[1]);
    if (!RanksAre(a, {4, 4, 4, 4, 4, 4}))
        return "`q`, `g`, `s`, `aqk`, `v_new` and `out` must be 4-D (chunk layout [NC, HV, ...])";
    const int64_t BT = q.d[2], K = q.d[3], V = v_new.d[3], Kg = g.d[3];
    if (!chunk_tiling::TokenPitchOk(qt)) return "`q`: HQ * K must be at most 65535 (a row stride of the loads)";
    if (!chunk_tiling::ShareUnitsOf(heads, {1, 2, 3, 4})) return "`s`, `aqk` and `v_new` must have the [NC, HV] of `g`";
    int64_t lead[4];
    if (const char* bad = chunk_tiling::GroupedHeads("`q` must have the NC of `g` and a number of heads dividing its HV (GVA)", q,
                                                     g, lead, &p->groups))
        return bad;
    if (const char* bad = chunk_tiling::CheckGate(a[1], BT, K)) return bad;
    if (s.d[2] != K || s.d[3] != V) return "`s` must be [NC, HV, K, V]";
    if (aqk.d[2] != BT || aqk.d[3] != BT) return "`aqk` must be [NC, HV, BT, BT]";
    if (v_new.d[2] != BT) return "`v_new` must be [NC, HV, BT, V]";
    if (out.d[0] != v_new.d[0] || out.d[1] != BT || out.d[2] != v_new.d[1] || out.d[3] != V)
        return "`out` must be [NC, BT, HV, V] (token-major)";
    return chunk_tiling::SizedHeads(lead, V, Kg, chunk_tiling::CubeElemBytes(q), dev, p);
}

const char* TilingFromShapes(const ShapeArg* a, const DeviceFacts& dev, ChunkOutputTiling* tiling) {
    return chunk_tiling::TilingOfShapes<ChunkOutputProblem>(a, dev, tiling);
}

}  // namespace chunk_output
}  // namespace fla_npu
