"""The chunk output kernel (``csrc/chunk_output/``, stage 5 of chunked KDA / Gated DeltaNet) called
through the C entry points ``flaNpuChunkOutputGetWorkspaceSize`` / ``flaNpuChunkOutput``."""

from __future__ import annotations

import torch

from . import _native as N

KERNEL_DTYPES = (torch.float16, torch.bfloat16)  # the Cube input type: q, Aqk, v_new
CHUNK_SIZES = (16, 32, 64)
MAX_HEAD_DIM = 256

ENTRY = "flaNpuChunkOutput"
KERNEL = N.KernelEntry(ENTRY, "chunk output kernel")


def unsupported(dtype: torch.dtype, BT: int, K: int, V: int) -> str | None:
    """Why the kernel cannot take a call with these facts (``None`` if it can): the limits the C
    entry point checks, stated here so that a router can fall back before building any input."""
    return N.chunk_layout_unsupported(dtype, BT, K, V, KERNEL_DTYPES, CHUNK_SIZES, MAX_HEAD_DIM)


def chunk_output(q: torch.Tensor, e_row: torch.Tensor, S: torch.Tensor, Aqk: torch.Tensor, v_new: torch.Tensor) -> torch.Tensor:
    """Run the kernel: ``o = (q * e_row) @ S + Aqk @ v_new`` in the chunk layout, ``q`` ``[NC, HV, BT, K]``,
    ``e_row`` ``[NC, HV, BT, K or 1]`` (float32), ``S`` ``[NC, HV, K, V]`` (float32), ``Aqk``
    ``[NC, HV, BT, BT]``, ``v_new`` ``[NC, HV, BT, V]`` (``q``'s dtype, float16 or bfloat16) -> ``o``
    ``[NC, HV, BT, V]`` float32. ``q * e_row`` is formed in float32 and rounded to ``q``'s dtype, ``S``
    is rounded to it; the Cube accumulates in float32."""
    lib = KERNEL.library()
    q, e_row, S, Aqk, v_new = (t.contiguous() for t in (q, e_row, S, Aqk, v_new))
    out = torch.empty(v_new.shape, dtype=torch.float32, device=q.device)
    descs = [N.tensor_desc(t) for t in (q, e_row, S, Aqk, v_new, out)]
    N.run_two_phase(lib, ENTRY, tuple(N.ref(d) for d in descs), q.device)
    return out


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched
