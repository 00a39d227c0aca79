"""Reading the instruction trace of the last simulated launch (``csrc/sim/sim_api.h``): per core, the
ordered records of its instructions (pipe, bytes / MACs / vector repeats) and synchronisation events
(flags, queues, barriers, cross-core flags), as numpy structured arrays.

Tracing is off unless asked: :func:`tracing` turns it on around a block of launches (or set
``FLA_SIM_TRACE=1`` in the environment)."""

from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass

import numpy as np

from ..runtime._native import FlaSimTraceRecord, declare_sim_trace

# FLA_SIM_TRACE_* (sim_api.h)
INSTR, SET_FLAG, WAIT_FLAG, QUEUE_SET, QUEUE_WAIT, BARRIER, XSET, XWAIT, SYNC_ALL = range(9)
# pipe_t (sim_base.h)
S, V, M, MTE1, MTE2, MTE3, FIX, ALL = range(8)
PIPE_NAMES = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
# FLA_SIM_MEM_* (where an instruction's bytes go; MEM_WS: GM, in the launch's workspace)
MEM_GM, MEM_ONCHIP, MEM_L0A, MEM_L0B, MEM_WS = range(5)
GM_KINDS = (MEM_GM, MEM_WS)
AIC, AIV = 0, 1

RECORD = np.dtype([("kind", "u1"), ("pipe", "u1"), ("peer", "u1"), ("detail", "u1"), ("key", "<u4"),
                   ("amount", "<u8"), ("passes", "<u8")])


assert ctypes.sizeof(FlaSimTraceRecord) == RECORD.itemsize == 24


def declare(lib: ctypes.CDLL) -> bool:
    """Declare the trace functions of ``lib`` (a library built with the simulation); False if it has
    none (an NPU build, or a library older than the trace)."""
    return declare_sim_trace(lib)


@dataclass(frozen=True)
class CoreTrace:
    """One simulated core: ``core_type`` (0 AIC, 1 AIV), ``block`` (the AI core it belongs to),
    ``sub`` (AIV index within it) and its records (:data:`RECORD` array, program order)."""
    core_type: int
    block: int
    sub: int
    records: np.ndarray


@dataclass(frozen=True)
class LaunchTrace:
    """The trace of one launch: the kernel's name and its cores."""
    kernel: str
    cores: tuple

    @property
    def blocks(self) -> int:
        return 1 + max((c.block for c in self.cores), default=-1)

    def gm_bytes(self, where=GM_KINDS) -> int:
        """Bytes the launch moved between GM and the cores (MTE2 in, MTE3 / Fixpipe out); ``where``:
        ``(MEM_WS,)`` for those of its workspace only, ``(MEM_GM,)`` for the rest."""
        total = 0
        for c in self.cores:
            r = c.records
            gm = (r["kind"] == INSTR) & np.isin(r["detail"], where) & np.isin(r["pipe"], (MTE2, MTE3, FIX))
            total += int(r["amount"][gm].sum())
        return total


def _library(lib):
    if lib is None:
        from ..runtime import _native
        lib = _native.load_library()
    if not declare(lib):
        raise RuntimeError("this fla_npu library has no instruction trace (an NPU build, or built before the trace: rebuild)")
    return lib


@contextlib.contextmanager
def tracing(lib: ctypes.CDLL | None = None):
    """Record the instruction trace of every launch inside the block (``lib``: the loaded kernel
    library by default)."""
    lib = _library(lib)
    prev = lib.fla_sim_set_trace(1)
    try:
        yield lib
    finally:
        lib.fla_sim_set_trace(prev)


def last_trace(lib: ctypes.CDLL | None = None) -> LaunchTrace:
    """The trace of the last simulated launch of ``lib``. Raises ``RuntimeError`` when it failed,
    was not traced or hit the record limit (``FLA_SIM_TRACE_MAX``)."""
    lib = _library(lib)
    if lib.fla_sim_last_launch_ok() != 1:
        raise RuntimeError("no successful simulated launch to read the trace of")
    if lib.fla_sim_last_trace_truncated():
        raise RuntimeError("the trace of the last launch was truncated (raise FLA_SIM_TRACE_MAX)")
    from ..runtime._native import FlaSimCoreInfo
    infos = []
    for i in range(lib.fla_sim_last_core_count()):
        info = FlaSimCoreInfo()
        lib.fla_sim_last_core_counters(i, None, ctypes.byref(info))
        infos.append((info.core_type, info.block_idx, info.sub_block_idx))
    n_aic = sum(1 for t, _, _ in infos if t == AIC)
    n_aiv = len(infos) - n_aic
    ratio = n_aiv // n_aic if n_aic and n_aiv else 1
    cores = []
    for i, (ctype, bidx, sub) in enumerate(infos):
        n = lib.fla_sim_last_trace_length(i)
        recs = np.zeros(max(n, 0), dtype=RECORD)
        if n > 0:
            lib.fla_sim_last_trace(i, recs.ctypes.data, n)
        block = bidx // ratio if ctype == AIV else bidx
        cores.append(CoreTrace(ctype, block, sub, recs))
    if cores and all(len(c.records) == 0 for c in cores):
        raise RuntimeError("the last launch was not traced (wrap it in fla_npu.perf.trace.tracing())")
    return LaunchTrace(lib.fla_sim_last_kernel().decode(), tuple(cores))
