// Pieces shared by the mixed Cube + vector kernels (chunk_output, wy_fast, chunk_intra, chunk_state,
// solve_tril, prefix-shared attention): the vector -> Cube hand-off through a per-core GM workspace,
// the Cube's ND -> NZ loads and L0 loads, the tile loop that writes fp32 products with Fixpipe, and
// the vector row broadcasts.
//
// Hand-off protocol (KERNEL_TYPE_MIX_AIC_1_2; a2/a3 move AIV -> AIC data only through GM):
//   each AI core owns two workspace slots; its i-th unit uses slot i % 2.
//   AIV  SlotProducer::Acquire(i)  [i >= 2: wait Free]  ... write its rows of the slot ...
//        SlotProducer::Ready()     set Ready on PIPE_MTE3 (after the copies out)
//   AIC  SlotConsumer::Acquire()   wait Ready (both AIVs)  ... ND -> NZ loads of the slot ...
//        SlotConsumer::Release(r)  [a later unit reuses the slot: set Free on PIPE_MTE2]
// Counts balance: the AIVs wait Free count - 2 times, the AIC sets it count - 2 times, and at
// most two sets of either flag are ever pending (below the 4-bit counter's limit).
#ifndef FLA_NPU_COMMON_CHUNK_CUBE_H
#define FLA_NPU_COMMON_CHUNK_CUBE_H

#include "kernel_frame.h"
#include "kernel_operator.h"
#include "vector_io.h"
#include "vector_order.h"

