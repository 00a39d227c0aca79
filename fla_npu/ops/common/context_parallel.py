"""Context parallelism: FLA's ``cp_context`` for ``chunk_kda`` and ``chunk_gated_delta_rule``.

Each rank of the context's process group holds a contiguous slice of the packed token stream
(``B == 1``, rank-local ``cu_seqlens`` from the context). Only a sequence that crosses into a rank
from the left needs something it does not have: the state at the rank's first token.

The recurrence is linear in that incoming state ``S_in`` column by column (``v' = u - w S``,
``S <- e(G_last) S + kg^T v'``, ``o = q e(G) S + Aqk v'``). So every rank first runs its local
part in parallel with ``K`` extra value columns for the first sequence: zero values and the
identity as their initial state. Those columns are the response to ``S_in``: ``O_I`` (output) and
``M`` (final state), so that

    o_first = o_0 + O_I S_in,        S_out = b + M S_in      (b: the final state from zero)

Then the states travel along the chain of ranks point to point, each hop a ``K x K x V`` product
per head: rank ``r`` receives ``S_in``, sends ``S_out`` (``b`` alone when its last sequence starts
locally). The backward is the transpose: ``dS_in = O_I^T do_first + M^T dS_out`` travels right to
left, then one local backward runs with the cotangents of ``o_0``, ``O_I``, ``b`` and ``M``. Only
``HV x K x V`` float32 states cross a rank boundary (forward) and their gradients (backward);
``M`` never leaves its rank.

The context is read duck-typed on FLA's field names (``group``, ``cu_seqlens``,
``cu_seqlens_cpu``, ``is_first_rank``, ``is_last_rank``; for ``layout == "zigzag"``: ``part_len``,
``front_num_seqs``, ``is_first_by_part``, ``is_last_by_part``), so FLA's ``FLACPContext`` from
``fla.ops.cp.build_cp_context`` is used as it is. Communication is torch.distributed point to point
on the context's group: gloo on CPUs, HCCL on NPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import torch
import torch.distributed as dist
from torch.autograd.function import once_differentiable

from .chunk import ChunkDeltaRuleFunction, DeltaRuleConfig
from .chunk_plan import ChunkPlan

LOCAL = "local"   # a chain neighbour held by this rank itself (zigzag: the middle of the chain)


def resolve(fn: str, cp_context, initial_state, output_final_state: bool, cu_seqlens, cu_seqlens_cpu,
            return_intermediate_states: bool = False):
    """FLA's checks of a CP call, in FLA's order and with its messages; returns the ``cu_seqlens``
    and ``cu_seqlens_cpu`` to use (the context's rank-local ones replace the caller's)."""
    if cp_context is None:
        return cu_seqlens, cu_seqlens_cpu
    assert initial_state is None, "Initial state is not supported for CP"
    assert output_final_state is False, "Output final state is not supported for CP"
    assert getattr(cp_context, "cu_seqlens", None) is not None, "cu_seqlens is required for CP"
    if return_intermediate_states:
        raise NotImplementedError(f"{fn}: `return_intermediate_states` is not supported with `cp_context` by fla_npu.")
    cu_cpu = getattr(cp_context, "cu_seqlens_cpu", None)
    return cp_context.cu_seqlens, (cu_seqlens_cpu if cu_cpu is None else cu_cpu)


def enabled(cp_context) -> bool:
    """CP exchanges states only with a process group; without one (FLA: ``is_cp_enabled`` false)
    the call is a plain local varlen call on the context's ``cu_seqlens``."""
    return cp_context is not None and getattr(cp_context, "group", None) is not None


@dataclass(frozen=True)
class Part:
    """One contiguous interval of the chain held by this rank: tokens ``[t0, t1)`` of the local
    tensors, its ``cu_seqlens`` relative to ``t0`` (CPU), and the chain neighbours its first
    sequence's state comes from (``recv``) and its last sequence's state goes to (``send``):
    a group rank, :data:`LOCAL`, or None (the sequence starts / ends inside the part)."""
    t0: int
    t1: int
    cu: tuple
    recv: object
    send: object


def _flag(fn: str, ctx, name: str):
    value = getattr(ctx, name, None)
    if value is None:
        raise ValueError(f"{fn}: `cp_context.{name}` is not set; build the context with fla.ops.cp.build_cp_context.")
    return value


