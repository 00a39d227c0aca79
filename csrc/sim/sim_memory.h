// fla-npu host simulation of Ascend C — TPipe, TQue, TBuf, LocalTensor, GlobalTensor.
//
// Memory model: every core owns byte arenas UB, L1, L0A, L0B, L0C sized by the SoC profile.
// TPipe::InitBuffer carves buffers ("slots") out of an arena front to back and stops hard when the
// arena is full. A LocalTensor is {slot, generation, byte offset, element count}; every API call
// validates it (live generation, same core, in bounds, aligned where the hardware requires it)
// before touching the bytes. Fresh buffers (InitBuffer, AllocTensor) are filled with 0xFF bytes,
// which is NaN in fp32/fp16/bf16 and -1 in integers, so reads before writes show.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "sim_base.h"
#include "sim_dtypes.h"

namespace AscendC {
namespace sim {

enum class SlotState : uint8_t { Free, Allocated, Enqueued, Dequeued, Always, Dead };

struct QueueBase;

// One buffer carved from an arena.
struct Slot {
    CoreCtx* core = nullptr;
    ArenaKind arena = ArenaKind::UB;
    TPosition pos = TPosition::VECCALC;
    uint32_t offset = 0;  // byte offset in the arena
    uint32_t len = 0;     // bytes
    uint8_t* data = nullptr;
    uint32_t gen = 1;
    SlotState state = SlotState::Always;
    QueueBase* que = nullptr;
    std::string name;  // e.g. "TQue<VECIN>#0 buffer 1"
};

// Vector-clock snapshot of one pipe (what that pipe had completed/seen when the token was taken).
struct SyncToken {
    uint32_t c[kNumPipes] = {};
};

// Runtime hooks (runtime.cpp).
ArenaKind ArenaOf(TPosition pos);
uint8_t* ArenaData(CoreCtx& core, ArenaKind a);  // allocates the arena lazily
uint32_t ArenaSize(ArenaKind a);
void NoteArenaUse(CoreCtx& core, ArenaKind a, uint32_t highWater);
void CheckPositionOnCore(CoreCtx& core, TPosition pos, const char* api);
void CheckTensor(const Slot* s, uint32_t gen, uint64_t byteOff, uint64_t bytes, const char* operand);
void CheckAlign(const Slot* s, uint64_t byteOff, uint32_t align, const char* operand);
// Record an access of the current operation's pipe to [byteOff, byteOff+bytes) of the slot and
// report a hazard against the last accesses of other pipes that are not ordered before it.
void Touch(const Slot* s, uint64_t byteOff, uint64_t bytes, bool write);
// Check the accumulation-order rule of Mmad against the previous Mmad and record this one.
void NoteMmad(const Slot* dst, uint64_t byteOff, uint64_t bytes, bool accumulate, uint32_t m, uint32_t n);
SyncToken TakeToken(pipe_t pipe);                 // snapshot of pipe's clock
void JoinToken(pipe_t pipe, const SyncToken& t);  // pipe waits for the token
std::string Fmt(const char* fmt, ...);

// ---------------------------------------------------------------------------------------------
template <class T>
class LocalTensor {
  public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(Slot* s, uint32_t gen, uint32_t byteOff, uint32_t count)
        : slot_(s), gen_(gen), byteOff_(byteOff), count_(count) {}

    // A view starting `offset` elements further (bounds checked).
    LocalTensor operator[](uint32_t offset) const {
        if (offset > count_) Fail("tensor offset out of range", Fmt("operator[](%u) on a tensor of %u elements", offset, count_));
        return LocalTensor(slot_, gen_, byteOff_ + offset * static_cast<uint32_t>(sizeof(T)), count_ - offset);
    }
    T GetValue(uint32_t i) const {
        BeginOp(PIPE_S, "LocalTensor::GetValue");
        CheckTensor(slot_, gen_, byteOff_ + uint64_t(i) * sizeof(T), sizeof(T), "tensor");
        Touch(slot_, byteOff_ + uint64_t(i) * sizeof(T), sizeof(T), false);
        T v;
        std::memcpy(&v, slot_->data + byteOff_ + uint64_t(i) * sizeof(T), sizeof(T));
        return v;
    }
    void SetValue(uint32_t i, T v) const {
        BeginOp(PIPE_S, "LocalTensor::SetValue");
        CheckTensor(slot_, gen_, byteOff_ + uint64_t(i) * sizeof(T), sizeof(T), "tensor");
        Touch(slot_, byteOff_ + uint64_t(i) * sizeof(T), sizeof(T), true);
        std::memcpy(slot_->data + byteOff_ + uint64_t(i) * sizeof(T), &v, sizeof(T));
    }
    uint32_t GetSize() const { return count_; }
    void SetSize(uint32_t n) {
        if (uint64_t(byteOff_) + uint64_t(n) * sizeof(T) > (slot_ ? slot_->len : 0))
            Fail("tensor size out of range", Fmt("SetSize(%u) exceeds the buffer", n));
        count_ = n;
    }
    uint32_t GetLength() const { return count_ * static_cast<uint32_t>(sizeof(T)); }
    TPosition GetPosition() const { return slot_ ? slot_->pos : TPosition::MAX; }
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(slot_, gen_, byteOff_, static_cast<uint32_t>(uint64_t(count_) * sizeof(T) / sizeof(U)));
    }
    // Host address of the first element (valid only while the buffer is live).
    T* GetPhyAddr() const { return reinterpret_cast<T*>(slot_->data + byteOff_); }

    // --- simulation internals (not Ascend C API) ---
    Slot* SimSlot() const { return slot_; }
    uint32_t SimGen() const { return gen_; }
    uint32_t SimByteOff() const { return byteOff_; }
    // Validate `n` elements from the start and return their host address.
    T* SimData(uint64_t n, const char* operand) const {
        CheckTensor(slot_, gen_, byteOff_, n * sizeof(T), operand);
        return reinterpret_cast<T*>(slot_->data + byteOff_);
    }
    void SimAlign(uint32_t align, const char* operand) const { CheckAlign(slot_, byteOff_, align, operand); }
    void SimTouch(uint64_t elemOff, uint64_t n, bool write) const {
        Touch(slot_, byteOff_ + elemOff * sizeof(T), n * sizeof(T), write);
    }
    void SimTouchBytes(uint64_t byteOff, uint64_t bytes, bool write) const { Touch(slot_, byteOff_ + byteOff, bytes, write); }

  private:
    Slot* slot_ = nullptr;
    uint32_t gen_ = 0;
    uint32_t byteOff_ = 0;
    uint32_t count_ = 0;
};

// ---------------------------------------------------------------------------------------------
template <class T>
class GlobalTensor {
  public:
    using PrimType = T;
    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
        ptr_ = buffer;
        size_ = bufferSize;
        sized_ = true;
    }
    void SetGlobalBuffer(__gm__ T* buffer) {
        ptr_ = buffer;
        size_ = 0;
        sized_ = false;
    }
    GlobalTensor operator[](uint64_t offset) const {
        if (sized_ && offset > size_)
            Fail("GM offset out of range",
                 Fmt("GlobalTensor[%llu] on a buffer of %llu elements", (unsigned long long)offset, (unsigned long long)size_));
        GlobalTensor g;
        g.ptr_ = ptr_ + offset;
        g.size_ = sized_ ? size_ - offset : 0;
        g.sized_ = sized_;
        return g;
    }
    T GetValue(uint64_t i) const {
        SimCheck(i, 1, "GetValue");
        return ptr_[i];
    }
    void SetValue(uint64_t i, T v) const {
        SimCheck(i, 1, "SetValue");
        ptr_[i] = v;
    }
    uint64_t GetSize() const { return size_; }
    __gm__ T* GetPhyAddr() const { return ptr_; }
    __gm__ T* GetPhyAddr(uint64_t offset) const { return ptr_ + offset; }
    template <class U>
    GlobalTensor<U> ReinterpretCast() const {
        GlobalTensor<U> g;
        if (sized_) g.SetGlobalBuffer(reinterpret_cast<U*>(ptr_), size_ * sizeof(T) / sizeof(U));
        else g.SetGlobalBuffer(reinterpret_cast<U*>(ptr_));
        return g;
    }

    // --- simulation internals ---
    // Check that elements [i, i+n) lie inside the buffer given to SetGlobalBuffer (when sized).
    void SimCheck(uint64_t i, uint64_t n, const char* op) const {
        if (ptr_ == nullptr) Fail("GlobalTensor without buffer", Fmt("%s on a GlobalTensor before SetGlobalBuffer", op));
        if (sized_ && i + n > size_)
            Fail("GM access out of range", Fmt("%s touches elements [%llu, %llu) of a GM buffer of %llu elements", op,
                                               (unsigned long long)i, (unsigned long long)(i + n), (unsigned long long)size_));
    }
    T* SimPtr() const { return ptr_; }

  private:
    T* ptr_ = nullptr;
    uint64_t size_ = 0;
    bool sized_ = false;
};

// ---------------------------------------------------------------------------------------------
// Queues. EnQue/DeQue are the SetFlag/WaitFlag pair between the queue's producer and consumer pipes
// (VECIN: MTE2 -> V, VECOUT: V -> MTE3, A1/B1: MTE2 -> MTE1, A2/B2: MTE1 -> M, CO1: M -> FIX), and
// FreeTensor/AllocTensor the reverse pair, exactly as on the device.
struct QueueBase {
    TPosition qpos = TPosition::VECIN;
    int32_t qdepth = 1;
    std::vector<Slot*> slots;
    std::deque<Slot*> fifo;
    std::vector<SyncToken> enqToken, freeToken;  // per slot
    std::vector<bool> freeTokenValid;
    size_t next = 0;  // round-robin allocation cursor
    std::string name;
    bool inited = false;
    uint32_t traceId = 0;  // the queue's number on its core (trace keys)

    Slot* Alloc();
    void EnQue(Slot* s, uint32_t gen);
    Slot* DeQue();
    void Free(Slot* s, uint32_t gen);
    bool HasTensor() const { return !fifo.empty(); }
    int32_t Vacant() const;
};
void QueueProducerConsumer(TPosition pos, pipe_t& producer, pipe_t& consumer);

template <TPosition pos, int32_t depth = 1, auto mask = 0>
class TQue : public QueueBase {
  public:
    TQue() {
        this->qpos = pos;
        this->qdepth = depth;
    }
    template <class T>
    LocalTensor<T> AllocTensor() {
        Slot* s = Alloc();
        return LocalTensor<T>(s, s->gen, 0, s->len / static_cast<uint32_t>(sizeof(T)));
    }
    template <class T>
    bool EnQue(const LocalTensor<T>& t) {
        QueueBase::EnQue(t.SimSlot(), t.SimGen());
        return true;
    }
    template <class T>
    LocalTensor<T> DeQue() {
        Slot* s = QueueBase::DeQue();
        return LocalTensor<T>(s, s->gen, 0, s->len / static_cast<uint32_t>(sizeof(T)));
    }
    template <class T>
    void FreeTensor(LocalTensor<T>& t) {
        Free(t.SimSlot(), t.SimGen());
    }
    bool HasTensorInQue() const { return HasTensor(); }
    bool VacantInQue() const { return Vacant() > 0; }
};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
  public:
    template <class T>
    LocalTensor<T> Get() const {
        Slot* s = Need("TBuf::Get");
        return LocalTensor<T>(s, s->gen, 0, s->len / static_cast<uint32_t>(sizeof(T)));
    }
    template <class T>
    LocalTensor<T> Get(uint32_t len) const {
        Slot* s = Need("TBuf::Get");
        if (uint64_t(len) * sizeof(T) > s->len)
            Fail("TBuf::Get out of range",
                 Fmt("Get(%u) of %zu-byte elements from a %u-byte %s", len, sizeof(T), s->len, s->name.c_str()));
        return LocalTensor<T>(s, s->gen, 0, len);
    }
    template <class T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) const {
        Slot* s = Need("TBuf::GetWithOffset");
        if (uint64_t(bufOffset) + uint64_t(size) * sizeof(T) > s->len)
            Fail("TBuf::GetWithOffset out of range",
                 Fmt("%u elements at byte %u exceed the %u-byte %s", size, bufOffset, s->len, s->name.c_str()));
        return LocalTensor<T>(s, s->gen, bufOffset, size);
    }
    Slot* SimSlot() const { return slot_; }
    Slot* slot_ = nullptr;

  private:
    Slot* Need(const char* api) const {
        if (!slot_) Fail("TBuf used before InitBuffer", api);
        return slot_;
    }
};

// ---------------------------------------------------------------------------------------------
class TPipe {
  public:
    TPipe();
    ~TPipe();
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <TPosition pos, int32_t depth, auto mask>
    bool InitBuffer(TQue<pos, depth, mask>& que, uint8_t num, uint32_t len) {
        InitQueue(que, num, len);
        return true;
    }
    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
        buf.slot_ = Carve(pos, len, Fmt("TBuf<%s>#%d", PositionName(pos), nbuf_++));
        buf.slot_->state = SlotState::Always;
        return true;
    }
    template <HardEvent evt>
    TEventID AllocEventID() {
        return AllocEvent(evt);
    }
    template <HardEvent evt>
    void ReleaseEventID(TEventID id) {
        ReleaseEvent(evt, id);
    }
    TEventID FetchEventID(HardEvent evt);
    template <HardEvent evt>
    TEventID FetchEventID() {
        return FetchEventID(evt);
    }
    void Destroy();
    void Reset();

  private:
    void InitQueue(QueueBase& q, uint8_t num, uint32_t len);
    Slot* Carve(TPosition pos, uint32_t len, const std::string& name);
    TEventID AllocEvent(HardEvent evt);
    void ReleaseEvent(HardEvent evt, TEventID id);

    CoreCtx* core_;
    uint32_t used_[kNumArenas] = {};
    std::deque<Slot> slots_;
    uint8_t eventUsed_[static_cast<int>(HardEvent::MAX)] = {};
    int nque_ = 0, nbuf_ = 0;
};

// The calling core's TPipe: the last one constructed there and still alive (as on the device, where
// the TPipe constructor records itself); faults when the core has none.
TPipe* GetTPipePtr();

}  // namespace sim

using sim::GetTPipePtr;
using sim::GlobalTensor;
using sim::LocalTensor;
using sim::TBuf;
using sim::TPipe;
using sim::TQue;

}  // namespace AscendC
