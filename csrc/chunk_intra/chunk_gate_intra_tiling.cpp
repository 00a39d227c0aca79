// Host tiling of the intra-chunk kernel with the gate in its launch; see chunk_gate_intra_tiling.h.
#include "chunk_gate_intra_tiling.h"

#include "../common/chunk_shapes.h"

namespace fla_npu {
namespace chunk_gate_intra {

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* TilingFromShapes(const ShapeArg* a, int64_t gate_form, float lower_bound, int64_t qk_l2norm, float scale,
                             int64_t akk_beta, const DeviceFacts& dev, ChunkIntraTiling* tiling) {
    const ShapeArg &g = a[3], &a_log = a[4], &dt_bias = a[5], &len = a[6], &G = a[11], &e_last = a[12];
    // chunk_intra's tensors, in its order: q, k, beta, g, aqk, akk, q_scale, k_scale
    const ShapeArg intra[8] = {a[0], a[1], a[2], g, a[7], a[8], a[9], a[10]};
    chunk_intra::ChunkIntraProblem p;
    if (const char* bad = chunk_intra::ProblemFromShapes(intra, qk_l2norm, scale, akk_beta, dev, &p)) return bad;
    if (g.d[3] == 1 || p.Kg != p.K)
        return "`g` must be the raw per-key gate [NC, BT, HV, K] (KDA; Gated DeltaNet's one-per-row gate is taken by "
               "FlaNpuChunkForward)";
    const int64_t NC = g.d[0], HV = g.d[2], K = g.d[3];
    if (const char* bad = chunk_tiling::RawGateProblem(gate_form, lower_bound, a_log, dt_bias, len, NC, HV, K, &p)) return bad;
    if (!SameShape(G, g)) return "`gate` must have the shape of `g` [NC, BT, HV, K]";
    if (e_last.ndim != 3 || !DimsAre(e_last, {NC, HV, K})) return "`e_last` must be [NC, HV, K]";
    return TilingOrMessage(p, tiling);
}

}  // namespace chunk_gate_intra
}  // namespace fla_npu
