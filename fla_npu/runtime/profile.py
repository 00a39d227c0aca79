"""``fla_npu.profile()``: record every kernel launch made inside a ``with`` block.

::

    with fla_npu.profile() as prof:
        fla_npu.chunk_kda(...)
    for launch in prof.launches:
        print(launch["kernel"], launch["gm_read_bytes"], launch["cube_macs"])

Each launch is a dict: ``kernel`` (the op's C entry point, e.g. ``"flaNpuWyFast"``), ``block_dim``
(AI cores launched), ``device`` and, from the host simulation's counters (``None`` on an NPU, whose
kernels count nothing), ``gm_read_bytes``, ``gm_write_bytes``, ``cube_macs``, ``vector_ops``,
``ws_read_bytes`` / ``ws_write_bytes`` (the part of the GM bytes that went to or from the launch's own
workspace: the AIV <-> AIC hand-offs, which on the device mostly stay in L2) and ``sim_kernel`` (the
simulated kernel's name). A call that launches nothing (no work) adds nothing.
Profiles nest; each sees the launches of its own block, on every thread.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

_lock = threading.Lock()
_active: list["Profile"] = []


@dataclass
class Profile:
    """The launches recorded by one :func:`profile` block, in launch order."""
    launches: list = field(default_factory=list)

    def kernels(self) -> list:
        """The ``kernel`` of every launch, in order."""
        return [launch["kernel"] for launch in self.launches]

    def total(self, key: str) -> int:
        """The sum of one counter (e.g. ``"gm_read_bytes"``) over the launches; raises ``ValueError``
        when a launch has no counters (NPU launches)."""
        values = [launch[key] for launch in self.launches]
        if any(v is None for v in values):
            raise ValueError(f"fla_npu.profile: {key} is counted by the host simulation only; these launches ran on an NPU")
        return sum(values)


@contextmanager
def profile():
    """Record the kernel launches of the block (see the module docstring); yields a :class:`Profile`."""
    prof = Profile()
    with _lock:
        _active.append(prof)
    try:
        yield prof
    finally:
        with _lock:
            _active.remove(prof)


def recording() -> bool:
    """Whether a :func:`profile` block is open (the launcher then calls :func:`record`)."""
    return bool(_active)


def record(entry: str, block_dim: int, device, sim_launch) -> None:
    """Add one launch to every open profile (``sim_launch``: the simulation's
    :class:`~fla_npu.runtime._native.SimLaunch` of it, or ``None`` on an NPU)."""
    totals = None if sim_launch is None else sim_launch.totals
    launch = {
        "kernel": entry,
        "block_dim": int(block_dim),
        "device": str(device),
        "sim_kernel": None if sim_launch is None else sim_launch.kernel,
        "gm_read_bytes": None if totals is None else totals.gm_to_local_bytes,
        "gm_write_bytes": None if totals is None else totals.local_to_gm_bytes,
        "cube_macs": None if totals is None else totals.cube_macs,
        "vector_ops": None if totals is None else totals.vector_elem_ops,
        "ws_read_bytes": None if totals is None else totals.ws_to_local_bytes,
        "ws_write_bytes": None if totals is None else totals.local_to_ws_bytes,
    }
    with _lock:
        for prof in _active:
            prof.launches.append(dict(launch))
