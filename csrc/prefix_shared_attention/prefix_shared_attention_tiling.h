// Host tiling of the prefix-shared attention forward kernel (prefix_shared_attention_kernel.cpp).
// Plain C++: no Ascend C, no CANN, no simulation; unit-tested on the host
// (tests/prefix_shared_attention_tiling_test.cpp).
//
// The op: q [bs, G, Lq, D], k, v [bs, Lkv, D]; out[b, g] = softmax(q[b, g] k[b]^T * scale) v[b].
// The G responses of a batch share K/V, so the query rows of a batch are *stacked*: q[b] is read as
// one [M = G * Lq, D] matrix (it is contiguous), and out[b] is written as one [M, D] matrix.
//
// Work split: a *unit* is one M-tile (kBlockM = 128 stacked rows) of one batch; each unit streams
// all K/V tiles (kBlockN = 128 keys) of its batch once, so K/V are read ceil(M / 128) times per batch
// (exactly once for decode shapes, G * Lq <= 128). Units are numbered batch-major and each AI core
// (one AIC + two AIVs, mixed 1:2) takes a contiguous range. The AIC computes S = Q K^T and O_j = P V
// on the Cube; AIV `sub` owns rows [sub * rows_aiv0, ...) of the M-tile (rows_aiv0 = ceil(mLen / 2))
// and runs the online softmax in fp32.
//
// Batch invariance: tile sizes are constants, the K/V tile order and lengths depend only on Lkv, and
// every operation on a row (Cube dot products, vector ops, per-row tree reductions) reads that row
// only, so a row's output does not depend on bs, its batch, G, Lq, its M-tile or the core count.
#ifndef FLA_NPU_PREFIX_SHARED_ATTENTION_TILING_H
#define FLA_NPU_PREFIX_SHARED_ATTENTION_TILING_H

#include <cstdint>

#include "../common/aicore.h"

namespace fla_npu {
namespace psa {

constexpr uint32_t kBlockM = 128;       // stacked query rows per unit (Cube M)
constexpr uint32_t kBlockN = 128;       // keys per K/V tile (Cube N of Q K^T, K of P V)
constexpr uint32_t kRowsPerAiv = kBlockM / 2;

// Passed by value to the kernel (POD; identical layout on host and device).
struct PsaTiling {
    uint32_t bs, G, len_q, len_kv, D;
    uint32_t rows;            // M = G * len_q stacked query rows per batch
    uint32_t m_tiles;         // ceil(M / kBlockM)
    uint32_t kv_tiles;        // ceil(len_kv / kBlockN)
    uint32_t num_units;       // bs * m_tiles
    uint32_t block_dim;       // AI cores launched (<= num_units)
    uint32_t units_per_core, units_rem;
    uint32_t elem_bytes;      // 2 (fp16 / bf16)
    uint32_t ws_bytes_per_core;  // GM workspace of one AI core (S slots, P, O_j)
    uint32_t ws_s_off, ws_p_off, ws_o_off;  // byte offsets inside a core's workspace
    uint32_t ub_bytes_used;   // UB carved by an AIV
    uint32_t l1_bytes_used, l0a_bytes_used, l0b_bytes_used, l0c_bytes_used;
    float scale;
};

struct PsaProblem {
    uint32_t bs = 0, G = 0, len_q = 0, len_kv = 0, D = 128;
    uint32_t elem_bytes = 2;
    float scale = 0.0f;
    uint32_t core_num = 1;    // AI cores (AIC + 2 AIV) available
    uint32_t ub_bytes = 0;    // usable UB per vector core
    uint32_t l0c_bytes = 128u * 1024;
};

// UB bytes an AIV carves for head dim D and element size e (each buffer rounded to 32 bytes).
uint32_t UbBytesNeeded(uint32_t D, uint32_t elem_bytes);

// Fill *t for problem p. Returns 0, or a negative code with a message in *err (static string).
int ComputeTiling(const PsaProblem& p, PsaTiling* t, const char** err);

// GM workspace the kernel uses: one slice per launched AI core.
inline uint64_t UserWorkspaceBytes(const PsaTiling& t) { return uint64_t(t.block_dim) * t.ws_bytes_per_core; }

// The argument checks that depend only on shapes, and the problem they yield, shared by the op's
// two front ends: the C entry point (prefix_shared_attention_host.cpp, which also checks its tensor
// descriptors' dtypes and strides) and the operator package's tiling (csrc/opp/op_host/, where CANN
// checks dtypes and layout against the op's registration). Each step returns nullptr or a message
// (static, without the op's name); call them in the order declared, the C entry point running its
// descriptor checks between them, so that both front ends report the first defect alike.
class PsaArgs {
  public:
    const char* SetRanks(int32_t q_ndim, int32_t k_ndim, int32_t v_ndim);  // 4, 3, 3
    // q [bs, G, len_q, D], k and v [bs, len_kv, D], D 64 or 128, out the shape of q.
    const char* SetShapes(const int64_t* q, const int64_t* k, const int64_t* v, int32_t out_ndim, const int64_t* out);
    const char* CheckSizes() const;  // every dimension fits 31 bits
    // The problem for ComputeTiling, with the launch facts of the caller's device.
    PsaProblem Problem(float scale, uint32_t core_num, uint32_t ub_bytes, uint32_t l0c_bytes) const;

  private:
    int64_t q_[4] = {0, 0, 0, 0};
    int64_t len_kv_ = 0;
};

// First unit and unit count of AI core `block`.
FLA_NPU_AICORE inline void CoreUnits(const PsaTiling& t, uint32_t block, uint32_t* first, uint32_t* count) {
    *count = t.units_per_core + (block < t.units_rem ? 1u : 0u);
    *first = block * t.units_per_core + (block < t.units_rem ? block : t.units_rem);
}

// Batch, first stacked row and row count of unit u.
FLA_NPU_AICORE inline void UnitRows(const PsaTiling& t, uint32_t u, uint32_t* b, uint32_t* m0, uint32_t* mLen) {
    *b = u / t.m_tiles;
    *m0 = (u % t.m_tiles) * kBlockM;
    const uint32_t left = t.rows - *m0;
    *mLen = left < kBlockM ? left : kBlockM;
}

// Rows [*r0, *r0 + *cnt) of an M-tile of mLen rows handled by AIV `sub` (0 or 1).
FLA_NPU_AICORE inline void AivRows(uint32_t mLen, uint32_t sub, uint32_t* r0, uint32_t* cnt) {
    const uint32_t h = (mLen + 1) / 2;
    *r0 = sub == 0 ? 0u : h;
    *cnt = sub == 0 ? h : mLen - h;
}

// Keys of K/V tile j: first key and count.
FLA_NPU_AICORE inline void KvTile(const PsaTiling& t, uint32_t j, uint32_t* n0, uint32_t* nLen) {
    *n0 = j * kBlockN;
    const uint32_t left = t.len_kv - *n0;
    *nLen = left < kBlockN ? left : kBlockN;
}

}  // namespace psa
}  // namespace fla_npu

#endif
