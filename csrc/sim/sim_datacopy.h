// fla-npu host simulation of Ascend C — data movement between GM and on-chip buffers.
//
// Units, as on the device:
//   DataCopy(dst, src, count)           element count; count*sizeof(T) must be a multiple of 32 bytes
//                                       (the device silently rounds down — the simulation stops);
//   DataCopyParams                      blockLen and both strides (gaps) in 32-byte blocks;
//   DataCopyPad + DataCopyExtParams     blockLen in bytes, GM-side gap in bytes, UB-side gap in
//                                       32-byte blocks, every UB row padded to 32 bytes.
// Pipes: GM -> UB/L1 is MTE2, UB -> GM is MTE3, UB -> UB is V.
#pragma once

#include "sim_memory.h"

namespace AscendC {

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;   // 32-byte blocks
    uint16_t srcStride = 0;  // gap between blocks, 32-byte blocks
    uint16_t dstStride = 0;  // gap between blocks, 32-byte blocks
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   // bytes
    uint32_t srcStride = 0;  // GM -> UB: GM gap in bytes; UB -> GM: UB gap in 32-byte blocks
    uint32_t dstStride = 0;  // GM -> UB: UB gap in 32-byte blocks; UB -> GM: GM gap in bytes
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
};

template <class T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;   // elements
    uint8_t rightPadding = 0;  // elements
    T paddingValue = T(0);
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

namespace sim {

inline void RequireUbOrL1(const Slot* s, bool toLocal, const char* op) {
    if (!s) return;
    const ArenaKind a = s->arena;
    if (toLocal && a != ArenaKind::UB && a != ArenaKind::L1)
        Fail("bad DataCopy destination",
             Fmt("%s from GM into %s (%s): GM data goes to UB or L1", op, ArenaName(a), s->name.c_str()));
    if (!toLocal && a != ArenaKind::UB)
        Fail("bad DataCopy source", Fmt("%s to GM from %s (%s): the simulation moves UB to GM only (L0C goes through Fixpipe)",
                                        op, ArenaName(a), s->name.c_str()));
}

template <class T>
inline void Require32(uint64_t count, const char* op) {
    const uint64_t bytes = count * sizeof(T);
    if (bytes % kBlock != 0)
        Fail("DataCopy 32-byte rule", Fmt("%s of %llu elements x %zu bytes = %llu bytes is not a multiple of 32 (the device "
                                          "would silently copy only %llu bytes); "
                                          "use DataCopyPad for unaligned lengths",
                                          op, (unsigned long long)count, sizeof(T), (unsigned long long)bytes,
                                          (unsigned long long)(bytes / kBlock * kBlock)));
}

}  // namespace sim

// GM -> UB/L1, `count` elements.
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count) {
    sim::BeginOp(PIPE_MTE2, "DataCopy(GM->local)");
    sim::RequireUbOrL1(dst.SimSlot(), true, "DataCopy");
    sim::Require32<T>(count, "DataCopy(GM->local)");
    T* d = dst.SimData(count, "dst");
    dst.SimAlign(sim::kBlock, "dst");
    src.SimCheck(0, count, "DataCopy(GM->local) src");
    dst.SimTouch(0, count, true);
    std::memcpy(d, src.SimPtr(), uint64_t(count) * sizeof(T));
    sim::CountGmToLocal(uint64_t(count) * sizeof(T), src.SimPtr());
}

// UB -> GM, `count` elements.
template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
    sim::BeginOp(PIPE_MTE3, "DataCopy(local->GM)");
    sim::RequireUbOrL1(src.SimSlot(), false, "DataCopy");
    sim::Require32<T>(count, "DataCopy(local->GM)");
    const T* s = src.SimData(count, "src");
    src.SimAlign(sim::kBlock, "src");
    dst.SimCheck(0, count, "DataCopy(local->GM) dst");
    src.SimTouch(0, count, false);
    std::memcpy(dst.SimPtr(), s, uint64_t(count) * sizeof(T));
    sim::CountLocalToGm(uint64_t(count) * sizeof(T), dst.SimPtr());
}

