"""Gated DeltaNet gate: ``g [..., HV] -> -exp(A_log) * softplus(g + dt_bias)``, its backward and the
fused gate + chunk-local cumsum stage. ``A_log`` and ``dt_bias`` have ``HV`` elements."""

from __future__ import annotations

import torch

from ...runtime.routing import use_sim
from ..common import validate as V
from ..common.activations import compute_dtype, gate_bwd, gate_fwd
from ..common.chunk_fwd import chunk_local_cumsum_tokens


def _params(g, A_log, dt_bias, dtype):
    HV = g.shape[-1]
    return A_log.to(dtype).reshape(HV), None if dt_bias is None else dt_bias.to(dtype).reshape(HV)


def gdn_gate_fwd(g: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor | None = None,
                 output_dtype: torch.dtype | None = torch.float32) -> torch.Tensor:
    """Forward of the GDN gate, computed in float32 (float64 for float64 ``g``)."""
    if A_log is None:
        raise ValueError("`A_log` must be provided for the GDN gate.")
    V.check_gate("gdn_gate_fwd", g, A_log, dt_bias, per_key=False)
    ct = compute_dtype(g)
    A, b = _params(g, A_log, dt_bias, ct)
    y = gate_fwd(g.to(ct), A, b, None)
    return y if output_dtype is None else y.to(output_dtype)


def gdn_gate_bwd(g: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor | None = None,
                 dyg: torch.Tensor | None = None):
    """Backward of the GDN gate: ``(dg, dA_log, ddt_bias)`` shaped like their operands."""
    if A_log is None:
        raise ValueError("`A_log` must be provided for the GDN gate.")
    V.check_gate("gdn_gate_bwd", g, A_log, dt_bias, per_key=False, dyg=dyg, backward=True)
    ct = compute_dtype(g, dyg)
    A, b = _params(g, A_log, dt_bias, ct)
    dg, dA, db = gate_bwd(g.to(ct), A, b, None, dyg.to(ct))
    return dg, dA.reshape(A_log.shape).to(A_log.dtype), None if db is None else db.reshape(dt_bias.shape).to(dt_bias.dtype)


class GDNGateFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, g, A_log, dt_bias, output_dtype):
        ctx.save_for_backward(g, A_log, dt_bias)
        return gdn_gate_fwd(g, A_log, dt_bias, output_dtype)

    @staticmethod
    def backward(ctx, dy):
        g, A_log, dt_bias = ctx.saved_tensors
        dg, dA, db = gdn_gate_bwd(g, A_log, dt_bias, dy)
        return dg.to(g.dtype), dA, db, None


def fused_gdn_gate(g: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor | None = None,
                   output_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """GDN gate with autograd (FLA's ``fused_gdn_gate``): ``g`` ``[..., HV]``, ``A_log`` and optional
    ``dt_bias`` with ``HV`` elements; returns the log decay ``[..., HV]`` in ``output_dtype``."""
    return GDNGateFunction.apply(g, A_log, dt_bias, output_dtype)


def gdn_gate_chunk_cumsum(g: torch.Tensor, A_log: torch.Tensor, chunk_size: int, scale: float | None = None,
                          dt_bias: torch.Tensor | None = None, cu_seqlens: torch.Tensor | None = None,
                          chunk_indices: torch.Tensor | None = None,
                          output_dtype: torch.dtype | None = torch.float) -> torch.Tensor:
    """First stage of chunked GDN: gate activation then chunk-local cumsum (restarting at every
    chunk of every sequence), times ``scale`` if given. ``g`` ``[B, T, HV]``; forward only."""
    if g.dim() != 3:
        raise ValueError(f"gdn_gate_chunk_cumsum: `g` must be [B, T, HV], got shape {list(g.shape)}.")
    if chunk_size <= 0 or chunk_size & (chunk_size - 1):
        raise ValueError(f"gdn_gate_chunk_cumsum: `chunk_size` must be a power of 2, got {chunk_size}.")
    if use_sim("gdn_gate_chunk_cumsum", g):  # FLA_NPU_CPU_IMPL=sim: the Ascend C kernel, simulated
        if A_log is None:
            raise ValueError("`A_log` must be provided for the GDN gate.")
        from ...runtime.op_calls import gate_chunk_cumsum_tokens
        return gate_chunk_cumsum_tokens("gdn_gate_chunk_cumsum", g, chunk_size, "softplus", A_log, dt_bias, None, scale,
                                        cu_seqlens, chunk_indices, output_dtype or g.dtype)
    y = gdn_gate_fwd(g, A_log, dt_bias, None)
    return chunk_local_cumsum_tokens(y, chunk_size, scale, cu_seqlens, chunk_indices, output_dtype or g.dtype,
                                     "gdn_gate_chunk_cumsum")