namespace fla_npu {
namespace chunk_cube {

using namespace AscendC;

using namespace kernel_frame;  // Sync, IsSame, kFloatLanes, Bind, ...

constexpr uint16_t kFlagReady = 0, kFlagFree = 1;

// The two slots of AI core `block`: 2 * slotElems elements of T at ws + block * bytesPerCore.
template <class T>
__aicore__ inline void BindSlots(GlobalTensor<T>& g, GM_ADDR ws, uint32_t block, uint32_t bytesPerCore, uint32_t slotElems) {
    g.SetGlobalBuffer((__gm__ T*)((__gm__ uint8_t*)ws + uint64_t(block) * bytesPerCore), 2ull * slotElems);
}

struct SlotProducer {  // AIV side
    __aicore__ static inline void Acquire(uint32_t i) {
        if (i >= 2) CrossCoreWaitFlag(kFlagFree);  // the Cube has read slot i % 2 (unit i - 2)
    }
    __aicore__ static inline void Ready() { CrossCoreSetFlag<2, PIPE_MTE3>(kFlagReady); }
};

struct SlotConsumer {                                                           // AIC side
    __aicore__ static inline void Acquire() { CrossCoreWaitFlag(kFlagReady); }  // both AIVs wrote their rows
    __aicore__ static inline void Release(bool reused) {
        if (reused) CrossCoreSetFlag<2, PIPE_MTE2>(kFlagFree);  // the slot is read: the AIVs may refill it
    }
};

// The AIC's walk over its units under the slot protocol: op.Unit(u, slot, reused) for each unit u of
// AI core `block`, the i-th in slot i % 2, `reused` when a later unit of the core takes the slot again
// (then the Cube's SlotConsumer::Release(reused) sets Free).
template <class Op, class Tiling>
__aicore__ inline void ForEachSlotUnit(Op& op, const Tiling& t, uint32_t block) {
    const Units r = CoreUnitsOf(t, block);
    for (uint32_t i = 0; i < r.count; ++i) op.Unit(r.first + i, i % 2, i + 2 < r.count);
}

// Token-major chunk tensors ([NC, BT, H, D]: row r of chunk c, head h at (c BT + r) H D + h D; rows
// H D apart): the element offset of row r of value-head unit u = c * HV + h in one with H = HV / groups
// heads (GVA: value head h reads head h / groups; groups = 1 for the value heads' own tensors).
__aicore__ inline uint64_t TokenRow(uint32_t u, uint32_t r, uint32_t HV, uint32_t groups, uint32_t BT, uint32_t D) {
    const uint32_t H = HV / groups;
    return (uint64_t(u / HV) * BT + r) * H * D + uint64_t(u % HV / groups) * D;
}

// Its distance between rows, in elements: H D.
__aicore__ inline uint32_t TokenPitch(uint32_t HV, uint32_t groups, uint32_t D) { return HV / groups * D; }

// q_scale / k_scale, head-major [NC, HV / groups, BT]: the element of row r of value-head unit u (u = c HV + h).
__aicore__ inline uint64_t ScaleRow(uint32_t u, uint32_t r, uint32_t HV, uint32_t groups, uint32_t BT) {
    return (uint64_t(u / HV) * (HV / groups) + (u % HV) / groups) * BT + r;
}

// The gate cumsum G (common/chunk_shapes.h's GateHeadMajor: KDA token-major [NC, BT, HV, K], GDN
// head-major [NC, HV, BT, 1]): the element of row r of unit u = c * HV + h, and the distance between
// rows in elements.
__aicore__ inline uint64_t GateRow(uint32_t u, uint32_t r, uint32_t HV, uint32_t BT, uint32_t Kg) {
    return Kg == 1 ? uint64_t(u) * BT + r : TokenRow(u, r, HV, 1, BT, Kg);
}
__aicore__ inline uint32_t GatePitch(uint32_t HV, uint32_t Kg) { return Kg == 1 ? 1 : HV * Kg; }

// R rows of G (GateRow, GatePitch) into a buffer of queue q, rows contiguous, enqueued (issued ahead
// of its DeQue, as vector_io::FetchRows).
template <class Q>
__aicore__ inline void FetchGate(Q& q, const GlobalTensor<float>& g, uint32_t R, uint32_t HV, uint32_t Kg) {
    if (Kg == 1) vector_io::Fetch(q, g, R);
    else vector_io::FetchRows(q, g, R, Kg, GatePitch(HV, Kg));
}

// The same, dequeued.
template <class Q>
__aicore__ inline LocalTensor<float> CopyInGate(Q& q, const GlobalTensor<float>& g, uint32_t R, uint32_t HV, uint32_t Kg) {
    FetchGate(q, g, R, HV, Kg);
    return q.template DeQue<float>();
}

// Mmad.md: an Mmad accumulating into the L0C tile the previous Mmad wrote must be separated from it
// by PipeBarrier<PIPE_M> when (m / 16) * (n / 16) < 10 (integer division of the sizes passed).
__aicore__ inline void AccumulateBarrier(uint32_t m, uint32_t n) {
    if ((m / 16) * (n / 16) < 10) PipeBarrier<PIPE_M>();
}

// Zero `elems` elements of an L1 buffer (MTE2) ahead of a load that writes fewer rows than the Cube
// reads: Mmad reads whole 16-row fractals and must not see NaN (Mmad.md), and ND -> NZ leaves the
// rows past nValue untouched. The barrier orders the load after the fill: both write the same
// bytes on MTE2 (PipeBarrier(ISASI).md).
template <class T>
__aicore__ inline void ZeroL1(const LocalTensor<T>& l1, uint32_t elems) {
    InitConstValue(l1, InitConstValueParams<T>(1, static_cast<uint16_t>(elems * sizeof(T) / 32), 0, T(0)));
    PipeBarrier<PIPE_MTE2>();
}

// A row-major rows x cols matrix (GM row pitch `pitch` elements; 0: `cols`) from GM into L1 as NZ
// (16-row fractals, column blocks `c0Stride` rows apart; 0: `rows`). With a larger c0Stride and l1
// offset by r0 * 16 elements, the matrix lands as rows [r0, r0 + rows) of a taller NZ matrix (r0 and
// c0Stride multiples of 16); with c0Stride = rows rounded up to 16, as a padded one (ND -> NZ
// zero-fills each row's C0 tail, the rows past `rows` are left as they are: ZeroL1).
template <class T>
__aicore__ inline void LoadNz(const LocalTensor<T>& l1, const GlobalTensor<T>& gm, uint32_t rows, uint32_t cols,
                              uint32_t c0Stride = 0, uint32_t pitch = 0) {
    DataCopy(l1, gm,
             Nd2NzParams(1, static_cast<uint16_t>(rows), static_cast<uint16_t>(cols), 0,
                         static_cast<uint16_t>(pitch != 0 ? pitch : cols), static_cast<uint16_t>(c0Stride != 0 ? c0Stride : rows),
                         1, 0));
}

// A row-major rows x cols matrix (GM row pitch `pitch` elements; 0: `cols`) from GM into L1 as row
// bands: rows / 16 NZ matrices of 16 rows, one after the other (fractal (r, c) at r * cols / 16 + c),
// which is the fractal order of L0B's Zn: LoadBBands moves the whole matrix in one LoadData. rows and
// cols multiples of 16.
template <class T>
__aicore__ inline void LoadBands(const LocalTensor<T>& l1, const GlobalTensor<T>& gm, uint32_t rows, uint32_t cols,
                                 uint32_t pitch = 0) {
    const uint32_t p = pitch != 0 ? pitch : cols;
    DataCopy(l1, gm,
             Nd2NzParams(static_cast<uint16_t>(rows / 16), 16, static_cast<uint16_t>(cols), static_cast<uint16_t>(16 * p),
                         static_cast<uint16_t>(p), 16, 1, static_cast<uint16_t>(16 * cols)));
}

// The AIC side of the hand-off of one or two row-major operands: waits for the slot, loads X (xRows x
// xCols at the slot's start) and then, when yRows > 0, Y (yRows x yCols) into L1 as NZ, and frees the
// slot when a later unit reuses it. The loads wait for the previous unit's LoadData from L1 (MTE1_MTE2).
template <class T>
__aicore__ inline void TakeSlot(const GlobalTensor<T>& slot, bool reused, const LocalTensor<T>& x, uint32_t xRows, uint32_t xCols,
                                const LocalTensor<T>& y = LocalTensor<T>(), uint32_t yRows = 0, uint32_t yCols = 0) {
    SlotConsumer::Acquire();
    Sync<HardEvent::MTE1_MTE2>();
    LoadNz(x, slot, xRows, xCols);
    if (yRows > 0) LoadNz(y, slot[uint64_t(xRows) * xCols], yRows, yCols);
    SlotConsumer::Release(reused);
}

// `count` consecutive fractals of L1 to consecutive fractals of L0A / L0B (each transposed with
// `transpose`, 2-byte types): LoadData's repeats, at most 255 a call.
template <class T>
__aicore__ inline void LoadFractals(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count, bool transpose) {
    constexpr uint32_t fr = 512 / sizeof(T);
    for (uint32_t i = 0; i < count; i += 255) {
        const uint32_t n = count - i < 255 ? count - i : 255;
        LoadData(dst[i * fr], src[i * fr], LoadData2dParams(0, static_cast<uint8_t>(n), 1, 0, 0, transpose, 0));
    }
}

// A row-major rows x cols A operand from GM into L1 in the fractal order of the SoC's L0A (a2/a3 Zz:
// row bands, LoadBands; a5 Nz: LoadNz), for LoadAOrdered's one run of fractals.
template <class T>
__aicore__ inline void LoadForA(const LocalTensor<T>& l1, const GlobalTensor<T>& gm, uint32_t rows, uint32_t cols) {
#if __NPU_ARCH__ == 3510
    LoadNz(l1, gm, rows, cols);
#else
    LoadBands(l1, gm, rows, cols);
#endif
}

// A (m x k) into L0A from L1 in the SoC's L0A fractal order (LoadForA): one run of fractals.
template <class T>
__aicore__ inline void LoadAOrdered(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t m, uint32_t k) {
    LoadFractals(a2, a1, (m / 16) * (k / (32 / sizeof(T))), false);
}

// A (m x k) from L1 NZ (fractal (i along m, j along k) at j * mFrac + i) into L0A in the SoC's
// layout: a2/a3 Zz (one LoadData per fractal row), a5 Nz (the L1 order as it is).
template <class T>
__aicore__ inline void LoadA(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t m, uint32_t k) {
#if __NPU_ARCH__ == 3510
    LoadAOrdered(a2, a1, m, k);
#else
    constexpr uint32_t fr = 512 / sizeof(T), c0 = 32 / sizeof(T);
    const uint32_t mFrac = m / 16, kFrac = k / c0;
    for (uint32_t i = 0; i < mFrac; ++i)
        LoadData(a2[i * kFrac * fr], a1[i * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(kFrac), static_cast<uint16_t>(mFrac), 0, 0, false, 0));
#endif
}

// A = X^T (m x k) into L0A, where X (k x m, row-major) is in L1 as NZ (fractal (r along k, c along
// m) at c * k / 16 + r): each fractal transposed on the way (2-byte types only, LoadData_2D.md), into
// the SoC's layout (a2/a3 Zz: fractal (i along m, j along k) at i * kFrac + j; a5 Nz: at j * mFrac + i).
template <class T>
__aicore__ inline void LoadAT(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t m, uint32_t k) {
    const uint32_t mFrac = m / 16, kFrac = k / 16;
#if __NPU_ARCH__ == 3510
    constexpr uint32_t fr = 512 / sizeof(T);
    for (uint32_t j = 0; j < kFrac; ++j)
        LoadData(a2[j * mFrac * fr], a1[j * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(mFrac), static_cast<uint16_t>(kFrac), 0, 0, true, 0));
#else
    LoadFractals(a2, a1, mFrac * kFrac, true);  // L1's NZ order is Zz's here: one run of fractals
#endif
}

// A = rows [16 r0, 16 (r0 + mFrac)) (m = 16 mFrac) of a row-major matrix of k columns held in L1 as
// NZ with `rowFrac` fractal rows (column blocks 16 rowFrac rows apart) into L0A, in the SoC's layout
// (a2/a3 Zz: one LoadData per fractal row; a5 Nz: one per fractal column).
template <class T>
__aicore__ inline void LoadARows(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t rowFrac, uint32_t r0,
                                 uint32_t mFrac, uint32_t k) {
    constexpr uint32_t fr = 512 / sizeof(T), c0 = 32 / sizeof(T);
    const uint32_t kFrac = k / c0;
#if __NPU_ARCH__ == 3510
    for (uint32_t j = 0; j < kFrac; ++j)
        LoadData(a2[j * mFrac * fr], a1[(j * rowFrac + r0) * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(mFrac), 1, 0, 0, false, 0));
#else
    for (uint32_t i = 0; i < mFrac; ++i)
        LoadData(a2[i * kFrac * fr], a1[(r0 + i) * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(kFrac), static_cast<uint16_t>(rowFrac), 0, 0, false, 0));
#endif
}

// B = X^T (k x n) for X = rows [16 r0, 16 r0 + n) of a row-major matrix of k columns held in L1 as NZ
// with `rowFrac` fractal rows, into L0B's Zn (fractal (r, c) at r * n / 16 + c, each stored n-major).
// No transpose: an NZ fractal of X (row-major 16 x C0) is already the n-major fractal of X^T (C0 k
// values per n). One LoadData per C0-column block of X (C0 = 16 for 2-byte types, 8 for float).
template <class T>
__aicore__ inline void LoadBTransposed(const LocalTensor<T>& b2, const LocalTensor<T>& b1, uint32_t rowFrac, uint32_t r0,
                                       uint32_t n, uint32_t k) {
    constexpr uint32_t fr = 512 / sizeof(T);
    const uint32_t kFrac = k / (32 / sizeof(T)), nFrac = n / 16;
    for (uint32_t r = 0; r < kFrac; ++r)
        LoadData(b2[r * nFrac * fr], b1[(r * rowFrac + r0) * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(nFrac), 1, 0, 0, false, 0));
}

// B = columns [n0, n0 + n) of a row-major k x N matrix held in L1 as NZ (16 x 16 fractals,
// column-major: fractal (row block r, column block c) at c * k / 16 + r) into L0B's Zn (fractal
// (r, c) at r * n / 16 + c, each stored n-major): one transposing LoadData per row block (2-byte
// types only: L1's NZ fractals of a row-major matrix are the transposes of L0B's Zn fractals).
template <class T>
__aicore__ inline void LoadB(const LocalTensor<T>& b2, const LocalTensor<T>& b1, uint32_t k, uint32_t n0, uint32_t n) {
    constexpr uint32_t fr = 512 / sizeof(T);
    const uint32_t kFrac = k / 16, nFrac = n / 16;
    for (uint32_t r = 0; r < kFrac; ++r)
        LoadData(b2[r * nFrac * fr], b1[((n0 / 16) * kFrac + r) * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(nFrac), static_cast<uint16_t>(kFrac), 0, 0, true, 0));
}

// B = columns [n0, n0 + n) of a k x N matrix held in L1 as row bands (LoadBands; b1 may start at a
// column block of the first band) into L0B's Zn: the bands are already in Zn's fractal order, so the
// whole width is one transposing LoadData (2-byte types), a narrower tile one per band.
template <class T>
__aicore__ inline void LoadBBands(const LocalTensor<T>& b2, const LocalTensor<T>& b1, uint32_t k, uint32_t N, uint32_t n0,
                                  uint32_t n) {
    constexpr uint32_t fr = 512 / sizeof(T);
    const uint32_t kFrac = k / 16, nFrac = n / 16, bandFrac = N / 16;
    if (n == N) {
        LoadFractals(b2, b1, kFrac * nFrac, true);
        return;
    }
    for (uint32_t r = 0; r < kFrac; ++r)
        LoadData(b2[r * nFrac * fr], b1[(r * bandFrac + n0 / 16) * fr],
                 LoadData2dParams(0, static_cast<uint8_t>(nFrac), 1, 0, 0, true, 0));
}

// One product A (m x k, already in L0A) @ B (k x N in L1, staged per tile in L0B): B as NZ, or with
// bandCols > 0 as row bands of that many columns (LoadBands).
template <class T>
struct CubeProduct {
    LocalTensor<T> a2;  // L0A
    LocalTensor<T> b1;  // L1
    LocalTensor<T> b2;  // L0B, room for k x tile
    uint32_t k;
    uint32_t bandCols = 0;
};

// Product p's B tile (columns [n0, n0 + n)) into its L0B buffer.
template <class T>
__aicore__ inline void LoadProductB(const CubeProduct<T>& p, uint32_t n0, uint32_t n) {
    if (p.bandCols != 0) LoadBBands(p.b2, p.b1, p.k, p.bandCols, n0, n);
    else LoadB(p.b2, p.b1, p.k, n0, n);
}

// The Fixpipe quantisation mode that writes an fp32 L0C result as O: none for float, F322F16 /
// F322BF16 (round to nearest even) for half / bfloat16_t.
template <class O>
struct FixpipeQuant {
    static constexpr QuantMode_t kMode = QuantMode_t::NoQuant;
};
template <>
struct FixpipeQuant<half> {
    static constexpr QuantMode_t kMode = QuantMode_t::F322F16;
};
template <>
struct FixpipeQuant<bfloat16_t> {
    static constexpr QuantMode_t kMode = QuantMode_t::F322BF16;
};

// An NZ matrix of `rows` rows (multiple of 16) in L1, as a TileProducts destination: each tile rounded
// once to T and kept on chip for a later LoadData (FIX -> MTE1 ordered by the caller).
template <class T>
struct NzL1 {
    LocalTensor<T> l1;
    uint32_t rows;
};

// One m x n tile of L0C (fractal order) to columns [n0, n0 + n) of the destination: GM rows `pitch`
// elements apart (fp32, or rounded once to O), or an L1 NZ matrix (CFG_NZ; FixpipeParamsV220's dstStride
// between 16-column blocks counts 32-byte blocks on 2201, elements on 3510: Fixpipe（L0C到L1数据搬运）.md).
template <class O>
__aicore__ inline void WriteTile(const GlobalTensor<O>& out, uint32_t pitch, uint32_t n0, const LocalTensor<float>& oc,
                                 uint32_t m, uint32_t n) {
    FixpipeParamsV220 p(static_cast<uint16_t>(n), static_cast<uint16_t>(m), static_cast<uint16_t>(m), pitch, false);
    p.quantPre = FixpipeQuant<O>::kMode;
    Fixpipe(out[n0], oc, p);
}
template <class O>
__aicore__ inline void WriteTile(const NzL1<O>& out, uint32_t, uint32_t n0, const LocalTensor<float>& oc, uint32_t m,
                                 uint32_t n) {
    static_assert(sizeof(O) == 2, "an L1 NZ destination: 2-byte types (C0 = 16, one 32-byte block a row)");
#if __NPU_ARCH__ == 3510
    const uint32_t blockStride = out.rows * 16;
#else
    const uint32_t blockStride = out.rows;
#endif
    FixpipeParamsV220 p(static_cast<uint16_t>(n), static_cast<uint16_t>(m), static_cast<uint16_t>(m), blockStride, false);
    p.quantPre = FixpipeQuant<O>::kMode;
    Fixpipe<O, float, CFG_NZ>(out.l1[n0 * out.rows], oc, p);
}

// out[:, n0 : n0 + n] = sum of the products' columns, per tile of `tile` columns (multiple of 16):
// the B tiles into L0B, the first product with Mmad(init), the others accumulating into the same
// L0C tile, one Fixpipe (WriteTile: GM rows `pitch` apart, or an L1 NZ matrix). The first two
// products' B tiles are loaded together; a third or later product reuses an earlier one's L0B buffer
// (its b2), loaded once the Mmads before it have read L0B. Orders itself against the previous Mmads
// (M_MTE1: L0B reuse) and the previous Fixpipe (FIX_M: L0C reuse); the caller orders L0A / L1.
template <class T, uint32_t P, class Out>
__aicore__ inline void TileProducts(const LocalTensor<float>& oc, const Out& out, uint32_t pitch, uint32_t m, uint32_t N,
                                    uint32_t tile, const CubeProduct<T> (&prods)[P]) {
    constexpr uint32_t kTogether = P < 2 ? P : 2;
    for (uint32_t n0 = 0; n0 < N; n0 += tile) {
        const uint32_t n = N - n0 < tile ? N - n0 : tile;
        Sync<HardEvent::M_MTE1>();  // the previous tile's Mmads have read L0B
        for (uint32_t i = 0; i < kTogether; ++i) LoadProductB(prods[i], n0, n);
        Sync<HardEvent::MTE1_M>();
        Sync<HardEvent::FIX_M>();  // the previous Fixpipe has read oc
        for (uint32_t i = 0; i < P; ++i) {
            if (i >= kTogether) {  // into a buffer an earlier product of this tile used
                Sync<HardEvent::M_MTE1>();
                LoadProductB(prods[i], n0, n);
                Sync<HardEvent::MTE1_M>();
            }
            if (i > 0) AccumulateBarrier(m, n);
            Mmad(oc, prods[i].a2, prods[i].b2,
                 MmadParams(static_cast<uint16_t>(m), static_cast<uint16_t>(n), static_cast<uint16_t>(prods[i].k), 0, false,
                            i == 0));
        }
        Sync<HardEvent::M_FIX>();
        WriteTile(out, pitch, n0, oc, m, n);
    }
}

// The per-row operations of the vector row broadcasts.
enum class RowOp { kMul, kDiv, kSub };

// Vector: dst[r, :] = src[r, :] op f[r] for R rows of C fp32 columns (C a multiple of 8), with bc
// holding Brcb(f) (f[r] alone in 32-byte block r), read with block stride 0 (one repeat per row),
// one instruction per 64 columns.
__aicore__ inline void ApplyRows(RowOp op, const LocalTensor<float>& dst, const LocalTensor<float>& src,
                                 const LocalTensor<float>& bc, uint32_t R, uint32_t C) {
    const uint8_t rowBlk = static_cast<uint8_t>(C * sizeof(float) / 32);
    const BinaryRepeatParams perRow(1, 1, 0, rowBlk, rowBlk, 1);
    for (uint32_t c = 0; c < C; c += kFloatLanes) {
        const uint64_t mask = C - c < kFloatLanes ? C - c : kFloatLanes;
        if (op == RowOp::kMul) Mul(dst[c], src[c], bc, mask, static_cast<uint8_t>(R), perRow);
        else if (op == RowOp::kDiv) Div(dst[c], src[c], bc, mask, static_cast<uint8_t>(R), perRow);
        else Sub(dst[c], src[c], bc, mask, static_cast<uint8_t>(R), perRow);
    }
}

// dst[r, :] = src[r, :] * f[r] (bc = Brcb(f)): the row scaling of most callers.
__aicore__ inline void MulRows(const LocalTensor<float>& dst, const LocalTensor<float>& src, const LocalTensor<float>& bc,
                               uint32_t R, uint32_t C) {
    ApplyRows(RowOp::kMul, dst, src, bc, R, C);
}

// dst[r, :] = row[:] - src[r, :] for R rows of C fp32 columns (C a multiple of 8): the one row read
// for every repeat (repeat stride 0), one instruction per 64 columns.
__aicore__ inline void SubFromRow(const LocalTensor<float>& dst, const LocalTensor<float>& row, const LocalTensor<float>& src,
                                  uint32_t R, uint32_t C) {
    const uint8_t rowBlk = static_cast<uint8_t>(C * sizeof(float) / 32);
    const BinaryRepeatParams p(1, 1, 1, rowBlk, 0, rowBlk);
    for (uint32_t c = 0; c < C; c += kFloatLanes)
        Sub(dst[c], row[c], src[c], C - c < kFloatLanes ? C - c : kFloatLanes, static_cast<uint8_t>(R), p);
}

// dst[r, :] = src[r, :] * row[:] for R rows of C fp32 columns (C a multiple of 8): the one row read
// for every repeat (repeat stride 0), one instruction per 64 columns.
__aicore__ inline void MulByRow(const LocalTensor<float>& dst, const LocalTensor<float>& src, const LocalTensor<float>& row,
                                uint32_t R, uint32_t C) {
    const uint8_t rowBlk = static_cast<uint8_t>(C * sizeof(float) / 32);
    const BinaryRepeatParams p(1, 1, 1, rowBlk, rowBlk, 0);
    for (uint32_t c = 0; c < C; c += kFloatLanes)
        Mul(dst[c], src[c], row[c], C - c < kFloatLanes ? C - c : kFloatLanes, static_cast<uint8_t>(R), p);
}

// dst[r, :] = f[r] dst[r, :] + d[r, :] for R rows of C fp32 columns (dst and d row-major, C a multiple
// of 8) with bc = Brcb(f) (perRow) or one 32-byte block of a single factor every row reads: one
// FusedMulAdd (dst = src0 * dst + src1, FusedMulAdd.md) per 64 columns, one repeat per row.
__aicore__ inline void MulRowsAdd(const LocalTensor<float>& dst, const LocalTensor<float>& bc, const LocalTensor<float>& d,
                                  uint32_t R, uint32_t C, bool perRow) {
    const uint8_t rowBlk = static_cast<uint8_t>(C * sizeof(float) / 32);
    const BinaryRepeatParams p(1, 0, 1, rowBlk, perRow ? 1 : 0, rowBlk);
    for (uint32_t c = 0; c < C; c += kFloatLanes)
        FusedMulAdd(dst[c], bc, d[c], C - c < kFloatLanes ? C - c : kFloatLanes, static_cast<uint8_t>(R), p);
}

constexpr float kLn2 = 0.693147180559945309f;  // 2^x = exp(x ln 2): log2 spans in natural-log units

// dst = e^(scale * src), n fp32 elements (in place allowed): Muls by scale unless it is 1, then Exp.
__aicore__ inline void ExpOf(const LocalTensor<float>& dst, const LocalTensor<float>& src, float scale, uint32_t n) {
    if (scale == 1.0f) {
        Exp(dst, src, static_cast<int32_t>(n));
        return;
    }
    Muls(dst, src, scale, static_cast<int32_t>(n));
    OrderV();
    Exp(dst, dst, static_cast<int32_t>(n));
}

// bc = Brcb(f): R fp32 factors, each into its own 32-byte block (whole groups of 8: R rounded up).
__aicore__ inline void BroadcastRows(const LocalTensor<float>& bc, const LocalTensor<float>& f, uint32_t R) {
    Brcb(bc, f, static_cast<uint8_t>((R + 7) / 8), BrcbRepeatParams(1, 8));
}

// dst[r] = sum of row r of x (R rows of C fp32 columns, C a multiple of 8; x is overwritten): the C /
// 64 lane groups added into the first, then one WholeReduceSum per row.
__aicore__ inline void RowSums(const LocalTensor<float>& dst, const LocalTensor<float>& x, uint32_t R, uint32_t C) {
    const uint8_t rb = static_cast<uint8_t>(C / 8);
    const BinaryRepeatParams p(1, 1, 1, rb, rb, rb);
    for (uint32_t c = kFloatLanes; c < C; c += kFloatLanes) {
        Add(x, x, x[c], C - c < kFloatLanes ? C - c : kFloatLanes, static_cast<uint8_t>(R), p);
        OrderV();
    }
    WholeReduceSum(dst, x, static_cast<int32_t>(C < kFloatLanes ? C : kFloatLanes), static_cast<int32_t>(R), 1, 1, rb);
}

constexpr float kL2NormEps = 1e-6f;  // FLA's l2norm: x / sqrt(sum x^2 + eps)

// f = scale / sqrt(s + kL2NormEps) with l2norm (s: R sums of squares; f may be s), else scale; tmp: R
// floats of scratch.
__aicore__ inline void NormFactors(const LocalTensor<float>& f, const LocalTensor<float>& s, const LocalTensor<float>& tmp,
                                   bool l2norm, float scale, uint32_t R) {
    const int32_t n = static_cast<int32_t>(R);
    if (!l2norm) {
        Duplicate(f, scale, n);
        return;
    }
    Adds(f, s, kL2NormEps, n);
    Duplicate(tmp, scale, n);
    OrderV();
    Sqrt(f, f, n);
    OrderV();
    Div(f, tmp, f, n);
}

// dst[r] = the sum of squares of row r of x (R rows of C fp32 columns, C a multiple of 8; x kept): the
// first 64 columns' squares into sq (R x 64 floats), each further 64 columns' added by one MulAddDst
// (dst = src0 * src1 + dst, MulAddDst.md), then one WholeReduceSum per row.
__aicore__ inline void RowSquareSums(const LocalTensor<float>& dst, const LocalTensor<float>& x, const LocalTensor<float>& sq,
                                     uint32_t R, uint32_t C) {
    const uint32_t w = C < kFloatLanes ? C : kFloatLanes;
    const uint8_t xb = static_cast<uint8_t>(C / 8), sb = static_cast<uint8_t>(w / 8);
    const BinaryRepeatParams p(1, 1, 1, sb, xb, xb);
    Mul(sq, x, x, w, static_cast<uint8_t>(R), p);
    for (uint32_t c = kFloatLanes; c < C; c += kFloatLanes) {
        OrderV();
        MulAddDst(sq, x[c], x[c], C - c < kFloatLanes ? C - c : kFloatLanes, static_cast<uint8_t>(R), p);
    }
    OrderV();
    WholeReduceSum(dst, sq, static_cast<int32_t>(w), static_cast<int32_t>(R), 1, 1, sb);
}

// f = the factors of the R rows of x (C fp32 columns) as NormFactors forms them from their sums of
// squares (sq: R x 64 floats of scratch, overwritten).
__aicore__ inline void RowNormFactors(const LocalTensor<float>& f, const LocalTensor<float>& x, const LocalTensor<float>& sq,
                                      bool l2norm, float scale, uint32_t R, uint32_t C) {
    if (l2norm) {
        RowSquareSums(f, x, sq, R, C);
        OrderV();
    }
    NormFactors(f, f, sq, l2norm, scale, R);
}

// The optional per-row factors of q or k (q_scale / k_scale [NC, HQ, BT], float32): `on` when the call
// gave them, bc then holding Brcb of the rows' factors (BroadcastRows).
struct RowScale {
    bool on = false;
    LocalTensor<float> bc;
};

// The factors of `rows` rows of q_scale / k_scale (gs from element `at`), Brcb'd into bc through a
// buffer of queue q (freed again); off, nothing read, unless `on` (the call gave them).
template <class Q>
__aicore__ inline RowScale LoadRowScale(Q& q, bool on, const GlobalTensor<float>& gs, uint64_t at, uint32_t rows,
                                        const LocalTensor<float>& bc) {
    if (!on) return RowScale{};
    LocalTensor<float> f = vector_io::CopyIn(q, gs[at], rows);
    BroadcastRows(bc, f, rows);
    OrderV();
    q.FreeTensor(f);
    return RowScale{true, bc};
}

// x[r, :] *= the factor of row r when s is on (R rows of C fp32 columns; x already ordered after its
// writers, its readers ordered after this by the caller).
__aicore__ inline void ScaleRows(const LocalTensor<float>& x, const RowScale& s, uint32_t R, uint32_t C) {
    if (!s.on) return;
    MulRows(x, x, s.bc, R, C);
    OrderV();
}

// The factors of rows that a kernel forms from the rows themselves (RowNormFactors: l2norm, scale)
// instead of taking them given (RowScale), and where the rows as read (`copy`, in the Cube type: exact)
// and their factors (`fCopy`) go for another stage's products: on when the kernel forms them. sq: R x
// min(C, 64) floats of scratch, bc: R x 8 floats (their Brcb).
template <class T>
struct OwnFactors {
    bool on = false, l2norm = false;
    float scale = 1.0f;
    LocalTensor<float> sq, bc;
    GlobalTensor<T> copy;
    GlobalTensor<float> fCopy;
};

// x (R rows of C fp32 columns, written, x ordered after its writers) times the factors of its rows: the
// given ones (s), or own's formed from x (x's rows as read and the factors written out first, through
// buffers of queues outT and outF). Orders x's readers after this.
template <class T, class QO, class QOF>
__aicore__ inline void ScaleRowsBy(QO& outT, QOF& outF, const LocalTensor<float>& x, const RowScale& s, const OwnFactors<T>& own,
                                   uint32_t R, uint32_t C) {
    if (!own.on) {
        ScaleRows(x, s, R, C);
        return;
    }
    vector_io::CastOut(outT, own.copy, x, R * C);
    LocalTensor<float> f = outF.template AllocTensor<float>();
    RowNormFactors(f, x, own.sq, own.l2norm, own.scale, R, C);
    OrderV();
    BroadcastRows(own.bc, f, R);
    OrderV();
    vector_io::CopyOut(outF, own.fCopy, f, R);
    if (own.l2norm || own.scale != 1.0f) {
        MulRows(x, x, own.bc, R, C);
        OrderV();
    }
}

// Select masks of 16 x W bits (element (a, j) at bit a W + j), `bytes` apart, set by the scalar unit
// and ordered before the vector unit's reads: for each of `count` 16-row blocks o, whose rows are
// i = rows[o] + a, mask 2 o keeps j <= i (Aqk), mask 2 o + 1 keeps j < i (L).
__aicore__ inline void BuildCausalMasks(const LocalTensor<uint8_t>& m, uint32_t bytes, uint32_t W, const uint32_t* rows,
                                        uint32_t count) {
    for (uint32_t o = 0; o < count; ++o)
        for (uint32_t kind = 0; kind < 2; ++kind)
            for (uint32_t byte = 0; byte < 16 * W / 8; ++byte) {
                uint32_t v = 0;
                for (uint32_t b = 0; b < 8; ++b) {
                    const uint32_t e = byte * 8 + b, j = e % W, i = rows[o] + e / W;
                    if (kind == 0 ? j <= i : j < i) v |= 1u << b;
                }
                m.SetValue((2 * o + kind) * bytes + byte, static_cast<uint8_t>(v));
            }
    Sync<HardEvent::S_V>();
}

// oa = the first n elements of r (16 rows of Aqk's products) kept where mask 2 o is set, ol = the n
// after them (L's) where mask 2 o + 1 is (BuildCausalMasks' masks, `bytes` apart), zero elsewhere
// (whatever r holds there, infinities included). r ordered before; oa, ol ordered after.
__aicore__ inline void SelectCausal(const LocalTensor<float>& oa, const LocalTensor<float>& ol, const LocalTensor<float>& r,
                                    const LocalTensor<uint8_t>& masks, uint32_t bytes, uint32_t o, uint32_t n) {
    Select(oa, masks[2 * o * bytes], r, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    Select(ol, masks[(2 * o + 1) * bytes], r[n], 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    OrderV();
}

// dd[a, j] = e^(g[16 I + a] - g[j]) for the 16 rows a of block row I and every column j < BT (g: a
// chunk's BT gate cumsums, natural-log units, ordered before; bc: 16 x 8 floats of scratch): GDN's
// decay of the block row's products, infinite where j > i (masked after). dd ordered after.
__aicore__ inline void BlockRowDecay(const LocalTensor<float>& dd, const LocalTensor<float>& g, const LocalTensor<float>& bc,
                                     uint32_t I, uint32_t BT) {
    BroadcastRows(bc, g[16 * I], 16);
    OrderV();
    // g_i alone in block a (block stride 0), g repeated per row
    Sub(dd, bc, g, BT, 16, BinaryRepeatParams(1, 0, 1, static_cast<uint8_t>(BT / 8), 1, 0));
    OrderV();
    Exp(dd, dd, static_cast<int32_t>(16 * BT));
    OrderV();
}

// dst = src * e for R rows of K fp32 columns, e the rows' gate factors: element-wise (KDA, Kg = K) or
// one factor per row (GDN, Kg = 1: broadcast with Brcb into bc, R x 8 floats, read with stride 0).
__aicore__ inline void MulGate(const LocalTensor<float>& dst, const LocalTensor<float>& src, const LocalTensor<float>& e,
                               const LocalTensor<float>& bc, uint32_t R, uint32_t K, uint32_t Kg) {
    if (Kg == K) {
        Mul(dst, src, e, static_cast<int32_t>(R * K));
    } else {
        BroadcastRows(bc, e, R);
        OrderV();
        MulRows(dst, src, bc, R, K);
    }
    OrderV();
}

// R rows of qe = T(fp32(q) * e) to dst (R x K, contiguous), e = e_row = e^G of the rows (R x Kg,
// formed), q's rows times their factors first when qScale is on: fp32 multiplies, one rounding to T (KDA: element-wise, Kg = K;
// GDN: one factor per row, Kg = 1, broadcast with Brcb into bc and read with stride 0). q: its first row, rows `qPitch` elements
// apart. Queues: inT and outT R K elements of T; work R K floats; bc 8 R floats (GDN).
template <class T, class QT, class QO>
__aicore__ inline void QeRows(QT& inT, QO& outT, const LocalTensor<float>& work, const LocalTensor<float>& bc,
                              const GlobalTensor<T>& q, uint32_t qPitch, const LocalTensor<float>& e, const GlobalTensor<T>& dst,
                              uint32_t R, uint32_t K, uint32_t Kg, const RowScale& qScale = RowScale{}) {
    vector_io::CastInRows(inT, q, work, R, K, qPitch);
    OrderV();
    ScaleRows(work, qScale, R, K);
    MulGate(work, work, e, bc, R, K, Kg);
    vector_io::CastOut(outT, dst, work, R * K);
}

// The same with e_row formed from the rows of G (g: the first row's, Kg floats a row, rows
// GatePitch(HV, Kg) apart) in a buffer of queue inF (R Kg floats). The Cube operand of the chunk
// output (chunk_output).
template <class T, class QT, class QF, class QO>
__aicore__ inline void FormQe(QT& inT, QF& inF, QO& outT, const LocalTensor<float>& work, const LocalTensor<float>& bc,
                              const GlobalTensor<T>& q, uint32_t qPitch, const GlobalTensor<float>& g, const GlobalTensor<T>& dst,
                              uint32_t R, uint32_t K, uint32_t Kg, uint32_t HV) {
    LocalTensor<float> e = CopyInGate(inF, g, R, HV, Kg);
    ExpOf(e, e, 1.0f, R * Kg);
    OrderV();
    QeRows(inT, outT, work, bc, q, qPitch, e, dst, R, K, Kg);
    inF.FreeTensor(e);
}

}  // namespace chunk_cube
}  // namespace fla_npu

#endif