// UB -> UB, `count` elements (vector pipe).
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
    sim::BeginOp(PIPE_V, "DataCopy(UB->UB)");
    sim::Require32<T>(count, "DataCopy(UB->UB)");
    const T* s = src.SimData(count, "src");
    T* d = dst.SimData(count, "dst");
    src.SimAlign(sim::kBlock, "src");
    dst.SimAlign(sim::kBlock, "dst");
    src.SimTouch(0, count, false);
    dst.SimTouch(0, count, true);
    std::memmove(d, s, uint64_t(count) * sizeof(T));
    sim::TraceBytes(uint64_t(count) * sizeof(T), FLA_SIM_MEM_ONCHIP);
}

namespace sim {
// The layout of a DataCopyParams copy: `count` blocks of `len` bytes (blockLen 32-byte blocks), block
// i at byte Src(i) of the source and Dst(i) of the destination (blockLen + srcStride / dstStride
// blocks apart); the spans run to the end of the last block.
struct BlockLayout {
    uint64_t count, len, srcPitch, dstPitch;
    explicit BlockLayout(const DataCopyParams& p)
        : count(p.blockCount),
          len(uint64_t(p.blockLen) * kBlock),
          srcPitch((uint64_t(p.blockLen) + p.srcStride) * kBlock),
          dstPitch((uint64_t(p.blockLen) + p.dstStride) * kBlock) {}
    bool Empty() const { return count == 0 || len == 0; }
    uint64_t Src(uint64_t i) const { return i * srcPitch; }
    uint64_t Dst(uint64_t i) const { return i * dstPitch; }
    uint64_t SrcSpan() const { return (count - 1) * srcPitch + len; }
    uint64_t DstSpan() const { return (count - 1) * dstPitch + len; }
    uint64_t Bytes() const { return count * len; }
};
}  // namespace sim

// GM -> UB/L1 in 32-byte blocks.
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
    sim::BeginOp(PIPE_MTE2, "DataCopy(GM->local, DataCopyParams)");
    sim::RequireUbOrL1(dst.SimSlot(), true, "DataCopy");
    dst.SimAlign(sim::kBlock, "dst");
    const sim::BlockLayout b(p);
    if (b.Empty()) return;
    if (b.SrcSpan() % sizeof(T) || b.DstSpan() % sizeof(T))
        sim::Fail("DataCopyParams", "block layout does not fit the element type");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.SimData(b.DstSpan() / sizeof(T), "dst"));
    src.SimCheck(0, b.SrcSpan() / sizeof(T), "DataCopy(GM->local, DataCopyParams) src");
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.SimPtr());
    for (uint64_t i = 0; i < b.count; ++i) {
        dst.SimTouchBytes(b.Dst(i), b.len, true);
        std::memcpy(d + b.Dst(i), s + b.Src(i), b.len);
    }
    sim::CountGmToLocal(b.Bytes(), s);
}

// UB -> GM in 32-byte blocks.
template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    sim::BeginOp(PIPE_MTE3, "DataCopy(local->GM, DataCopyParams)");
    sim::RequireUbOrL1(src.SimSlot(), false, "DataCopy");
    src.SimAlign(sim::kBlock, "src");
    const sim::BlockLayout b(p);
    if (b.Empty()) return;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.SimData(b.SrcSpan() / sizeof(T), "src"));
    dst.SimCheck(0, b.DstSpan() / sizeof(T), "DataCopy(local->GM, DataCopyParams) dst");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.SimPtr());
    for (uint64_t i = 0; i < b.count; ++i) {
        src.SimTouchBytes(b.Src(i), b.len, false);
        std::memcpy(d + b.Dst(i), s + b.Src(i), b.len);
    }
    sim::CountLocalToGm(b.Bytes(), d);
}

// UB -> UB in 32-byte blocks (vector pipe).
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    sim::BeginOp(PIPE_V, "DataCopy(UB->UB, DataCopyParams)");
    src.SimAlign(sim::kBlock, "src");
    dst.SimAlign(sim::kBlock, "dst");
    const sim::BlockLayout b(p);
    if (b.Empty()) return;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.SimData(b.SrcSpan() / sizeof(T), "src"));
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.SimData(b.DstSpan() / sizeof(T), "dst"));
    for (uint64_t i = 0; i < b.count; ++i) {
        src.SimTouchBytes(b.Src(i), b.len, false);
        dst.SimTouchBytes(b.Dst(i), b.len, true);
        std::memmove(d + b.Dst(i), s + b.Src(i), b.len);
    }
    sim::TraceBytes(b.Bytes(), FLA_SIM_MEM_ONCHIP);
}

