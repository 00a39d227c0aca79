// Host tiling of the inter-chunk state kernel; see chunk_state_tiling.h.
#include "chunk_state_tiling.h"

#include <cstring>
#include <initializer_list>

#include "../common/chunk_tiling.h"
#include "../common/shape_args.h"

namespace fla_npu {
namespace chunk_state {

namespace {
using chunk_tiling::Pad32;
uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
uint32_t Ceil16(uint32_t x) { return (x + 15) / 16 * 16; }
uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }
uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }
constexpr uint64_t kUnitOverhead = 32;  // in V columns

// UB of one AIV for V blocks of vb columns: S, the u / dS / h0 input, the wS input (turned into
// v_new in place), e_last and its Brcb rows, the hi-lo residual, two T output buffers (x_hi held
// for the output while x_lo goes out) and the fp32 output buffer.
uint64_t UbBytes(uint32_t K, uint32_t BT, uint32_t vb) {
    const uint64_t rk = K / 2, rv = BT / 2, m = Max(K / 2, BT / 2);
    return Pad32(rk * vb * 4) + Pad32(m * vb * 4) + Pad32(rv * vb * 4) + Pad32(rk * 4) + Pad32(rk * 8 * 4) + Pad32(m * vb * 4) +
           2 * Pad32(m * vb * 2) + Pad32(m * vb * 4);
}
}  // namespace

