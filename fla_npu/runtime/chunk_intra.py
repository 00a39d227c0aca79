"""The intra-chunk kernel (``csrc/chunk_intra/``, stage 2 of chunked KDA / Gated DeltaNet) called
through the C entry points ``flaNpuChunkIntraGetWorkspaceSize`` / ``flaNpuChunkIntra``."""

from __future__ import annotations

import torch

from . import _native as N

KERNEL_DTYPES = (torch.float16, torch.bfloat16)  # the Cube input type: q, k
CHUNK_SIZES = (16, 32, 64)
MAX_HEAD_DIM = 256

ENTRY = "flaNpuChunkIntra"
KERNEL = N.KernelEntry(ENTRY, "intra-chunk kernel")


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
    lib = KERNEL.library()
    q, k, beta, G = (t.contiguous() for t in (q, k, beta, G))
    shape = (*q.shape[:3], q.shape[2]) if q.dim() == 4 else q.shape
    Aqk = torch.empty(shape, dtype=out_dtype, device=q.device)
    L = torch.empty(shape, dtype=out_dtype, device=q.device)
    descs = [N.tensor_desc(t) for t in (q, k, beta, G, Aqk, L)]
    N.run_two_phase(lib, ENTRY, tuple(N.ref(d) for d in descs), q.device)
    return Aqk, L


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched
