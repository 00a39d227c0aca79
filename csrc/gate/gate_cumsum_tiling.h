// Host tiling of the gate + chunk-local cumsum kernel (gate_cumsum_kernel.h). Plain C++: no
// Ascend C, no CANN, no simulation; unit-tested on the host (tests/gate_cumsum_tiling_test.cpp).
//
// The op: g is [B, T, H, D] (KDA: D = K; GDN: g [B, T, HV] is taken as D = 1), rows of W = H * D
// contiguous elements per token. Per column c (head h = c / D):
//   x = g + dt_bias[c]                                     (dt_bias optional, W elements)
//   none:      y = x
//   softplus:  y = -exp(A_log[h]) * softplus(x)
//   sigmoid:   y = lower_bound * sigmoid(exp(A_log[h]) * x)  (A_log optional)
//   out = scale * (cumsum of y over the tokens of each chunk of each sequence), fp32.
//
// Work split: a *unit* is one chunk (<= chunk_size tokens of one sequence) times one *column tile*
// (tile_w columns). Units are numbered tile-major (unit = tile * num_chunks + chunk), and each core
// takes a contiguous range, so a core loads the per-column parameters (dt_bias, A_log) of a tile
// once and then streams chunks. Each unit is read from GM once and written once.
//
// Column tiles: when whole heads fit in UB (D == 1, or D a multiple of 8 floats so that every head
// starts on a 32-byte boundary of the UB tile), a tile is heads_per_tile whole heads; otherwise a tile
// is a piece of one head (tiles_per_head pieces per head), so a tile never straddles a head boundary
// at an unaligned column.
#ifndef FLA_NPU_GATE_CUMSUM_TILING_H
#define FLA_NPU_GATE_CUMSUM_TILING_H

#include "../common/op_tiling.h"

