"""The chunked delta rule as one autograd Function, shared by ``chunk_kda`` and
``chunk_gated_delta_rule``: the two differ only in the gate (per key for KDA, scalar for GDN) and in
how the raw gate is activated, which the op passes in :class:`DeltaRuleConfig`.

Forward: pre-processing (l2norm, beta sigmoid, gate activation) -> chunk layout -> the stages of
:mod:`chunk_fwd` -> token layout. Backward: the stages of :mod:`chunk_bwd` in reverse, then the
pre-processing backward. Everything is computed in float32 (float64 for float64 inputs).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import torch

from ...runtime import chunk_pipeline
from ...runtime.routing import chunk_route, log_once, use_sim
from . import chunk_bwd as bwd, chunk_fwd as fwd
from .activations import L2NORM_EPS, beta_sigmoid_bwd, beta_sigmoid_fwd, compute_dtype, l2norm_bwd, l2norm_fwd
from .chunk_plan import ChunkPlan
from .chunk_tensors import ChunkForward, ChunkInputs, KernelGate, expand_heads
from .decay import ChunkDecay


@dataclass(frozen=True)
class DeltaRuleConfig:
    name: str                                # the public op, for messages and routing logs
    scale: float
    chunk_size: int
    per_key_gate: bool                       # KDA: g [B,T,HV,K]; GDN: g [B,T,HV]
    use_qk_l2norm: bool
    beta_sigmoid_scale: float | None         # None: beta is already post-sigmoid
    gate_fwd: Callable | None                # (g, A_log, dt_bias) -> log decay; None: g is the log decay
    gate_bwd: Callable | None                # (g, A_log, dt_bias, dy) -> (dg, dA_log, ddt_bias)
    gate_form: str                           # "none", "softplus" or "sigmoid" (lower_bound form): for the kernel
    lower_bound: float | None
    state_v_first: bool
    output_final_state: bool
    disable_recompute: bool
    return_intermediate_states: bool


def _state_in(s: torch.Tensor | None, cfg: DeltaRuleConfig, dtype) -> torch.Tensor | None:
    if s is None:
        return None
    return (s.transpose(-1, -2) if cfg.state_v_first else s).to(dtype)


def _state_out(s: torch.Tensor, cfg: DeltaRuleConfig, dtype) -> torch.Tensor:
    return (s.transpose(-1, -2) if cfg.state_v_first else s).to(dtype).contiguous()


def _prepare(q, k, v, g, beta, A_log, dt_bias, cfg: DeltaRuleConfig, plan: ChunkPlan, sim: bool,
             cube: torch.dtype | None = None, row_scales: bool = False, gate_in: bool = False) -> ChunkInputs:
    """Pre-processing and chunk layout. With ``sim``, stage 1 (gate activation + chunk-local cumsum)
    runs as the Ascend C kernel (float32 cumsum, as on the device); otherwise the cumsum is
    accumulated in float64. With ``cube`` (the kernel chain's Cube dtype), ``q``, ``k`` and ``v`` come
    out in it, token-major ``[NC, BT, H, D]`` (what the kernels read; for whole chunks the caller's
    tensors as they are): l2norm and scale in one float32 product rounded once, q and k with their
    own heads (the kernels read value head h's from head h / groups: GVA); the token-layout fields
    the backward would read are not formed (it recomputes after the kernels). With ``row_scales`` (the
    kernels apply them: :func:`~fla_npu.runtime.chunk_pipeline.takes_row_scales`) q and k stay as given
    and ``row_factors`` says how their rows are scaled (l2norm, scale). With ``gate_in`` (KDA, the
    one launch forms G: :func:`~fla_npu.runtime.chunk_pipeline.gate_in_launch`) stage 1 does
    not run: ``gate`` carries the raw gate in the chunk layout and ``decay`` is ``None``."""
    ct = compute_dtype(q, k, v)
    bf = beta.to(ct)
    bf = bf if cfg.beta_sigmoid_scale is None else beta_sigmoid_fwd(bf, cfg.beta_sigmoid_scale)
    groups = v.shape[2] // q.shape[2]
    row_factors = None
    if cube is not None:  # token-major [NC, BT, H, D]: for whole chunks views of the caller's tensors
        if row_scales:
            qc, kc = (plan.to_chunks(x.to(cube), token_major=True) for x in (q, k))
            row_factors = (cfg.use_qk_l2norm, cfg.scale)
        else:
            qc, kc = (_normalized(x.to(cube), plan, cfg.use_qk_l2norm, s) for x, s in ((q, cfg.scale), (k, 1.0)))
        qn = kn = q_rstd = k_rstd = None
        vc = plan.to_chunks(v.to(cube), token_major=True)
    else:
        qn, kn = q.to(ct), k.to(ct)
        q_rstd = k_rstd = None
        if cfg.use_qk_l2norm:
            qn, q_rstd = l2norm_fwd(qn)
            kn, k_rstd = l2norm_fwd(kn)
        qc, kc = (expand_heads(plan.to_chunks(x), groups) for x in (qn * cfg.scale, kn))
        vc = plan.to_chunks(v.to(ct))
    decay = gate = None
    if gate_in:
        gate = KernelGate(plan.to_chunks(_kernel_gate_input(g, A_log, dt_bias, cfg), token_major=True), plan.chunk_lengths(),
                          cfg.gate_form, A_log, dt_bias, cfg.lower_bound)
    else:
        decay = ChunkDecay(_gate_cumsum(g, A_log, dt_bias, cfg, plan, ct, sim, token_major=cube is not None), ct, natural=sim)
    return ChunkInputs(ct=ct, groups=groups, qn=qn, kn=kn, q_rstd=q_rstd, k_rstd=k_rstd, beta=bf, q=qc, k=kc, v=vc,
                       b=plan.to_chunks(bf), decay=decay, row_factors=row_factors, gate=gate)


def _normalized(x: torch.Tensor, plan: ChunkPlan, l2norm: bool, scale: float) -> torch.Tensor:
    """``x`` (16-bit, token layout) in the token-major chunk layout, times ``scale`` and, with
    ``l2norm``, its rows' reciprocal l2 norms (as :func:`l2norm_fwd` forms them): each product formed in
    float32 and rounded once to ``x``'s dtype, into a new tensor (the caller's is never written). Two
    passes over ``x`` (the norms, the product); ``x``'s chunk layout as it is when there is nothing
    to multiply."""
    xc = plan.to_chunks(x, token_major=True)
    if not l2norm and scale == 1.0:
        return xc
    if l2norm:
        norm = torch.linalg.vector_norm(xc, dim=-1, keepdim=True, dtype=torch.float32)
        f = torch.rsqrt(norm.square() + L2NORM_EPS) * scale
    else:
        f = torch.tensor(scale, dtype=torch.float32, device=x.device)
    return torch.mul(xc, f, out=torch.empty_like(xc))


def _gate_cumsum(g, A_log, dt_bias, cfg: DeltaRuleConfig, plan: ChunkPlan, ct, sim: bool,
                 token_major: bool = False) -> torch.Tensor:
    """Stage 1 in the chunk layout: ``G`` ``[NC, HV, BT, Kg]``, padding rows holding their chunk's
    last value; with ``sim`` (its kernel) in natural-log units, the units the chunk kernels read,
    otherwise (the reference) in log2 units. ``token_major`` (the kernel route): KDA's ``G`` is the view of a token-major
    ``[NC, BT, HV, K]`` tensor, the layout the kernels read (for whole chunks the stage-1 kernel's
    output as it is: no copy)."""
    if sim:
        from ...runtime import torch_ops  # noqa: F401  (registers torch.ops.fla_npu)

        G = torch.ops.fla_npu.gate_chunk_cumsum(_kernel_gate_input(g, A_log, dt_bias, cfg), cfg.chunk_size, cfg.gate_form,
                                                A_log, dt_bias, cfg.lower_bound, 1.0, plan.cu_seqlens,
                                                plan.chunk_list)
        if token_major and cfg.per_key_gate:
            return plan.fill_padding(plan.to_chunks(G, token_major=True), token_major=True).transpose(1, 2)
        return plan.fill_padding(plan.to_chunks(G if cfg.per_key_gate else G.unsqueeze(-1)))
    gf = fwd.clamp_gate(_activated_gate(g, A_log, dt_bias, cfg, ct))
    if not cfg.per_key_gate:
        gf = gf.unsqueeze(-1)
    return fwd.chunk_local_cumsum(plan.to_chunks(gf), torch.float64)


def _activated_gate(g, A_log, dt_bias, cfg: DeltaRuleConfig, ct) -> torch.Tensor:
    """The per-step log decay ``[B, T, HV(, K)]`` in the compute dtype ``ct``, before the floor."""
    gf = g.to(ct)
    return gf if cfg.gate_fwd is None else cfg.gate_fwd(gf, A_log, dt_bias)


def _kernel_gate_input(g, A_log, dt_bias, cfg: DeltaRuleConfig) -> torch.Tensor:
    """The gate as the stage-1 kernel receives it, so that its activated values stay at or above
    :data:`~.chunk_fwd.GATE_FLOOR` without a floor inside the kernel: the log decay itself is
    clamped; for the softplus form (decreasing in the raw gate ``x = g + dt_bias``) the raw gate is
    capped where ``-exp(A_log) * softplus(x)`` reaches the floor (``softplus(x) >= x``), which
    turns a raw ``+inf`` (a full reset) into a finite gate whose decay is still exactly 0. The
    lower-bound form is bounded by ``lower_bound`` and needs nothing."""
    if cfg.gate_form == "none":
        return fwd.clamp_gate(g)
    if cfg.gate_form != "softplus":
        return g
    HV = g.shape[2]
    x_max = -fwd.GATE_FLOOR / A_log.float().reshape(HV).exp()            # softplus(x) >= x
    if cfg.per_key_gate:
        x_max = x_max[:, None]
    if dt_bias is not None:
        x_max = x_max - dt_bias.float().reshape(g.shape[2:])
    return torch.minimum(g, x_max.to(g.dtype))


def _stages_fwd(p: ChunkInputs, h0, plan: ChunkPlan, Aqk=None, Akk=None) -> ChunkForward:
    """Stages 2-4 with the reference (stage 2 skipped when ``Aqk`` and ``Akk`` are given)."""
    if Aqk is None:
        Aqk, Akk = fwd.chunk_intra_fwd(p.q, p.k, p.b, p.decay)
    w, u, kg = fwd.wy_fwd(p.k, p.v, p.b, p.decay, Akk)
    h, v_new, final = fwd.state_fwd(kg, w, u, p.decay, h0, plan)
    return ChunkForward(Aqk, Akk, w, u, kg, h, v_new, final)


# Value heads computed together. Heads are independent (GVA groups stay whole), so the reference
# runs in head slices: its memory is that of HEADS_PER_SLICE heads, whatever the model's head count.
HEADS_PER_SLICE = 8


def _head_slices(H: int, HV: int, per_slice: int = HEADS_PER_SLICE):
    """``(h0, h1, hv0, hv1)``: q/k heads ``[h0, h1)`` and their value heads ``[hv0, hv1)``."""
    groups = HV // H
    per = max(1, per_slice // groups)
    return [(h, min(h + per, H), h * groups, min(h + per, H) * groups) for h in range(0, H, per)]


def _slice_inputs(sl, q, k, v, g, beta, A_log, dt_bias, initial_state):
    h0, h1, hv0, hv1 = sl
    HV = v.shape[2]
    width = None if dt_bias is None else dt_bias.numel() // HV
    return (q[:, :, h0:h1], k[:, :, h0:h1], v[:, :, hv0:hv1], g[:, :, hv0:hv1], beta[:, :, hv0:hv1],
            None if A_log is None else A_log.reshape(-1)[hv0:hv1],
            None if dt_bias is None else dt_bias.reshape(-1)[hv0 * width:hv1 * width],
            None if initial_state is None else initial_state[:, hv0:hv1])


def _cat(parts, dim):
    """The head slices' results joined (one slice: itself, no copy)."""
    if parts[0] is None:
        return None
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim)


class ChunkDeltaRuleFunction(torch.autograd.Function):
    """``apply(q, k, v, g, beta, A_log, dt_bias, initial_state, cfg, plan)`` -> ``(o, final_state[, h])``."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, A_log, dt_bias, initial_state, cfg: DeltaRuleConfig, plan: ChunkPlan):
        ctx.empty = plan.num_chunks == 0
        if ctx.empty:
            return _empty_forward(ctx, (q, k, v, g, beta, A_log, dt_bias, initial_state), cfg, plan)
        low = compute_dtype(q, k, v) != torch.float64
        # Stages 2-5: the kernel chain (NPU tensors; CPU tensors with FLA_NPU_CPU_IMPL=sim) or the reference.
        skip = chunk_route(cfg.name, q, k, v, cfg.chunk_size) if low else None
        kernels = skip is not None
        if not kernels or skip:  # the reference's recurrence walks the exact chunks (a host-side plan)
            plan = plan.host_plan
        # Stage 1 on its kernel: with the chain, or alone (FLA_NPU_CPU_IMPL=sim with a float32 call).
        sim = kernels or (low and use_sim(f"{cfg.name} (stage 1: gate cumsum)", g))
        if kernels and q.device.type != "cpu" and any(t is not None and t.requires_grad for t in (q, k, v, g, beta)):
            log_once(cfg.name, "the Ascend C kernels forward; its backward the PyTorch reference on the device",
                     "no backward kernels yet", logging.WARNING)
        # The kernels take every head at once; the reference works in head slices to bound its memory.
        slices = _head_slices(q.shape[2], v.shape[2], v.shape[2] if kernels else HEADS_PER_SLICE)
        keep_h = cfg.return_intermediate_states
        gate_in = kernels and chunk_pipeline.gate_in_launch(skip, keep_h, cfg.per_key_gate, q.dtype, cfg.chunk_size,
                                                            q.shape[-1])
        o, final, h, kept = [], [], [], []
        for sl in slices:
            qs, ks, vs, gs, bs, As, Bs, h0s = _slice_inputs(sl, q, k, v, g, beta, A_log, dt_bias, initial_state)
            p = _prepare(qs, ks, vs, gs, bs, As, Bs, cfg, plan, sim, q.dtype if kernels else None,
                         kernels and chunk_pipeline.takes_row_scales(skip, keep_h), gate_in)
            if kernels:
                oc, f = chunk_pipeline.forward(p, h0s, plan, q.dtype, cfg.state_v_first, skip, keep_h=keep_h)
                final_s = f.final.to(torch.float32) if cfg.output_final_state else None
            else:
                f = _stages_fwd(p, _state_in(h0s, cfg, p.ct), plan)
                oc = fwd.output_fwd(p.q, p.decay, f.h, f.Aqk, f.v_new)
                final_s = _state_out(f.final, cfg, torch.float32) if cfg.output_final_state else None
            o.append(plan.from_chunks(oc).to(q.dtype))
            final.append(final_s)
            if keep_h:
                h.append(plan.chunk_grid(_state_out(f.h, cfg, k.dtype)))
            # The backward differentiates the reference stages. After the kernels it recomputes them all
            # (their 16-bit Cube operands would break the cancellations of dA_log); after the reference,
            # disable_recompute keeps every intermediate (memory for time), as FLA's option does, and
            # otherwise only Aqk and Akk are kept, as FLA's kernels do.
            kept.append(None if kernels else (p, f) if cfg.disable_recompute else (None, (f.Aqk, f.Akk)))

        ctx.cfg, ctx.plan, ctx.sim, ctx.slices, ctx.kept = cfg, plan, sim and not kernels, slices, kept
        ctx.h0_dtype = None if initial_state is None else initial_state.dtype
        ctx.dtypes = (q.dtype, k.dtype, v.dtype, g.dtype, beta.dtype)
        ctx.save_for_backward(q, k, v, g, beta, A_log, dt_bias, initial_state)
        o, final = _cat(o, 2), _cat(final, 1)
        if cfg.return_intermediate_states:
            return o, final, _cat(h, 2)
        return o, final

    @staticmethod
    def backward(ctx, do, dht, *unused):
        if ctx.empty:
            return _empty_backward(ctx, dht)
        inputs = ctx.saved_tensors
        q, k, v, g, beta, A_log, dt_bias, initial_state = inputs
        grads = [_backward_slice(ctx, sl, kept, do, dht, *_slice_inputs(sl, *inputs))
                 for sl, kept in zip(ctx.slices, ctx.kept)]
        dq, dk, dv, dg, dbeta, dA, dbias, dh0 = (list(x) for x in zip(*grads))
        qd, kd, vd, gd, bd = ctx.dtypes
        dA = None if dA[0] is None else torch.cat(dA).reshape(A_log.shape).to(A_log.dtype)
        dbias = None if dbias[0] is None else torch.cat(dbias).reshape(dt_bias.shape).to(dt_bias.dtype)
        return (torch.cat(dq, 2).to(qd), torch.cat(dk, 2).to(kd), torch.cat(dv, 2).to(vd), torch.cat(dg, 2).to(gd),
                torch.cat(dbeta, 2).to(bd), dA, dbias, _cat(dh0, 1), None, None)


def _empty_forward(ctx, inputs: tuple, cfg: DeltaRuleConfig, plan: ChunkPlan):
    """No token at all (``B == 0``, ``T == 0`` or only empty sequences): an empty output, and every
    sequence's final state is its initial state (zeros without one), as the recurrence defines."""
    q, k, v, *_, initial_state = inputs
    B, T, HV, Vd = v.shape
    state = (plan.num_seqs, HV, *((Vd, q.shape[-1]) if cfg.state_v_first else (q.shape[-1], Vd)))
    ctx.like = [None if t is None else (t.shape, t.dtype, t.device) for t in inputs]
    final = None
    if cfg.output_final_state:
        final = (torch.zeros(state, dtype=torch.float32, device=v.device) if initial_state is None
                 else initial_state.to(torch.float32, copy=True))
    o = torch.zeros(B, T, HV, Vd, dtype=q.dtype, device=q.device)
    if cfg.return_intermediate_states:
        grid = (B, -(-T // cfg.chunk_size)) if plan.dense else (1, 0)
        return o, final, torch.zeros(*grid, *state[1:], dtype=k.dtype, device=k.device)
    return o, final


def _empty_backward(ctx, dht):
    """Gradients of :func:`_empty_forward`: zeros (empty for the token tensors), and the initial
    state's gradient is the final state's."""
    grads = [None if like is None else torch.zeros(like[0], dtype=like[1], device=like[2]) for like in ctx.like]
    if grads[-1] is not None and dht is not None:
        grads[-1] = dht.to(grads[-1].dtype)
    return (*grads, None, None)


def _backward_slice(ctx, sl, kept, do, dht, q, k, v, g, beta, A_log, dt_bias, initial_state):
    """The backward stages for one head slice; returns its ``(dq, dk, dv, dg, dbeta, dA, dbias, dh0)``.
    ``kept``: ``(ChunkInputs, ChunkForward)`` of the forward, ``(None, (Aqk, Akk))``, or ``None``
    (recompute every stage with the reference)."""
    cfg, plan = ctx.cfg, ctx.plan.host_plan  # the reference backward walks the exact chunks
    _, _, hv0, hv1 = sl
    if kept is not None and kept[0] is not None:
        p, f = kept
    else:
        p = _prepare(q, k, v, g, beta, A_log, dt_bias, cfg, plan, ctx.sim)
        f = _stages_fwd(p, _state_in(initial_state, cfg, p.ct), plan, *(kept[1] if kept is not None else (None, None)))
    ct = p.ct

    doc = plan.to_chunks(do[:, :, hv0:hv1].to(ct))
    dht_k = _state_in(dht[:, hv0:hv1], cfg, ct) if cfg.output_final_state else None
    dAqk, dv_local = bwd.output_bwd_local(doc, f.v_new, f.Aqk)
    dh, dv_new, dh0 = bwd.state_bwd(p.q, p.decay, f.kg, f.w, doc, dv_local, dht_k, plan)
    dq1, dk1, dw, dG1, dtail, dlast = bwd.state_output_bwd(p.q, p.k, p.decay, f.h, dh, f.v_new, dv_new, doc)
    # KDA with float32 inputs: the intra-chunk pair terms of the gate gradient as per-key crossing sums
    # (their row-minus-column form cancels to far below float32's tolerance on dA_log with strongly
    # decaying gates); lower precisions keep the cheaper form, well within their tolerances.
    exact = not p.decay.scalar and ctx.dtypes[0] == torch.float32
    dq2, dk2, dG2 = bwd.intra_qk_bwd(p.q, p.k, p.decay, dAqk, exact)
    dk3, dvc, dbc, dG3, dpairs = bwd.wy_bwd(p.k, p.v, p.b, p.decay, f.Akk, dw, dv_new, exact)
    if p.decay.scalar or exact:  # the intra-chunk pair terms come as per-step gradients (crossing sums)
        dgc = bwd.chunk_local_cumsum_bwd(dG1 + dG3, dtail, dlast) + dG2 + dpairs
    else:
        dgc = bwd.chunk_local_cumsum_bwd(dG1 + dG2 + dG3, dtail, dlast)

    NC, HV, BT, K = p.q.shape
    dqc = ((dq1 + dq2) * cfg.scale).view(NC, HV // p.groups, p.groups, BT, K).sum(2)
    dkc = (dk1 + dk2 + dk3).view(NC, HV // p.groups, p.groups, BT, K).sum(2)
    dq, dk = plan.from_chunks(dqc), plan.from_chunks(dkc)
    dv, dbeta, dg = plan.from_chunks(dvc), plan.from_chunks(dbc), plan.from_chunks(dgc)
    if not cfg.per_key_gate:
        dg = dg.squeeze(-1)

    if cfg.use_qk_l2norm:
        dq = l2norm_bwd(p.qn, p.q_rstd, dq)
        dk = l2norm_bwd(p.kn, p.k_rstd, dk)
    if cfg.beta_sigmoid_scale is not None:
        dbeta = beta_sigmoid_bwd(beta.to(ct), dbeta, cfg.beta_sigmoid_scale)
    # The floor's derivative: a step whose activated gate sits at or below it gets no gradient
    # (the gold's exp(g) * (...) is 0 there, also for g = -inf).
    dg = dg.masked_fill(_activated_gate(g, A_log, dt_bias, cfg, ct) <= fwd.GATE_FLOOR, 0)
    dA = dbias = None
    if cfg.gate_bwd is not None:
        # dA_log and ddt_bias are sums over every token (and key) that can cancel far below their
        # terms: on the CPU the activation's backward runs in float64 for float32 work (on a device
        # float64 may not be native, so there it stays in the compute dtype).
        wide = torch.float64 if ct == torch.float32 and g.device.type == "cpu" else ct
        dg, dA, dbias = cfg.gate_bwd(g.to(wide), A_log, dt_bias, dg.to(wide))
        dg = dg.to(ct)
    dh0_out = None if initial_state is None else _state_out(dh0, cfg, ctx.h0_dtype)
    return dq, dk, dv, dg, dbeta, dA, dbias, dh0_out
