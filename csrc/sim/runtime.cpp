// fla-npu host simulation of Ascend C — the runtime: launch threads, per-core state, arenas, queues,
// the hazard checker, flags, cross-core semaphores, counters and the C interface.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kernel_operator.h"
#include "sim_api.h"

namespace AscendC {
namespace sim {

// ---------------------------------------------------------------------------------------------
// Names.
const char* EventName(HardEvent e) {
    switch (e) {
#define FLA_SIM_X(name, src, dst) \
    case HardEvent::name: return #name;
        FLA_SIM_HARD_EVENTS(FLA_SIM_X)
#undef FLA_SIM_X
        default: return "?";
    }
}
const char* PipeName(pipe_t p) {
    static const char* names[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL"};
    return p <= PIPE_ALL ? names[p] : "?";
}
const char* PositionName(TPosition p) {
    static const char* names[] = {"GM",  "A1",    "A2",     "B1",      "B2",  "C1",   "C2", "CO1",
                                  "CO2", "VECIN", "VECOUT", "VECCALC", "SPM", "TSCM", "MAX"};
    return names[static_cast<int>(p)];
}
const char* ArenaName(ArenaKind a) {
    static const char* names[] = {"UB", "L1", "L0A", "L0B", "L0C"};
    return names[static_cast<int>(a)];
}
static const char* KernelTypeName(KernelMetaType t) {
    static const char* names[] = {"KERNEL_TYPE_AIV_ONLY",    "KERNEL_TYPE_AIC_ONLY",    "KERNEL_TYPE_MIX_AIV_1_0",
                                  "KERNEL_TYPE_MIX_AIC_1_0", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2"};
    return names[t];
}

std::string Fmt(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

// ---------------------------------------------------------------------------------------------
// Per-core state.
struct AccessRec {
    uint32_t t = 0;    // pipe-local time of the access (0 = none)
    uint32_t seq = 0;  // core-wide operation number, for reports
    const char* op = nullptr;
};
struct BlockRec {  // one 32-byte block of an arena
    int8_t wPipe = -1;
    uint32_t vBarriers = 0;  // the core's PipeBarrier<PIPE_V> count when a vector instruction last wrote it
    AccessRec w;
    AccessRec r[kNumPipes];
};

struct LaunchState;

struct CoreCtx {
    LaunchState* L = nullptr;
    CoreTypeSim type = AIV;
    int block = 0, sub = 0;
    int64_t blockIdx = 0;
    std::string label;
    std::vector<uint8_t> arena[kNumArenas];
    std::vector<BlockRec> recs[kNumArenas];
    uint32_t clock[kNumPipes][kNumPipes] = {};
    pipe_t curPipe = PIPE_S;
    const char* curOp = "";
    uint32_t opSeq = 0;
    std::map<int, std::deque<SyncToken>> flags;  // (event, id) -> pending SetFlag snapshots
    FlaSimCounters ctr{};
    // cross-core (guarded by LaunchState::mu)
    int xflag[kCrossCoreFlags] = {};
    std::map<std::pair<int, int>, std::vector<int>> xpartial;  // (mode, id) -> per group member
    // Mmad accumulation order (Mmad.md): the previous Mmad's L0C byte range and whether a
    // PipeBarrier<PIPE_M> (or PIPE_ALL) came after it.
    uint64_t mmadLo = 0, mmadHi = 0;
    bool mmadBarrier = true;
    uint32_t vBarriers = 0;                           // PipeBarrier<PIPE_V> (or PIPE_ALL) calls so far
    std::string waiting;                              // what this core blocks on, "" when running
    const std::function<bool()>* waitPred = nullptr;  // its wake-up condition while blocked
    bool finished = false;
    // Instruction trace (sim_api.h): records in program order; curRec is the current instruction's.
    bool tracing = false;
    bool traceTruncated = false;
    std::vector<FlaSimTraceRecord> trace;
    int64_t curRec = -1;
    uint32_t nextQueueId = 0;  // trace keys of the core's queues
    TPipe* pipe = nullptr;     // GetTPipePtr(): the newest live TPipe of the core
};

struct LaunchState {
    std::string name;
    KernelMetaType type;
    uint32_t numBlocks;
    const SocProfile* prof;
    int aivPerBlock = 0, aicPerBlock = 0;
    std::vector<std::unique_ptr<CoreCtx>> cores;
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<bool> abort{false};
    std::string error;
    int alive = 0, blocked = 0;
    uint64_t barGen[2] = {};
    int barCount[2] = {};
    double timeoutSec = 30.0;
    bool tracing = false;
    size_t traceMax = 0;
    const uint8_t *wsBegin = nullptr, *wsEnd = nullptr;  // the launch's GM workspace (SetNextLaunchWorkspace)
};

// The workspace SetNextLaunchWorkspace gave for this thread's next launch (taken by RunLaunch).
static thread_local const uint8_t* g_nextWsBegin = nullptr;
static thread_local uint64_t g_nextWsBytes = 0;

// Trace switch: -1 = the environment decides (FLA_SIM_TRACE), 0 off, 1 on (fla_sim_set_trace).
static std::atomic<int> g_traceSetting{-1};

static thread_local CoreCtx* g_cur = nullptr;

CoreCtx* Cur() { return g_cur; }

[[noreturn]] void Fail(const std::string& rule, const std::string& detail) {
    CoreCtx* c = g_cur;
    if (!c) throw Fault("fla-npu sim: " + rule + ": " + detail + " (outside a kernel launch)");
    throw Fault("fla-npu sim: kernel '" + c->L->name + "' core " + c->label + ": " + rule + ": " + detail);
}

CoreCtx& Core(const char* api) {
    if (!g_cur) throw Fault(std::string("fla-npu sim: ") + api + " called outside a kernel launch");
    if (g_cur->L->abort.load(std::memory_order_relaxed)) throw Aborted{};
    return *g_cur;
}

CoreTypeSim CurCoreType() { return Core("ASCEND_IS_AIC/AIV").type; }
int64_t CurBlockIdx() { return Core("GetBlockIdx").blockIdx; }
int64_t CurBlockNum() { return Core("GetBlockNum").L->numBlocks; }
int64_t CurSubBlockIdx() { return Core("GetSubBlockIdx").sub; }
int64_t CurSubBlockNum() {
    CoreCtx& c = Core("GetSubBlockNum");
    return c.L->aicPerBlock > 0 && c.L->aivPerBlock > 0 ? c.L->aivPerBlock : 1;
}
void DeclareKernelType(KernelMetaType t) {
    CoreCtx& c = Core("KERNEL_TASK_TYPE_DEFAULT");
    if (t != c.L->type)
        Fail("kernel type mismatch",
             Fmt("the kernel declares %s but was launched as %s", KernelTypeName(t), KernelTypeName(c.L->type)));
}

void BeginOp(pipe_t pipe, const char* op) {
    CoreCtx& c = Core(op);
    c.curPipe = pipe;
    c.curOp = op;
    ++c.opSeq;
    if (pipe < kNumPipes) ++c.clock[pipe][pipe];
    if (c.tracing) {
        c.curRec = -1;
        if (c.trace.size() >= c.L->traceMax) {
            c.traceTruncated = true;
            return;
        }
        c.trace.push_back(FlaSimTraceRecord{FLA_SIM_TRACE_INSTR, uint8_t(pipe), uint8_t(pipe), FLA_SIM_MEM_GM, 0, 0, 0});
        c.curRec = static_cast<int64_t>(c.trace.size()) - 1;
    }
}

// The trace record of the current instruction, or nullptr when not tracing.
static FlaSimTraceRecord* CurRec(CoreCtx& c) { return c.tracing && c.curRec >= 0 ? &c.trace[size_t(c.curRec)] : nullptr; }

// Adds `n` to the core's counter `field` and to the current trace record's amount (and `passes`:
// vector repeats or Cube steps).
static void Count(uint64_t FlaSimCounters::* field, uint64_t n, uint64_t passes) {
    CoreCtx& c = Core("counter");
    c.ctr.*field += n;
    if (FlaSimTraceRecord* r = CurRec(c)) {
        r->amount += n;
        r->passes += passes;
    }
}
// Whether GM byte `gm` lies in the current launch's workspace.
static bool InWorkspace(const void* gm) {
    const LaunchState* L = Core("counter").L;
    const uint8_t* p = static_cast<const uint8_t*>(gm);
    return p >= L->wsBegin && p < L->wsEnd;
}
// A GM move of the current instruction to or from the workspace: counted apart, its trace record
// marked FLA_SIM_MEM_WS.
static void CountWorkspace(uint64_t FlaSimCounters::* field, uint64_t b) {
    CoreCtx& c = Core("counter");
    c.ctr.*field += b;
    if (FlaSimTraceRecord* r = CurRec(c)) r->detail = FLA_SIM_MEM_WS;
}
void CountGmToLocal(uint64_t b, const void* gm) {
    Count(&FlaSimCounters::gm_to_local_bytes, b, 0);
    if (InWorkspace(gm)) CountWorkspace(&FlaSimCounters::ws_to_local_bytes, b);
}
void CountLocalToGm(uint64_t b, const void* gm) {
    Count(&FlaSimCounters::local_to_gm_bytes, b, 0);
    if (InWorkspace(gm)) CountWorkspace(&FlaSimCounters::local_to_ws_bytes, b);
}
void SetNextLaunchWorkspace(const void* base, uint64_t bytes) {
    g_nextWsBegin = static_cast<const uint8_t*>(base);
    g_nextWsBytes = base == nullptr ? 0 : bytes;
}
void CountVector(uint64_t n, uint64_t passes) { Count(&FlaSimCounters::vector_elem_ops, n, passes); }
void CountCube(uint64_t n, uint64_t steps) { Count(&FlaSimCounters::cube_macs, n, steps); }
void TraceBytes(uint64_t bytes, uint8_t where) {
    CoreCtx& c = Core("trace");
    if (FlaSimTraceRecord* r = CurRec(c)) {
        r->amount += bytes;
        r->detail = where;
        if (r->pipe == PIPE_V) r->passes += (bytes + kRepeatBytes - 1) / kRepeatBytes;
    }
}
void TraceSync(uint8_t kind, pipe_t pipe, pipe_t peer, uint32_t key, uint8_t detail) {
    CoreCtx& c = Core("trace");
    if (!c.tracing) return;
    c.curRec = -1;
    if (c.trace.size() >= c.L->traceMax) {
        c.traceTruncated = true;
        return;
    }
    c.trace.push_back(FlaSimTraceRecord{kind, uint8_t(pipe), uint8_t(peer), detail, key, 0, 0});
}
// Trace keys of queue hand-offs: EnQue/DeQue pair in FIFO order, FreeTensor/AllocTensor per buffer.
static uint32_t QueueKey(uint32_t queue, uint32_t slot) { return (queue << 8) | (slot & 0xFFu); }
constexpr uint32_t kQueueFifo = 0xFF;

// ---------------------------------------------------------------------------------------------
// Arenas.
ArenaKind ArenaOf(TPosition pos) {
    switch (pos) {
        case TPosition::VECIN:
        case TPosition::VECOUT:
        case TPosition::VECCALC:
        case TPosition::CO2: return ArenaKind::UB;
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1:
        case TPosition::TSCM: return ArenaKind::L1;
        case TPosition::A2: return ArenaKind::L0A;
        case TPosition::B2: return ArenaKind::L0B;
        case TPosition::CO1: return ArenaKind::L0C;
        default:
            Fail("unsupported buffer position", Fmt("TPosition::%s has no on-chip arena in the simulation", PositionName(pos)));
    }
}
uint32_t ArenaSize(ArenaKind a) { return Core("arena").L->prof->arenaBytes[static_cast<int>(a)]; }
uint8_t* ArenaData(CoreCtx& c, ArenaKind a) {
    const int i = static_cast<int>(a);
    if (c.arena[i].empty()) {
        c.arena[i].assign(c.L->prof->arenaBytes[i], 0xFF);
        c.recs[i].assign(c.L->prof->arenaBytes[i] / kBlock, BlockRec{});
    }
    return c.arena[i].data();
}
void NoteArenaUse(CoreCtx& c, ArenaKind a, uint32_t hw) {
    uint64_t* peaks[] = {&c.ctr.peak_ub_bytes, &c.ctr.peak_l1_bytes, &c.ctr.peak_l0a_bytes, &c.ctr.peak_l0b_bytes,
                         &c.ctr.peak_l0c_bytes};
    uint64_t& p = *peaks[static_cast<int>(a)];
    p = std::max<uint64_t>(p, hw);
}
void CheckPositionOnCore(CoreCtx& c, TPosition pos, const char* api) {
    const ArenaKind a = ArenaOf(pos);
    if (a == ArenaKind::UB && c.type != AIV)
        Fail("buffer position not on this core",
             Fmt("%s: TPosition::%s is vector-core memory (UB) but this is an AIC core", api, PositionName(pos)));
    if (a != ArenaKind::UB && c.type != AIC)
        Fail("buffer position not on this core",
             Fmt("%s: TPosition::%s is Cube-core memory (%s) but this is an AIV core", api, PositionName(pos), ArenaName(a)));
}

static const char* StateName(SlotState s) {
    switch (s) {
        case SlotState::Free: return "free";
        case SlotState::Allocated: return "allocated";
        case SlotState::Enqueued: return "enqueued";
        case SlotState::Dequeued: return "dequeued";
        case SlotState::Always: return "TBuf";
        default: return "destroyed";
    }
}

void CheckTensor(const Slot* s, uint32_t gen, uint64_t byteOff, uint64_t bytes, const char* operand) {
    CoreCtx& c = Core("tensor access");
    if (!s) Fail("uninitialised LocalTensor", Fmt("%s was never obtained from a queue or TBuf", operand));
    if (s->core != &c)
        Fail("tensor of another core", Fmt("%s (%s) belongs to core %s", operand, s->name.c_str(), s->core->label.c_str()));
    if (s->state == SlotState::Dead) Fail("use after TPipe::Destroy/Reset", Fmt("%s refers to %s", operand, s->name.c_str()));
    if (gen != s->gen)
        Fail("use after free", Fmt("%s refers to %s, which was released by FreeTensor (buffer now %s)", operand, s->name.c_str(),
                                   StateName(s->state)));
    if (byteOff + bytes > s->len)
        Fail("out of bounds", Fmt("%s accesses bytes [%llu, %llu) of %s, which has %u bytes", operand,
                                  (unsigned long long)byteOff, (unsigned long long)(byteOff + bytes), s->name.c_str(), s->len));
}
void CheckAlign(const Slot* s, uint64_t byteOff, uint32_t align, const char* operand) {
    const uint64_t abs = s->offset + byteOff;
    if (abs % align != 0)
        Fail("misaligned operand",
             Fmt("%s of %s starts at %s byte %llu, not %u-byte aligned (on-chip operands must be %u-byte aligned)", operand,
                 Core("align").curOp, ArenaName(s->arena), (unsigned long long)abs, align, align));
}

// ---------------------------------------------------------------------------------------------
// Hazard checker.
// Built per report, not cached: the cores are threads, and two of them can report the same pair at once.
static std::string HazardHint(pipe_t from, pipe_t to) {
    const char* name = nullptr;
    for (int e = 0; e < static_cast<int>(HardEvent::MAX); ++e)
        if (EventSrc(HardEvent(e)) == from && EventDst(HardEvent(e)) == to) name = EventName(HardEvent(e));
    return name ? Fmt("SetFlag/WaitFlag<HardEvent::%s>, a queue EnQue/DeQue pair or PipeBarrier<PIPE_ALL>", name)
                : std::string("PipeBarrier<PIPE_ALL>");
}

void Touch(const Slot* s, uint64_t byteOff, uint64_t bytes, bool write) {
    if (bytes == 0) return;
    CoreCtx& c = Core("access");
    const int ai = static_cast<int>(s->arena);
    const pipe_t q = c.curPipe;
    const uint32_t now = c.clock[q][q];
    const uint64_t abs0 = s->offset + byteOff, abs1 = abs0 + bytes;
    auto report = [&](const char* kind, const char* what, pipe_t p, const AccessRec& prev, uint64_t blk) {
        Fail(std::string("hazard ") + kind,
             Fmt("%s op #%u '%s' %s %s bytes [%llu, %llu) of %s after %s op #%u '%s' %s them, with no %s in between", PipeName(q),
                 c.opSeq, c.curOp, write ? "writes" : "reads", ArenaName(s->arena), (unsigned long long)(blk * kBlock),
                 (unsigned long long)(blk * kBlock + kBlock), s->name.c_str(), PipeName(p), prev.seq, prev.op, what,
                 HazardHint(p, q).c_str()));
    };
    std::vector<BlockRec>& recs = c.recs[ai];
    for (uint64_t b = abs0 / kBlock; b < (abs1 + kBlock - 1) / kBlock; ++b) {
        BlockRec& r = recs[b];
        if (r.wPipe >= 0 && r.wPipe != q && c.clock[q][r.wPipe] < r.w.t)
            report(write ? "WAW (write after write)" : "RAW (read after write)", "wrote", pipe_t(r.wPipe), r.w, b);
        if (q == PIPE_V && !write && r.wPipe == PIPE_V && r.vBarriers == c.vBarriers && !c.L->prof->vectorPipeOrdered)
            Fail("vector pipe order",
                 Fmt("V op #%u '%s' reads %s bytes [%llu, %llu) of %s that V op #%u '%s' wrote, with no PipeBarrier<PIPE_V>() in "
                     "between: on %s the vector pipe does not order dependent instructions (PipeBarrier(ISASI).md)",
                     c.opSeq, c.curOp, ArenaName(s->arena), (unsigned long long)(b * kBlock),
                     (unsigned long long)(b * kBlock + kBlock), s->name.c_str(), r.w.seq, r.w.op, c.L->prof->name));
        if (write) {
            for (int p = 0; p < kNumPipes; ++p)
                if (p != q && r.r[p].t != 0 && c.clock[q][p] < r.r[p].t)
                    report("WAR (write after read)", "read", pipe_t(p), r.r[p], b);
            r.wPipe = static_cast<int8_t>(q);
            r.vBarriers = c.vBarriers;
            r.w = AccessRec{now, c.opSeq, c.curOp};
            for (auto& rr : r.r) rr = AccessRec{};
        } else {
            r.r[q] = AccessRec{now, c.opSeq, c.curOp};
        }
    }
}

SyncToken TakeToken(pipe_t pipe) {
    CoreCtx& c = Core("sync");
    SyncToken t;
    std::memcpy(t.c, c.clock[pipe], sizeof t.c);
    return t;
}
void JoinToken(pipe_t pipe, const SyncToken& t) {
    CoreCtx& c = Core("sync");
    for (int i = 0; i < kNumPipes; ++i) c.clock[pipe][i] = std::max(c.clock[pipe][i], t.c[i]);
}

void SetFlagImpl(HardEvent evt, int32_t id) {
    CoreCtx& c = Core("SetFlag");
    if (id < 0 || id >= kEventIdsPerType)
        Fail("bad event id", Fmt("SetFlag<HardEvent::%s>(%d): event ids are 0..%d", EventName(evt), id, kEventIdsPerType - 1));
    c.flags[static_cast<int>(evt) * kEventIdsPerType + id].push_back(TakeToken(EventSrc(evt)));
    TraceSync(FLA_SIM_TRACE_SET_FLAG, EventSrc(evt), EventDst(evt), uint32_t(static_cast<int>(evt) * kEventIdsPerType + id));
}
void WaitFlagImpl(HardEvent evt, int32_t id) {
    CoreCtx& c = Core("WaitFlag");
    if (id < 0 || id >= kEventIdsPerType)
        Fail("bad event id", Fmt("WaitFlag<HardEvent::%s>(%d): event ids are 0..%d", EventName(evt), id, kEventIdsPerType - 1));
    auto& q = c.flags[static_cast<int>(evt) * kEventIdsPerType + id];
    if (q.empty())
        Fail("WaitFlag without SetFlag",
             Fmt("WaitFlag<HardEvent::%s>(%d) has no pending SetFlag: the device would hang", EventName(evt), id));
    JoinToken(EventDst(evt), q.front());
    q.pop_front();
    TraceSync(FLA_SIM_TRACE_WAIT_FLAG, EventDst(evt), EventSrc(evt), uint32_t(static_cast<int>(evt) * kEventIdsPerType + id));
}
// Mmad.md: consecutive Mmads accumulating into the same L0C address need PipeBarrier<PIPE_M>
// between them when (m / 16) * (n / 16) < 10 (the Cube's accumulation would otherwise read C
// before the previous Mmad wrote it).
void NoteMmad(const Slot* dst, uint64_t byteOff, uint64_t bytes, bool accumulate, uint32_t m, uint32_t n) {
    CoreCtx& c = Core("Mmad");
    const uint64_t lo = dst->offset + byteOff, hi = lo + bytes;
    const uint64_t fractals = uint64_t(m / 16) * (n / 16);  // the page's integer division, as passed
    if (accumulate && !c.mmadBarrier && lo < c.mmadHi && c.mmadLo < hi && fractals < kMmadBarrierFractals)
        Fail("Mmad accumulation barrier",
             Fmt("Mmad (m %u, n %u: (m/16)*(n/16) = %llu < %u) accumulates into L0C bytes [%llu, %llu) that the previous Mmad "
                 "wrote, with no PipeBarrier<PIPE_M>() between them (Mmad.md: required when (m/16)*(n/16) < 10)",
                 m, n, static_cast<unsigned long long>(fractals), kMmadBarrierFractals, static_cast<unsigned long long>(lo),
                 static_cast<unsigned long long>(hi)));
    c.mmadLo = lo;
    c.mmadHi = hi;
    c.mmadBarrier = false;
}

void PipeBarrierImpl(pipe_t pipe) {
    CoreCtx& c = Core("PipeBarrier");
    TraceSync(FLA_SIM_TRACE_BARRIER, pipe, pipe, 0);
    if (pipe == PIPE_M || pipe == PIPE_ALL) c.mmadBarrier = true;
    if (pipe == PIPE_V || pipe == PIPE_ALL) ++c.vBarriers;
    if (pipe != PIPE_ALL) return;  // a single pipe is ordered with itself already (for the hazard clocks)
    uint32_t m[kNumPipes] = {};
    for (auto& row : c.clock)
        for (int i = 0; i < kNumPipes; ++i) m[i] = std::max(m[i], row[i]);
    for (auto& row : c.clock) std::memcpy(row, m, sizeof m);
}

// ---------------------------------------------------------------------------------------------
// Queues and TPipe.
void QueueProducerConsumer(TPosition pos, pipe_t& producer, pipe_t& consumer) {
    struct Pipes {
        pipe_t producer, consumer;
    };
    Pipes p{PIPE_V, PIPE_V};  // VECCALC and the rest: the vector unit alone
    switch (pos) {
        case TPosition::VECIN: p = {PIPE_MTE2, PIPE_V}; break;
        case TPosition::VECOUT: p = {PIPE_V, PIPE_MTE3}; break;
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1:
        case TPosition::TSCM: p = {PIPE_MTE2, PIPE_MTE1}; break;
        case TPosition::A2:
        case TPosition::B2: p = {PIPE_MTE1, PIPE_M}; break;
        case TPosition::CO1: p = {PIPE_M, PIPE_FIX}; break;
        case TPosition::CO2: p = {PIPE_FIX, PIPE_MTE3}; break;
        default: break;
    }
    producer = p.producer;
    consumer = p.consumer;
}

Slot* QueueBase::Alloc() {
    BeginOp(PIPE_S, "AllocTensor");
    if (!inited) Fail("queue used before InitBuffer", Fmt("AllocTensor on %s", name.empty() ? "a TQue" : name.c_str()));
    for (size_t k = 0; k < slots.size(); ++k) {
        const size_t i = (next + k) % slots.size();
        Slot* s = slots[i];
        if (s->state != SlotState::Free) continue;
        next = (i + 1) % slots.size();
        pipe_t prod, cons;
        QueueProducerConsumer(qpos, prod, cons);
        if (freeTokenValid[i]) {
            JoinToken(prod, freeToken[i]);
            TraceSync(FLA_SIM_TRACE_QUEUE_WAIT, prod, cons, QueueKey(traceId, uint32_t(i)));
        }
        s->state = SlotState::Allocated;
        std::memset(s->data, 0xFF, s->len);
        return s;
    }
    Fail("AllocTensor with no free buffer",
         Fmt("%s has %zu buffer(s), all allocated or queued (missing FreeTensor?)", name.c_str(), slots.size()));
}
static size_t SlotIndex(QueueBase& q, Slot* s) {
    return static_cast<size_t>(std::find(q.slots.begin(), q.slots.end(), s) - q.slots.begin());
}
void QueueBase::EnQue(Slot* s, uint32_t gen) {
    BeginOp(PIPE_S, "EnQue");
    if (!s || s->que != this)
        Fail("EnQue of a foreign tensor", Fmt("EnQue on %s of a tensor that is not one of its buffers", name.c_str()));
    if (gen != s->gen) Fail("use after free", Fmt("EnQue of %s after FreeTensor", s->name.c_str()));
    if (s->state != SlotState::Allocated)
        Fail("EnQue of a tensor not allocated",
             Fmt("EnQue of %s, which is %s (expected AllocTensor first)", s->name.c_str(), StateName(s->state)));
    if (qdepth > 0 && static_cast<int32_t>(fifo.size()) >= qdepth)
        Fail("EnQue past the queue depth",
             Fmt("%s has depth %d and already holds %zu tensor(s)", name.c_str(), qdepth, fifo.size()));
    pipe_t prod, cons;
    QueueProducerConsumer(qpos, prod, cons);
    enqToken[SlotIndex(*this, s)] = TakeToken(prod);
    TraceSync(FLA_SIM_TRACE_QUEUE_SET, prod, cons, QueueKey(traceId, kQueueFifo));
    s->state = SlotState::Enqueued;
    fifo.push_back(s);
}
Slot* QueueBase::DeQue() {
    BeginOp(PIPE_S, "DeQue");
    if (!inited) Fail("queue used before InitBuffer", "DeQue");
    if (fifo.empty())
        Fail("DeQue of an empty queue", Fmt("DeQue on %s with no tensor enqueued: the device would hang", name.c_str()));
    Slot* s = fifo.front();
    fifo.pop_front();
    pipe_t prod, cons;
    QueueProducerConsumer(qpos, prod, cons);
    JoinToken(cons, enqToken[SlotIndex(*this, s)]);
    TraceSync(FLA_SIM_TRACE_QUEUE_WAIT, cons, prod, QueueKey(traceId, kQueueFifo));
    s->state = SlotState::Dequeued;
    return s;
}
void QueueBase::Free(Slot* s, uint32_t gen) {
    BeginOp(PIPE_S, "FreeTensor");
    if (!s || s->que != this)
        Fail("FreeTensor of a foreign tensor", Fmt("FreeTensor on %s of a tensor that is not one of its buffers", name.c_str()));
    if (gen != s->gen || s->state == SlotState::Free)
        Fail("double free", Fmt("FreeTensor of %s, which was already released by FreeTensor", s->name.c_str()));
    if (s->state == SlotState::Enqueued)
        Fail("FreeTensor of an enqueued tensor", Fmt("%s is still in the queue (DeQue it first)", s->name.c_str()));
    pipe_t prod, cons;
    QueueProducerConsumer(qpos, prod, cons);
    const size_t i = SlotIndex(*this, s);
    freeToken[i] = TakeToken(cons);
    TraceSync(FLA_SIM_TRACE_QUEUE_SET, cons, prod, QueueKey(traceId, uint32_t(i)));
    freeTokenValid[i] = true;
    s->state = SlotState::Free;
    ++s->gen;
}
int32_t QueueBase::Vacant() const {
    return (qdepth > 0 ? qdepth : static_cast<int32_t>(slots.size())) - static_cast<int32_t>(fifo.size());
}

TPipe::TPipe() : core_(&Core("TPipe")) { core_->pipe = this; }
TPipe::~TPipe() {
    if (core_->pipe == this) core_->pipe = nullptr;
}
TPipe* GetTPipePtr() {
    CoreCtx& c = Core("GetTPipePtr");
    if (!c.pipe) Fail("GetTPipePtr with no TPipe", "the core has constructed no TPipe (or it was destroyed)");
    return c.pipe;
}

Slot* TPipe::Carve(TPosition pos, uint32_t len, const std::string& name) {
    CoreCtx& c = Core("InitBuffer");
    if (&c != core_) Fail("TPipe of another core", "InitBuffer");
    CheckPositionOnCore(c, pos, "InitBuffer");
    const ArenaKind a = ArenaOf(pos);
    const int ai = static_cast<int>(a);
    // UB, L1: 32 B; L0A/L0B: 512 B (one fractal); L0C: 1024 B (one 16 x 16 fp32 fractal).
    static const uint32_t align[] = {32, 32, 512, 512, 1024};
    const uint32_t start = (used_[ai] + align[ai] - 1) / align[ai] * align[ai];
    const uint32_t rlen = (len + kBlock - 1) / kBlock * kBlock;
    const uint32_t cap = c.L->prof->arenaBytes[ai];
    if (len == 0) Fail("InitBuffer of zero bytes", name);
    if (uint64_t(start) + rlen > cap)
        Fail(std::string(ArenaName(a)) + " overflow",
             Fmt("InitBuffer(%s, %u bytes) needs bytes [%u, %llu) but %s holds %u bytes on %s (%u already in use)", name.c_str(),
                 rlen, start, (unsigned long long)start + rlen, ArenaName(a), cap, c.L->prof->name, used_[ai]));
    if (slots_.size() >= 64) Fail("too many buffers", "a TPipe manages at most 64 buffers (QBUF_MAX_LEN)");
    uint8_t* base = ArenaData(c, a);
    slots_.emplace_back();
    Slot* s = &slots_.back();
    s->core = &c;
    s->arena = a;
    s->pos = pos;
    s->offset = start;
    s->len = rlen;
    s->data = base + start;
    s->name = name;
    std::memset(s->data, 0xFF, rlen);
    used_[ai] = start + rlen;
    NoteArenaUse(c, a, used_[ai]);
    return s;
}

void TPipe::InitQueue(QueueBase& q, uint8_t num, uint32_t len) {
    q.traceId = Core("InitBuffer").nextQueueId++;
    if (q.inited) Fail("InitBuffer twice", "the queue already has buffers");
    if (num < 1) Fail("InitBuffer with no buffers", "num must be >= 1");
    q.name = Fmt("TQue<%s>#%d", PositionName(q.qpos), nque_++);
    for (int i = 0; i < num; ++i) {
        Slot* s = Carve(q.qpos, len, Fmt("%s buffer %d", q.name.c_str(), i));
        s->state = SlotState::Free;
        s->que = &q;
        q.slots.push_back(s);
    }
    q.enqToken.assign(num, SyncToken{});
    q.freeToken.assign(num, SyncToken{});
    q.freeTokenValid.assign(num, false);
    q.inited = true;
}

TEventID TPipe::AllocEvent(HardEvent evt) {
    Core("AllocEventID");
    uint8_t& used = eventUsed_[static_cast<int>(evt)];
    for (int i = 0; i < kEventIdsPerType; ++i)
        if (!(used & (1u << i))) {
            used |= static_cast<uint8_t>(1u << i);
            return static_cast<TEventID>(i);
        }
    Fail("event ids exhausted", Fmt("AllocEventID<HardEvent::%s>: all %d ids are in use", EventName(evt), kEventIdsPerType));
}
void TPipe::ReleaseEvent(HardEvent evt, TEventID id) {
    Core("ReleaseEventID");
    eventUsed_[static_cast<int>(evt)] &= static_cast<uint8_t>(~(1u << id));
}
TEventID TPipe::FetchEventID(HardEvent evt) {
    Core("FetchEventID");
    const uint8_t used = eventUsed_[static_cast<int>(evt)];
    for (int i = 0; i < kEventIdsPerType; ++i)
        if (!(used & (1u << i))) return static_cast<TEventID>(i);
    Fail("event ids exhausted", Fmt("FetchEventID(HardEvent::%s): all ids are in use", EventName(evt)));
}
void TPipe::Destroy() {
    for (Slot& s : slots_) {
        s.state = SlotState::Dead;
        ++s.gen;
    }
    std::fill(std::begin(used_), std::end(used_), 0u);
}
void TPipe::Reset() { Destroy(); }

// ---------------------------------------------------------------------------------------------
// Cross-core flags, SyncAll, deadlock detection. All under LaunchState::mu.
// True when every unfinished core is blocked on a condition that does not hold (under L.mu).
// A core that was woken but has not run yet still counts as blocked, so its condition is re-tested.
static bool AllStuck(LaunchState& L) {
    if (L.blocked < L.alive) return false;
    int stuck = 0;
    for (auto& c : L.cores)
        if (!c->finished && c->waitPred && !(*c->waitPred)()) ++stuck;
    return stuck == L.alive;
}

static std::string DeadlockReport(LaunchState& L) {
    std::string s;
    for (auto& c : L.cores) {
        if (!s.empty()) s += "; ";
        s += c->label + (c->finished ? " finished" : c->waiting.empty() ? " running" : " waits in " + c->waiting);
    }
    return s;
}

// Block until pred() holds; detects "every unfinished core is blocked" and the wall-clock timeout.
template <class Pred>
static void BlockUntil(CoreCtx& c, std::unique_lock<std::mutex>& lk, const std::string& what, Pred pred) {
    LaunchState& L = *c.L;
    if (pred()) return;
    const std::function<bool()> fpred = pred;
    c.waiting = what;
    c.waitPred = &fpred;
    ++L.blocked;
    struct Unblock {
        CoreCtx& c;
        ~Unblock() {
            --c.L->blocked;
            c.waiting.clear();
            c.waitPred = nullptr;
        }
    } unblock{c};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(L.timeoutSec);
    for (;;) {
        if (L.abort) throw Aborted{};
        if (pred()) return;
        if (AllStuck(L)) Fail("deadlock", "every unfinished core is blocked: " + DeadlockReport(L));
        if (L.cv.wait_until(lk, deadline) == std::cv_status::timeout && !pred() && !L.abort)
            Fail("deadlock", Fmt("no progress for %.0f s (FLA_SIM_DEADLOCK_TIMEOUT): ", L.timeoutSec) + DeadlockReport(L));
    }
}

// The cores a flag set by `setter` in `mode` reaches, and for a target the group it waits for.
static std::vector<CoreCtx*> GroupOf(LaunchState& L, CoreCtx& x, int mode, bool setterSide) {
    std::vector<CoreCtx*> g;
    for (auto& up : L.cores) {
        CoreCtx* o = up.get();
        bool in = false;
        if (mode == 0) in = o->type == x.type;
        else if (mode == 1) in = o->type == AIV && o->block == x.block;
        else if (mode == 2) in = o->block == x.block && o->type != x.type;
        (void)setterSide;
        if (in) g.push_back(o);
    }
    return g;
}

// Rules shared by both sides of a cross-core flag (CrossCoreSetFlag.md, SyncAll.md).
static void CheckCrossCoreFlag(const CoreCtx& c, const char* api, int mode, uint16_t flagId) {
    if (flagId >= kCrossCoreFlags) Fail("bad cross-core flag id", Fmt("%s<%d>(%u): flag ids are 0..15", api, mode, flagId));
    if (flagId >= kSyncAllFlagFirst && flagId <= kSyncAllFlagLast)
        Fail("reserved cross-core flag id", Fmt("%s<%d>(%u): ids %d..%d are used by SyncAll internally", api, mode, flagId,
                                                kSyncAllFlagFirst, kSyncAllFlagLast));
    if (c.L->type == KERNEL_TYPE_AIV_ONLY || c.L->type == KERNEL_TYPE_AIC_ONLY)
        Fail("cross-core flag outside a mixed kernel",
             Fmt("%s in a %s kernel: cross-core flags need a mixed kernel type (KERNEL_TYPE_MIX_*); in AIV-only and AIC-only "
                 "kernels the cross-core scheduler is off",
                 api, KernelTypeName(c.L->type)));
}

void CrossCoreSetFlagImpl(int mode, pipe_t pipe, uint16_t flagId) {
    BeginOp(pipe, "CrossCoreSetFlag");
    CoreCtx& c = Core("CrossCoreSetFlag");
    LaunchState& L = *c.L;
    CheckCrossCoreFlag(c, "CrossCoreSetFlag", mode, flagId);
    if (mode == 2 && (L.aicPerBlock == 0 || L.aivPerBlock == 0))
        Fail("bad cross-core mode", Fmt("CrossCoreSetFlag<2> (AIC <-> AIV) in a %s kernel", KernelTypeName(L.type)));
    if (mode > 2)
        Fail("unsupported cross-core mode", Fmt("CrossCoreSetFlag<%d>: the simulation supports modes 0, 1 and 2", mode));
    if (pipe == PIPE_S || pipe == PIPE_ALL)
        Fail("bad cross-core pipe",
             Fmt("CrossCoreSetFlag<%d, PIPE_%s>: modes 0-2 need a pipe other than PIPE_S/PIPE_ALL", mode, PipeName(pipe)));
    if (mode == 1 && c.type != AIV)
        Fail("bad cross-core mode", "CrossCoreSetFlag<1> (AIVs of one AI core) called on an AIC core");
    TraceSync(FLA_SIM_TRACE_XSET, pipe, pipe, flagId, uint8_t(mode));
    std::unique_lock<std::mutex> lk(L.mu);
    // Targets: mode 0 all cores of my type, mode 1 the AIVs of my block, mode 2 the other side of my block.
    std::vector<CoreCtx*> targets = GroupOf(L, c, mode, true);
    for (CoreCtx* t : targets) {
        // The target completes a set when every member of its group has set.
        std::vector<CoreCtx*> grp = GroupOf(L, *t, mode, false);
        if (mode == 0 || mode == 1) grp = targets;
        auto& part = t->xpartial[{mode, flagId}];
        part.resize(grp.size(), 0);
        const size_t me = static_cast<size_t>(std::find(grp.begin(), grp.end(), &c) - grp.begin());
        if (me >= grp.size()) continue;
        const bool complete = ++part[me] >= 1 && *std::min_element(part.begin(), part.end()) >= 1;
        if (part[me] > kCrossCoreMaxPending || (complete && t->xflag[flagId] >= kCrossCoreMaxPending))
            Fail("cross-core flag overflow", Fmt("CrossCoreSetFlag<%d>(%u) to core %s: more than %d pending sets (4-bit counter; "
                                                 "the device hangs or raises an exception)",
                                                 mode, flagId, t->label.c_str(), kCrossCoreMaxPending));
        if (complete) {
            for (int& p : part) --p;
            ++t->xflag[flagId];
        }
    }
    L.cv.notify_all();
}

void CrossCoreWaitFlagImpl(int mode, pipe_t pipe, uint16_t flagId) {
    BeginOp(pipe == PIPE_ALL ? PIPE_S : pipe, "CrossCoreWaitFlag");
    CoreCtx& c = Core("CrossCoreWaitFlag");
    CheckCrossCoreFlag(c, "CrossCoreWaitFlag", mode, flagId);
    TraceSync(FLA_SIM_TRACE_XWAIT, pipe == PIPE_ALL ? PIPE_S : pipe, PIPE_S, flagId, uint8_t(mode));
    LaunchState& L = *c.L;
    std::unique_lock<std::mutex> lk(L.mu);
    BlockUntil(c, lk, Fmt("CrossCoreWaitFlag(%u) [0 complete sets pending]", flagId), [&] { return c.xflag[flagId] > 0; });
    --c.xflag[flagId];
}

void SyncAllImpl(bool aivOnly) {
    BeginOp(PIPE_S, "SyncAll");
    CoreCtx& c = Core("SyncAll");
    LaunchState& L = *c.L;
    if (aivOnly && c.type != AIV)
        Fail("SyncAll<true> on an AIC core",
             "SyncAll<true>() synchronises vector cores only; use SyncAll<false>() in mixed kernels");
    TraceSync(FLA_SIM_TRACE_SYNC_ALL, PIPE_S, PIPE_S, 0, aivOnly ? 1 : 0);
    PipeBarrierImpl(PIPE_ALL);
    const int g = aivOnly ? 0 : 1;
    int members = 0;
    for (auto& o : L.cores) members += (!aivOnly || o->type == AIV);
    std::unique_lock<std::mutex> lk(L.mu);
    const uint64_t gen = L.barGen[g];
    if (++L.barCount[g] == members) {
        L.barCount[g] = 0;
        ++L.barGen[g];
        L.cv.notify_all();
        return;
    }
    BlockUntil(c, lk, Fmt("SyncAll<%s>() [%d of %d cores arrived]", aivOnly ? "true" : "false", L.barCount[g], members),
               [&] { return L.barGen[g] != gen; });
}

// ---------------------------------------------------------------------------------------------
// Launch.
struct LastLaunch {
    std::mutex mu;
    int ok = -1;
    std::string error, kernel;
    std::vector<FlaSimCounters> ctr;
    std::vector<FlaSimCoreInfo> info;
    std::vector<std::vector<FlaSimTraceRecord>> trace;
    bool traceTruncated = false;
};
static LastLaunch& Last() {
    static LastLaunch l;
    return l;
}

void RunLaunch(const char* name, KernelMetaType type, uint32_t numBlocks, const SocProfile& prof,
               const std::function<void()>& body) {
    if (g_cur) Fail("nested launch", Fmt("kernel '%s' launched from inside a kernel", name));
    LaunchState L;
    L.name = name;
    L.type = type;
    L.numBlocks = numBlocks;
    L.prof = &prof;
    L.wsBegin = g_nextWsBegin;
    L.wsEnd = g_nextWsBegin + g_nextWsBytes;
    g_nextWsBegin = nullptr;
    g_nextWsBytes = 0;
    if (const char* t = std::getenv("FLA_SIM_DEADLOCK_TIMEOUT")) L.timeoutSec = std::atof(t);
    const int traceSetting = g_traceSetting.load();
    const char* traceEnv = std::getenv("FLA_SIM_TRACE");
    L.tracing = traceSetting == 1 || (traceSetting < 0 && traceEnv && *traceEnv && std::strcmp(traceEnv, "0") != 0);
    L.traceMax = size_t(8) << 20;
    if (const char* m = std::getenv("FLA_SIM_TRACE_MAX")) L.traceMax = size_t(std::strtoull(m, nullptr, 10));
    switch (type) {
        case KERNEL_TYPE_AIV_ONLY:
        case KERNEL_TYPE_MIX_AIV_1_0: L.aivPerBlock = 1; break;
        case KERNEL_TYPE_AIC_ONLY:
        case KERNEL_TYPE_MIX_AIC_1_0: L.aicPerBlock = 1; break;
        case KERNEL_TYPE_MIX_AIC_1_1:
            L.aicPerBlock = 1;
            L.aivPerBlock = 1;
            break;
        case KERNEL_TYPE_MIX_AIC_1_2:
            L.aicPerBlock = 1;
            L.aivPerBlock = 2;
            break;
    }
    const bool mixed = L.aicPerBlock > 0 && L.aivPerBlock > 0;
    std::string err;
    if (numBlocks == 0 || numBlocks > 256)
        err = Fmt("fla-npu sim: kernel '%s': launch with %u blocks (1..256 supported)", name, numBlocks);
    for (uint32_t b = 0; b < numBlocks && err.empty(); ++b) {
        for (int i = 0; i < L.aicPerBlock; ++i) {
            auto c = std::make_unique<CoreCtx>();
            c->type = AIC;
            c->block = int(b);
            c->sub = 0;
            c->blockIdx = b;
            c->label = mixed ? Fmt("AIC%u (block %u)", b, b) : Fmt("AIC%u", b);
            L.cores.push_back(std::move(c));
        }
        for (int i = 0; i < L.aivPerBlock; ++i) {
            auto c = std::make_unique<CoreCtx>();
            c->type = AIV;
            c->block = int(b);
            c->sub = i;
            c->blockIdx = int64_t(b) * L.aivPerBlock + i;
            c->label = mixed ? Fmt("AIV%lld (block %u, sub %d)", (long long)c->blockIdx, b, i) : Fmt("AIV%u", b);
            L.cores.push_back(std::move(c));
        }
    }
    for (auto& c : L.cores) {
        c->L = &L;
        c->tracing = L.tracing;
    }
    L.alive = static_cast<int>(L.cores.size());

    auto record = [&](const std::string& msg) {
        std::lock_guard<std::mutex> lk(L.mu);
        if (L.error.empty()) L.error = msg;
        L.abort = true;
        L.cv.notify_all();
    };
    auto run = [&](CoreCtx* c) {
        g_cur = c;
        try {
            body();
            // Kernel end: every intra-core flag set must have been waited.
            for (auto& kv : c->flags)
                if (!kv.second.empty())
                    Fail("unbalanced SetFlag",
                         Fmt("SetFlag<HardEvent::%s>(%d) was never waited at kernel end",
                             EventName(HardEvent(kv.first / kEventIdsPerType)), kv.first % kEventIdsPerType));
        } catch (const Fault& f) { record(f.what()); } catch (const Aborted&) {
        } catch (const std::exception& e) {
            record("fla-npu sim: kernel '" + L.name + "' core " + c->label + ": host exception: " + e.what());
        }
        {
            std::lock_guard<std::mutex> lk(L.mu);
            c->finished = true;
            --L.alive;
            if (L.alive > 0 && !L.abort && AllStuck(L)) {
                if (L.error.empty())
                    L.error =
                        "fla-npu sim: kernel '" + L.name + "': deadlock: every unfinished core is blocked: " + DeadlockReport(L);
                L.abort = true;
            }
            L.cv.notify_all();
        }
        g_cur = nullptr;
    };
    if (err.empty()) {
        std::vector<std::thread> threads;
        threads.reserve(L.cores.size());
        for (auto& c : L.cores) threads.emplace_back(run, c.get());
        for (auto& t : threads) t.join();
        err = L.error;
    }
    {
        LastLaunch& last = Last();
        std::lock_guard<std::mutex> lk(last.mu);
        last.ok = err.empty() ? 1 : 0;
        last.error = err;
        last.kernel = name;
        last.ctr.clear();
        last.info.clear();
        last.trace.clear();
        last.traceTruncated = false;
        for (auto& c : L.cores) {
            last.trace.push_back(std::move(c->trace));
            last.traceTruncated = last.traceTruncated || c->traceTruncated;
            last.ctr.push_back(c->ctr);
            last.info.push_back(FlaSimCoreInfo{c->type == AIC ? 0 : 1, int32_t(c->blockIdx), c->sub, 0});
        }
    }
    if (!err.empty()) throw LaunchError(err);
}

}  // namespace sim
}  // namespace AscendC

// ---------------------------------------------------------------------------------------------
// C interface.
using AscendC::sim::Last;
extern "C" {
int fla_sim_last_launch_ok(void) {
    std::lock_guard<std::mutex> lk(Last().mu);
    return Last().ok;
}
const char* fla_sim_last_error(void) {
    static thread_local std::string copy;
    std::lock_guard<std::mutex> lk(Last().mu);
    copy = Last().error;
    return copy.c_str();
}
const char* fla_sim_last_kernel(void) {
    static thread_local std::string copy;
    std::lock_guard<std::mutex> lk(Last().mu);
    copy = Last().kernel;
    return copy.c_str();
}
int fla_sim_last_core_count(void) {
    std::lock_guard<std::mutex> lk(Last().mu);
    return static_cast<int>(Last().ctr.size());
}
int fla_sim_last_core_counters(int i, FlaSimCounters* out, FlaSimCoreInfo* info) {
    std::lock_guard<std::mutex> lk(Last().mu);
    if (i < 0 || i >= static_cast<int>(Last().ctr.size())) return -1;
    if (out) *out = Last().ctr[i];
    if (info) *info = Last().info[i];
    return 0;
}
int fla_sim_set_trace(int on) {
    const int prev = AscendC::sim::g_traceSetting.exchange(on ? 1 : 0);
    return prev == 1 ? 1 : 0;
}
int64_t fla_sim_last_trace_length(int i) {
    std::lock_guard<std::mutex> lk(Last().mu);
    if (i < 0 || i >= static_cast<int>(Last().trace.size())) return -1;
    return static_cast<int64_t>(Last().trace[size_t(i)].size());
}
int64_t fla_sim_last_trace(int i, FlaSimTraceRecord* out, int64_t capacity) {
    std::lock_guard<std::mutex> lk(Last().mu);
    if (i < 0 || i >= static_cast<int>(Last().trace.size())) return -1;
    const auto& t = Last().trace[size_t(i)];
    const int64_t n = std::min<int64_t>(capacity, static_cast<int64_t>(t.size()));
    if (out && n > 0) std::memcpy(out, t.data(), size_t(n) * sizeof(FlaSimTraceRecord));
    return out ? n : 0;
}
int fla_sim_last_trace_truncated(void) {
    std::lock_guard<std::mutex> lk(Last().mu);
    return Last().traceTruncated ? 1 : 0;
}
int fla_sim_last_total_counters(FlaSimCounters* out) {
    std::lock_guard<std::mutex> lk(Last().mu);
    if (!out || Last().ok < 0) return -1;
    FlaSimCounters t{};
    for (const auto& c : Last().ctr) {
        t.gm_to_local_bytes += c.gm_to_local_bytes;
        t.local_to_gm_bytes += c.local_to_gm_bytes;
        t.vector_elem_ops += c.vector_elem_ops;
        t.cube_macs += c.cube_macs;
        t.ws_to_local_bytes += c.ws_to_local_bytes;
        t.local_to_ws_bytes += c.local_to_ws_bytes;
        t.peak_ub_bytes = std::max(t.peak_ub_bytes, c.peak_ub_bytes);
        t.peak_l1_bytes = std::max(t.peak_l1_bytes, c.peak_l1_bytes);
        t.peak_l0a_bytes = std::max(t.peak_l0a_bytes, c.peak_l0a_bytes);
        t.peak_l0b_bytes = std::max(t.peak_l0b_bytes, c.peak_l0b_bytes);
        t.peak_l0c_bytes = std::max(t.peak_l0c_bytes, c.peak_l0c_bytes);
    }
    *out = t;
    return 0;
}
}
