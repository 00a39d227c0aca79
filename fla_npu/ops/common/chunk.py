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
from types import SimpleNamespace
from typing import Callable

import torch

from ...runtime import chunk_output as kout, wy_fast as kwy
from ...runtime.routing import ENV, cpu_impl, log_once, use_sim
from . import chunk_bwd as bwd, chunk_fwd as fwd
from .activations import beta_sigmoid_bwd, beta_sigmoid_fwd, compute_dtype, l2norm_bwd, l2norm_fwd
from .chunk_plan import ChunkPlan
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


def _expand_heads(xc: torch.Tensor, groups: int) -> torch.Tensor:
    """GVA: value head ``i`` reads q/k head ``i // groups``."""
    return xc if groups == 1 else xc.repeat_interleave(groups, dim=1)


def _prepare(q, k, v, g, beta, A_log, dt_bias, cfg: DeltaRuleConfig, plan: ChunkPlan, sim: bool):
    """Pre-processing and chunk layout. Returns the chunk tensors and what backward needs. With
    ``sim``, stage 1 (gate activation + chunk-local cumsum) runs as the Ascend C kernel on the host
    simulation (float32 cumsum, as on the device); otherwise the cumsum is accumulated in float64."""
    ct = compute_dtype(q, k, v)
    p = SimpleNamespace(ct=ct, q_rstd=None, k_rstd=None)
    qf, kf = q.to(ct), k.to(ct)
    if cfg.use_qk_l2norm:
        qf, p.q_rstd = l2norm_fwd(qf)
        kf, p.k_rstd = l2norm_fwd(kf)
    p.qn, p.kn = qf, kf
    bf = beta.to(ct)
    p.beta = bf if cfg.beta_sigmoid_scale is None else beta_sigmoid_fwd(bf, cfg.beta_sigmoid_scale)

    groups = v.shape[2] // q.shape[2]
    p.groups = groups
    p.q = _expand_heads(plan.to_chunks(qf * cfg.scale), groups)
    p.k = _expand_heads(plan.to_chunks(kf), groups)
    p.v = plan.to_chunks(v.to(ct))
    p.b = plan.to_chunks(p.beta)
    p.decay = ChunkDecay(_gate_cumsum(g, A_log, dt_bias, cfg, plan, ct, sim), ct)
    return p


def _gate_cumsum(g, A_log, dt_bias, cfg: DeltaRuleConfig, plan: ChunkPlan, ct, sim: bool) -> torch.Tensor:
    """Stage 1 in the chunk layout: ``G`` ``[NC, HV, BT, Kg]`` in log2 units, padding rows holding
    their chunk's last value."""
    if sim:
        from ...runtime.gate import gate_chunk_cumsum

        G = gate_chunk_cumsum(_kernel_gate_input(g, A_log, dt_bias, cfg), cfg.chunk_size, cfg.gate_form, A_log,
                              dt_bias, cfg.lower_bound, fwd.RCP_LN2, plan.cu_seqlens_cpu)
        G = plan.fill_padding(plan.to_chunks(G if cfg.per_key_gate else G.unsqueeze(-1)))
        return G
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


def _use_sim_stage(cfg: DeltaRuleConfig, stage: str, kernel, q, v) -> bool:
    """Whether ``stage`` runs on its simulated kernel (``kernel``: the runtime module of a mixed Cube
    kernel in the chunk layout, :mod:`...runtime.chunk_output` or :mod:`...runtime.wy_fast`):
    ``FLA_NPU_CPU_IMPL=sim`` and a call the kernel takes (Cube inputs of ``q``'s dtype, fp16 / bf16;
    chunk size and head dims within its limits); otherwise the reference, the reason logged once."""
    op = f"{cfg.name} ({stage})"
    if q.device.type == "cpu" and cpu_impl() == "sim":
        why = kernel.unsupported(q.dtype, cfg.chunk_size, q.shape[-1], v.shape[-1])
        if why is not None:
            log_once(op, "the PyTorch reference", f"{ENV}=sim, but {why}", logging.WARNING)
            return False
    return use_sim(op, q, supported_dtypes=kernel.KERNEL_DTYPES)


