// Host tiling of the intra-chunk kernel; see chunk_intra_tiling.h.
#include "chunk_intra_tiling.h"

#include "../common/chunk_shapes.h"
#include "../gate/gate_cumsum_tiling.h"

namespace fla_npu {
namespace chunk_intra {

namespace {
// The gate in the launch: the unit's G (BT x K fp32) and the activation's parameters (a row of K each;
// the sigmoid's scale block). Its raw rows pass through the G queue, its scratch is the work pieces.
uint64_t GateInUbBytes(const ChunkIntraProblem& p) {
    if (!p.gate_in) return 0;
    return Pad32(uint64_t(p.BT) * p.K * 4) + (p.has_dt_bias ? Pad32(p.K * 4ull) : 0) +
           (p.has_a_log && p.gate_form != gate::kGateNone ? Pad32(p.K * 4ull) : 0) + (p.gate_form == gate::kGateSigmoid ? 32 : 0);
}
}  // namespace

int ComputeTiling(const ChunkIntraProblem& p, ChunkIntraTiling* t, const char** err) {
    static constexpr chunk_tiling::HeadsRefusals kWhy = {
        "float32 Cube inputs are not supported: GDN's products read q and k "
        "from GM as the Cube's 16-bit operands, and the kernel is built for "
        "float16 and bfloat16 q and k; pass float16 or bfloat16",
        "g must have 1 or K columns"};
    if (chunk_tiling::OpenKeysTiling(p, kWhy, uint64_t(p.BT) * p.K, t, err) != 0) return -1;
    t->groups = p.groups;
    t->aqk_f32 = p.aqk_f32 ? 1u : 0u;
    t->akk_f32 = p.akk_f32 ? 1u : 0u;
    t->qk_l2norm = p.qk_l2norm ? 1u : 0u;
    t->akk_beta = p.akk_beta ? 1u : 0u;
    t->scale = p.scale;
    t->safe_span = kSafeSpan;
    core_split::SplitUnits(chunk_tiling::Units(p), p.core_num, t);

    const bool kda = p.Kg == p.K && p.K != 1;
    const uint32_t nb = p.BT / 16, eb = p.elem_bytes;
    if (p.gate_in && !kda)
        return Refuse(err,
                      "the gate in the launch is KDA's per-key gate (g [NC, BT, HV, K]); Gated DeltaNet's forward takes "
                      "its gate in FlaNpuChunkForward");
    if (p.gate_in && p.K > kGateInMaxK)
        return Refuse(err, "the gate in the launch keeps a chunk's G (BT x K float32) in the UB: K up to 128");
    if (p.gate_in && (p.gate_form > gate::kGateSigmoid || (p.gate_form == gate::kGateSoftplus && !p.has_a_log)))
        return Refuse(err, "`gate_form` must be 0, 1 (needs `a_log`) or 2");
    t->gate_in = p.gate_in ? 1u : 0u;
    t->gate_form = p.gate_form;
    t->has_a_log = p.gate_in && p.has_a_log && p.gate_form != gate::kGateNone ? 1u : 0u;
    t->has_dt_bias = p.gate_in && p.has_dt_bias ? 1u : 0u;
    t->coef_scale = gate::CoefScale(p.gate_form, 1.0f);
    t->out_scale = gate::OutScale(p.gate_form, p.lower_bound, 1.0f);
    if ((nb > 1 || kda) && !p.cube_fp32)
        return Refuse(err,
                      "this SoC's Cube takes no float32 inputs (KDA's factored operands and the merges of the inverse's "
                      "diagonal blocks need them)");
    const solve_tril::MergeSizes m = solve_tril::MergeSizesOf(p.BT);  // used only with a merge (nb > 1)
    t->nb = nb;
    t->row_rows = kda ? 32 * nb : 0;
    t->col_rows = kda ? 8 * nb * (nb + 1) : 0;
    t->ws_op_elems = (t->row_rows + t->col_rows) * p.K;
    // KDA: the diagonal blocks only; GDN: q k^T, k k^T (and q q^T for q's norms)
    t->ws_res_elems = kda ? 512 * nb : (p.qk_l2norm ? 3 : 2) * p.BT * p.BT;
    t->ws_inv_elems = nb > 1 ? m.elems + p.BT * p.BT : 0;
    t->ws_bytes_per_core =
        2 * t->ws_op_elems * 4 + 2 * t->ws_res_elems * 4 + kInvSlots * t->ws_inv_elems * 4 + GateSlotElems(*t) * 2 * 4;

    // AIV: pieces of 16 rows. G blocks (fp32, two), q / k blocks (T, two), the result rows of a block
    // row (32 x BT fp32), KDA's operands (fp32, OperandBuffers), Aqk and L rows (16 x BT, fp32 and T,
    // two each), four fp32 work pieces, beta, two Brcb tiles, a reduction result, the four select masks, the first,
    // middle and last rows of G of every block row (their reference rows among them; GDN: a diagonal
    // of k k^T or q q^T, spread one float per 32 bytes), the zero rows (fp32 and T); the block inverse's Brcb
    // of a block, its scratch block and identity, its result X and a diagonal block of L (GDN).
    const uint64_t P = 16ull * (p.K > p.BT ? p.K : p.BT);
    t->piece_elems = static_cast<uint32_t>(P);
    t->ub_bytes_used = static_cast<uint32_t>(
        2 * Pad32(P * 4) + 2 * Pad32(P * eb) + Pad32(32ull * p.BT * 4) + (kda ? OperandBuffers(p.K) * Pad32(P * 4) : 0) +
        2 * Pad32(16ull * p.BT * eb) + 2 * Pad32(16ull * p.BT * 4) + 4 * Pad32(P * 4) + Pad32(16 * 4) + 2 * Pad32(16 * 8 * 4) +
        Pad32(16 * 4) + 4 * Pad32(16ull * (kda ? 16 : p.BT) / 8) +
        Pad32((3ull * nb * p.K > 8ull * p.BT ? 3ull * nb * p.K : 8ull * p.BT) * 4) + Pad32(16ull * p.BT * 4) +
        Pad32(16ull * p.BT * eb) + 256ull * 32 + 4 * 256ull * 4 + GateInUbBytes(p));
    if (p.ub_bytes != 0 && t->ub_bytes_used > p.ub_bytes) return Refuse(err, "UB too small");

    // AIC: the operand slot (KDA, fp32) or [q; k] (GDN, T) whole in L1; per Mmad the A rows in L0A, k^T
    // columns in L0B, the fp32 product in L0C; the merges' L1 buffers, their L0 ones shared with the products.
    const uint32_t aRows = kda ? 32 : 2 * p.BT, ob = kda ? 4 : eb;
    const auto atLeast = [nb](uint32_t own, uint32_t merge) { return nb > 1 && merge > own ? merge : own; };
    t->l1_bytes_used = (kda ? t->ws_op_elems * 4 : 2 * p.BT * p.K * eb) + (nb > 1 ? m.l1 : 0);
    t->l0a_bytes_used = atLeast(aRows * p.K * ob, m.l0a);
    t->l0b_bytes_used = atLeast(p.K * p.BT * ob, m.l0b);
    t->l0c_bytes_used = atLeast(aRows * p.BT * 4, m.l0c);
    return CheckCubeBuffers(*t, p.l0c_bytes, err);
}

// The messages are the C entry point's (include/fla_npu/kernels.h).
const char* ProblemFromShapes(const ShapeArg* a, int64_t qk_l2norm, float scale, int64_t akk_beta, const DeviceFacts& dev,
                              ChunkIntraProblem* p) {
    const ShapeArg &qt = a[0], &k = a[1], &beta = a[2], &aqk = a[4], &akk = a[5];
    const ShapeArg q = chunk_tiling::HeadMajor(qt);  // q, k are token-major [NC, BT, HQ, K]
    ShapeArg heads[6];                               // the call with g head-major, for the shared checks
    for (int i = 0; i < 6; ++i) heads[i] = a[i];
    const ShapeArg& g = heads[3] = chunk_tiling::GateHeadMajor(a[3]);
    if (!RanksAre(a, {4, 4, 3, 4, 4, 4, 3, 3}))
        return "`beta`, `q_scale` and `k_scale` must be 3-D and `q`, `k`, `g`, `aqk`, `akk` 4-D (chunk layout [NC, HV, ...])";
    if (qk_l2norm != 0 && qk_l2norm != 1) return "`qk_l2norm` must be 0 or 1";
    if (akk_beta != 0 && akk_beta != 1) return "`akk_beta` must be 0 or 1";
    const int64_t BT = q.d[2], K = q.d[3], Kg = g.d[3];
    if (!SameShape(k, qt)) return "`k` must have the shape of `q`";
    if (!chunk_tiling::TokenPitchOk(qt)) return "`q` and `k`: HQ * K must be at most 65535 (a row stride of the loads)";
    if (!chunk_tiling::ShareUnitsOf(heads, {2, 3, 4, 5})) return "`g`, `aqk` and `akk` must have the [NC, HV] of `beta`";
    int64_t lead[4];
    if (const char* bad = chunk_tiling::GroupedHeads(
            "`q` and `k` must have the NC of `beta` and a number of heads dividing its HV (GVA)", q, beta, lead, &p->groups))
        return bad;
    if (beta.d[2] != BT) return "`beta` must be [NC, HV, BT]";
    if (const char* bad = chunk_tiling::CheckGate(a[3], BT, K)) return bad;
    if (aqk.d[2] != BT || aqk.d[3] != BT || akk.d[2] != BT || akk.d[3] != BT) return "`aqk` and `akk` must be [NC, HV, BT, BT]";
    if (!DimsAre(a[6], {q.d[0], q.d[1], BT}) || !DimsAre(a[7], {q.d[0], q.d[1], BT}))
        return "`q_scale` and `k_scale` must be [NC, HQ, BT] (a factor per row of `q` and `k`)";
    // The registration takes float16 / bfloat16 q and k, aqk and akk each float32 or q's dtype.
    p->aqk_f32 = aqk.dtype == FLA_NPU_FLOAT32;
    p->akk_f32 = akk.dtype == FLA_NPU_FLOAT32;
    p->qk_l2norm = qk_l2norm == 1;
    p->scale = scale;
    p->akk_beta = akk_beta == 1;
    return chunk_tiling::SizedKeys(lead, Kg, chunk_tiling::CubeElemBytes(q), dev, p);
}

const char* TilingFromShapes(const ShapeArg* a, int64_t qk_l2norm, float scale, int64_t akk_beta, const DeviceFacts& dev,
                             ChunkIntraTiling* tiling) {
    ChunkIntraProblem p;
    return TilingOrMessage(ProblemFromShapes(a, qk_l2norm, scale, akk_beta, dev, &p), p, tiling);
}

}  // namespace chunk_intra
}  // namespace fla_npu
