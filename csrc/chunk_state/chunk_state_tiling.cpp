// Host tiling of the inter-chunk state kernel; see chunk_state_tiling.h.
#include "chunk_state_tiling.h"

#include "../common/chunk_shapes.h"
#include "../gate/gate_cumsum_tiling.h"  // the gate in the launch: its forms and scales

namespace fla_npu {
namespace chunk_state {

namespace {
uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
uint32_t Ceil16(uint32_t x) { return (x + 15) / 16 * 16; }
uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }
uint64_t Max(uint64_t a, uint64_t b) { return a > b ? a : b; }
uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }
constexpr uint64_t kUnitOverhead = 32;  // in V columns

// UB of one AIV for V blocks of vb columns: S, the u / dS / h0 input, the wS input (turned into
// v_new in place), e_last and its Brcb rows, the hi-lo residual, two T output buffers (x_hi held
// for the output while x_lo goes out) and the fp32 output buffer. The fused kernel's operand rows
// pass through them too (G, k / q in T, two fp32 R x K pieces, X1 / kg / qe in T, wy_rows::Scratch's
// broadcasts and factors, with q_scale / k_scale their factors and the Brcb of each), KDA's last row
// of G and the rows of -I (fp32, then T): each buffer the larger of its uses, as the kernel sizes them.
//
// With stage 2 in the launch (intra) some grow to what forming and finishing it takes (Stage2UbOf),
// the row factors' broadcasts are formed as the given ones would be, and two buffers join: the block
// inverse's and the select masks of two owned block rows (KDA: of the diagonal block; and eight
// reductions' results, 32 bytes each).
uint64_t UbBytes(const ChunkStateProblem& p, uint32_t vb) {
    const uint64_t K = p.K, rk = K / 2, rv = p.BT / 2, m = Max(p.K / 2, p.BT / 2), f = p.fused_output ? 1 : 0;
    const uint64_t qe = f * rv * K, negI = f * rv * p.BT;
    const bool kda = p.Kg != 1;
    const Stage2Ub s2 = Stage2UbOf(p.BT, p.intra, p.K, kda);
    const struct {
        uint64_t res, gate, work, rows, bc, in;
    } x{s2.res, s2.gate, s2.work, s2.rows, s2.bc, s2.in};
    const uint64_t fixed =
        (p.intra ? solve_tril::kBlockElems * (32 + 2 * 4) + 4 * Pad32(16 * (kda ? 16 : p.BT) / 8) + (kda ? 4 * 2 * 32 : 0) : 0) +
        (p.gate_in ? 2 * Pad32(K * 4) + 32 : 0);  // the activation's parameters (gate/gate_activation.h)
    return Pad32(rk * vb * 4) + Pad32(Max(Max(m * vb, f * rv * p.Kg), x.res) * 4) +
           Pad32(Max(Max((1 - f) * rv * vb * 4, qe * 2), x.in * 2)) + Pad32(Max(Max(rk, f * rv), x.gate) * 4) +
           (f && p.Kg != 1 ? Pad32(uint64_t(p.Kg) * 4) : 0) +
           Pad32(Max(Max(rk * 8, f * rv * (p.qk_scaled || p.intra ? 25 : 9)), x.bc) * 4) +
           Pad32(Max(Max(Max(m * vb, 2 * qe), negI), x.work) * 4) + 2 * Pad32(Max(Max(Max(m * vb, qe), negI), x.rows) * 2) +
           (f ? 2 * Pad32(uint64_t(FusedOutFElems(m, vb, x.rows)) * 4) : Pad32(Max(m * vb, x.rows) * 4)) + fixed;
}
}  // namespace

int ComputeTiling(const ChunkStateProblem& p, ChunkStateTiling* t, const char** err) {
    static constexpr chunk_tiling::HeadsRefusals kWhy = {
        "float32 Cube inputs are not supported: w and kg must be float16 or "
        "bfloat16 (the Cube type: its transposing load of kg exists for 2-byte "
        "types only)",
        "e_last must have 1 or K columns"};
    if (chunk_tiling::OpenHeadsTiling(p, kWhy, uint64_t(p.K) * p.V, t, err) != 0) return -1;
    const uint64_t heads = uint64_t(p.N) * p.HV;
    if (heads * (p.V / 16) > 0x7FFFFFFFull) return Refuse(err, chunk_tiling::kTooLargeMessage);
    t->N = p.N;
    t->has_h0 = p.has_h0;
    t->state_v_first = p.state_v_first;
    t->h_f32 = p.h_f32;
    t->v_new_f32 = p.v_new_f32;
    t->fused_output = p.fused_output;
    t->groups = p.groups;
    t->qk_scaled = p.qk_scaled;
    t->intra = p.intra;
    t->qk_l2norm = p.qk_l2norm;
    t->scale = p.scale;
    t->nb = p.BT / 16;
    t->gate_in = p.gate_in ? 1u : 0u;
    t->gate_form = p.gate_in ? p.gate_form : 0u;
    t->has_a_log = p.gate_in && p.has_a_log && p.gate_form != gate::kGateNone ? 1u : 0u;
    t->has_dt_bias = p.gate_in && p.has_dt_bias ? 1u : 0u;
    t->coef_scale = p.gate_in ? gate::CoefScale(p.gate_form, 1.0f) : 0.0f;
    t->out_scale = p.gate_in ? gate::OutScale(p.gate_form, p.lower_bound, 1.0f) : 0.0f;
    if (p.intra && !p.fused_output) return Refuse(err, "stage 2 in the launch needs the fused output");
    if (p.intra && p.Kg != 1 && p.K > kKdaIntraMaxK)
        return Refuse(err, "a per-key decay (KDA) in one launch takes K up to 128 (its fp32 operands fill L0B)");
    if (p.intra && p.Kg != 1 && !p.cube_fp32)
        return Refuse(err, "this SoC's Cube takes no float32 inputs (KDA's stage-2 operands need them)");
    if (p.gate_in && (!p.intra || p.Kg == 1))
        return Refuse(err, "the gate in the launch takes KDA's per-key gate with stage 2 in the launch");
    if (p.gate_in && (p.gate_form > gate::kGateSigmoid || (p.gate_form == gate::kGateSoftplus && !p.has_a_log)))
        return Refuse(err, "`gate_form` must be 0 (none), 1 (softplus, with `a_log`) or 2 (sigmoid)");
    if (p.intra && p.BT > 16 && !p.cube_fp32)
        return Refuse(err, "this SoC's Cube takes no float32 inputs (the merges of the inverse's diagonal blocks need them)");
    t->rows_k = p.K / 2;
    t->rows_v = p.BT / 2;
    t->vec_rows = Max(t->rows_k, t->rows_v);
    t->spread_rows = t->vec_rows / 8;  // 8 floats per element when spread one per 32-byte block

    // The widest V block whose AIV buffers fit UB.
    uint32_t widest = 0;
    for (uint32_t vb = Min(p.V, kMaxVBlock) / 16 * 16; vb >= 16; vb -= 16)
        if (p.ub_bytes == 0 || UbBytes(p, vb) <= p.ub_bytes) {
            widest = vb;
            break;
        }
    if (widest == 0) return Refuse(err, "UB too small");

    // V blocks: from the fewest that fit to one per 16 columns, the count whose busiest core has the
    // least to run, counting a unit as its columns plus kUnitOverhead (each unit reads w and kg and
    // runs the four hand-offs per chunk whatever its width) plus, fused, its reads of q, k, G, Aqk and
    // Akk in V columns (each column reads v and writes o: 4 bytes per row); ties: fewer blocks.
    const uint64_t overhead =
        kUnitOverhead + (p.fused_output ? (2ull * p.K * p.elem_bytes + p.Kg * 4ull + 2ull * p.BT * p.elem_bytes) / 4 : 0);
    uint32_t best_nvb = 0, best_vb = 0;
    uint64_t best_cost = ~0ull;
    if (heads > 0) {
        for (uint32_t nvb = CeilDiv(p.V, widest); nvb <= p.V / 16; ++nvb) {
            const uint32_t vb = Ceil16(CeilDiv(p.V, nvb));
            const uint32_t n = CeilDiv(p.V, vb);
            if (n != nvb) continue;  // the same blocks as a smaller count
            const uint64_t units = heads * n;
            const uint64_t cost = (units + p.core_num - 1) / p.core_num * (vb + overhead);
            if (cost < best_cost) {
                best_cost = cost;
                best_nvb = n;
                best_vb = vb;
            }
        }
    } else {
        best_nvb = CeilDiv(p.V, widest);
        best_vb = Ceil16(CeilDiv(p.V, best_nvb));
    }
    t->num_vb = best_nvb;
    t->v_block = best_vb;
    t->v_last = p.V - (best_nvb - 1) * best_vb;
    core_split::SplitUnits(static_cast<uint32_t>(heads * best_nvb), p.core_num, t);

    const uint32_t vb = t->v_block;
    t->ub_bytes_used = static_cast<uint32_t>(UbBytes(p, vb));

    // AIC: w and kg^T in L0A together; two B tiles (hi, lo) of max(K, BT) rows in L0B; one fp32
    // result tile of max(K, BT) rows in L0C.
    const uint32_t rows = Max(p.K, p.BT);
    uint32_t nt = soc::kL0abBytes / (2 * rows * p.elem_bytes) / 16 * 16;
    nt = Min(nt, p.l0c_bytes / (rows * 4) / 16 * 16);
    t->n_tile = Min(nt, vb);
    // fused: Akk and -I, then Aqk take kg^T's place (wider when 2 BT > K), qe w's. intra: stage 2's
    // products (A: q or k rows in w's place; B: k^T in the first B tile's; C: BT x BT) and the merges
    // (fp32, solve_tril::MergeSizesOf) in those buffers too (CubeBuffers: each the largest of its uses)
    const bool kda = p.intra && p.Kg != 1;
    const CubeBuffers cb = CubeBuffersOf(p.K, p.BT, p.elem_bytes, t->n_tile, p.intra, kda);
    t->l0a_bytes_used = cb.wa + (p.fused_output ? Max(p.K, 2 * p.BT) : p.K) * p.BT * p.elem_bytes;
    t->l0b_bytes_used = cb.b2a + rows * t->n_tile * p.elem_bytes;
    t->l0c_bytes_used = cb.oc;
    // w, kg, S and v halves; fused also qe, X1 [BT, K], Aqk, Akk, -I [BT, BT] and v's block [BT, vb];
    // intra GDN's [q; k] [2 BT, K] (KDA's fp32 operand slot) and the merges' L1
    t->l1_bytes_used =
        (2 * p.BT * p.K + 2 * p.K * vb + 2 * p.BT * vb + (p.fused_output ? 2 * p.BT * p.K + 3 * p.BT * p.BT + p.BT * vb : 0) +
         (p.intra && !kda ? 2 * p.BT * p.K : 0)) *
            p.elem_bytes +
        (kda ? KdaOperandElems(p.BT, p.K) * 4 : 0) + (p.intra && p.BT > 16 ? solve_tril::MergeSizesOf(p.BT).l1 : 0);
    if (t->n_tile < 16) return Refuse(err, "L0 too small");
    if (CheckCubeBuffers(*t, p.l0c_bytes, err) != 0) return -1;
    if (p.fused_output) {  // S_hi, S_lo, -I, two slots of qe, X1, kg (intra: three, and GDN's q, k), two pairs of Aqk,
                           // Akk; dS, intra's two result and two inverse slots and three slots' row factors (KDA:
                           // and fp32 operands) (the Cube forms v_new's halves)
        t->ws_t_elems =
            2 * p.K * vb + p.BT * p.BT + (p.intra ? 3 * (kda ? 3 : 5) : 2 * 3) * p.BT * p.K + (p.intra ? 4 * p.BT * p.BT : 0);
        const uint32_t inv = p.BT > 16 ? solve_tril::MergeSizesOf(p.BT).elems + p.BT * p.BT : 0;
        t->ws_f_elems = p.K * vb + (p.intra ? 2 * 2 * p.BT * p.BT + 2 * inv + 3 * 2 * p.BT : 0) +
                        (kda ? 3 * KdaOperandElems(p.BT, p.K) : 0) + (p.gate_in ? GateInElems(p.BT, p.K) : 0);
    } else {  // S_hi, S_lo, v_hi, v_lo; wS, dS
        t->ws_t_elems = 2 * (p.K + p.BT) * vb;
        t->ws_f_elems = (p.BT + p.K) * vb;
    }
    t->ws_bytes_per_core = t->ws_t_elems * p.elem_bytes + t->ws_f_elems * 4;
    return 0;
}