int ComputeTiling(const ChunkStateProblem& p, ChunkStateTiling* t, const char** err) {
    static const char* kOk = "";
    *err = kOk;
    std::memset(t, 0, sizeof(*t));
    if (const char* bad = chunk_tiling::CheckHeads(p, kMaxHeadDim,
                                                   "float32 Cube inputs are not supported: w and kg must be float16 or "
                                                   "bfloat16 (the Cube type: its transposing load of kg exists for 2-byte "
                                                   "types only)",
                                                   "e_last must have 1 or K columns"))
        return Refuse(err, bad);
    const uint64_t heads = uint64_t(p.N) * p.HV;
    if (heads * (p.V / 16) > 0x7FFFFFFFull || uint64_t(p.NC) * p.HV > 0x7FFFFFFFull ||
        uint64_t(p.NC) * p.HV * p.K * p.V > (1ull << 40))
        return Refuse(err, "tensor too large");
    t->N = p.N;
    chunk_tiling::CopyHeads(p, t);
    t->has_h0 = p.has_h0;
    t->state_v_first = p.state_v_first;
    t->h_f32 = p.h_f32;
    t->v_new_f32 = p.v_new_f32;
    t->rows_k = p.K / 2;
    t->rows_v = p.BT / 2;
    t->vec_rows = Max(t->rows_k, t->rows_v);
    t->spread_rows = t->vec_rows / 8;  // 8 floats per element when spread one per 32-byte block

    // The widest V block whose AIV buffers fit UB.
    uint32_t widest = 0;
    for (uint32_t vb = Min(p.V, kMaxVBlock) / 16 * 16; vb >= 16; vb -= 16)
        if (p.ub_bytes == 0 || UbBytes(p.K, p.BT, vb) <= p.ub_bytes) {
            widest = vb;
            break;
        }
    if (widest == 0) return Refuse(err, "UB too small");

    // V blocks: from the fewest that fit to one per 16 columns, the count whose busiest core has the
    // least to run, counting a unit as its columns plus kUnitOverhead (each unit reads w and kg and
    // runs the four hand-offs per chunk whatever its width); ties: fewer blocks.
    uint32_t best_nvb = 0, best_vb = 0;
    uint64_t best_cost = ~0ull;
    if (heads > 0) {
        for (uint32_t nvb = CeilDiv(p.V, widest); nvb <= p.V / 16; ++nvb) {
            const uint32_t vb = Ceil16(CeilDiv(p.V, nvb));
            const uint32_t n = CeilDiv(p.V, vb);
            if (n != nvb) continue;  // the same blocks as a smaller count
            const uint64_t units = heads * n;
            const uint64_t cost = (units + p.core_num - 1) / p.core_num * (vb + kUnitOverhead);
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
    t->ub_bytes_used = static_cast<uint32_t>(UbBytes(p.K, p.BT, vb));

    // AIC: w and kg^T in L0A together; two B tiles (hi, lo) of max(K, BT) rows in L0B; one fp32
    // result tile of max(K, BT) rows in L0C.
    const uint32_t rows = Max(p.K, p.BT);
    uint32_t nt = kL0abBytes / (2 * rows * p.elem_bytes) / 16 * 16;
    nt = Min(nt, p.l0c_bytes / (rows * 4) / 16 * 16);
    t->n_tile = Min(nt, vb);
    t->l0a_bytes_used = 2 * p.BT * p.K * p.elem_bytes;
    t->l0b_bytes_used = 2 * rows * t->n_tile * p.elem_bytes;
    t->l0c_bytes_used = rows * t->n_tile * 4;
    t->l1_bytes_used = (2 * p.BT * p.K + 2 * p.K * vb + 2 * p.BT * vb) * p.elem_bytes;
    if (t->n_tile < 16 || t->l0a_bytes_used > kL0abBytes || t->l0b_bytes_used > kL0abBytes || t->l0c_bytes_used > p.l0c_bytes)
        return Refuse(err, "L0 too small");
    t->ws_t_elems = 2 * (p.K + p.BT) * vb;
    t->ws_f_elems = (p.BT + p.K) * vb;
    t->ws_bytes_per_core = t->ws_t_elems * p.elem_bytes + t->ws_f_elems * 4;
    return 0;
}

// ---- ChunkStateArgs: the messages are the C entry point's (include/fla_npu/kernels.h) -----------

const char* ChunkStateArgs::SetRanks(int32_t w, int32_t u, int32_t kg, int32_t e_last, int32_t chunk_offsets, int32_t h0,
                                     int32_t h, int32_t v_new, int32_t final_state) {
    if (w != 4 || u != 4 || kg != 4 || h != 4 || v_new != 4 || final_state != 4 || (h0 != -1 && h0 != 4))
        return "`w`, `u`, `kg`, `h`, `v_new`, `final` and `h0` must be 4-D";
    if (e_last != 3) return "`e_last` must be 3-D [NC, HV, K or 1]";
    if (chunk_offsets != 1) return "`chunk_offsets` must be 1-D [N + 1]";
    return nullptr;
}

const char* ChunkStateArgs::SetShapes(const int64_t* w, const int64_t* u, const int64_t* kg, const int64_t* e_last,
                                      const int64_t* chunk_offsets, const int64_t* h0, const int64_t* h, const int64_t* v_new,
                                      const int64_t* final_state, bool state_v_first) {
    const int64_t NC = w[0], HV = w[1], BT = w[2], K = w[3], V = u[3];
    if (std::memcmp(kg, w, sizeof(int64_t) * 4) != 0) return "`kg` must have the shape of `w` [NC, HV, BT, K]";
    if (u[0] != NC || u[1] != HV || u[2] != BT) return "`u` must be [NC, HV, BT, V] with the [NC, HV, BT] of `w`";
    if (e_last[0] != NC || e_last[1] != HV || (e_last[2] != 1 && e_last[2] != K))
        return "`e_last` must be [NC, HV, 1] or [NC, HV, K]";
    if (chunk_offsets[0] < 1) return "`chunk_offsets` must hold N + 1 >= 1 offsets";
    const int64_t N = chunk_offsets[0] - 1;
    const int64_t hShape[4] = {NC, HV, K, V};
    if (std::memcmp(h, hShape, sizeof(hShape)) != 0) return "`h` must be [NC, HV, K, V]";
    if (std::memcmp(v_new, u, sizeof(int64_t) * 4) != 0) return "`v_new` must have the shape of `u`";
    const int64_t sShape[4] = {N, HV, state_v_first ? V : K, state_v_first ? K : V};
    if (std::memcmp(final_state, sShape, sizeof(sShape)) != 0)
        return state_v_first ? "`final` must be [N, HV, V, K] (state_v_first)" : "`final` must be [N, HV, K, V]";
    if (h0 != nullptr && std::memcmp(h0, sShape, sizeof(sShape)) != 0)
        return state_v_first ? "`h0` must be [N, HV, V, K] (state_v_first)" : "`h0` must be [N, HV, K, V]";
    std::memcpy(w_, w, sizeof(w_));
    V_ = V;
    Kg_ = e_last[2];
    N_ = N;
    has_h0_ = h0 != nullptr;
    v_first_ = state_v_first;
    return nullptr;
}

const char* ChunkStateArgs::CheckSizes() const {
    if (N_ > 0x7FFFFFFF) return "a dimension is too large";
    return chunk_tiling::CheckSizes(w_, V_, kMaxHeadDim);
}

ChunkStateProblem ChunkStateArgs::Problem(uint32_t elem_bytes, bool h_f32, bool v_new_f32, uint32_t core_num, uint32_t ub_bytes,
                                          uint32_t l0c_bytes) const {
    auto p =
        chunk_tiling::MakeProblem<ChunkStateProblem>(w_, V_, Kg_, elem_bytes, /*cube_fp32=*/true, core_num, ub_bytes, l0c_bytes);
    p.N = static_cast<uint32_t>(N_);
    p.has_h0 = has_h0_;
    p.state_v_first = v_first_;
    p.h_f32 = h_f32;
    p.v_new_f32 = v_new_f32;
    return p;
}

const char* TilingFromShapes(const ShapeArg* a, int64_t state_v_first, const DeviceFacts& dev, ChunkStateTiling* tiling) {
    // w, u, kg, e_last, chunk_offsets, h0 (ndim -1: absent), h, v_new, final
    if (state_v_first != 0 && state_v_first != 1) return "`state_v_first` must be 0 or 1";
    ChunkStateArgs checked;
    const char* bad = nullptr;
    if ((bad =
             checked.SetRanks(a[0].ndim, a[1].ndim, a[2].ndim, a[3].ndim, a[4].ndim, a[5].ndim, a[6].ndim, a[7].ndim, a[8].ndim)))
        return bad;
    if ((bad = checked.SetShapes(a[0].d, a[1].d, a[2].d, a[3].d, a[4].d, a[5].present() ? a[5].d : nullptr, a[6].d, a[7].d,
                                 a[8].d, state_v_first != 0)))
        return bad;
    if ((bad = checked.CheckSizes())) return bad;
    // The registration takes float16 / bfloat16 w and kg, h and v_new float32 or w's dtype.
    return TilingOrMessage(checked.Problem(2, a[6].dtype == FLA_NPU_FLOAT32, a[7].dtype == FLA_NPU_FLOAT32, dev.ai_cores,
                                           dev.ub_bytes, dev.l0c_bytes),
                           tiling);
}

}  // namespace chunk_state
}  // namespace fla_npu