def _output(p, dtype, sim: bool) -> torch.Tensor:
    """Stage 5 in the chunk layout: on the simulated kernel (``sim``; Cube inputs ``q``, ``Aqk``,
    ``v_new`` rounded to the op's input ``dtype``, ``S`` rounded to it inside the kernel, float32
    accumulation) or the reference."""
    if sim:
        from ...runtime.chunk_output import chunk_output

        return chunk_output(p.q.to(dtype), p.decay.e_row.to(torch.float32), p.h.to(torch.float32), p.Aqk.to(dtype),
                            p.v_new.to(dtype))
    return fwd.output_fwd(p.q, p.decay, p.h, p.Aqk, p.v_new)


def _wy(p, Akk, wy_dtype):
    """Stage 3 in the chunk layout: on the simulated kernel when ``wy_dtype`` is given (the Cube
    inputs ``k``, ``v``, ``Akk`` rounded to it; ``beta k e_row`` and ``beta v`` formed in float32 and
    rounded once to it inside the kernel; float32 accumulation), otherwise the reference."""
    if wy_dtype is not None:
        from ...runtime.wy_fast import wy_fast

        f32 = torch.float32
        return wy_fast(p.k.to(wy_dtype), p.v.to(wy_dtype), p.b.to(f32), Akk.to(wy_dtype), p.decay.e_row.to(f32),
                       p.decay.e_tail.to(f32))
    return fwd.wy_fwd(p.k, p.v, p.b, p.decay, Akk)


def _stages_fwd(p, h0, plan: ChunkPlan, Aqk=None, Akk=None, wy_dtype=None):
    if Aqk is None:
        Aqk, Akk = fwd.chunk_intra_fwd(p.q, p.k, p.b, p.decay)
    p.Aqk, p.Akk = Aqk, Akk
    p.w, p.u, p.kg = _wy(p, Akk, wy_dtype)
    p.h, p.v_new, p.final = fwd.state_fwd(p.kg, p.w, p.u, p.decay, h0, plan)
    return p


# Value heads computed together. Heads are independent (GVA groups stay whole), so the reference
# runs in head slices: its memory is that of HEADS_PER_SLICE heads, whatever the model's head count.
HEADS_PER_SLICE = 8


