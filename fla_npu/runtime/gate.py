"""The gate + chunk-local cumsum kernel (``csrc/gate/``) called through the C entry points
``flaNpuGateChunkCumsumGetWorkspaceSize`` / ``flaNpuGateChunkCumsum``."""

from __future__ import annotations

import torch

from . import _native as N

ACTIVATIONS = {"none": 0, "softplus": 1, "sigmoid": 2}

ENTRY = "flaNpuGateChunkCumsum"
KERNEL = N.KernelEntry(ENTRY, "gate + chunk-local cumsum kernel")


def chunk_list(cu_seqlens_cpu: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """FLA's ``chunk_indices`` for ``cu_seqlens``: ``[NC, 2]`` int32 rows (sequence, chunk of the
    sequence), in sequence order; zero-length sequences have no row."""
    cu = cu_seqlens_cpu.to(torch.int64)
    counts = (cu[1:] - cu[:-1] + chunk_size - 1) // chunk_size
    seq = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    first = torch.cumsum(counts, 0) - counts
    within = torch.arange(seq.numel()) - first[seq]
    return torch.stack([seq, within], 1).to(torch.int32).contiguous()


def gate_chunk_cumsum(g: torch.Tensor, chunk_size: int, activation: str = "none", A_log: torch.Tensor | None = None,
                      dt_bias: torch.Tensor | None = None, lower_bound: float | None = None, scale: float | None = None,
                      cu_seqlens_cpu: torch.Tensor | None = None) -> torch.Tensor:
    """Run the kernel: ``g`` ``[B, T, H, K]`` or ``[B, T, H]`` (fp32/fp16/bf16) -> the fp32 chunk-local
    cumsum of the activated gate times ``scale``, same shape. ``activation``: ``"none"``,
    ``"softplus"`` (``-exp(A_log) * softplus(g + dt_bias)``) or ``"sigmoid"`` (``lower_bound *
    sigmoid(exp(A_log) * (g + dt_bias))``). ``cu_seqlens_cpu``: validated varlen offsets (``B == 1``).
    A_log and dt_bias are passed to the kernel as float32."""
    lib = KERNEL.library()
    form = ACTIVATIONS[activation]
    x = g.contiguous()
    A = None if (A_log is None or form == 0) else A_log.detach().to(torch.float32).contiguous().reshape(-1)
    b = None if dt_bias is None else dt_bias.detach().to(torch.float32).contiguous().reshape(-1)
    cu = chunks = None
    if cu_seqlens_cpu is not None:
        cu = cu_seqlens_cpu.to(device=g.device, dtype=torch.int32).contiguous()
        chunks = chunk_list(cu_seqlens_cpu, chunk_size).to(g.device)
    out = torch.empty(x.shape, dtype=torch.float32, device=g.device)
    descs = [N.tensor_desc(t) for t in (x, A, b, cu, chunks, out)]
    N.run_two_phase(lib, ENTRY, (
        N.ref(descs[0]), N.ref(descs[1]), N.ref(descs[2]), N.ref(descs[3]), N.ref(descs[4]), int(chunk_size), form,
        float(0.0 if lower_bound is None else lower_bound), float(1.0 if scale is None else scale), N.ref(descs[5])), g.device)
    return out


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched


def gate_chunk_cumsum_tokens(fn: str, g: torch.Tensor, chunk_size: int, activation: str, A_log, dt_bias, lower_bound,
                             scale, cu_seqlens, chunk_indices, output_dtype) -> torch.Tensor:
    """The simulated kernel behind the public ``*_gate_chunk_cumsum`` helpers: the checks of the
    reference stage (``chunk_local_cumsum_tokens``), then the kernel, then ``output_dtype``."""
    from ..ops.common.validate import check_cu_seqlens

    if cu_seqlens is not None and g.shape[0] != 1:
        raise ValueError(f"{fn}: the batch size must be 1 when `cu_seqlens` is given, got {g.shape[0]}.")
    cpu = check_cu_seqlens(fn, cu_seqlens, g.shape[1], g.device)
    if chunk_indices is not None:
        nc = g.shape[0] * -(-g.shape[1] // chunk_size) if cpu is None else int(
            ((cpu[1:] - cpu[:-1] + chunk_size - 1) // chunk_size).sum())
        if chunk_indices.shape[0] != nc:
            raise ValueError(f"{fn}: `chunk_indices` has {chunk_indices.shape[0]} rows, the sequences have {nc} chunks.")
    if g.numel() == 0:  # B, T or H is 0: nothing to launch
        N.forget_launch(ENTRY)
        return torch.zeros(g.shape, dtype=output_dtype, device=g.device)
    out = gate_chunk_cumsum(g, chunk_size, activation, A_log, dt_bias, lower_bound, scale, cpu)
    return out.to(output_dtype)
