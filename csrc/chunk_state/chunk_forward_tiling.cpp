// Host tiling of the chunked forward's stages 2 to 5 in one launch; see chunk_forward_tiling.h.
#include "chunk_forward_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace chunk_forward {

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* TilingFromShapes(const ShapeArg* a, int64_t qk_l2norm, float scale, int64_t state_v_first, const DeviceFacts& dev,
                             ChunkStateTiling* tiling) {
    const ShapeArg &qt = a[0], &kt = a[1], &vt = a[2], &g = a[3], &beta = a[4], &o = a[8];
    const ShapeArg q = chunk_tiling::HeadMajor(qt), k = chunk_tiling::HeadMajor(kt), v = chunk_tiling::HeadMajor(vt);
    chunk_state::ChunkStateProblem p;
    int64_t lead[4] = {0, 0, 0, 0};
    const char* bad = nullptr;
    if (!RanksAre(a, {4, 4, 4, 4, 3}) || o.ndim != 4) bad = "`beta` must be 3-D and `q`, `k`, `v`, `g` and `o` 4-D";
    else if (qk_l2norm != 0 && qk_l2norm != 1) bad = "`qk_l2norm` must be 0 or 1";
    else if (!chunk_tiling::TokenPitchOk(qt) || !chunk_tiling::TokenPitchOk(kt) || !chunk_tiling::TokenPitchOk(vt) ||
             !chunk_tiling::TokenPitchOk(o))
        bad = "`q`, `k`, `v` and `o`: H * D must be at most 65535 (a row stride of the loads and of the writes)";
    else if (!SameShape(q, k)) bad = "`q` must have the shape of `k` [NC, BT, HQ, K] (token-major)";
    else
        bad = chunk_tiling::GroupedHeads("`k` must be [NC, BT, HQ, K] (token-major), HQ dividing the HV of `v`", k, v, lead,
                                         &p.groups);
    if (bad == nullptr) {
        const int64_t NC = v.d[0], HV = v.d[1], BT = k.d[2], K = k.d[3], V = v.d[3];
        if (v.d[2] != BT) bad = "`v` must be [NC, BT, HV, V] (token-major) with the BT of `k`";
        else if (!DimsAre(g, {NC, HV, BT, 1}) || a[5].d[2] != 1)
            bad =
                "`g` must be [NC, HV, BT, 1] and `e_last` [NC, HV, 1]: one decay per row (Gated DeltaNet; the per-key "
                "decay of KDA is not supported in one launch)";
        else if (const char* gate = chunk_tiling::CheckGate(g, BT, K)) bad = gate;
        else if (!DimsAre(beta, {NC, HV, BT})) bad = "`beta` must be [NC, HV, BT]";
        else if (!SameShape(o, vt)) bad = "`o` must have the shape of `v` [NC, BT, HV, V] (token-major)";
        else bad = chunk_state::StateArgs(lead, V, a[5], a[6], a[7], a[9], state_v_first, dev, &p);
    }
    p.fused_output = p.intra = true;
    p.qk_l2norm = qk_l2norm == 1;
    p.scale = scale;
    p.h_f32 = p.v_new_f32 = false;  // neither is written
    return TilingOrMessage(bad, p, tiling);
}

}  // namespace chunk_forward
}  // namespace fla_npu
