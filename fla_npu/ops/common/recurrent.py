"""Token-by-token (decode) delta rule shared by ``fused_recurrent_kda`` and
``fused_recurrent_gated_delta_rule``. Inputs arrive already activated (l2norm, gate, beta sigmoid
applied by the op). One loop over token positions advances every sequence at once; the state is
float32 (float64 for float64 inputs) in the ``[K, V]`` layout.

Per token: ``S *= exp(g) * exp(gk)[:, None] * exp(gv)[None, :]``; ``v' = beta * (v - S^T k)``;
``S += k v'^T``; ``o = S^T (scale q)``.

State sources and sinks (FLA's decode contract):
- plain: ``h0[n]`` in, final state ``[N, ...]`` out;
- continuous batching (``ssm_state_indices`` ``[N]`` or ``[N, L]``): ``h0`` is a state pool; sequence
  ``n`` starts from slot ``idx[n, num_accepted_tokens[n] - 1]`` (``idx[n, 0]`` without speculative
  decoding) and the state after its token ``t`` goes to slot ``idx[n, t]`` of the pool
  (``inplace_final_state``) or to row ``bos + t`` of a new per-token state tensor; sequences of
  length 0 are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .activations import beta_sigmoid_fwd, compute_dtype, l2norm_fwd


@dataclass
class RecurrentIO:
    initial_state: torch.Tensor | None      # [N, HV, K, V] or pool [P, HV, K, V] (k-first view)
    final_state: torch.Tensor | None        # sink for the final / per-token states (k-first view)
    ssm_state_indices: torch.Tensor | None  # [N, L] (2-D) or None
    num_accepted_tokens: torch.Tensor | None
    inplace: bool                           # per-token states go into the pool itself


def recurrent_fwd(q, k, v, beta, scale, g=None, gk=None, gv=None, *, starts, lengths, io: RecurrentIO, out):
    """Run the recurrence. ``q, k`` ``[B*T, HV, K]`` (already expanded to HV heads), ``v``
    ``[B*T, HV, V]``, ``beta`` ``[B*T, HV]`` or ``[B*T, HV, V]``, ``g`` ``[B*T, HV]``, ``gk``
    ``[B*T, HV, K]``, ``gv`` ``[B*T, HV, V]`` (compute dtype); ``out`` ``[B*T, HV, V]`` is written
    row by row. ``starts``/``lengths`` are Python lists, one entry per sequence."""
    N = len(starts)
    HV, K, V = q.shape[1], q.shape[2], v.shape[2]
    ct = q.dtype
    idx = io.ssm_state_indices
    batching = idx is not None
    dev = q.device

    if io.initial_state is None:
        S = torch.zeros(N, HV, K, V, dtype=ct, device=dev)
    elif batching:
        first = torch.zeros(N, dtype=torch.long, device=dev)
        if io.num_accepted_tokens is not None:
            first = io.num_accepted_tokens.to(device=dev, dtype=torch.long) - 1
        slots = idx.gather(1, first.unsqueeze(1)).squeeze(1).long()
        S = io.initial_state.index_select(0, slots).to(ct)
    else:
        S = io.initial_state.to(ct).clone()

    beta_per_v = beta.dim() == 3
    for t in range(max(lengths, default=0)):
        seqs = [n for n in range(N) if lengths[n] > t]
        rows = torch.tensor([starts[n] + t for n in seqs], dtype=torch.long, device=dev)
        sel = torch.tensor(seqs, dtype=torch.long, device=dev)
        St = S.index_select(0, sel)
        if g is not None:
            St = St * torch.exp(g[rows])[..., None, None]
        if gk is not None:
            St = St * torch.exp(gk[rows])[..., :, None]
        if gv is not None:
            St = St * torch.exp(gv[rows])[..., None, :]
        kt = k[rows]
        b = beta[rows] if beta_per_v else beta[rows][..., None]
        vt = b * (v[rows] - (St * kt[..., None]).sum(-2))
        St = St + kt[..., None] * vt[..., None, :]
        out[rows] = ((St * (q[rows] * scale)[..., None]).sum(-2)).to(out.dtype)
        S.index_copy_(0, sel, St)
        if batching:
            dst = idx[sel, t].long() if io.inplace else rows
            io.final_state.index_copy_(0, dst, St.to(io.final_state.dtype))

    if not batching and io.final_state is not None:
        io.final_state.copy_(S.to(io.final_state.dtype))
    return out


def run_recurrent(fn, q, k, v, beta, *, g=None, gk=None, gv=None, scale, initial_state, output_final_state,
                  inplace_final_state, state_v_first, cu_cpu, ssm_state_indices, num_accepted_tokens,
                  use_qk_l2norm, beta_sigmoid_scale, out):
    """Validate the decode-specific arguments, pre-process, run :func:`recurrent_fwd` and return
    ``(o, final_state)``. Gates are already activated log decays; tensors are ``[B, T, ...]``."""
    B, T, H, K = q.shape
    HV, Vd = v.shape[2], v.shape[3]
    if cu_cpu is None:
        starts, lengths = [n * T for n in range(B)], [T] * B
    else:
        cu = cu_cpu.tolist()
        starts, lengths = cu[:-1], [e - s for s, e in zip(cu[:-1], cu[1:])]
    N = len(starts)

    idx = ssm_state_indices
    if idx is not None:
        if initial_state is None:
            raise ValueError(f"{fn}: `ssm_state_indices` addresses a state pool, so `initial_state` (the pool) is required.")
        if idx.dtype not in (torch.int32, torch.int64) or idx.dim() not in (1, 2) or idx.shape[0] != N:
            raise ValueError(f"{fn}: `ssm_state_indices` must be an int32/int64 tensor [N] or [N, L] with N={N}, "
                             f"got {idx.dtype} {list(idx.shape)}.")
        idx = idx.view(N, 1) if idx.dim() == 1 else idx
        if max(lengths, default=0) > idx.shape[1]:
            raise ValueError(f"{fn}: `ssm_state_indices` has {idx.shape[1]} column(s) but a sequence has "
                             f"{max(lengths)} tokens; every token needs a state slot.")
        pool = initial_state.shape[0]
        used = idx.cpu()
        if used.numel() and (int(used.min()) < 0 or int(used.max()) >= pool):
            raise ValueError(f"{fn}: `ssm_state_indices` must lie in [0, {pool}) (the state pool size).")
        if num_accepted_tokens is not None:
            acc = num_accepted_tokens
            if acc.dim() != 1 or acc.shape[0] != N or acc.dtype not in (torch.int32, torch.int64):
                raise ValueError(f"{fn}: `num_accepted_tokens` must be an int32/int64 tensor [N] with N={N}.")
            acc_cpu = acc.cpu()
            if acc_cpu.numel() and (int(acc_cpu.min()) < 1 or int(acc_cpu.max()) > idx.shape[1]):
                raise ValueError(f"{fn}: `num_accepted_tokens` must lie in [1, {idx.shape[1]}].")
    elif num_accepted_tokens is not None:
        raise ValueError(f"{fn}: `num_accepted_tokens` needs `ssm_state_indices`.")
    if initial_state is not None and idx is None:
        expected = (N, HV, Vd, K) if state_v_first else (N, HV, K, Vd)
        if tuple(initial_state.shape) != expected:
            raise ValueError(f"{fn}: `initial_state` must have shape {list(expected)}, got {list(initial_state.shape)}.")
    elif initial_state is not None and tuple(initial_state.shape[1:]) != ((HV, Vd, K) if state_v_first else (HV, K, Vd)):
        raise ValueError(f"{fn}: the state pool must have shape [P, HV, K, V] (v-first: [P, HV, V, K]), "
                         f"got {list(initial_state.shape)}.")
    if inplace_final_state and initial_state is None:
        raise ValueError(f"{fn}: `inplace_final_state=True` writes into `initial_state`, which is None.")
    if out is not None and (out.shape != v.shape or out.device != v.device or not out.is_contiguous()):
        raise ValueError(f"{fn}: `out` must be a contiguous tensor of shape {list(v.shape)} on {v.device}.")

    def kfirst(s):
        return None if s is None else (s.transpose(-1, -2) if state_v_first else s)

    if inplace_final_state:
        final_state = initial_state
    elif idx is not None:  # one state per token, at row bos + t
        shape = (B * T, HV, Vd, K) if state_v_first else (B * T, HV, K, Vd)
        final_state = q.new_empty(shape, dtype=torch.float32)
    elif output_final_state:
        shape = (N, HV, Vd, K) if state_v_first else (N, HV, K, Vd)
        final_state = q.new_empty(shape, dtype=torch.float32)
    else:
        final_state = None

    ct = compute_dtype(q, k, v)
    groups = HV // H
    qf, kf = q.to(ct), k.to(ct)
    if use_qk_l2norm:
        qf, kf = l2norm_fwd(qf)[0], l2norm_fwd(kf)[0]
    bf = beta.to(ct)
    if beta_sigmoid_scale is not None:
        bf = beta_sigmoid_fwd(bf, beta_sigmoid_scale)

    def flat(x):
        return None if x is None else x.reshape(B * T, *x.shape[2:]).to(ct)

    o = out if out is not None else torch.zeros(v.shape, dtype=v.dtype, device=v.device)
    o_rows = o.view(B * T, HV, Vd)
    recurrent_fwd(flat(qf).repeat_interleave(groups, 1), flat(kf).repeat_interleave(groups, 1), flat(v), flat(bf),
                  scale, g=flat(g), gk=flat(gk), gv=flat(gv), starts=starts, lengths=lengths,
                  io=RecurrentIO(kfirst(initial_state), kfirst(final_state), idx, num_accepted_tokens,
                                 inplace_final_state), out=o_rows)
    return o, final_state
