"""The inter-chunk state kernel (``csrc/chunk_state/``, stage 4 of chunked KDA / Gated DeltaNet)
called through the C entry points ``flaNpuChunkStateGetWorkspaceSize`` / ``flaNpuChunkState``."""

from __future__ import annotations

import torch

from . import _native as N

KERNEL_DTYPES = (torch.float16, torch.bfloat16)  # the Cube type: w and kg as the kernel reads them
CHUNK_SIZES = (16, 32, 64)
MAX_HEAD_DIM = 256

ENTRY = "flaNpuChunkState"
KERNEL = N.KernelEntry(ENTRY, "inter-chunk state kernel")


def unsupported(cube_dtype: torch.dtype, BT: int, K: int, V: int) -> str | None:
    """Why the kernel cannot take a call with these facts (``None`` if it can): the limits the C
    entry point checks, stated here so that a router can fall back before building any input."""
    return N.chunk_layout_unsupported(cube_dtype, BT, K, V, KERNEL_DTYPES, CHUNK_SIZES, MAX_HEAD_DIM)


def _out_dtype(name: str, dtype: torch.dtype, cube_dtype: torch.dtype) -> torch.dtype:
    if dtype not in (torch.float32, cube_dtype):
        raise ValueError(f"chunk_state: `{name}` must be torch.float32 or the Cube dtype {cube_dtype}, got {dtype}")
    return dtype


def _check_offsets(offsets: torch.Tensor, NC: int) -> None:
    """Offsets the kernel could not read within bounds: decreasing, or outside [0, NC]."""
    if offsets.numel() and (int(offsets.min()) < 0 or int(offsets.max()) > NC or bool((offsets[1:] < offsets[:-1]).any())):
        raise ValueError(f"chunk_state: `chunk_offsets` must be non-decreasing within [0, NC = {NC}], got {offsets.tolist()}")


def chunk_state(w: torch.Tensor, u: torch.Tensor, kg: torch.Tensor, e_last: torch.Tensor, chunk_offsets: torch.Tensor,
                h0: torch.Tensor | None = None, state_v_first: bool = False, h_dtype: torch.dtype = torch.float32,
                v_new_dtype: torch.dtype = torch.float32,
                cube_dtype: torch.dtype = torch.bfloat16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the kernel in the chunk layout: per sequence ``n`` and head, ``S = h0[n]`` (or zeros),
    then for each of the sequence's chunks ``c`` (``chunk_offsets[n] <= c < chunk_offsets[n + 1]``,
    an int32 tensor ``[N + 1]`` read by the kernel, never by the host) ``h[c] = S``, ``v_new[c] = u[c]
    - w[c] @ S``, ``S = e_last[c, :, None] * S + kg[c]^T @ v_new[c]``; ``final[n] = S``.

    ``w``, ``kg`` ``[NC, HV, BT, K]`` are rounded once to ``cube_dtype`` (float16 or bfloat16: the
    Cube reads them in it; pass them in it to skip the cast), ``u`` ``[NC, HV, BT, V]`` and ``h0``
    ``[N, HV, K, V]`` (``[N, HV, V, K]`` with ``state_v_first``) are taken as float32, ``e_last``
    ``[NC, HV, K or 1]`` float32. Returns ``h`` ``[NC, HV, K, V]`` in ``h_dtype``, ``v_new`` ``[NC, HV,
    BT, V]`` in ``v_new_dtype`` (each float32 or ``cube_dtype``, rounded once) and ``final`` float32
    (``[N, HV, K, V]``, or ``[N, HV, V, K]`` with ``state_v_first``). The state stays in float32; the
    Cube multiplies it and ``v_new`` as hi + lo halves of ``cube_dtype``. Padding rows of tail chunks
    must hold zeros in ``w``, ``kg`` and ``u``."""
    if cube_dtype not in KERNEL_DTYPES:
        raise ValueError(f"chunk_state: `cube_dtype` must be torch.float16 or torch.bfloat16, got {cube_dtype}")
    h_dtype = _out_dtype("h_dtype", h_dtype, cube_dtype)
    v_new_dtype = _out_dtype("v_new_dtype", v_new_dtype, cube_dtype)
    lib = KERNEL.library()
    w, kg = (t.to(cube_dtype).contiguous() for t in (w, kg))
    u, e_last = (t.to(torch.float32).contiguous() for t in (u, e_last))
    h0 = None if h0 is None else h0.to(torch.float32).contiguous()
    chunk_offsets = chunk_offsets.contiguous()
    if w.dim() != 4 or u.dim() != 4 or chunk_offsets.dim() != 1:
        raise ValueError("chunk_state: `w`, `kg`, `u` must be [NC, HV, BT, D] and `chunk_offsets` [N + 1]")
    NC, HV, _, K = w.shape
    V = u.shape[-1]
    N_ = chunk_offsets.shape[0] - 1
    if chunk_offsets.device.type == "cpu" and chunk_offsets.dtype == torch.int32 and N_ >= 0:
        _check_offsets(chunk_offsets, NC)  # free on the host; on a device the kernel reads them as given
    h = torch.empty(NC, HV, K, V, dtype=h_dtype, device=w.device)
    v_new = torch.empty(u.shape, dtype=v_new_dtype, device=w.device)
    final = torch.empty((N_, HV, V, K) if state_v_first else (N_, HV, K, V), dtype=torch.float32, device=w.device)
    descs = [N.tensor_desc(t) for t in (w, u, kg, e_last, chunk_offsets, h0, h, v_new, final)]
    N.run_two_phase(lib, ENTRY, tuple(N.ref(d) for d in descs) + (int(bool(state_v_first)),), w.device)
    return h, v_new, final


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched
