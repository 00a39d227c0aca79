// Host tiling of the chunked forward's stages 2 to 5 in one launch; see chunk_forward_tiling.h.
#include "chunk_forward_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace chunk_forward {

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* ProblemFromShapes(const ShapeArg* a, int64_t qk_l2norm, float scale, int64_t state_v_first, const DeviceFacts& dev,
                              chunk_state::ChunkStateProblem* p) {
    const ShapeArg &g = a[3], &beta = a[4], &o = a[8];
    int64_t lead[4] = {0, 0, 0, 0};
    const char* bad = nullptr;
    if (!RanksAre(a, {4, 4, 4, 4, 3}) || o.ndim != 4) bad = "`beta` must be 3-D and `q`, `k`, `v`, `g` and `o` 4-D";
    else if (qk_l2norm != 0 && qk_l2norm != 1) bad = "`qk_l2norm` must be 0 or 1";
    else bad = chunk_state::TokenMajorHeads(a[0], a[1], a[2], o, lead, &p->groups);
    if (bad == nullptr) {
        const int64_t NC = lead[0], HV = lead[1], BT = lead[2], K = lead[3], V = a[2].d[3];
        const ShapeArg gh = chunk_tiling::GateHeadMajor(g);
        if (!DimsAre(gh, {NC, HV, BT}) || (gh.d[3] != 1 && gh.d[3] != K) || a[5].d[2] != gh.d[3])
            bad =
                "`g` must be [NC, HV, BT, 1] (Gated DeltaNet) or [NC, BT, HV, K] (KDA, token-major) and `e_last` [NC, HV, "
                "1 or K] alike";
        else if (const char* gate = chunk_tiling::CheckGate(g, BT, K)) bad = gate;
        else if (!DimsAre(beta, {NC, HV, BT})) bad = "`beta` must be [NC, HV, BT]";
        else if (!SameShape(o, a[2])) bad = "`o` must have the shape of `v` [NC, BT, HV, V] (token-major)";
        else bad = chunk_state::StateArgs(lead, V, a[5], a[6], a[7], a[9], state_v_first, dev, p);
    }
    p->fused_output = p->intra = true;
    p->qk_l2norm = qk_l2norm == 1;
    p->scale = scale;
    p->h_f32 = p->v_new_f32 = false;  // neither is written
    return bad;
}

const char* TilingFromShapes(const ShapeArg* a, int64_t qk_l2norm, float scale, int64_t state_v_first, const DeviceFacts& dev,
                             ChunkStateTiling* tiling) {
    chunk_state::ChunkStateProblem p;
    return TilingOrMessage(ProblemFromShapes(a, qk_l2norm, scale, state_v_first, dev, &p), p, tiling);
}

}  // namespace chunk_forward
}  // namespace fla_npu
