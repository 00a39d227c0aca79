"""Gold references for Gated DeltaNet: the naive recurrence and the gate formula, in plain PyTorch."""

from __future__ import annotations

import torch.nn.functional as F

from ..common.naive import naive_recurrent_batch


def naive_recurrent_gated_delta_rule(q, k, v, beta, g, scale=None, initial_state=None, output_final_state=False,
                                     cu_seqlens=None, gk=None, gv=None):
    """Token-by-token GDN in the inputs' dtype (FLA's argument order: ``beta`` before ``g``), with GVA.
    ``q, k`` ``[B, T, H, K]``, ``v`` ``[B, T, HV, V]``, ``g`` ``[B, T, HV]`` (log decay, or None),
    ``beta`` ``[B, T, HV]`` or ``[B, T, HV, V]``; optional ``gk`` ``[B, T, HV, K]``, ``gv`` ``[B, T, HV, V]``."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, S = naive_recurrent_batch(q, k, v, beta, scale, g=g, gk=gk, gv=gv, initial_state=initial_state,
                                 cu_seqlens=cu_seqlens)
    return o, (S if output_final_state else None)


def naive_gdn_gate(g, A_log, dt_bias=None):
    """``-exp(A_log) * softplus(g + dt_bias)`` for ``g`` ``[..., HV]``."""
    x = g if dt_bias is None else g + dt_bias
    return -A_log.exp() * F.softplus(x)
