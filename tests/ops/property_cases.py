"""Random valid calls of the delta-rule ops, drawn by hypothesis, and their check against the
float64 gold (used by test_properties.py).

A :class:`Case` is everything a draw decides: op and kind (chunked, forward + backward; or
token-by-token decode, forward), dtype, dense or varlen layout with its sequence lengths (0, 1 and
non-multiples of the chunk included), heads and GVA ratio, head dims, every switch of the op, the
range of the gate (mild, up to the lower bound -5, strong) with a fraction of -inf steps (full
resets), an initial state or none, and the seed of the tensors. It is a frozen dataclass with a
readable repr, so a failing draw is pasted into ``REGRESSIONS`` as it is printed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

import fla_npu
from fla_npu.ops.common.naive import naive_recurrent_batch
from fla_npu.testing import check_close

from helpers import (
    GRAD_NAMES,
    Switches,
    activate64,
    cu,
    gold_forward,
    gold_forward_backward,
    make_cotangents,
    make_inputs,
    round_inputs,
    run_chunk,
    state_in,
    state_out,
)

DTYPES = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
FUNCTIONS = {("kda", "chunk"): fla_npu.chunk_kda, ("gdn", "chunk"): fla_npu.chunk_gated_delta_rule,
             ("kda", "recurrent"): fla_npu.fused_recurrent_kda,
             ("gdn", "recurrent"): fla_npu.fused_recurrent_gated_delta_rule}


@dataclass(frozen=True)
class Case:
    op: str                  # "kda" or "gdn"
    kind: str                # "chunk" (forward + backward) or "recurrent" (forward)
    dtype: str               # a key of DTYPES
    lengths: tuple           # one length per sequence
    varlen: bool             # True: B = 1 with cu_seqlens; False: B = len(lengths), all lengths equal
    H: int
    groups: int              # HV = H * groups
    K: int
    V: int
    sw: Switches
    gate_range: str          # "mild", "bounded" (down to -5), "strong"
    p_reset: float           # fraction of -inf steps in a log-decay gate
    initial_state: bool
    seed: int


@st.composite
def switches(draw, op: str, kind: str) -> Switches:
    """Every switch of ``op``, only in valid combinations."""
    gate = draw(st.sampled_from([None, "softplus", "lower_bound"] if op == "kda" else [None, "softplus"]))
    lower_bound = draw(st.sampled_from([-5.0, -3.0, -1.0])) if gate == "lower_bound" else None
    beta_sigmoid = draw(st.booleans())
    chunk_sizes = (32, 64) if op == "kda" else (16, 32, 64)
    return Switches(
        qk_l2norm=draw(st.booleans()), gate=gate,
        use_A_log=True if gate != "lower_bound" else draw(st.booleans()),
        use_dt_bias=draw(st.booleans()) if gate is not None else True,
        lower_bound=lower_bound, beta_sigmoid=beta_sigmoid,
        neg_eigval=beta_sigmoid and draw(st.booleans()),
        safe_gate=op == "kda" and gate == "lower_bound" and draw(st.booleans()),
        disable_recompute=op == "kda" and kind == "chunk" and draw(st.booleans()),
        state_v_first=draw(st.booleans()),
        scale=draw(st.sampled_from([None, 0.3])),
        chunk_size=draw(st.sampled_from(chunk_sizes)) if kind == "chunk" else 64,
    )


@st.composite
def cases(draw, op: str, kind: str, max_len: int = 80) -> Case:
    varlen = draw(st.booleans())
    length = st.one_of(st.sampled_from([0, 1, 15, 16, 17, 31, 33, 63, 64, 65]), st.integers(0, max_len))
    if varlen:
        lengths = tuple(draw(st.lists(length, min_size=1, max_size=4)))
    else:
        lengths = (draw(length),) * draw(st.integers(1, 2))
    sw = draw(switches(op, kind))
    return Case(op=op, kind=kind, dtype=draw(st.sampled_from(list(DTYPES))), lengths=lengths, varlen=varlen,
                H=draw(st.integers(1, 2)), groups=draw(st.sampled_from([1, 2])), K=draw(st.sampled_from([8, 16, 32])),
                V=draw(st.sampled_from([8, 16])), sw=sw, gate_range=draw(st.sampled_from(["mild", "bounded", "strong"])),
                p_reset=draw(st.sampled_from([0.0, 0.0, 0.03, 0.3])) if sw.gate is None else 0.0,
                initial_state=draw(st.booleans()), seed=draw(st.integers(0, 2**31 - 1)))


@st.composite
def kernel_cases(draw, op: str) -> Case:
    """A chunked call the Ascend C kernels take whole (:func:`cases` in float16 / bfloat16 with K and V
    multiples of 16): with ``FLA_NPU_CPU_IMPL=sim`` its forward runs on the simulated kernels."""
    case = draw(cases(op, "chunk"))
    return replace(case, dtype=draw(st.sampled_from(["fp16", "bf16"])), K=draw(st.sampled_from([16, 32])),
                   V=draw(st.sampled_from([16, 32])))


def _gate(case: Case, shape) -> torch.Tensor:
    """The log decay of a case without gate activation: its range, then the -inf resets."""
    if case.gate_range == "bounded":
        g = -5.0 * torch.rand(shape)
    else:
        g = F.logsigmoid(torch.randn(shape)) * (20.0 if case.gate_range == "strong" else 1.0)
    if case.p_reset:
        g = torch.where(torch.rand(shape) < case.p_reset, torch.full_like(g, float("-inf")), g)
    return g


def inputs(case: Case):
    """``(x, cu_seqlens, B, T)``: the rounded inputs of ``case``."""
    torch.manual_seed(case.seed)
    B, T = (1, sum(case.lengths)) if case.varlen else (len(case.lengths), case.lengths[0])
    HV = case.H * case.groups
    x = make_inputs(case.op, B, T, case.H, HV, case.K, case.V, case.sw, N=len(case.lengths),
                    initial_state=case.initial_state, strong_gate=case.gate_range == "strong")
    if case.sw.gate is None:
        x["g"] = _gate(case, x["g"].shape)
    return round_inputs(x, DTYPES[case.dtype]), (cu(*case.lengths) if case.varlen else None), B, T


def check_case(case: Case) -> bool:
    """Run ``case`` and compare it with the float64 gold: outputs, final states and (chunked) every
    gradient finite and within the dtype's tolerance. Returns False, checking nothing, where the
    gold itself is not finite (the draw is then not a valid reference case)."""
    x, cs, B, T = inputs(case)
    dtype = DTYPES[case.dtype]
    fn = FUNCTIONS[(case.op, case.kind)]
    N, HV = len(case.lengths), case.H * case.groups
    if case.kind == "recurrent":
        gold = gold_forward(case.op, x, case.sw, cs)
        if not all(torch.isfinite(t).all() for t in gold.values()):
            return False
        o, ht = _call_recurrent(fn, case, x, cs)
        check_close("o", o, gold["o"], dtype)
        check_close("ht", state_out(ht, case.sw), gold["ht"], _tolerance_dtype("ht", dtype))
        return True
    do, dht = make_cotangents((B, T, HV, case.V), N, HV, case.K, case.V, dtype)
    if sum(case.lengths) == 0:  # no token: the final state is the initial one, nothing else is used
        gold = gold_forward(case.op, x, case.sw, cs)
        gold.update({GRAD_NAMES[n]: dht.double() if n == "h0" else None for n in x})
    else:
        gold = gold_forward_backward(case.op, x, case.sw, do, dht, cs)
    if not all(t is None or torch.isfinite(t).all() for t in gold.values()):
        return False
    out = run_chunk(fn, case.op, x, case.sw, do, dht, cs)
    terms = parameter_terms(case, x, gold)
    terms["dbeta"] = lambda: beta_terms(case, x, do, dht, cs)
    for name, ref in gold.items():
        got = out.get(name)
        assert got is not None, f"{name}: missing"
        if ref is None:  # no token: the gold's graph never reached this input
            assert not got.any(), f"{name}: nonzero gradient of an unused input"
            continue
        check_close(name, got, ref, _tolerance_dtype(name, dtype), terms.get(name))
    for name, t in x.items():
        d = out[GRAD_NAMES[name]]
        assert d.dtype == t.dtype and d.shape == t.shape, f"gradient of {name}: {d.dtype} {list(d.shape)}"
    return True


def parameter_terms(case: Case, x: dict, gold: dict) -> dict:
    """For the gate parameters' gradients (sums over every token, and key for a per-head
    ``A_log``): the sum of the magnitudes of their terms, from the gold gradient of the raw gate
    ``dg`` (see :func:`fla_npu.testing.check_close`). With ``x = g + dt_bias`` the activation is
    ``-exp(A_log) softplus(x)`` or ``lower_bound sigmoid(exp(A_log) x)``; per element the
    ``dt_bias`` term is ``dg`` and the ``A_log`` term ``dg softplus(x) / sigmoid(x)`` or ``dg x``."""
    if case.sw.gate is None or gold.get("dg") is None:
        return {}
    dg = gold["dg"].double()
    HV = dg.shape[2]
    xg = x["g"].double()
    if x.get("dt_bias") is not None:
        xg = xg + x["dt_bias"].double().reshape(1, 1, *dg.shape[2:])
    if case.sw.lower_bound is None:
        dA_terms = dg * F.softplus(xg) / torch.sigmoid(xg)
    else:
        dA_terms = dg * xg
    out = {}
    if x.get("A_log") is not None:
        out["dA_log"] = dA_terms.abs().reshape(-1, HV, *dg.shape[3:]).sum(0).reshape(HV, -1).sum(1).reshape(x["A_log"].shape)
    if x.get("dt_bias") is not None:
        out["ddt_bias"] = dg.abs().reshape(-1, *dg.shape[2:]).sum(0).reshape(x["dt_bias"].shape)
    return out


def beta_terms(case: Case, x: dict, do: torch.Tensor, dht: torch.Tensor | None, cu_seqlens,
               magnitude: bool = True) -> torch.Tensor:
    """The magnitudes of the terms of ``dbeta``, shaped like it (see
    :func:`fla_npu.testing.check_close`). Per token ``beta`` scales one rank-one update,
    ``S_t = D_t S_{t-1} + beta_t k_t u_t^T`` with ``u_t = v_t - (D_t S_{t-1})^T k_t``, so
    ``dbeta_t = sum_ij k_t[i] dS_t[i, j] u_t[j]`` (``dS_t``: the loss's gradient at ``S_t``), times the
    sigmoid's derivative under ``beta_sigmoid``; these K x V products can cancel by far more than
    float32's precision (one token: 4,000 times). The products are read off the gold's recurrence
    (its ``steps``), ``dS_t`` by autograd through it. ``magnitude=False``: the signed products' sum,
    which is ``dbeta`` itself (the test of this function)."""
    m = torch.abs if magnitude else (lambda t: t)
    x64 = {n: t.detach().double().requires_grad_(n == "v") for n, t in x.items()}  # v: a graph to differentiate
    q, k, g, beta = activate64(case.op, x64, case.sw)
    scale = q.shape[-1] ** -0.5 if case.sw.scale is None else case.sw.scale
    steps = []
    o, S = naive_recurrent_batch(q, k, x64["v"], beta, scale, initial_state=x64.get("h0"), cu_seqlens=cu_seqlens,
                                 steps=steps, **({"gk": g} if case.op == "kda" else {"g": g}))
    terms = torch.zeros_like(beta.detach())
    if not steps:
        return terms
    loss = (o * do.double()).sum() + (0.0 if dht is None else (S * dht.double()).sum())
    dS = torch.autograd.grad(loss, [step[-1] for step in steps])
    for (b, t, k_t, u_t, _), dS_t in zip(steps, dS):
        terms[b, t] = torch.einsum("hk,hkv,hv->h", m(k_t.detach()), m(dS_t), m(u_t.detach()))
    if case.sw.beta_sigmoid:
        sig = torch.sigmoid(x64["beta"].detach())
        terms = terms * (2.0 if case.sw.neg_eigval else 1.0) * sig * (1 - sig)  # positive
    return terms


def _tolerance_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    """The states and the float32 parameters (``A_log``, ``dt_bias``) and their gradients are float32
    whatever the dtype of q/k/v (FLA's contract): float32's tolerance for them under float64."""
    if dtype == torch.float64 and name in ("ht", "dh0", "dA_log", "ddt_bias"):
        return torch.float32
    return dtype


def _call_recurrent(fn, case: Case, x: dict, cs):
    sw = case.sw
    kw = dict(scale=sw.scale, use_qk_l2norm_in_kernel=sw.qk_l2norm, use_gate_in_kernel=sw.gate is not None,
              use_beta_sigmoid_in_kernel=sw.beta_sigmoid, allow_neg_eigval=sw.neg_eigval, state_v_first=sw.state_v_first,
              initial_state=state_in(x.get("h0"), sw), output_final_state=True, cu_seqlens=cs)
    if sw.gate is not None:
        kw.update(A_log=x.get("A_log"), dt_bias=x.get("dt_bias"))
    if case.op == "kda":
        return fn(x["q"], x["k"], x["v"], x["g"], x["beta"], lower_bound=sw.lower_bound, **kw)
    return fn(x["q"], x["k"], x["v"], g=x["g"], beta=x["beta"], **kw)
