"""The triangular-inverse kernel (``csrc/solve_tril/``, second half of stage 2 of chunked KDA / Gated
DeltaNet) called through the C entry points ``flaNpuSolveTrilGetWorkspaceSize`` / ``flaNpuSolveTril``."""

from __future__ import annotations

import torch

from . import _native as N

INPUT_DTYPES = (torch.float32,)  # L: the Cube reads its off-diagonal blocks as they are
OUTPUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
CHUNK_SIZES = (16, 32, 64)

ENTRY = "flaNpuSolveTril"
KERNEL = N.KernelEntry(ENTRY, "triangular-inverse kernel")


def unsupported(dtype: torch.dtype, BT: int, out_dtype: torch.dtype = torch.float32) -> str | None:
    """Why the kernel cannot take a call with these facts (``None`` if it can): ``dtype`` is ``L``'s,
    ``out_dtype`` the one asked of ``Akk``; the limits the C entry point checks, stated here so that a
    router can fall back before building any input."""
    if dtype not in INPUT_DTYPES:
        return f"the kernel takes a float32 L, not {dtype}"
    if out_dtype not in OUTPUT_DTYPES:
        return f"the kernel writes Akk as float32, float16 or bfloat16, not {out_dtype}"
    if BT not in CHUNK_SIZES:
        return f"chunk_size {BT} (the kernel takes {', '.join(map(str, CHUNK_SIZES))})"
    return None


def solve_tril(L: torch.Tensor, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Run the kernel in the chunk layout: ``Akk = (I + L)^-1`` for ``L`` ``[NC, HV, BT, BT]`` float32,
    strictly lower triangular (only the part below the diagonal is read: whatever the diagonal and the
    upper triangle hold is ignored) -> ``Akk`` ``[NC, HV, BT, BT]`` of ``out_dtype`` (float32, float16
    or bfloat16): unit lower triangular, exact zeros above the diagonal, computed in float32 and
    rounded once to ``out_dtype``."""
    lib = KERNEL.library()
    L = L.contiguous()
    Akk = torch.empty(L.shape, dtype=out_dtype, device=L.device)
    descs = [N.tensor_desc(t) for t in (L, Akk)]
    N.run_two_phase(lib, ENTRY, tuple(N.ref(d) for d in descs), L.device)
    return Akk


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched
