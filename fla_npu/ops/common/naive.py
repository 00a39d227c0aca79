"""The naive token-by-token delta rule: the gold every implementation is compared with.

Deliberately plain: one Python loop over tokens per sequence, written from the recurrence
``S_t = (I - b_t k_t k_t^T) D_t S_{t-1} + b_t k_t v_t^T``, ``o_t = S_t^T (scale q_t)``, with
``D_t = diag(exp(gk_t)) * exp(g_t) * diag(exp(gv_t))`` acting on rows (keys) / columns (values).
Runs in the dtype of its inputs (tests use float64). Works on one sequence ``[T, ...]`` at a time.
"""

from __future__ import annotations

import torch


def naive_recurrent_delta_rule(q, k, v, beta, scale, g=None, gk=None, gv=None, initial_state=None, steps=None):
    """One sequence: ``q, k`` ``[T, HV, K]`` (already expanded to HV heads), ``v`` ``[T, HV, V]``,
    ``beta`` ``[T, HV]`` or ``[T, HV, V]``, ``g`` ``[T, HV]``, ``gk`` ``[T, HV, K]``, ``gv`` ``[T, HV, V]``,
    ``initial_state`` ``[HV, K, V]``. Returns ``(o [T, HV, V], S [HV, K, V])``. ``steps``: a list that
    gets, per token, ``(k_t, u_t, S_t)``: the key, the residual ``u_t = v_t - k_t^T D_t S_{t-1}`` that
    ``b_t`` scales, and the state after the token (tests differentiate through them)."""
    T, HV, K = k.shape
    Vd = v.shape[-1]
    S = torch.zeros(HV, K, Vd, dtype=v.dtype, device=v.device) if initial_state is None else initial_state.clone()
    outs = []
    for t in range(T):
        if g is not None:
            S = S * torch.exp(g[t])[:, None, None]
        if gk is not None:
            S = S * torch.exp(gk[t])[:, :, None]
        if gv is not None:
            S = S * torch.exp(gv[t])[:, None, :]
        b = beta[t] if beta.dim() == 3 else beta[t][:, None]
        u = v[t] - torch.einsum("hk,hkv->hv", k[t], S)
        S = S + torch.einsum("hk,hv->hkv", k[t], b * u)
        if steps is not None:
            steps.append((k[t], u, S))
        outs.append(torch.einsum("hk,hkv->hv", q[t] * scale, S))
    o = torch.stack(outs) if outs else v.new_zeros(0, HV, Vd)
    return o, S


def naive_recurrent_batch(q, k, v, beta, scale, g=None, gk=None, gv=None, initial_state=None, cu_seqlens=None,
                          steps=None):
    """Batched/varlen wrapper: ``[B, T, H, *]`` inputs (q/k with H heads, expanded here to HV),
    states ``[N, HV, K, V]``. Returns ``(o [B, T, HV, V], final [N, HV, K, V])``. ``steps``: a list that
    gets ``(b, t, k_t, u_t, S_t)`` per token (see :func:`naive_recurrent_delta_rule`)."""
    B, T, H, _ = q.shape
    groups = v.shape[2] // H
    q, k = q.repeat_interleave(groups, 2), k.repeat_interleave(groups, 2)
    if cu_seqlens is None:
        bounds = [(n, 0, T) for n in range(B)]
    else:
        cu = cu_seqlens.tolist()
        bounds = [(0, s, e) for s, e in zip(cu[:-1], cu[1:])]
    o = torch.zeros(*v.shape[:3], v.shape[-1], dtype=v.dtype, device=v.device)
    finals = []
    for i, (b, s, e) in enumerate(bounds):
        def sl(x, b=b, s=s, e=e):  # bound now: called only within this iteration
            return None if x is None else x[b, s:e]
        h0 = None if initial_state is None else initial_state[i]
        seq_steps = None if steps is None else []
        o[b, s:e], S = naive_recurrent_delta_rule(sl(q), sl(k), sl(v), sl(beta), scale, sl(g), sl(gk), sl(gv), h0,
                                                  seq_steps)
        if steps is not None:
            steps.extend((b, s + t, *step) for t, step in enumerate(seq_steps))
        finals.append(S)
    return o, torch.stack(finals)