namespace fla_npu {
namespace gate {

using core_split::CoreUnits;  // first unit and unit count of a core (common/core_split.h)

enum GateForm : uint32_t { kGateNone = 0, kGateSoftplus = 1, kGateSigmoid = 2 };

// fp32 scratch tiles (of the activated tile's size) the activation of a form needs (gate_activation.h).
FLA_NPU_AICORE inline uint32_t ActivationTmpTiles(uint32_t form) {
    return form == kGateSoftplus ? 3u : form == kGateSigmoid ? 1u : 0u;
}

// The scales of an activation with the output scale folded in (the fields below): softplus folds it
// into exp(A_log)'s factor, the sigmoid into its numerator; -1 is the sigmoid's Exp operand -z.
inline float CoefScale(uint32_t form, float scale) {
    return form == kGateSoftplus ? -scale : form == kGateSigmoid ? -1.0f : 1.0f;
}
inline float OutScale(uint32_t form, float lower_bound, float scale) {
    return form == kGateNone ? scale : form == kGateSigmoid ? lower_bound * scale : 1.0f;
}

// Passed by value to the kernel (POD; identical layout on host and device).
struct GateCumsumTiling {
    uint32_t B, T, H, D, W;   // g [B, T, H, D], W = H * D
    uint32_t chunk_size;      // BT, power of two, <= kMaxChunk
    uint32_t num_chunks;      // NC: dense B * ceil(T / BT); varlen: rows of the chunk list
    uint32_t chunks_per_seq;  // dense: ceil(T / BT); varlen: 0
    uint32_t varlen;          // 1: chunk list [NC, 2] (sequence, chunk) + cu_seqlens [N + 1], int32
    uint32_t gate_form;       // GateForm
    uint32_t has_a_log, has_dt_bias;
    uint32_t in_elem_bytes;   // 4 (fp32) or 2 (fp16 / bf16)
    uint32_t tile_w;          // columns of a full tile
    uint32_t max_pitch;       // UB row pitch (elements) of the widest tile: buffers are sized by it
    uint32_t heads_per_tile;  // > 0: tiles are whole heads; 0: tiles are pieces of one head
    uint32_t tiles_per_head;  // pieces per head when heads_per_tile == 0
    uint32_t num_col_tiles;
    uint32_t num_units;                  // num_col_tiles * num_chunks
    uint32_t block_dim;                  // cores launched (<= num_units, >= 1 when num_units > 0)
    uint32_t units_per_core, units_rem;  // core b takes units_per_core + (b < units_rem) units
    uint32_t num_tmp_bufs;               // fp32 scratch tiles the gate form needs
    uint32_t ub_bytes_used;              // UB the kernel carves (InitBuffer total, each rounded to 32 bytes)
    float coef_scale;                    // softplus: exp(A_log) is multiplied by -scale; sigmoid: -1 (Exp's operand -z)
    float out_scale;                     // none: scale; softplus: 1 (folded into coef); sigmoid: lower_bound * scale
};

constexpr uint32_t kMaxChunk = 128;   // rows of a unit: repeat counts and DataCopyPad block counts
constexpr uint32_t kMaxPitch = 1024;  // UB row pitch cap (elements): repeat strides fit in uint8
constexpr uint32_t kBlockBytes = 32;

struct GateCumsumProblem {
    uint32_t B = 0, T = 0, H = 0, D = 1;
    uint32_t chunk_size = 64;
    uint32_t num_chunks = 0;  // varlen only (rows of the chunk list); dense: computed
    bool varlen = false;
    uint32_t gate_form = kGateNone;
    bool has_a_log = false, has_dt_bias = false;
    uint32_t in_elem_bytes = 4;
    float lower_bound = 0.0f;
    float scale = 1.0f;
    uint32_t core_num = 1;  // vector cores available
    uint32_t ub_bytes = 0;  // usable UB per vector core (soc::SocFacts::ubBytes)
};

// UB row pitch (elements) of a tile of w columns whose input elements have in_elem_bytes bytes:
// one input row and one fp32 row both start on 32-byte boundaries.
uint32_t TilePitch(uint32_t w, uint32_t in_elem_bytes);

// UB bytes the kernel needs for a given max pitch.
uint32_t UbBytesNeeded(const GateCumsumProblem& p, uint32_t max_pitch);

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const GateCumsumProblem& p, GateCumsumTiling* t, const char** err);

// The argument checks that depend only on shapes and attributes, and the problem they yield, shared
// by the op's two front ends: the C entry point (gate_cumsum_host.cpp, which also checks its tensor
// descriptors' dtypes and strides) and the operator package's tiling (TilingFromShapes below, where CANN
// checks dtypes and layout against the op's registration). Each step returns nullptr or a message
// (static, without the op's name). Call the steps in the order declared: the C entry point runs its
// descriptor checks between them, and both front ends then report the first defect alike.
class GateCumsumArgs {
  public:
    const char* SetG(int32_t ndim, const int64_t* shape);            // [B, T, H] or [B, T, H, K]
    const char* CheckOut(int32_t ndim, const int64_t* shape) const;  // the shape of g
    // gate_form 0..2, every dimension of g fits 31 bits, the softplus form has a_log.
    const char* SetGateForm(int64_t gate_form, bool a_log_given);
    bool UsesALog() const { return p_.gate_form != kGateNone; }  // a given a_log is ignored otherwise
    const char* SetALog(int64_t numel);                          // H elements
    const char* SetDtBias(int64_t numel);                        // H * K elements
    static const char* CheckVarlenPair(bool cu_seqlens_given, bool chunk_indices_given);
    const char* SetVarlenShapes(int32_t cu_ndim, const int64_t* cu_shape,           // [N + 1], N >= 1
                                int32_t chunks_ndim, const int64_t* chunks_shape);  // [NC, 2]
    const char* SetVarlenBatch();                                                   // B == 1, NC fits 31 bits
    // The problem for ComputeTiling, with the launch facts of the caller's device.
    GateCumsumProblem Problem(int64_t chunk_size, uint32_t in_elem_bytes, float lower_bound, float scale, uint32_t core_num,
                              uint32_t ub_bytes) const;

  private:
    GateCumsumProblem p_;
    int32_t g_ndim_ = 0;
    int64_t g_shape_[4] = {0, 0, 0, 0};
    int64_t num_chunks_ = 0;
};

// The operator package's tiling of one call (called by the op_host file generated from the op's
// descriptor): the checks above on the call's shapes, in the C entry point's order, then
// ComputeTiling. nullptr, or the message of the first defect.
const char* TilingFromShapes(const ShapeArg* t, int64_t chunk_size, int64_t gate_form, float lower_bound, float scale,
                             const DeviceFacts& dev, GateCumsumTiling* tiling);

// Column range [c0, c0 + w) of column tile `tile`.
FLA_NPU_AICORE inline void TileColumns(const GateCumsumTiling& t, uint32_t tile, uint32_t* c0, uint32_t* w) {
    if (t.heads_per_tile > 0) {
        *c0 = tile * t.tile_w;
        *w = t.W - *c0 < t.tile_w ? t.W - *c0 : t.tile_w;
    } else {
        const uint32_t h = tile / t.tiles_per_head, s = tile % t.tiles_per_head;
        const uint32_t off = s * t.tile_w;
        *c0 = h * t.D + off;
        *w = t.D - off < t.tile_w ? t.D - off : t.tile_w;
    }
}

}  // namespace gate
}  // namespace fla_npu

#endif
