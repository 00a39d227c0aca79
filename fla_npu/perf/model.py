"""The timing model: a discrete-event replay of a launch's instruction trace (:mod:`.trace`) with the
per-SoC costs of :mod:`.soc_constants`. Every figure it returns is a ``model`` estimate.

Per core: the scalar unit issues the instructions in program order; each pipe (S, V, M, MTE1, MTE2,
MTE3, FIX) executes its own in order, one at a time, an instruction costing a fixed latency plus its
size over the pipe's rate (bytes over the core's share of HBM bandwidth for MTE2 / MTE3 / Fixpipe to
GM, of L2 bandwidth when the bytes are the launch's workspace, all through one GM port per core;
bytes over the L1 -> L0 rate for MTE1; 16 x 16 x C0 steps over the Cube rate for M; 256-byte
repeats over the vector rate for V). A WaitFlag (and a DeQue, and
an AllocTensor of a freed buffer: the flags a queue implies) holds its pipe until the matching
SetFlag's pipe reached it; a wait on the scalar pipe holds the issue of everything after it;
PipeBarrier<PIPE_ALL> waits for every pipe; cross-core flags and SyncAll are matched across cores
(the cores are replayed together, each running until it waits for a flag another core has not set
yet). A core's time is when its last pipe finishes; a block (an AIC and its AIVs) takes its slowest
core; the launch takes the blocks scheduled onto the SoC's cores, at least its GM bytes over the
achieved HBM bandwidth (its workspace bytes over the L2 bandwidth), plus the launch overhead.

What it leaves out (assumptions, see the README's performance section): instruction queues of
unlimited depth, one rate for every vector instruction, L2 only for the workspace (the AIV <-> AIC
hand-offs, a few MB rewritten and read back within a chunk: assumed resident; every other GM byte
goes to HBM, re-reads included), no bank conflicts, bandwidth shared evenly by the cores that move
GM bytes."""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from . import trace as T
from .soc_constants import SocPerf

LABEL = "model"


@dataclass(frozen=True)
class CoreEstimate:
    core_type: int
    block: int
    sub: int
    time_s: float
    busy_s: dict          # pipe name -> seconds the pipe was executing


@dataclass(frozen=True)
class LaunchEstimate:
    """The model's estimate of one launch on one SoC (``label`` is always ``"model"``)."""
    kernel: str
    soc: str
    time_s: float            # launch time: schedule of the blocks (or the GM bound) + launch overhead
    blocks_s: tuple          # each block's time (its slowest core)
    cores: tuple             # CoreEstimate per simulated core
    gm_bytes: int
    gm_bound_s: float        # gm_bytes over the achieved HBM bandwidth (the workspace's over L2's)
    gm_share_bytes_per_s: float
    ws_bytes: int = 0        # of gm_bytes, the workspace's (served by L2)
    label: str = LABEL

    def busy_s(self, pipe: str) -> float:
        """Total seconds pipe ``pipe`` was busy, over all cores."""
        return sum(c.busy_s.get(pipe, 0.0) for c in self.cores)


class _Core:
    """Replay state of one core."""

    def __init__(self, ct: T.CoreTrace):
        self.ct = ct
        self.rec = ct.records.tolist()  # tuples: faster to walk than the structured array
        self.i = 0
        self.issue = 0.0
        self.pf = [0.0] * 7            # when each pipe is free
        self.gate = [0.0] * 7          # the latest flag / barrier a pipe waited for
        self.port = []                 # the GM port's busy intervals (start, end), sorted
        self.port_busy = 0.0           # seconds the port moved HBM bytes (the refinement of the share)
        self.flags = defaultdict(deque)
        self.busy = [0.0] * 7
        self.xavail = defaultdict(deque)  # cross-core flag id -> completion times
        self.syncs = 0

    @property
    def done(self) -> bool:
        return self.i >= len(self.rec)

    def end(self) -> float:
        return max(self.issue, *self.pf)


