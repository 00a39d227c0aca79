"""The WY kernel (``csrc/wy_fast/``, stage 3 of chunked KDA / Gated DeltaNet) called through the C
entry points ``flaNpuWyFastGetWorkspaceSize`` / ``flaNpuWyFast``."""

from __future__ import annotations

import torch

from . import _native as N

KERNEL_DTYPES = (torch.float16, torch.bfloat16)  # the Cube input type: k, v, Akk
CHUNK_SIZES = (16, 32, 64)
MAX_HEAD_DIM = 256

ENTRY = "flaNpuWyFast"
KERNEL = N.KernelEntry(ENTRY, "WY kernel")


def unsupported(dtype: torch.dtype, BT: int, K: int, V: int) -> str | None:
    """Why the kernel cannot take a call with these facts (``None`` if it can): the limits the C
    entry point checks, stated here so that a router can fall back before building any input."""
    return N.chunk_layout_unsupported(dtype, BT, K, V, KERNEL_DTYPES, CHUNK_SIZES, MAX_HEAD_DIM)


def wy_fast(k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, Akk: torch.Tensor, e_row: torch.Tensor,
            e_tail: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the kernel in the chunk layout: ``w = Akk @ (beta * k * e_row)``, ``u = Akk @ (beta * v)``,
    ``kg = k * e_tail`` with ``k`` ``[NC, HV, BT, K]``, ``v`` ``[NC, HV, BT, V]``, ``Akk`` ``[NC, HV, BT, BT]``
    (one dtype, float16 or bfloat16), ``beta`` ``[NC, HV, BT]``, ``e_row`` / ``e_tail`` ``[NC, HV, BT,
    K or 1]`` (float32) -> ``(w, u, kg)`` float32. The scaled ``k`` and ``v`` are formed in float32 and
    rounded once to ``k``'s dtype for the Cube, which accumulates in float32."""
    lib = KERNEL.library()
    k, v, beta, Akk, e_row, e_tail = (t.contiguous() for t in (k, v, beta, Akk, e_row, e_tail))
    w = torch.empty(k.shape, dtype=torch.float32, device=k.device)
    u = torch.empty(v.shape, dtype=torch.float32, device=k.device)
    kg = torch.empty(k.shape, dtype=torch.float32, device=k.device)
    descs = [N.tensor_desc(t) for t in (k, v, beta, Akk, e_row, e_tail, w, u, kg)]
    N.run_two_phase(lib, ENTRY, tuple(N.ref(d) for d in descs), k.device)
    return w, u, kg


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched
