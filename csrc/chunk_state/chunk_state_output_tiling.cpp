// Host tiling of the fused WY + state + output kernel; see chunk_state_output_tiling.h.
#include "chunk_state_output_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace chunk_state_output {

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* TilingFromShapes(const ShapeArg* a, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling) {
    const ShapeArg &akk = a[4], &aqk = a[5], &o = a[11];
    const ShapeArg g = chunk_tiling::GateHeadMajor(a[3]);
    chunk_state::ChunkStateProblem p;
    int64_t lead[4] = {0, 0, 0, 0};
    const char* bad = nullptr;
    if (!RanksAre(a, {4, 4, 4, 4, 4, 4}) || o.ndim != 4) bad = "`q`, `k`, `v`, `g`, `akk`, `aqk` and `o` must be 4-D";
    else bad = chunk_state::TokenMajorHeads(a[0], a[1], a[2], o, lead, &p.groups);
    if (bad == nullptr) {
        const int64_t NC = lead[0], HV = lead[1], BT = lead[2], K = lead[3], V = a[2].d[3];
        if (!DimsAre(g, {NC, HV, BT}) || g.d[3] != a[6].d[2])
            bad = "`g` must be [NC, BT, HV, K] (KDA, token-major) or [NC, HV, BT, 1] (GDN), with the Kg of `e_last`";
        else if (const char* gate = chunk_tiling::CheckGate(a[3], BT, K)) bad = gate;
        else if (!DimsAre(akk, {NC, HV, BT, BT})) bad = "`akk` must be [NC, HV, BT, BT]";
        else if (!DimsAre(aqk, {NC, HV, BT, BT})) bad = "`aqk` must be [NC, HV, BT, BT]";
        else if (!SameShape(o, a[2])) bad = "`o` must have the shape of `v` [NC, BT, HV, V] (token-major)";
        else if (const char* scales = chunk_tiling::CheckRowScales(a[9], a[10], chunk_tiling::HeadMajor(a[1]), &p.qk_scaled))
            bad = scales;
        else bad = chunk_state::StateArgs(lead, V, a[6], a[7], a[8], a[12], state_v_first, dev, &p);
    }
    p.fused_output = true;
    p.h_f32 = p.v_new_f32 = false;  // neither is written
    return TilingOrMessage(bad, p, tiling);
}

}  // namespace chunk_state_output
}  // namespace fla_npu
