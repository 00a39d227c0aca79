"""The intra-chunk kernel (``csrc/chunk_intra/``, stage 2 of chunked KDA / Gated DeltaNet) called
through the C entry points ``flaNpuChunkIntraGetWorkspaceSize`` / ``flaNpuChunkIntra``."""

from __future__ import annotations

import torch

from . import _native as N

KERNEL_DTYPES = (torch.float16, torch.bfloat16)  # the Cube input type: q, k
CHUNK_SIZES = (16, 32, 64)
MAX_HEAD_DIM = 256

ENTRY = "flaNpuChunkIntra"


def unsupported(dtype: torch.dtype, BT: int, K: int) -> str | None:
    """Why the kernel cannot take a call with these facts (``None`` if it can): the limits the C
    entry point checks, stated here so that a router can fall back before building any input."""
    return N.chunk_layout_unsupported(dtype, BT, K, K, KERNEL_DTYPES, CHUNK_SIZES, MAX_HEAD_DIM)


def chunk_intra(q: torch.Tensor, k: torch.Tensor, beta: torch.Tensor, G: torch.Tensor,
                out_dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the kernel in the chunk layout: ``Aqk[i, j] = sum_d q[i, d] k[j, d] 2**(G[i, d] - G[j, d])``
    (``j <= i``, 0 above) and ``L[i, j] = beta[i] sum_d k[i, d] k[j, d] 2**(G[i, d] - G[j, d])``
    (``j < i``, 0 on and above the diagonal), the matrix whose ``(I + L)**-1`` is ``Akk``.

    ``q``, ``k`` ``[NC, HV, BT, K]`` (one dtype, float16 or bfloat16; ``q`` carries the scale), ``beta``
    ``[NC, HV, BT]`` float32, ``G`` ``[NC, HV, BT, K or 1]`` float32, the chunk-local cumulative log2
    decay (non-increasing along a chunk; padding rows hold the chunk's last value) -> ``(Aqk, L)``
    ``[NC, HV, BT, BT]`` of ``out_dtype`` (float32, or ``q``'s dtype: rounded once on write). Exact
    for any decaying gate: the products run on the Cube through factors that cannot overflow (the
    factored operands rounded once to ``q``'s dtype), a diagonal 16 x 16 block whose decay is too
    wide for that exactly on the vector unit."""
    lib = N.load_library()
    if not hasattr(lib, "flaNpuChunkIntraGetWorkspaceSize"):
        raise N.NativeLibraryError(f"{N.library_path()} has no intra-chunk kernel: rebuild fla-npu")
    q, k, beta, G = (t.contiguous() for t in (q, k, beta, G))
    shape = (*q.shape[:3], q.shape[2]) if q.dim() == 4 else q.shape
    Aqk = torch.empty(shape, dtype=out_dtype, device=q.device)
    L = torch.empty(shape, dtype=out_dtype, device=q.device)
    descs = [N.tensor_desc(t) for t in (q, k, beta, G, Aqk, L)]
    N.run_two_phase(lib, ENTRY, tuple(N.ref(d) for d in descs), q.device)
    return Aqk, L


def last_tiling() -> dict:
    """The tiling of the last ``chunk_intra`` call on this thread, as a dict."""
    return N.read_last_tiling(ENTRY)


def last_launch() -> N.SimLaunch | None:
    """Simulation counters of the last launch (``None`` if nothing was launched: no chunk)."""
    return N.last_launch(ENTRY)