class _Costs:
    def __init__(self, soc: SocPerf, gm_share: float, ws_share: float):
        c = soc.clock_hz
        self.lat = [soc.latency_cycles[n] / c for n in T.PIPE_NAMES]
        self.gm_lat = soc.gm_latency_cycles / c
        self.gm_share = gm_share
        self.ws_share = ws_share
        self.vec = 1.0 / (soc.vector_passes_per_cycle * c)
        self.cube_step = {2: 4096 / soc.cube_macs_per_cycle / c}   # per fractal step (one cycle at 4096 MAC/cycle)
        self.l0 = {T.MEM_L0A: 1.0 / (soc.l0a_bytes_per_cycle * c), T.MEM_L0B: 1.0 / (soc.l0b_bytes_per_cycle * c),
                   T.MEM_ONCHIP: 1.0 / (soc.onchip_bytes_per_cycle * c), T.MEM_GM: 1.0 / (soc.onchip_bytes_per_cycle * c)}
        self.onchip = 1.0 / (soc.onchip_bytes_per_cycle * c)
        self.issue = 1.0 / c
        self.barrier = soc.barrier_drain_cycles / c
        self.flag = soc.flag_latency_cycles / c
        self.xcore = soc.cross_core_latency_s
        self.sync_all = soc.sync_all_s


def gm_share(soc: SocPerf, requesters: int) -> float:
    """Bytes/s one core's MTE2/MTE3 get when ``requesters`` cores move GM bytes at once: the achieved
    HBM bandwidth split evenly, capped by one core's port."""
    return min(soc.gm_port_bytes_per_cycle * soc.clock_hz, soc.hbm_bytes_per_s * soc.hbm_efficiency / max(1, requesters))


def gm_bound(soc: SocPerf, gm_bytes: float, ws_bytes: float) -> float:
    """Seconds a launch moving ``gm_bytes`` (``ws_bytes`` of them its workspace's) takes at least:
    the rest over the achieved HBM bandwidth, the workspace's over the L2 bandwidth."""
    return (gm_bytes - ws_bytes) / (soc.hbm_bytes_per_s * soc.hbm_efficiency) + ws_bytes / soc.l2_bytes_per_s


def l2_share(soc: SocPerf, requesters: int) -> float:
    """Bytes/s one core gets for workspace moves when ``requesters`` cores move GM bytes: the L2
    bandwidth split evenly, capped by one core's port."""
    return min(soc.gm_port_bytes_per_cycle * soc.clock_hz, soc.l2_bytes_per_s / max(1, requesters))


def _moves_gm(c: T.CoreTrace) -> bool:
    r = c.records
    return bool(((r["kind"] == T.INSTR) & np.isin(r["detail"], T.GM_KINDS) & (r["amount"] > 0)
                 & ((r["pipe"] == T.MTE2) | (r["pipe"] == T.MTE3) | (r["pipe"] == T.FIX))).any())


def gm_moving_types(tr: T.LaunchTrace) -> set:
    """The core types (AIC, AIV) of ``tr`` that move GM bytes."""
    return {c.core_type for c in tr.cores if _moves_gm(c)}


def gm_requesters(tr: T.LaunchTrace, soc: SocPerf) -> int:
    """The cores of ``tr`` that move GM bytes, at most the SoC's cores of each type."""
    moving = [c for c in tr.cores if _moves_gm(c)]
    aic = sum(1 for c in moving if c.core_type == T.AIC)
    return min(aic, soc.ai_cores) + min(len(moving) - aic, soc.aiv_cores)


def _claim(port: list, earliest: float, dur: float, horizon: float) -> float:
    """Book ``dur`` seconds of a GM port (busy intervals ``port``) in the first gap from ``earliest``
    (a transfer issued later in program order may run before an earlier one that waits); intervals
    ending before ``horizon`` (no transfer can start before it) are dropped. Returns the start."""
    while port and port[0][1] <= horizon:
        port.pop(0)
    t = earliest
    i = 0
    while i < len(port):
        s, e = port[i]
        if t + dur <= s:
            break
        t = max(t, e)
        i += 1
    port.insert(i, (t, t + dur))
    return t


def _targets(cores: list, setter: _Core, mode: int) -> list:
    s = setter.ct
    if mode == 0:
        return [c for c in cores if c.ct.core_type == s.core_type]
    if mode == 1:
        return [c for c in cores if c.ct.core_type == T.AIV and c.ct.block == s.block]
    return [c for c in cores if c.ct.block == s.block and c.ct.core_type != s.core_type]


class _CrossCore:
    """Cross-core flags as the simulation counts them: a target completes a set once every member
    of its group set it (mode 2 on the AIC: both AIVs)."""

    def __init__(self, cores: list):
        self.cores = cores
        self.pending = {}  # (target index, mode, flag) -> {member index: deque of times}

    def set(self, setter: _Core, mode: int, flag: int, t: float, latency: float):
        targets = _targets(self.cores, setter, mode)
        for tgt in targets:
            group = targets if mode in (0, 1) else _targets(self.cores, tgt, mode)
            key = (id(tgt), mode, flag)
            part = self.pending.setdefault(key, {id(m): deque() for m in group})
            if id(setter) not in part:
                continue
            part[id(setter)].append(t)
            if all(part.values()):
                tgt.xavail[flag].append(max(q.popleft() for q in part.values()) + latency)


def _run_core(c: _Core, k: _Costs, xc: _CrossCore, sync_groups: dict) -> bool:
    """Replay core ``c`` until it ends or waits for another core; True if it made progress."""
    rec, pf, busy = c.rec, c.pf, c.busy
    start_i = c.i
    n = len(rec)
    while c.i < n:
        kind, pipe, peer, detail, key, amount, passes = rec[c.i]
        if kind == T.INSTR:
            if pipe == T.S:
                cost = k.lat[0]
            elif pipe == T.V:
                cost = k.lat[1] + passes * k.vec
            elif pipe == T.M:
                cost = k.lat[2] + passes * k.cube_step[2]
            elif pipe == T.MTE1:
                cost = k.lat[3] + amount * k.l0.get(detail, k.onchip)
            elif detail in T.GM_KINDS and pipe in (T.MTE2, T.MTE3, T.FIX):
                # Requests are pipelined: the access latency of one overlaps the bytes of the one
                # before on its pipe, unless a flag or barrier held the pipe; the bytes hold the
                # core's GM port (HBM's share, or L2's for the workspace).
                req = max(c.issue, c.gate[pipe]) + k.lat[pipe] + k.gm_lat
                dur = amount / (k.gm_share if detail == T.MEM_GM else k.ws_share)
                data = _claim(c.port, max(req, pf[pipe]), dur, min(pf[T.MTE2], pf[T.MTE3], pf[T.FIX]))
                pf[pipe] = data + dur
                if detail == T.MEM_GM:
                    c.port_busy += dur
                busy[pipe] += dur + k.lat[pipe]
                c.issue += k.issue
                c.i += 1
                continue
            else:
                cost = k.lat[pipe] + amount * k.onchip
            start = max(c.issue, pf[pipe])
            pf[pipe] = start + cost
            busy[pipe] += cost
            c.issue = pf[pipe] if pipe == T.S else c.issue + k.issue
        elif kind in (T.SET_FLAG, T.QUEUE_SET):
            t = max(c.issue, pf[pipe])
            pf[pipe] = t
            c.flags[(kind, key)].append(t + k.flag)
            c.issue += k.issue
        elif kind in (T.WAIT_FLAG, T.QUEUE_WAIT):
            q = c.flags.get((kind - 1, key))
            if q:
                t = q.popleft()
                pf[pipe] = max(pf[pipe], t)
                c.gate[pipe] = max(c.gate[pipe], t)
            if pipe == T.S:
                c.issue = max(c.issue, pf[pipe])
        elif kind == T.BARRIER:
            if pipe == T.ALL:
                t = c.end()
                c.issue = t
                for p in range(7):
                    pf[p] = c.gate[p] = t
            else:
                pf[pipe] += k.barrier
                c.gate[pipe] = pf[pipe]
        elif kind == T.XSET:
            t = max(c.issue, pf[pipe])
            pf[pipe] = t
            xc.set(c, detail, key, t, k.xcore)
        elif kind == T.XWAIT:
            q = c.xavail[key]
            if not q:
                return c.i > start_i
            t = q.popleft()
            pf[pipe] = max(pf[pipe], t)
            c.gate[pipe] = max(c.gate[pipe], t)
            if pipe == T.S:
                c.issue = max(c.issue, t)
        elif kind == T.SYNC_ALL:
            group = sync_groups[detail]
            gen = c.syncs
            arrivals = group["arrivals"].setdefault(gen, {})
            arrivals[id(c)] = c.end()
            if len(arrivals) < group["size"]:
                return c.i > start_i
            t = max(arrivals.values()) + k.sync_all
            c.issue = t
            for p in range(7):
                pf[p] = c.gate[p] = t
            c.syncs += 1
        c.i += 1
    return True