def parts(fn: str, ctx, cu_cpu: torch.Tensor, T: int) -> list[Part]:
    """The chain intervals this rank holds, in chain order, from the context's fields."""
    group = ctx.group
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    cu = [int(x) for x in cu_cpu.tolist()]
    layout = getattr(ctx, "layout", "contiguous") or "contiguous"
    if layout == "contiguous":
        first, last = _flag(fn, ctx, "is_first_rank"), _flag(fn, ctx, "is_last_rank")
        if (rank == 0 and not first) or (rank == world - 1 and not last):
            raise ValueError(f"{fn}: `cp_context` of rank {rank} of {world} has a sequence crossing the end of the "
                             f"chain (is_first_rank={first}, is_last_rank={last}): it was built for another group.")
        return [Part(0, T, tuple(cu), None if first else rank - 1, None if last else rank + 1)]
    if layout != "zigzag":
        raise ValueError(f"{fn}: `cp_context.layout` must be 'contiguous' or 'zigzag', got {layout!r}.")
    part_len, nf = _flag(fn, ctx, "part_len"), _flag(fn, ctx, "front_num_seqs")
    firsts, lasts = _flag(fn, ctx, "is_first_by_part"), _flag(fn, ctx, "is_last_by_part")
    if rank == 0 and not (firsts[0] and lasts[1]):
        raise ValueError(f"{fn}: zigzag `cp_context` of rank 0 has a sequence crossing the end of the chain "
                         f"(is_first_by_part={firsts}, is_last_by_part={lasts}): it was built for another group.")
    if T != 2 * part_len or cu[nf] != part_len:
        raise ValueError(f"{fn}: zigzag `cp_context` describes 2 x {part_len} local tokens (front ends at "
                         f"cu_seqlens[{nf}]={cu[nf]}), the inputs have T={T}.")
    # rank r holds chain slots r (front) and 2W-1-r (back); slot W-1 hands over to slot W locally
    front = Part(0, part_len, tuple(cu[:nf + 1]), None if firsts[0] else rank - 1,
                 None if lasts[0] else (LOCAL if rank == world - 1 else rank + 1))
    back = Part(part_len, T, tuple(x - part_len for x in cu[nf:]),
                None if firsts[1] else (LOCAL if rank == world - 1 else rank + 1),
                None if lasts[1] else rank - 1)
    return [front, back]


class _Chain:
    """Point-to-point hops to the chain neighbours on the group (a :data:`LOCAL` hop is a hand-over
    within this rank)."""

    def __init__(self, group, shape, device):
        self.group, self.shape, self.device = group, shape, device
        self.held = None

    def send(self, peer, t: torch.Tensor) -> None:
        if peer == LOCAL:
            self.held = t
        else:
            dist.send(t.to(torch.float32).contiguous(), dst=dist.get_global_rank(self.group, peer), group=self.group)

    def recv(self, peer) -> torch.Tensor:
        if peer == LOCAL:
            t, self.held = self.held, None
            return t
        t = torch.empty(self.shape, dtype=torch.float32, device=self.device)
        dist.recv(t, src=dist.get_global_rank(self.group, peer), group=self.group)
        return t


def chunk_cp(q, k, v, g, beta, A_log, dt_bias, cfg: DeltaRuleConfig, cu_cpu: torch.Tensor, cp_context, fn: str):
    """The CP forward (and, through autograd, backward) of one rank's slice (``[1, T, ...]``,
    ``BSND``); returns ``o`` ``[1, T, HV, V]``."""
    spec = SimpleNamespace(cfg=replace(cfg, output_final_state=True, state_v_first=False,
                                       return_intermediate_states=False),
                           parts=parts(fn, cp_context, cu_cpu, q.shape[1]), group=cp_context.group)
    return _ContextParallel.apply(q, k, v, g, beta, A_log, dt_bias, spec)


