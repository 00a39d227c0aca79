"""Backward stages of the chunked delta rule, the reverse of :mod:`chunk_fwd` stage by stage.

Gate gradients are taken with respect to the natural-log cumulative decay ``Gn = G * ln 2``
(``dGn``), so that the chain through ``e(x) = 2**x`` carries no ``ln 2`` factors; the per-step gate
gradient is then the reverse chunk-local cumsum of ``dGn``. Every function returns fresh tensors.
"""

from __future__ import annotations

import torch

from .chunk_plan import ChunkPlan
from .decay import ChunkDecay


def _sum_to_gate(t: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Reduce a per-key gate gradient to the gate's width (GDN's scalar gate sums over K)."""
    return t.sum(-1, keepdim=True) if G.shape[-1] == 1 else t


def output_bwd_local(do: torch.Tensor, v_new: torch.Tensor, Aqk: torch.Tensor):
    """``dAqk`` (lower triangle with diagonal) and the intra-chunk part of ``dv_new``."""
    dAqk = (do @ v_new.transpose(-1, -2)).tril()
    dv_local = Aqk.transpose(-1, -2) @ do
    return dAqk, dv_local


def state_bwd(q, decay: ChunkDecay, kg, w, do, dv_local, dht, plan: ChunkPlan):
    """The reverse state recurrence. Returns ``dh`` ``[NC, HV, K, V]`` (gradient of the state at
    the *end* of each chunk), the total ``dv_new`` and ``dh0`` ``[N, HV, K, V]``."""
    NC, HV, _, K = w.shape
    V = do.shape[-1]
    dS = torch.zeros(plan.num_seqs, HV, K, V, dtype=do.dtype, device=do.device) if dht is None else dht.to(do.dtype).clone()
    dh = torch.empty(NC, HV, K, V, dtype=do.dtype, device=do.device)
    dv_new = torch.empty_like(dv_local)
    qg = q * decay.e_row
    decay_last = decay.e_last.unsqueeze(-1)
    for s in reversed(range(plan.num_steps)):
        dSc = plan.take_seq(dS, s)
        plan.put(dh, s, dSc)
        dvn = plan.take(dv_local, s) + plan.take(kg, s) @ dSc
        plan.put(dv_new, s, dvn)
        dSc = (plan.take(qg, s).transpose(-1, -2) @ plan.take(do, s)
               + plan.take(decay_last, s) * dSc
               - plan.take(w, s).transpose(-1, -2) @ dvn)
        dS = plan.put_seq(dS, s, dSc)
    return dh, dv_new, dS


def state_output_bwd(q, k, decay: ChunkDecay, h, dh, v_new, dv_new, do):
    """Gradients through ``o = (q e(G)) h``, ``S' = e(G_last) S + kg^T v'`` and ``v' = u - w S``:
    ``dq``, ``dk``, ``dw`` and the gate gradient in three parts (see :func:`chunk_local_cumsum_bwd`):
    ``dGn`` (row terms of ``e(G_i)``), ``dtail`` (terms of ``e(G_last - G_i)``) and ``dlast``
    (the term of ``e(G_last)``, ``[NC, HV, Kg]``)."""
    G = decay.G
    dqg = do @ h.transpose(-1, -2)
    dkg = v_new @ dh.transpose(-1, -2)
    dq = dqg * decay.e_row
    dk = dkg * decay.e_tail
    dw = -dv_new @ h.transpose(-1, -2)
    dGn = _sum_to_gate(q * dq, G)
    dtail = _sum_to_gate(k * dk, G)
    dlast = _sum_to_gate(decay.e_last * (h * dh).sum(-1), G)
    return dq, dk, dw, dGn, dtail, dlast


def _exclusive_cumsum(t: torch.Tensor, dim: int) -> torch.Tensor:
    """``out[i] = sum_{j<i} t[j]`` along ``dim``, as a shifted cumsum (not ``cumsum - t``, which
    cancels where ``t[i]`` is large and the sum before it small)."""
    out = torch.zeros_like(t)
    n = t.shape[dim]
    if n > 1:
        out.narrow(dim, 1, n - 1).copy_(t.narrow(dim, 0, n - 1).cumsum(dim))
    return out


def crossing_sums(P: torch.Tensor) -> torch.Tensor:
    """Per-step gate gradient of intra-chunk pair terms, scalar gate: ``P[i, j]`` (``j < i``) is the
    gradient through the decay ``e(G_i - G_j)`` times that decay, which depends on the steps
    ``j < t <= i``; step ``t`` gets ``sum_{i >= t > j} P[i, j]`` ``[..., BT, 1]``. Summing only the
    pairs that cross ``t`` keeps out the pairs on one side of it, whose row and column terms would
    cancel (with strongly decaying gates the true gradient is far below them)."""
    E = _exclusive_cumsum(P, -1)                                   # E[i, t] = sum_{j<t} P[i, j]
    BT = P.shape[-1]
    below = torch.ones(BT, BT, dtype=torch.bool, device=P.device).tril()  # i >= t
    return (E * below).sum(-2).unsqueeze(-1)


# Per-key crossing sums work on [units, BT, BT, K] blocks of at most this many elements.
PAIR_BLOCK_ELEMENTS = 1 << 24


def pair_crossing_sums(M: torch.Tensor, x: torch.Tensor, y: torch.Tensor, decay: ChunkDecay) -> torch.Tensor:
    """Per-key gate: the per-step gradient of the pairs ``M[i, j] x[i, d] y[j, d] e(G[i, d] - G[j, d])``
    (``j < i``, ``M`` strictly lower), each pair summed only into the steps ``j < t <= i`` it crosses
    (:func:`crossing_sums` per key). Exact where the row-minus-column form cancels: the decays are
    formed per pair from the cumsum as given (float64 in the reference), never factored. Memory:
    ``BT * BT * K`` per (chunk, head), in blocks of :data:`PAIR_BLOCK_ELEMENTS`."""
    lead = x.shape[:-2]
    BT, K = x.shape[-2:]
    M, x, y = M.reshape(-1, BT, BT), x.reshape(-1, BT, K), y.reshape(-1, BT, K)
    G = decay._G.reshape(-1, BT, K)
    strict = torch.ones(BT, BT, dtype=torch.bool, device=x.device).tril(-1)[..., None]
    crossed = torch.ones(BT, BT, dtype=torch.bool, device=x.device).tril()[..., None]     # i >= t
    out = torch.empty_like(x)
    step = max(1, PAIR_BLOCK_ELEMENTS // (BT * BT * K))
    for u in range(0, x.shape[0], step):
        sl = slice(u, u + step)
        g = G[sl]
        E = torch.exp2((g[:, :, None, :] - g[:, None, :, :]).masked_fill(~strict, float("-inf"))).to(x.dtype)
        W = M[sl, :, :, None] * x[sl, :, None, :] * y[sl, None, :, :] * E           # [u, i, j, K]
        out[sl] = (_exclusive_cumsum(W, 2) * crossed).sum(1)                       # sum_{i >= t > j}
    return out.reshape(*lead, BT, K)


def intra_qk_bwd(q, k, decay: ChunkDecay, dAqk, exact_pairs: bool = False):
    """Gradients through ``Aqk``: ``dq``, ``dk``, ``dGn`` (KDA: row terms, a ``[..., BT, K]`` to
    accumulate by :func:`chunk_local_cumsum_bwd`) or, for the scalar gate and for KDA with
    ``exact_pairs``, the per-step gradient itself (:func:`crossing_sums`, :func:`pair_crossing_sums`,
    added after it). The diagonal of ``Aqk`` carries no decay and its two contributions to ``dGn``
    cancel exactly, so ``dGn`` is formed from the strictly lower part alone (keeping large cancelling
    terms out of a small float32 result)."""
    strict = dAqk.tril(-1)
    dq_off = decay.left(strict, k)
    dk_off = decay.right(strict, q)
    diag = dAqk.diagonal(dim1=-2, dim2=-1).unsqueeze(-1)
    if decay.scalar:
        dG = crossing_sums(strict * decay.D * (q @ k.transpose(-1, -2)))
    elif exact_pairs:
        dG = pair_crossing_sums(strict, q, k, decay)
    else:
        dG = q * dq_off - k * dk_off
    return dq_off + diag * k, dk_off + diag * q, dG


def wy_bwd(k, v, beta, decay: ChunkDecay, Akk, dw, du, exact_pairs: bool = False):
    """Gradients through ``w = Akk (beta k e(G))`` and ``u = Akk (beta v)``, then through
    ``Akk = (I + L)^-1`` and ``L = beta_i k_i . k_j e(G_i - G_j)``: ``dk``, ``dv``, ``dbeta``, ``dGn``
    (row terms) and, for the scalar gate and for KDA with ``exact_pairs``, the per-step gradient of
    the pairs of ``L`` (otherwise None, its pairs are in ``dGn``)."""
    G = decay.G
    b = beta.unsqueeze(-1)
    eG = decay.e_row
    kb = b * k * eG
    AkkT = Akk.transpose(-1, -2)
    dkb = AkkT @ dw
    dvb = AkkT @ du
    dAkk = dw @ kb.transpose(-1, -2) + du @ (b * v).transpose(-1, -2)
    dL = -(AkkT @ dAkk @ AkkT).tril(-1)

    P = decay.tril(k, k, diagonal=False)
    dP = b * dL
    dk_left = decay.left(dP, k)
    dk_right = decay.right(dP, k)

    dk = b * eG * dkb + dk_left + dk_right
    dv = b * dvb
    dbeta = (v * dvb).sum(-1) + (k * eG * dkb).sum(-1) + (dL * P).sum(-1)
    if decay.scalar:  # row terms of e(G); the pairs of L as crossing sums (see intra_qk_bwd)
        return dk, dv, dbeta, _sum_to_gate(kb * dkb, G), crossing_sums(dP * P)
    if exact_pairs:
        return dk, dv, dbeta, kb * dkb, pair_crossing_sums(dP, k, k, decay)
    return dk, dv, dbeta, kb * dkb + k * dk_left - k * dk_right, None


def chunk_local_cumsum_bwd(dGn: torch.Tensor, dtail: torch.Tensor, dlast: torch.Tensor) -> torch.Tensor:
    """Per-step gate gradient within each chunk. ``G_i = sum_{t<=i} g_t`` gives step ``t`` the
    suffix sum of the row terms ``dGn``; ``G_last - G_i = sum_{i<t<=last} g_t`` gives it the
    *prefix* sum (rows before ``t``) of the tail terms; ``G_last`` gives every step ``dlast``. The
    tail terms are summed directly rather than as a chunk total minus a suffix: for strongly
    decaying gates the true gradient is tiny and that difference of large sums would cancel."""
    suffix = dGn.flip(-2).cumsum(-2).flip(-2)
    return suffix + _exclusive_cumsum(dtail, -2) + dlast.unsqueeze(-2)