// GM -> UB with byte lengths; each UB row is padded to 32 bytes (pad = paddingValue when isPad,
// otherwise garbage, simulated as 0xFF bytes = NaN).
template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad) {
    sim::BeginOp(PIPE_MTE2, "DataCopyPad(GM->local)");
    sim::RequireUbOrL1(dst.SimSlot(), true, "DataCopyPad");
    dst.SimAlign(sim::kBlock, "dst");
    if (p.blockLen % sizeof(T) != 0)
        sim::Fail("DataCopyPad length",
                  sim::Fmt("blockLen %u bytes is not a whole number of %zu-byte elements", p.blockLen, sizeof(T)));
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t blk = sim::kBlock, sz = sizeof(T);
    const uint64_t left = pad.isPad ? pad.leftPadding * sz : 0, right = pad.isPad ? pad.rightPadding * sz : 0;
    const uint64_t row = (left + p.blockLen + right + blk - 1) / blk * blk;
    const uint64_t rowPitch = row + uint64_t(p.dstStride) * blk;
    const uint64_t gmPitch = uint64_t(p.blockLen) + p.srcStride;
    const uint64_t dstSpan = (uint64_t(p.blockCount) - 1) * rowPitch + row;
    const uint64_t gmSpan = (uint64_t(p.blockCount) - 1) * gmPitch + p.blockLen;
    if (gmPitch % sz) sim::Fail("DataCopyPad stride", "GM row pitch is not a whole number of elements");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.SimData(dstSpan / sz, "dst"));
    src.SimCheck(0, gmSpan / sz, "DataCopyPad(GM->local) src");
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.SimPtr());
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint8_t* r = d + i * rowPitch;
        dst.SimTouchBytes(i * rowPitch, row, true);
        if (pad.isPad) {
            for (uint64_t o = 0; o < row; o += sz) std::memcpy(r + o, &pad.paddingValue, sz);
        } else {
            std::memset(r, 0xFF, row);
        }
        std::memcpy(r + left, s + i * gmPitch, p.blockLen);
    }
    sim::CountGmToLocal(uint64_t(p.blockCount) * p.blockLen, s);
}

// UB -> GM with byte lengths; UB rows start on 32-byte boundaries.
template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    sim::BeginOp(PIPE_MTE3, "DataCopyPad(local->GM)");
    sim::RequireUbOrL1(src.SimSlot(), false, "DataCopyPad");
    src.SimAlign(sim::kBlock, "src");
    if (p.blockLen % sizeof(T) != 0)
        sim::Fail("DataCopyPad length",
                  sim::Fmt("blockLen %u bytes is not a whole number of %zu-byte elements", p.blockLen, sizeof(T)));
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t blk = sim::kBlock, sz = sizeof(T);
    const uint64_t row = (uint64_t(p.blockLen) + blk - 1) / blk * blk;
    const uint64_t rowPitch = row + uint64_t(p.srcStride) * blk;
    const uint64_t gmPitch = uint64_t(p.blockLen) + p.dstStride;
    if (gmPitch % sz) sim::Fail("DataCopyPad stride", "GM row pitch is not a whole number of elements");
    const uint64_t srcSpan = (uint64_t(p.blockCount) - 1) * rowPitch + p.blockLen;
    const uint64_t gmSpan = (uint64_t(p.blockCount) - 1) * gmPitch + p.blockLen;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.SimData(srcSpan / sz, "src"));
    dst.SimCheck(0, gmSpan / sz, "DataCopyPad(local->GM) dst");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.SimPtr());
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        src.SimTouchBytes(i * rowPitch, p.blockLen, false);
        std::memcpy(d + i * gmPitch, s + i * rowPitch, p.blockLen);
    }
    sim::CountLocalToGm(uint64_t(p.blockCount) * p.blockLen, d);
}

}  // namespace AscendC
