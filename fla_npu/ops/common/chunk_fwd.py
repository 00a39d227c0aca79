"""Forward stages of the chunked delta rule (KDA and Gated DeltaNet), as the kernels split them.

All tensors are in the chunk layout of :class:`ChunkPlan`: ``[NC, HV, BT, D]``. ``G`` is the
chunk-local cumulative decay in log2 units, ``[NC, HV, BT, K]`` for KDA's per-key gate and
``[NC, HV, BT, 1]`` for GDN's scalar gate (every formula below broadcasts over that last axis).
``q`` already carries the attention ``scale``. With ``e(x) = 2**x`` and, per chunk, ``S`` the state
at the chunk start (``[K, V]``):

    Aqk  = q_i . k_j e(G_i - G_j)             (j <= i)
    L    = beta_i k_i . k_j e(G_i - G_j)      (j <  i),   Akk = (I + L)^-1
    w    = Akk (beta k e(G)),   u = Akk (beta v),   kg = k e(G_last - G)
    v'   = u - w S
    o    = (q e(G)) S + Aqk v'
    S   <- e(G_last) S + kg^T v'
"""

from __future__ import annotations

import torch

from .chunk_plan import ChunkPlan
from .decay import RCP_LN2, ChunkDecay
from .validate import check_cu_seqlens

# Floor of the per-step log decay (natural log), applied to the activated gate before the chunk-local
# cumsum. exp(GATE_FLOOR) is exactly 0 in float32 and float64, so the clamp changes no number of the
# recurrence, while a gate of -inf (a full state reset) would turn the cumsum of the rest of its chunk
# into -inf and every difference G[i] - G[j] behind it into -inf - (-inf) = NaN. It is the value FLA's
# own tests mask gates with. Gradients: a clamped step's gate gets 0, as exp(g) * (...) is 0 there.
GATE_FLOOR = -1000.0


def clamp_gate(g: torch.Tensor) -> torch.Tensor:
    """The activated per-step log decay ``g`` with every value below :data:`GATE_FLOOR` (-inf
    included) raised to it; NaN stays NaN."""
    return g.clamp_min(GATE_FLOOR)


def chunk_local_cumsum(g: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Stage 1: cumulative log-decay within each chunk, in log2 units (``g`` ``[NC, HV, BT, Kg]``),
    accumulated and returned in ``dtype`` (default: ``g``'s)."""
    return g.cumsum(-2, dtype=dtype).mul_(RCP_LN2)


def chunk_local_cumsum_tokens(y, chunk_size, scale, cu_seqlens, chunk_indices, output_dtype, fn):
    """Stage 1 in the token layout, for the public gate helpers: the chunk-local cumsum of an
    activated gate ``[B, T, H]`` or ``[B, T, H, K]`` (natural-log units), times ``scale`` if given."""
    if cu_seqlens is not None and y.shape[0] != 1:
        raise ValueError(f"{fn}: the batch size must be 1 when `cu_seqlens` is given, got {y.shape[0]}.")
    cpu = check_cu_seqlens(fn, cu_seqlens, y.shape[1], y.device)
    plan = ChunkPlan.build(y.shape[0], y.shape[1], chunk_size, cpu, y.device)
    if chunk_indices is not None and chunk_indices.shape[0] != plan.num_chunks:
        raise ValueError(f"{fn}: `chunk_indices` has {chunk_indices.shape[0]} rows, the sequences have {plan.num_chunks} chunks.")
    if y.numel() == 0:  # B, T or H is 0: nothing to accumulate
        return y.to(output_dtype)
    per_key = y.dim() == 4
    G = plan.from_chunks(plan.to_chunks(y if per_key else y.unsqueeze(-1)).cumsum(-2))
    G = G if per_key else G.squeeze(-1)
    return (G if scale is None else G * scale).to(output_dtype)


def chunk_intra_fwd(q: torch.Tensor, k: torch.Tensor, beta: torch.Tensor, decay: ChunkDecay):
    """Stage 2: the intra-chunk matrices ``Aqk`` (with diagonal) and ``Akk = (I + L)^-1``
    (``decay`` holds the factors of ``G``)."""
    Aqk = decay.tril(q, k, diagonal=True)
    L = beta.unsqueeze(-1) * decay.tril(k, k, diagonal=False)
    eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand_as(L)
    Akk = torch.linalg.solve_triangular(L + eye, eye, upper=False, unitriangular=True)
    return Aqk, Akk


def wy_fwd(k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, decay: ChunkDecay, Akk: torch.Tensor):
    """Stage 3: the WY factors ``w``, ``u`` and the end-of-chunk-decayed keys ``kg``."""
    b = beta.unsqueeze(-1)
    w = Akk @ (b * k * decay.e_row)
    u = Akk @ (b * v)
    kg = k * decay.e_tail
    return w, u, kg


def state_fwd(kg, w, u, decay: ChunkDecay, h0, plan: ChunkPlan):
    """Stage 4, the only sequential loop: chunk-start states ``h`` ``[NC, HV, K, V]``, ``v_new``
    and the final state of every sequence ``[N, HV, K, V]`` (``h0`` ``None`` means zeros)."""
    NC, HV, _, K = w.shape
    V = u.shape[-1]
    S = torch.zeros(plan.num_seqs, HV, K, V, dtype=u.dtype, device=u.device) if h0 is None else h0.to(u.dtype).clone()
    h = torch.empty(NC, HV, K, V, dtype=u.dtype, device=u.device)
    v_new = torch.empty_like(u)
    decay_last = decay.e_last.unsqueeze(-1)                       # [NC, HV, Kg, 1]
    for s in range(plan.num_steps):
        Sc = plan.take_seq(S, s)
        plan.put(h, s, Sc)
        vn = plan.take(u, s) - plan.take(w, s) @ Sc
        plan.put(v_new, s, vn)
        Sc = plan.take(decay_last, s) * Sc + plan.take(kg, s).transpose(-1, -2) @ vn
        S = plan.put_seq(S, s, Sc)
    return h, v_new, S


def output_fwd(q: torch.Tensor, decay: ChunkDecay, h: torch.Tensor, Aqk: torch.Tensor, v_new: torch.Tensor):
    """Stage 5: ``o = (q e(G)) h + Aqk v_new``."""
    return (q * decay.e_row) @ h + Aqk @ v_new
