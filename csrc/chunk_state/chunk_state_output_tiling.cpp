// Host tiling of the fused state + output kernel; see chunk_state_output_tiling.h.
#include "chunk_state_output_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace chunk_state_output {

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* TilingFromShapes(const ShapeArg* a, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling) {
    const ShapeArg &w = a[0], &u = a[1], &e_last = a[3], &q = a[6], &aqk = a[8], &o = a[9];
    const ShapeArg g = chunk_tiling::GateHeadMajor(a[7]);
    chunk_state::ChunkStateProblem p;
    const char* bad = chunk_state::StateProblem(a, 10, state_v_first, dev, &p);
    if (bad == nullptr && (q.ndim != 4 || g.ndim != 4 || aqk.ndim != 4 || o.ndim != 4))
        bad = "`q`, `g`, `aqk` and `o` must be 4-D";
    if (bad == nullptr) {
        const int64_t NC = w.d[0], HV = w.d[1], BT = w.d[2], K = w.d[3], V = u.d[3];
        if (q.d[0] != NC || q.d[1] != BT || q.d[3] != K || q.d[2] <= 0 || HV % q.d[2] != 0)
            bad = "`q` must be [NC, BT, HQ, K] (token-major), HQ dividing the HV of `w`";
        else if (!DimsAre(g, {NC, HV, BT, e_last.d[2]}))
            bad = "`g` must be [NC, BT, HV, K] (KDA, token-major) or [NC, HV, BT, 1] (GDN), with the Kg of `e_last`";
        else if (const char* gate = chunk_tiling::CheckGate(a[7], BT, K)) bad = gate;
        else if (!DimsAre(aqk, {NC, HV, BT, BT})) bad = "`aqk` must be [NC, HV, BT, BT]";
        else if (!DimsAre(o, {NC, BT, HV, V})) bad = "`o` must be [NC, BT, HV, V] (token-major)";
        else if (!chunk_tiling::TokenPitchOk(q) || !chunk_tiling::TokenPitchOk(o))
            bad = "`q` and `o`: H * D must be at most 65535 (a row stride of the loads and of the writes)";
        else p.groups = static_cast<uint32_t>(HV / q.d[2]);
    }
    p.fused_output = true;
    p.h_f32 = p.v_new_f32 = false;  // neither is written
    return TilingOrMessage(bad, p, tiling);
}

}  // namespace chunk_state_output
}  // namespace fla_npu