def _mv(a: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """``[1, T, HV, K] x [HV, K, V] -> [1, T, HV, V]`` per head."""
    return torch.einsum("bthk,hkv->bthv", a, s)


class _Local:
    """One chunk-pipeline call on tokens ``[a, b)`` of a part (``aug``: with the ``K`` response
    columns), its outputs kept with their autograd graph for the backward."""

    def __init__(self, x, a: int, b: int, cu: list, cfg: DeltaRuleConfig, aug: bool):
        q, k, v, g, beta, A_log, dt_bias = x
        sl = [t[:, a:b] for t in (q, k, v, g, beta)]
        HV, K, V = v.shape[2], q.shape[-1], v.shape[-1]
        h0 = None
        if aug:
            sl[2] = torch.cat([sl[2], sl[2].new_zeros(*sl[2].shape[:3], K)], -1)
            h0 = torch.zeros(len(cu) - 1, HV, K, V + K, dtype=torch.float32, device=q.device)
            h0[0, :, :, V:] = torch.eye(K, dtype=torch.float32, device=q.device)
        plan = ChunkPlan.build(1, b - a, cfg.chunk_size, torch.tensor(cu, dtype=torch.long), q.device)
        self.o, self.final = ChunkDeltaRuleFunction.apply(*sl, A_log, dt_bias, h0, cfg, plan)
        self.a, self.b, self.aug = a, b, aug
        lengths = [e - s for s, e in zip(cu[:-1], cu[1:])]
        self.last = max((i for i, n in enumerate(lengths) if n > 0), default=len(lengths) - 1)


def _part_forward(part: Part, x, cfg: DeltaRuleConfig) -> list:
    """The local calls of a part: with an incoming state, its first non-empty sequence with the
    response columns and the rest plainly; otherwise one plain call."""
    cu = list(part.cu)
    if part.recv is None:
        return [_Local(x, part.t0, part.t1, cu, cfg, aug=False)]
    i = next((n for n in range(len(cu) - 1) if cu[n + 1] > cu[n]), len(cu) - 2)
    e = cu[i + 1]
    calls = [_Local(x, part.t0, part.t0 + e, [0, e], cfg, aug=True)]
    if part.t0 + e < part.t1:
        calls.append(_Local(x, part.t0 + e, part.t1, [c - e for c in cu[i + 1:]], cfg, aug=False))
    return calls


class _ContextParallel(torch.autograd.Function):
    """``apply(q, k, v, g, beta, A_log, dt_bias, spec)`` -> ``o`` of this rank."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, A_log, dt_bias, spec):
        inputs = (q, k, v, g, beta, A_log, dt_bias)
        grads = any(ctx.needs_input_grad[:7])
        leaves = [None if t is None else t.detach().requires_grad_(need)
                  for t, need in zip(inputs, ctx.needs_input_grad)]
        with torch.enable_grad() if grads else torch.no_grad():
            calls = [_part_forward(p, leaves, spec.cfg) for p in spec.parts]   # parallel: no communication

        HV, K, V = v.shape[2], q.shape[-1], v.shape[-1]
        chain = _Chain(spec.group, (HV, K, V), q.device)
        ct = torch.float64 if q.dtype == torch.float64 else torch.float32
        o, saved = [], []
        with torch.no_grad():
            for part, local in zip(spec.parts, calls):
                first = local[0]
                s_in = None if part.recv is None else chain.recv(part.recv).to(ct)
                if s_in is None:
                    o += [c.o for c in local]
                else:
                    resp = first.o[..., V:].to(ct)                         # O_I
                    o.append((first.o[..., :V].to(ct) + _mv(resp, s_in)).to(q.dtype))
                    o += [c.o for c in local[1:]]
                M = None
                if part.send is not None:
                    tail = local[-1]
                    s_out = tail.final[tail.last, :, :, :V].to(ct)        # b
                    if s_in is not None and len(local) == 1:               # one sequence across the part
                        M = tail.final[0, :, :, V:].to(ct)
                        s_out = s_out + M @ s_in
                    chain.send(part.send, s_out)
                saved.append(SimpleNamespace(s_in=s_in, M=M))
        ctx.spec, ctx.calls, ctx.saved, ctx.leaves = spec, calls, saved, leaves
        ctx.meta = (HV, K, V, ct, q.device)
        return torch.cat([t.detach() for t in o], 1)

    @staticmethod
    @once_differentiable
    def backward(ctx, do):
        spec = ctx.spec
        HV, K, V, ct, device = ctx.meta
        chain = _Chain(spec.group, (HV, K, V), device)
        outs, cots = [], []
        for part, local, sv in reversed(list(zip(spec.parts, ctx.calls, ctx.saved))):
            ds_out = None if part.send is None else chain.recv(part.send).to(ct)
            if part.recv is not None:
                first = local[0]
                do_first = do[:, first.a:first.b].to(ct)
                ds_in = torch.einsum("bthk,bthv->hkv", first.o[..., V:].detach().to(ct), do_first)
                if sv.M is not None and ds_out is not None:
                    ds_in = ds_in + sv.M.transpose(-1, -2) @ ds_out
                chain.send(part.recv, ds_in)
            for n, call in enumerate(local):
                d = do[:, call.a:call.b]
                if call.aug:                                               # d O_I = do S_in^T
                    d = torch.cat([d, torch.einsum("bthv,hkv->bthk", d.to(ct), sv.s_in).to(d.dtype)], -1)
                dfinal = torch.zeros_like(call.final)
                if ds_out is not None and n == len(local) - 1:
                    dfinal[call.last, :, :, :V] = ds_out                   # d b
                    if sv.M is not None:                                   # d M = dS_out S_in^T
                        dfinal[0, :, :, V:] = ds_out @ sv.s_in.transpose(-1, -2)
                outs += [call.o, call.final]
                cots += [d.to(call.o.dtype), dfinal]
        keep = [n for n, t in enumerate(outs) if t.requires_grad]
        outs, cots = [outs[n] for n in keep], [cots[n] for n in keep]
        wanted = [t for t in ctx.leaves if t is not None and t.requires_grad]
        got = iter(torch.autograd.grad(outs, wanted, cots, allow_unused=True) if wanted and outs else
                   [None] * len(wanted))
        grads = [next(got) if t is not None and t.requires_grad else None for t in ctx.leaves]
        ctx.calls = ctx.leaves = None
        return (*grads, None)


@dataclass
class CPContext:
    """The fields of FLA's ``FLACPContext`` that CP reads (same names and meanings), for callers
    without FLA; FLA's own context object works the same."""
    group: object
    cu_seqlens: torch.Tensor
    cu_seqlens_cpu: torch.Tensor
    is_first_rank: bool | None = None
    is_last_rank: bool | None = None
    pre_num_ranks: int | None = None
    post_num_ranks: int | None = None
    layout: str = "contiguous"
    part_len: int | None = None
    front_num_seqs: int | None = None
    is_first_by_part: tuple | None = None
    is_last_by_part: tuple | None = None


def _interval(cu: list, start: int, end: int, pos: int, part_len: int):
    """Local ``cu_seqlens`` of tokens ``[start, end)`` (chain slot ``pos``) and whether the first
    / last sequence touching it starts / ends in it, with the number of slots before / after."""
    first = next(n for n in range(len(cu) - 1) if cu[n + 1] > start)
    last = max(n for n in range(len(cu) - 1) if cu[n] < end)
    local = []
    for x in cu[first:last + 2]:
        x = min(max(x, start), end) - start
        if not local or local[-1] != x:
            local.append(x)
    first_pos, last_pos = cu[first] // part_len, (cu[last + 1] - 1) // part_len
    return local, first_pos == pos, last_pos == pos, pos - first_pos, last_pos - pos


def build_cp_context(cu_seqlens: torch.Tensor, group=None, cu_seqlens_cpu: torch.Tensor | None = None,
                     layout: str = "contiguous", *, rank: int | None = None,
                     world_size: int | None = None) -> CPContext:
    """This rank's :class:`CPContext` for the global packed ``cu_seqlens`` (FLA's
    ``build_cp_context`` partition: ``T / world_size`` tokens per rank, or for ``"zigzag"`` chain
    slots ``r`` and ``2 * world_size - 1 - r`` of ``T / (2 * world_size)`` tokens each).
    ``cu_seqlens_cpu``: a CPU copy (saves the device-to-host copy). ``rank`` / ``world_size``
    default to the group's."""
    if layout not in ("contiguous", "zigzag"):
        raise ValueError(f"`layout` must be 'contiguous' or 'zigzag', got {layout!r}.")
    if world_size is None:
        world_size, rank = dist.get_world_size(group), dist.get_rank(group)
    cu = [int(x) for x in (cu_seqlens if cu_seqlens_cpu is None else cu_seqlens_cpu).cpu().tolist()]
    total, slots = cu[-1], world_size * (1 if layout == "contiguous" else 2)
    divisor = "`world_size`" if layout == "contiguous" else "`2 * world_size`"
    if total < slots:   # FLA's messages
        raise ValueError(f"`total_tokens` ({total}) must be at least {divisor} ({slots}) for context parallelism.")
    if total % slots:
        raise ValueError(f"`total_tokens` ({total}) must be divisible by {divisor} ({slots}) for context parallelism.")
    part_len = total // slots
    cu = [x for n, x in enumerate(cu) if n == 0 or x != cu[n - 1]]   # empty sequences hold no state
    meta = [_interval(cu, p * part_len, (p + 1) * part_len, p, part_len)
            for p in ((rank,) if layout == "contiguous" else (rank, 2 * world_size - 1 - rank))]
    if layout == "contiguous":
        local, first, last, pre, post = meta[0]
        extra = dict(is_first_rank=first, is_last_rank=last, pre_num_ranks=pre, post_num_ranks=post)
    else:
        local = meta[0][0] + [x + part_len for x in meta[1][0][1:]]
        extra = dict(layout="zigzag", part_len=part_len, front_num_seqs=len(meta[0][0]) - 1,
                     is_first_by_part=(meta[0][1], meta[1][1]), is_last_by_part=(meta[0][2], meta[1][2]))
    cpu = torch.tensor(local, dtype=torch.int32)
    return CPContext(group=group, cu_seqlens=cpu.to(cu_seqlens.device), cu_seqlens_cpu=cpu, **extra)
