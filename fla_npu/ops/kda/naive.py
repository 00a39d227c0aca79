"""Gold references for KDA: the naive recurrence and the two gate formulas, in plain PyTorch."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..common.naive import naive_recurrent_batch


def naive_recurrent_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None):
    """Token-by-token KDA in the inputs' dtype. ``q, k`` ``[B, T, H, K]``, ``v`` ``[B, T, HV, V]``,
    ``g`` ``[B, T, HV, K]`` (log decay), ``beta`` ``[B, T, HV]`` or ``[B, T, HV, V]``,
    ``initial_state`` ``[N, HV, K, V]``. Returns ``(o, final_state or None)``."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, S = naive_recurrent_batch(q, k, v, beta, scale, gk=g, initial_state=initial_state, cu_seqlens=cu_seqlens)
    return o, (S if output_final_state else None)


def naive_kda_gate(g, A_log, dt_bias=None):
    """``-exp(A_log) * softplus(g + dt_bias)`` for ``g`` ``[..., H, K]``."""
    H, K = g.shape[-2:]
    x = g if dt_bias is None else g + dt_bias.view(H, K)
    return -A_log.view(H, 1).exp() * F.softplus(x)


def naive_kda_lowerbound_gate(g, A_log=None, dt_bias=None, lower_bound=-5.0):
    """``lower_bound * sigmoid(exp(A_log) * (g + dt_bias))`` (no ``exp(A_log)`` factor if ``A_log`` is None)."""
    H, K = g.shape[-2:]
    x = g if dt_bias is None else g + dt_bias.view(H, K)
    if A_log is not None:
        x = A_log.view(H, 1).exp() * x
    return lower_bound * torch.sigmoid(x)