def _schedule(block_times: list, slots: int) -> float:
    """Blocks run on ``slots`` AI cores, each block to the first free one (launch order)."""
    if len(block_times) <= slots:
        return max(block_times, default=0.0)
    free = [0.0] * slots
    for b in block_times:
        heapq.heappush(free, heapq.heappop(free) + b)
    return max(free)


def _replay(tr: T.LaunchTrace, soc: SocPerf, share: float, ws_share: float) -> list:
    k = _Costs(soc, share, ws_share)
    cores = [_Core(ct) for ct in tr.cores]
    xc = _CrossCore(cores)
    sync_groups = {1: {"size": sum(1 for c in cores if c.ct.core_type == T.AIV), "arrivals": {}},
                   0: {"size": len(cores), "arrivals": {}}}
    while not all(c.done for c in cores):
        progress = False
        for c in cores:
            if not c.done and _run_core(c, k, xc, sync_groups):
                progress = True
        if not progress:
            raise RuntimeError(f"timing model: the trace of {tr.kernel} waits for a cross-core flag or SyncAll "
                               "that no core sets (an inconsistent trace)")
    return cores


def estimate(tr: T.LaunchTrace, soc: SocPerf, requesters: int | None = None) -> LaunchEstimate:
    """Model the launch ``tr`` on ``soc``. ``requesters``: how many cores share GM bandwidth (default:
    the cores of this launch that move GM bytes; the bench passes a full chip's when it extrapolates).

    The even split is refined a few times: bandwidth a core leaves unused while it waits (its GM
    port idle) goes to the others, so the share grows by the inverse of the mean port utilisation."""
    req = gm_requesters(tr, soc) if requesters is None else requesters
    cap = soc.gm_port_bytes_per_cycle * soc.clock_hz
    share, ws_share = gm_share(soc, req), l2_share(soc, req)
    for _ in range(4):
        cores = _replay(tr, soc, share, ws_share)
        moving = [c for c in cores if c.port_busy > 0]
        util = sum(c.port_busy for c in moving) / max(1e-30, sum(c.end() for c in moving)) if moving else 1.0
        new = min(cap, soc.hbm_bytes_per_s * soc.hbm_efficiency / (max(1, req) * max(util, 1e-3)))
        if abs(new - share) <= 0.01 * share:
            break
        share = new
    per_core = tuple(CoreEstimate(c.ct.core_type, c.ct.block, c.ct.sub, c.end(),
                                  {T.PIPE_NAMES[p]: c.busy[p] for p in range(7)}) for c in cores)
    blocks: dict[int, float] = {}
    for ce in per_core:
        blocks[ce.block] = max(blocks.get(ce.block, 0.0), ce.time_s)
    block_times = tuple(blocks[b] for b in sorted(blocks))
    gm, ws = tr.gm_bytes(), tr.gm_bytes((T.MEM_WS,))
    bound = gm_bound(soc, gm, ws)
    slots = soc.ai_cores if any(c.core_type == T.AIC for c in tr.cores) else soc.aiv_cores
    t = max(_schedule(list(block_times), slots), bound) + soc.launch_overhead_s
    return LaunchEstimate(tr.kernel, soc.name, t, block_times, per_core, gm, bound, share, ws)
