// Host tiling of KDA's chunked forward in one launch; see chunk_gate_forward_tiling.h.
#include "chunk_gate_forward_tiling.h"

#include "../common/chunk_shapes.h"
#include "chunk_forward_tiling.h"

namespace fla_npu {
namespace chunk_gate_forward {

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* TilingFromShapes(const ShapeArg* a, int64_t gate_form, float lower_bound, int64_t qk_l2norm, float scale,
                             int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling) {
    const ShapeArg &g = a[3], &a_log = a[5], &dt_bias = a[6], &len = a[7];
    if (g.ndim != 4 || g.d[3] == 1)
        return "`g` must be the raw per-key gate [NC, BT, HV, K] (KDA; Gated DeltaNet's one-per-row gate is taken by "
               "FlaNpuChunkForward)";
    // chunk_forward's tensors, in its order: q, k, v, g, beta, e_last (one row of K per chunk and head, as
    // this launch forms it), chunk_offsets, h0, o, final
    ShapeArg e_last;
    e_last.ndim = 3;
    e_last.d[0] = g.d[0];
    e_last.d[1] = g.d[2];
    e_last.d[2] = g.d[3];
    e_last.numel = g.d[0] * g.d[2] * g.d[3];
    const ShapeArg forward[10] = {a[0], a[1], a[2], g, a[4], e_last, a[8], a[9], a[10], a[11]};
    chunk_state::ChunkStateProblem p;
    if (const char* bad = chunk_forward::ProblemFromShapes(forward, qk_l2norm, scale, state_v_first, dev, &p)) return bad;
    const int64_t NC = g.d[0], HV = g.d[2], K = g.d[3];
    if (const char* bad = chunk_tiling::RawGateProblem(gate_form, lower_bound, a_log, dt_bias, len, NC, HV, K, &p)) return bad;
    return TilingOrMessage(p, tiling);
}

}  // namespace chunk_gate_forward
}  // namespace fla_npu