def _head_slices(H: int, HV: int):
    """``(h0, h1, hv0, hv1)``: q/k heads ``[h0, h1)`` and their value heads ``[hv0, hv1)``."""
    groups = HV // H
    per = max(1, HEADS_PER_SLICE // groups)
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
    return None if parts[0] is None else torch.cat(parts, dim)


class ChunkDeltaRuleFunction(torch.autograd.Function):
    """``apply(q, k, v, g, beta, A_log, dt_bias, initial_state, cfg, plan)`` -> ``(o, final_state[, h])``."""

    @staticmethod
    def forward(ctx, q, k, v, g, beta, A_log, dt_bias, initial_state, cfg: DeltaRuleConfig, plan: ChunkPlan):
        ctx.empty = plan.num_chunks == 0
        if ctx.empty:
            return _empty_forward(ctx, (q, k, v, g, beta, A_log, dt_bias, initial_state), cfg, plan)
        # FLA_NPU_CPU_IMPL=sim: stage 1 on the simulated kernel (decided once, kept for backward) ...
        sim = compute_dtype(q, k, v) != torch.float64 and use_sim(f"{cfg.name} (stage 1: gate cumsum)", g)
        # ... and stage 5 (the output: forward only, the backward recomputes nothing from it) ...
        sim_out = compute_dtype(q, k, v) != torch.float64 and _use_sim_stage(cfg, "stage 5: output", kout, q, v)
        # ... and stage 3 (w, u, kg: forward only; the backward always recomputes them, and the
        # states built on them, with the reference from the kept Akk: see _backward_slice).
        wy_sim = compute_dtype(q, k, v) != torch.float64 and _use_sim_stage(cfg, "stage 3: WY factors", kwy, q, v)
        wy_dtype = q.dtype if wy_sim else None
        slices = _head_slices(q.shape[2], v.shape[2])
        o, final, h, kept = [], [], [], []
        for sl in slices:
            qs, ks, vs, gs, bs, As, Bs, h0s = _slice_inputs(sl, q, k, v, g, beta, A_log, dt_bias, initial_state)
            p = _prepare(qs, ks, vs, gs, bs, As, Bs, cfg, plan, sim)
            _stages_fwd(p, _state_in(h0s, cfg, p.ct), plan, wy_dtype=wy_dtype)
            o.append(plan.from_chunks(_output(p, q.dtype, sim_out)).to(q.dtype))
            final.append(_state_out(p.final, cfg, torch.float32) if cfg.output_final_state else None)
            if cfg.return_intermediate_states:
                h.append(plan.chunk_grid(_state_out(p.h, cfg, k.dtype)))
            # disable_recompute keeps every intermediate (memory for time), as FLA's option does;
            # otherwise only Aqk and Akk are kept, as FLA's kernels do.
            kept.append(p if cfg.disable_recompute else SimpleNamespace(Aqk=p.Aqk, Akk=p.Akk))

        ctx.cfg, ctx.plan, ctx.sim, ctx.slices, ctx.kept = cfg, plan, sim, slices, kept
        ctx.sim_wy = wy_dtype is not None
        ctx.h0_dtype = None if initial_state is None else initial_state.dtype
        ctx.dtypes = (q.dtype, k.dtype, v.dtype, g.dtype, beta.dtype)
        ctx.save_for_backward(q, k, v, g, beta, A_log, dt_bias, initial_state)
        o, final = torch.cat(o, 2), _cat(final, 1)
        if cfg.return_intermediate_states:
            return o, final, torch.cat(h, 2)
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
    """The backward stages for one head slice; returns its ``(dq, dk, dv, dg, dbeta, dA, dbias, dh0)``."""
    cfg, plan = ctx.cfg, ctx.plan
    _, _, hv0, hv1 = sl
    p = kept
    if not cfg.disable_recompute:
        p = _prepare(q, k, v, g, beta, A_log, dt_bias, cfg, plan, ctx.sim)
        _stages_fwd(p, _state_in(initial_state, cfg, p.ct), plan, kept.Aqk, kept.Akk)
    elif ctx.sim_wy:
        # The kept w, u, kg (and the states and v_new built on them) came from the WY kernel, whose
        # Cube operands are rounded to the input dtype; the backward differentiates the reference
        # stages, and feeding it those broke the cancellation in dA_log (bf16 `fla-npu verify`:
        # 1.5e-5 -> up to 1.3e-2). So stages 3-4 are recomputed with the reference, as without
        # disable_recompute (the intra-chunk matrices stay the kept ones).
        _stages_fwd(p, _state_in(initial_state, cfg, p.ct), plan, p.Aqk, p.Akk)
    ct = p.ct

    doc = plan.to_chunks(do[:, :, hv0:hv1].to(ct))
    dht_k = _state_in(dht[:, hv0:hv1], cfg, ct) if cfg.output_final_state else None
    dAqk, dv_local = bwd.output_bwd_local(doc, p.v_new, p.Aqk)
    dh, dv_new, dh0 = bwd.state_bwd(p.q, p.decay, p.kg, p.w, doc, dv_local, dht_k, plan)
    dq1, dk1, dw, dG1, dtail, dlast = bwd.state_output_bwd(p.q, p.k, p.decay, p.h, dh, p.v_new, dv_new, doc)
    dq2, dk2, dG2 = bwd.intra_qk_bwd(p.q, p.k, p.decay, dAqk)
    dk3, dvc, dbc, dG3, dpairs = bwd.wy_bwd(p.k, p.v, p.b, p.decay, p.Akk, dw, dv_new)
    if p.decay.scalar:  # GDN: the intra-chunk pair terms come as per-step gradients (crossing sums)
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
        dg, dA, dbias = cfg.gate_bwd(g.to(ct), A_log, dt_bias, dg)
    dh0_out = None if initial_state is None else _state_out(dh0, cfg, ctx.h0_dtype)
    return dq, dk, dv, dg, dbeta, dA, dbias, dh0_out
