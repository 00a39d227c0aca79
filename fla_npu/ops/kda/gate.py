"""KDA gate: ``g [..., H, K] -> -exp(A_log) * softplus(g + dt_bias)`` (or, with ``lower_bound``,
``lower_bound * sigmoid(exp(A_log) * (g + dt_bias))``), its backward, and the fused
gate + chunk-local cumsum stage. ``A_log`` has ``H`` elements (any shape), ``dt_bias`` ``H*K``."""

from __future__ import annotations

import torch

from ...runtime.routing import use_sim
from ..common import validate as V
from ..common.activations import compute_dtype, gate_bwd, gate_fwd
from ..common.chunk_fwd import chunk_local_cumsum_tokens


def _params(g, A_log, dt_bias, dtype):
    H, K = g.shape[-2:]
    A = None if A_log is None else A_log.to(dtype).reshape(H, 1)
    b = None if dt_bias is None else dt_bias.to(dtype).reshape(H, K)
    return A, b


def _check(A_log, lower_bound):
    if A_log is None and lower_bound is None:
        raise ValueError("`A_log` must be provided unless `lower_bound` is set.")


def kda_gate_fwd(g: torch.Tensor, A_log: torch.Tensor | None = None, dt_bias: torch.Tensor | None = None,
                 lower_bound: float | None = None, output_dtype: torch.dtype | None = torch.float32) -> torch.Tensor:
    """Forward of the KDA gate; computed in float32 (float64 for float64 ``g``)."""
    V.check_gate("kda_gate_fwd", g, A_log, dt_bias, per_key=True)
    _check(A_log, lower_bound)
    ct = compute_dtype(g)
    A, b = _params(g, A_log, dt_bias, ct)
    y = gate_fwd(g.to(ct), A, b, lower_bound)
    return y if output_dtype is None else y.to(output_dtype)


def kda_gate_bwd(g: torch.Tensor, A_log: torch.Tensor | None = None, dt_bias: torch.Tensor | None = None,
                 dyg: torch.Tensor | None = None, lower_bound: float | None = None):
    """Backward of the KDA gate: ``(dg, dA_log, ddt_bias)``; ``dg`` in the compute dtype, ``dA_log``
    shaped like ``A_log`` and ``ddt_bias`` like ``dt_bias`` (``None`` where the operand is ``None``)."""
    V.check_gate("kda_gate_bwd", g, A_log, dt_bias, per_key=True, dyg=dyg, backward=True)
    _check(A_log, lower_bound)
    ct = compute_dtype(g, dyg)
    A, b = _params(g, A_log, dt_bias, ct)
    dg, dA, db = gate_bwd(g.to(ct), A, b, lower_bound, dyg.to(ct))
    dA = None if dA is None else dA.reshape(A_log.shape).to(A_log.dtype)
    db = None if db is None else db.reshape(dt_bias.shape).to(dt_bias.dtype)
    return dg, dA, db


class KDAGateFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, g, A_log, dt_bias, lower_bound, output_dtype):
        ctx.save_for_backward(g, A_log, dt_bias)
        ctx.lower_bound = lower_bound
        return kda_gate_fwd(g, A_log, dt_bias, lower_bound, output_dtype)

    @staticmethod
    def backward(ctx, dy):
        g, A_log, dt_bias = ctx.saved_tensors
        dg, dA, db = kda_gate_bwd(g, A_log, dt_bias, dy, ctx.lower_bound)
        return dg.to(g.dtype), dA, db, None, None


def fused_kda_gate(g: torch.Tensor, A_log: torch.Tensor | None = None, dt_bias: torch.Tensor | None = None,
                   lower_bound: float | None = None, output_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """KDA gate with autograd (same signature as FLA's ``fused_kda_gate``).

    Args:
        g: raw gate ``[..., H, K]``.
        A_log: ``H`` elements; may be ``None`` only with ``lower_bound``.
        dt_bias: optional ``[H * K]`` bias added to ``g`` first.
        lower_bound: ``None`` for ``-exp(A_log) * softplus(g + dt_bias)``; a float for
            ``lower_bound * sigmoid(exp(A_log) * (g + dt_bias))``.
        output_dtype: dtype of the result (float32 by default).
    Returns:
        the log-space decay, ``[..., H, K]``.
    """
    return KDAGateFunction.apply(g, A_log, dt_bias, lower_bound, output_dtype)


def kda_gate_chunk_cumsum(g: torch.Tensor, A_log: torch.Tensor | None, chunk_size: int, scale: float | None = None,
                          dt_bias: torch.Tensor | None = None, cu_seqlens: torch.Tensor | None = None,
                          output_dtype: torch.dtype | None = torch.float, chunk_indices: torch.Tensor | None = None,
                          lower_bound: float | None = None, use_graph: bool = False, **kwargs) -> torch.Tensor:
    """The first stage of chunked KDA: the gate activation followed by the chunk-local cumsum
    (restarting at every chunk of every sequence), multiplied by ``scale`` when given (FLA's chunk
    kernels pass ``1/ln 2`` to work in log2 units; fla-npu's read natural-log units, no scale).
    ``g`` ``[B, T, H, K]``; forward only, like FLA's.
    ``chunk_indices`` is accepted for signature compatibility and checked against ``cu_seqlens``
    (not with ``use_graph``, where FLA pads it with sentinel rows; the result does not depend on it)."""
    # FLA's checks, in FLA's order and with FLA's exception type (its asserts).
    if cu_seqlens is not None:
        assert g.shape[0] == 1, "Only batch size 1 is supported when cu_seqlens are provided"
    assert g.dim() == 4, f"kda_gate_chunk_cumsum: `g` must be [B, T, H, K], got shape {list(g.shape)}."
    assert chunk_size > 0 and not chunk_size & (chunk_size - 1), "chunk_size must be a power of 2"
    if use_sim("kda_gate_chunk_cumsum", g):  # FLA_NPU_CPU_IMPL=sim: the Ascend C kernel, simulated
        _check(A_log, lower_bound)
        from ...runtime.op_calls import gate_chunk_cumsum_tokens
        return gate_chunk_cumsum_tokens("kda_gate_chunk_cumsum", g, chunk_size,
                                        "softplus" if lower_bound is None else "sigmoid", A_log, dt_bias, lower_bound,
                                        scale, cu_seqlens, None if use_graph else chunk_indices, output_dtype or g.dtype)
    y = kda_gate_fwd(g, A_log, dt_bias, lower_bound, None)
    return chunk_local_cumsum_tokens(y, chunk_size, scale, cu_seqlens, None if use_graph else chunk_indices,
                                     output_dtype or g.dtype, "kda_gate_chunk_cumsum")