// The messages are the C entry points' (include/fla_npu/kernels.h).
const char* StateArgs(const int64_t* lead, int64_t V, const ShapeArg& e_last, const ShapeArg& chunk_offsets, const ShapeArg& h0,
                      const ShapeArg& final_state, int64_t state_v_first, const DeviceFacts& dev, ChunkStateProblem* p) {
    if (state_v_first != 0 && state_v_first != 1) return "`state_v_first` must be 0 or 1";
    if (final_state.ndim != 4 || (h0.ndim != -1 && h0.ndim != 4)) return "`final` and `h0` must be 4-D";
    if (e_last.ndim != 3) return "`e_last` must be 3-D [NC, HV, K or 1]";
    if (chunk_offsets.ndim != 1) return "`chunk_offsets` must be 1-D [N + 1]";
    const int64_t NC = lead[0], HV = lead[1], K = lead[3], Kg = e_last.d[2];
    if (!DimsAre(e_last, {NC, HV}) || (Kg != 1 && Kg != K)) return "`e_last` must be [NC, HV, 1] or [NC, HV, K]";
    if (chunk_offsets.d[0] < 1) return "`chunk_offsets` must hold N + 1 >= 1 offsets";
    const int64_t N = chunk_offsets.d[0] - 1;
    const bool v_first = state_v_first != 0;
    const int64_t rows = v_first ? V : K, cols = v_first ? K : V;
    if (!DimsAre(final_state, {N, HV, rows, cols}))
        return v_first ? "`final` must be [N, HV, V, K] (state_v_first)" : "`final` must be [N, HV, K, V]";
    if (h0.present() && !DimsAre(h0, {N, HV, rows, cols}))
        return v_first ? "`h0` must be [N, HV, V, K] (state_v_first)" : "`h0` must be [N, HV, K, V]";
    if (N > 0x7FFFFFFF) return chunk_tiling::kDimTooLargeMessage;
    p->N = static_cast<uint32_t>(N);
    p->has_h0 = h0.present();
    p->state_v_first = v_first;
    return chunk_tiling::SizedHeads(lead, V, Kg, 2, dev, p);
}

const char* TokenMajorHeads(const ShapeArg& qt, const ShapeArg& kt, const ShapeArg& vt, const ShapeArg& o, int64_t* lead,
                            uint32_t* groups) {
    const ShapeArg q = chunk_tiling::HeadMajor(qt), k = chunk_tiling::HeadMajor(kt), v = chunk_tiling::HeadMajor(vt);
    if (!chunk_tiling::TokenPitchOk(qt) || !chunk_tiling::TokenPitchOk(kt) || !chunk_tiling::TokenPitchOk(vt) ||
        !chunk_tiling::TokenPitchOk(o))
        return "`q`, `k`, `v` and `o`: H * D must be at most 65535 (a row stride of the loads and of the writes)";
    if (!SameShape(q, k)) return "`q` must have the shape of `k` [NC, BT, HQ, K] (token-major)";
    if (const char* bad = chunk_tiling::GroupedHeads("`k` must be [NC, BT, HQ, K] (token-major), HQ dividing the HV of `v`", k, v,
                                                     lead, groups))
        return bad;
    if (v.d[2] != k.d[2]) return "`v` must be [NC, BT, HV, V] (token-major) with the BT of `k`";
    return nullptr;
}

namespace {
// The checks of w, u, kg and the state arguments (StateArgs: e_last, chunk_offsets, h0 at a[3..5],
// final at a[8]), then *p but for the output dtypes.
const char* StateProblem(const ShapeArg* a, int64_t state_v_first, const DeviceFacts& dev, ChunkStateProblem* p) {
    const ShapeArg &w = a[0], &u = a[1], &kg = a[2];
    if (!RanksAre(a, {4, 4, 4})) return "`w`, `u` and `kg` must be 4-D";
    const int64_t NC = w.d[0], HV = w.d[1], BT = w.d[2];
    if (!SameShape(kg, w)) return "`kg` must have the shape of `w` [NC, HV, BT, K]";
    if (!DimsAre(u, {NC, HV, BT})) return "`u` must be [NC, HV, BT, V] with the [NC, HV, BT] of `w`";
    return StateArgs(w.d, u.d[3], a[3], a[4], a[5], a[8], state_v_first, dev, p);
}
}  // namespace

const char* ProblemFromShapes(const ShapeArg* a, int64_t state_v_first, const DeviceFacts& dev, ChunkStateProblem* p) {
    const ShapeArg &w = a[0], &u = a[1], &h = a[6], &v_new = a[7];
    if (h.ndim != 4 || v_new.ndim != 4) return "`h` and `v_new` must be 4-D";
    if (const char* bad = StateProblem(a, state_v_first, dev, p)) return bad;
    if (!DimsAre(h, {w.d[0], w.d[1], w.d[3], u.d[3]})) return "`h` must be [NC, HV, K, V]";
    if (!SameShape(v_new, u)) return "`v_new` must have the shape of `u`";
    // The registration takes float16 / bfloat16 w and kg, h and v_new float32 or w's dtype.
    p->h_f32 = h.dtype == FLA_NPU_FLOAT32;
    p->v_new_f32 = v_new.dtype == FLA_NPU_FLOAT32;
    return nullptr;
}

const char* TilingFromShapes(const ShapeArg* a, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling) {
    ChunkStateProblem p;
    return TilingOrMessage(ProblemFromShapes(a, state_v_first, dev, &p), p, tiling);
}

}  // namespace chunk_state
}  // namespace fla_npu
