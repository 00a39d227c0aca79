"""fla_npu against FLA's own pure-PyTorch references: an independent gold, written by others.

FLA's naive functions (``fla.ops.kda.naive``, ``fla.ops.gated_delta_rule.naive``, the
``naive_*_gate`` helpers) run on CPU. They cast their inputs to float32 and compute in float32, so
every comparison here uses ``FLA_NAIVE_TOLERANCE`` (relative RMS), also for the gradients, which
are taken by autograd through FLA's naive recurrences (ours run in float64 there).

What FLA's naives support shapes the cases: ``naive_recurrent_kda`` has GVA (``HV > H``) and no
varlen (run per sequence here); ``naive_recurrent_gated_delta_rule`` takes ``beta`` before ``g`` and
has no GVA (q/k are expanded with ``repeat_interleave`` first); neither has l2norm, the in-kernel
gate or the beta sigmoid, which are applied to their inputs with F.normalize, FLA's naive gates and
``sigmoid``. The chunk-local gate cumsums are checked against a cumsum of FLA's naive gate that
restarts at every chunk of every sequence.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

import fla_npu
from fla_npu.testing import FLA_NAIVE_TOLERANCE, check_close, rel_rms

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Triton is not supported on current platform, roll back to CPU."
    pytest.importorskip("einops")
    pytest.importorskip("fla")
    from fla.ops.gated_delta_rule.gate import naive_gdn_gate
    from fla.ops.gated_delta_rule.naive import naive_chunk_gated_delta_rule, naive_recurrent_gated_delta_rule
    from fla.ops.kda.gate import naive_kda_gate, naive_kda_lowerbound_gate
    from fla.ops.kda.naive import naive_chunk_kda, naive_recurrent_kda
    from fla.ops.utils.index import prepare_chunk_indices, prepare_chunk_indices_static


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def close_to_fla(name: str, x: torch.Tensor, ref: torch.Tensor) -> float:
    """``x`` finite, shaped like ``ref`` and within ``FLA_NAIVE_TOLERANCE`` of it (relative RMS)."""
    assert x.shape == ref.shape, f"{name}: shape {list(x.shape)} != FLA {list(ref.shape)}"
    assert torch.isfinite(x).all(), f"{name}: non-finite values"
    err = rel_rms(x.detach(), ref.detach())
    assert err <= FLA_NAIVE_TOLERANCE, f"{name}: relative RMS error {err:.3e} > {FLA_NAIVE_TOLERANCE:.0e} (FLA naive)"
    return err


# ------------------------------------------------------------------------------------------------
# inputs and FLA references


def make_case(family: str, B, T, H, HV, K, V, opts: dict, seed: int = 0, dtype=torch.float32) -> tuple[dict, dict]:
    """``(tensors, flags)``: the tensors (leaves of ``dtype``) and the op's flags for one case."""
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen).to(dtype)

    l2 = opts.get("l2norm", False)
    q = randn(B, T, H, K)
    k = randn(B, T, H, K) if l2 else F.normalize(randn(B, T, H, K), dim=-1)
    v = randn(B, T, HV, V)
    gshape = (B, T, HV, K) if family == "kda" else (B, T, HV)
    gate = opts.get("gate")
    t = dict(q=q, k=k, v=v)
    flags = {}
    if gate is None:
        t["g"] = F.logsigmoid(randn(*gshape))
    else:
        t["g"] = randn(*gshape)  # raw pre-activation
        flags["use_gate_in_kernel"] = True
        if opts.get("A_log", True):
            # FLA's tests: A_log shaped [1, 1, HV, 1] for KDA, [HV] for GDN
            t["A_log"] = (0.5 * randn(HV)).view((1, 1, HV, 1) if family == "kda" else (HV,))
        if opts.get("dt_bias", True):
            t["dt_bias"] = randn(HV * K if family == "kda" else HV)
        if gate == "lower_bound":
            flags["lower_bound"] = opts.get("lower_bound", -5.0)
            if opts.get("safe_gate", True):
                flags["safe_gate"] = True
    if opts.get("beta_sigmoid"):
        t["beta"] = randn(B, T, HV)
        flags["use_beta_sigmoid_in_kernel"] = True
        flags["allow_neg_eigval"] = opts.get("neg_eigval", False)
    else:
        t["beta"] = torch.rand(B, T, HV, generator=gen).to(dtype)
    N = B if opts.get("cu") is None else len(opts["cu"]) - 1
    if opts.get("h0"):
        t["initial_state"] = randn(N, HV, K, V)
    if opts.get("cu") is not None:
        flags["cu_seqlens"] = torch.tensor(opts["cu"])
    if l2:
        flags["use_qk_l2norm_in_kernel"] = True
    if "scale" in opts:
        flags["scale"] = opts["scale"]
    if opts.get("state_v_first"):
        flags["state_v_first"] = True
    if "chunk_size" in opts:
        flags["chunk_size"] = opts["chunk_size"]
    return t, flags


def call_ours(op: str, t: dict, flags: dict):
    """Our op on ``t``; ``initial_state``/final state converted from/to the ``[K, V]`` layout."""
    kw = dict(t)
    if flags.get("state_v_first") and "initial_state" in kw:
        kw["initial_state"] = kw["initial_state"].transpose(-1, -2).contiguous()
    if op.startswith("fused_recurrent"):
        flags = {n: x for n, x in flags.items() if n not in ("chunk_size", "safe_gate")}
    o, ht = getattr(fla_npu, op)(**kw, **flags, output_final_state=True)
    return o, (ht.transpose(-1, -2) if flags.get("state_v_first") else ht)


def activated(family: str, t: dict, flags: dict):
    """``(q, k, g, beta)`` as FLA's naive recurrences take them: l2-normalised, gate and sigmoid applied."""
    q, k, g, beta = t["q"], t["k"], t["g"], t["beta"]
    if flags.get("use_qk_l2norm_in_kernel"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    if flags.get("use_gate_in_kernel"):
        if family == "kda" and flags.get("lower_bound") is not None:
            g = naive_kda_lowerbound_gate(g, t.get("A_log"), t.get("dt_bias"), flags["lower_bound"])
        elif family == "kda":
            g = naive_kda_gate(g, t["A_log"], t.get("dt_bias"))
        else:
            g = naive_gdn_gate(g, t["A_log"], t.get("dt_bias"))
    if flags.get("use_beta_sigmoid_in_kernel"):
        beta = beta.sigmoid() * (2.0 if flags.get("allow_neg_eigval") else 1.0)
    return q, k, g, beta


def _segments(T: int, flags: dict):
    cu = flags.get("cu_seqlens")
    return [(0, T)] if cu is None else list(zip(cu[:-1].tolist(), cu[1:].tolist()))


def fla_reference(family: str, t: dict, flags: dict):
    """FLA's naive recurrence (per sequence for varlen) on ``t``: ``(o, final_state)``."""
    q, k, g, beta = activated(family, t, flags)
    v, h0, scale = t["v"], t.get("initial_state"), flags.get("scale")
    varlen = flags.get("cu_seqlens") is not None
    os_, hs = [], []
    for i, (s, e) in enumerate(_segments(q.shape[1], flags)):
        h = None if h0 is None else (h0[i:i + 1] if varlen else h0)
        qs, ks, vs, gs, bs = (x[:, s:e] for x in (q, k, v, g, beta))
        if family == "kda":
            o, ht = naive_recurrent_kda(qs, ks, vs, gs, bs, scale=scale, initial_state=h, output_final_state=True)
        else:  # no GVA in FLA's GDN naive: expand q/k to the value heads; beta comes before g
            G = vs.shape[2] // qs.shape[2]
            qs, ks = qs.repeat_interleave(G, dim=2), ks.repeat_interleave(G, dim=2)
            o, ht = naive_recurrent_gated_delta_rule(qs, ks, vs, bs, gs, scale=scale, initial_state=h,
                                                     output_final_state=True)
        os_.append(o)
        hs.append(ht)
    return torch.cat(os_, 1), torch.cat(hs, 0)


# ------------------------------------------------------------------------------------------------
# forward: chunk and recurrent ops vs FLA's naive recurrences

# The cases both families run: the plain call, its shapes and the initial state ...
SHARED_CASES = {
    "plain": ((2, 100, 2, 2, 32, 32), {}),
    "h0_scale": ((2, 100, 2, 2, 32, 32), dict(h0=True, scale=0.5)),
    "gva": ((2, 90, 2, 4, 32, 16), dict(h0=True)),
    "gva_4x_l2norm": ((1, 64, 1, 4, 64, 32), dict(h0=True, l2norm=True)),
    "odd_dims": ((2, 63, 3, 3, 60, 40), dict(h0=True)),
}
# ... and, after each family's gates, beta, the state layout and varlen.
SHARED_SWITCH_CASES = {
    "beta_sigmoid": ((2, 80, 2, 2, 32, 32), dict(beta_sigmoid=True)),
    "neg_eigval": ((2, 80, 2, 4, 32, 32), dict(beta_sigmoid=True, neg_eigval=True, h0=True)),
    "state_v_first": ((2, 80, 2, 4, 32, 48), dict(h0=True, state_v_first=True)),
    "varlen": ((1, 200, 2, 4, 32, 32), dict(h0=True, cu=[0, 15, 70, 200])),
}

KDA_CASES = {
    **SHARED_CASES,
    "gate_softplus": ((2, 80, 2, 4, 32, 32), dict(gate="softplus", h0=True)),
    "gate_softplus_no_bias": ((2, 80, 2, 2, 32, 32), dict(gate="softplus", dt_bias=False)),
    "gate_lower_bound": ((2, 80, 2, 4, 32, 32), dict(gate="lower_bound", h0=True)),
    "gate_lower_bound_no_A_log": ((2, 80, 2, 2, 32, 32), dict(gate="lower_bound", A_log=False)),
    "gate_lower_bound_-3_unsafe": ((2, 80, 2, 2, 32, 32), dict(gate="lower_bound", lower_bound=-3.0,
                                                                 safe_gate=False, dt_bias=False)),
    **SHARED_SWITCH_CASES,
    "varlen_chunk32": ((1, 150, 2, 2, 32, 32), dict(h0=True, cu=[0, 1, 33, 150], chunk_size=32)),
    "chunk32": ((2, 100, 2, 4, 32, 32), dict(h0=True, chunk_size=32)),
}

GDN_CASES = {
    **SHARED_CASES,
    "gate": ((2, 80, 2, 4, 32, 32), dict(gate="softplus", h0=True)),
    "gate_no_bias": ((2, 80, 2, 2, 32, 32), dict(gate="softplus", dt_bias=False)),
    **SHARED_SWITCH_CASES,
    "chunk16": ((2, 100, 2, 2, 32, 32), dict(h0=True, chunk_size=16)),
    "chunk32": ((2, 100, 2, 4, 32, 32), dict(h0=True, chunk_size=32)),
}


def check_vs_fla_naive_recurrent(model: str, op: str, shape: tuple, opts: dict) -> None:
    """``op`` (of ``model``, "kda" or "gdn") on one case: o and the final state against FLA's naive
    recurrence."""
    t, flags = make_case(model, *shape, opts)
    o, ht = call_ours(op, t, flags)
    o_ref, ht_ref = fla_reference(model, t, flags)
    close_to_fla(f"{op} o", o, o_ref)
    close_to_fla(f"{op} final_state", ht, ht_ref)


@pytest.mark.parametrize("case", KDA_CASES)
@pytest.mark.parametrize("op", ["chunk_kda", "fused_recurrent_kda"])
def test_kda_vs_fla_naive_recurrent(op, case):
    check_vs_fla_naive_recurrent("kda", op, *KDA_CASES[case])


@pytest.mark.parametrize("case", GDN_CASES)
@pytest.mark.parametrize("op", ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"])
def test_gdn_vs_fla_naive_recurrent(op, case):
    check_vs_fla_naive_recurrent("gdn", op, *GDN_CASES[case])


@pytest.mark.parametrize("chunk_size", [32, 64])
@pytest.mark.parametrize("shape,h0", [((2, 128, 2, 2, 32, 32), True), ((1, 64, 1, 2, 64, 32), False)])
def test_chunk_kda_vs_fla_naive_chunk(shape, h0, chunk_size):
    """``naive_chunk_kda`` (needs ``T % chunk_size == 0``) is FLA's chunked form of the same math."""
    t, _ = make_case("kda", *shape, dict(h0=h0))
    o, ht = fla_npu.chunk_kda(**t, output_final_state=True, chunk_size=chunk_size)
    o_ref, ht_ref = naive_chunk_kda(t["q"], t["k"], t["v"], t["g"], t["beta"], initial_state=t.get("initial_state"),
                                    output_final_state=True, chunk_size=chunk_size)
    close_to_fla("o", o, o_ref)
    close_to_fla("final_state", ht, ht_ref)


@pytest.mark.parametrize("chunk_size", [16, 32, 64])
@pytest.mark.parametrize("shape,h0", [((2, 100, 2, 2, 32, 32), True), ((1, 70, 3, 3, 64, 16), False)])
def test_chunk_gdn_vs_fla_naive_chunk(shape, h0, chunk_size):
    """``naive_chunk_gated_delta_rule`` pads T to the chunk size; no GVA (HV == H here)."""
    t, _ = make_case("gdn", *shape, dict(h0=h0))
    o, ht = fla_npu.chunk_gated_delta_rule(**t, output_final_state=True, chunk_size=chunk_size)
    o_ref, ht_ref = naive_chunk_gated_delta_rule(t["q"], t["k"], t["v"], t["g"], t["beta"], chunk_size=chunk_size,
                                                 initial_state=t.get("initial_state"), output_final_state=True)
    close_to_fla("o", o, o_ref)
    close_to_fla("final_state", ht, ht_ref)


# ------------------------------------------------------------------------------------------------
# backward: autograd through FLA's naive recurrences (which compute in float32)

KDA_GRAD_CASES = {
    "gva_h0": ((2, 80, 2, 4, 32, 32), dict(h0=True)),
    "gate_softplus_l2norm_beta_sigmoid": ((2, 70, 2, 4, 32, 16), dict(gate="softplus", h0=True, l2norm=True,
                                                                      beta_sigmoid=True)),
    "gate_lower_bound": ((2, 70, 2, 2, 32, 32), dict(gate="lower_bound", h0=True)),
    "gate_lower_bound_no_A_log_neg_eigval": ((1, 70, 2, 2, 32, 32), dict(gate="lower_bound", A_log=False,
                                                                          beta_sigmoid=True, neg_eigval=True)),
    "varlen_chunk32": ((1, 150, 2, 4, 32, 32), dict(h0=True, cu=[0, 20, 90, 150], chunk_size=32)),
}

GDN_GRAD_CASES = {
    "gva_h0": ((2, 80, 2, 4, 32, 32), dict(h0=True)),
    "gate_l2norm_neg_eigval": ((2, 70, 2, 4, 32, 16), dict(gate="softplus", h0=True, l2norm=True,
                                                           beta_sigmoid=True, neg_eigval=True)),
    "varlen_chunk16": ((1, 150, 2, 2, 32, 32), dict(h0=True, cu=[0, 20, 90, 150], chunk_size=16)),
}


def _grad_check(family: str, op: str, shape, opts):
    t, flags = make_case(family, *shape, opts, dtype=torch.float64)
    if family == "kda" and "initial_state" in t:  # chunk_kda requires a float32 initial state, as FLA's does
        t["initial_state"] = t["initial_state"].float()
    gen = torch.Generator().manual_seed(1)
    N = shape[0] if opts.get("cu") is None else len(opts["cu"]) - 1
    do = torch.randn(*t["v"].shape, generator=gen, dtype=torch.float64)
    dht = torch.randn(N, shape[3], shape[4], shape[5], generator=gen, dtype=torch.float64)

    ours = {n: x.clone().requires_grad_() for n, x in t.items()}
    o, ht = call_ours(op, ours, flags)
    ((o * do).sum() + (ht * dht).sum()).backward()

    theirs = {n: x.clone().requires_grad_() for n, x in t.items()}
    o_ref, ht_ref = fla_reference(family, theirs, flags)
    ((o_ref * do).sum() + (ht_ref * dht).sum()).backward()

    close_to_fla("o", o, o_ref)
    close_to_fla("final_state", ht, ht_ref)
    for n in t:
        assert ours[n].grad is not None and ours[n].grad.dtype == ours[n].dtype, n
        close_to_fla(f"d{n}", ours[n].grad, theirs[n].grad)


@pytest.mark.parametrize("case", KDA_GRAD_CASES)
def test_chunk_kda_grad_vs_fla_naive(case):
    _grad_check("kda", "chunk_kda", *KDA_GRAD_CASES[case])


@pytest.mark.parametrize("case", GDN_GRAD_CASES)
def test_chunk_gdn_grad_vs_fla_naive(case):
    _grad_check("gdn", "chunk_gated_delta_rule", *GDN_GRAD_CASES[case])


def test_fla_naive_computes_in_float32():
    """Why the gradient checks above use FLA_NAIVE_TOLERANCE: FLA's naives return float32-accurate
    results for float64 inputs (ours, in float64, agree with fla_npu's float64 gold to 1e-12)."""
    t, flags = make_case("kda", 1, 40, 1, 1, 16, 16, dict(h0=True), dtype=torch.float64)
    t["initial_state"] = t["initial_state"].float()
    o_ref, _ = fla_reference("kda", t, flags)
    o, _ = call_ours("chunk_kda", t, flags)
    gold, _ = fla_npu.ops.kda.naive_recurrent_kda(t["q"], t["k"], t["v"], t["g"], t["beta"],
                                                  initial_state=t["initial_state"].double())
    check_close("ours float64", o, gold, torch.float64)
    assert 1e-12 < rel_rms(o_ref, gold) < FLA_NAIVE_TOLERANCE


# ------------------------------------------------------------------------------------------------
# gates: fused_kda_gate / fused_gdn_gate forward and backward, chunk-local cumsums

KDA_GATE_CASES = [  # (lower_bound, A_log?, dt_bias?)
    (None, True, False), (None, True, True),
    (-5.0, True, False), (-5.0, True, True), (-5.0, False, True), (-3.0, False, False),
]


def _kda_gate_inputs(lower_bound, has_A, has_bias, shape=(2, 33, 4, 24), seed=0):
    gen = torch.Generator().manual_seed(seed)
    H, K = shape[-2:]
    g = torch.randn(*shape, generator=gen) * 10  # FLA's test_gate scales g by 10
    A_log = torch.log(torch.empty(1, 1, H, 1).uniform_(1, 16, generator=gen)) if has_A else None
    dt_bias = torch.randn(H * K, generator=gen) if has_bias else None
    return g, A_log, dt_bias


def _fla_kda_gate(g, A_log, dt_bias, lower_bound, output_dtype=torch.float32):
    if lower_bound is None:
        return naive_kda_gate(g, A_log, dt_bias, output_dtype=output_dtype)
    return naive_kda_lowerbound_gate(g, A_log, dt_bias, lower_bound, output_dtype=output_dtype)


@pytest.mark.parametrize("lower_bound,has_A,has_bias", KDA_GATE_CASES)
def test_fused_kda_gate_vs_fla_naive(lower_bound, has_A, has_bias):
    g, A_log, dt_bias = _kda_gate_inputs(lower_bound, has_A, has_bias)
    leaves = [x for x in (g, A_log, dt_bias) if x is not None]
    ours = [x.clone().requires_grad_() for x in leaves]
    theirs = [x.clone().requires_grad_() for x in leaves]

    def unpack(ts):
        it = iter(ts)
        return next(it), (next(it) if has_A else None), (next(it) if has_bias else None)

    y = fla_npu.fused_kda_gate(*unpack(ours), lower_bound=lower_bound)
    y_ref = _fla_kda_gate(*unpack(theirs), lower_bound)
    assert y.dtype == torch.float32
    close_to_fla("y", y, y_ref)
    if lower_bound is not None:
        assert bool((y >= lower_bound).all() and (y <= 0).all())
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
    y.backward(dy)
    y_ref.backward(dy)
    for name, a, b in zip(("dg", "dA_log", "ddt_bias"), ours, theirs):
        assert a.grad.shape == b.grad.shape == a.shape, name  # dA_log shaped like A_log ([1, 1, H, 1])
        close_to_fla(name, a.grad, b.grad)


@pytest.mark.parametrize("dtype,output_dtype", [(torch.float16, torch.float32), (torch.bfloat16, torch.bfloat16),
                                                (torch.float32, torch.float16)])
@pytest.mark.parametrize("lower_bound", [None, -5.0])
def test_fused_kda_gate_dtypes_vs_fla_naive(lower_bound, dtype, output_dtype):
    """Low-precision g and output_dtype: both compute in float32 and round once; dg comes back in g's dtype."""
    g, A_log, dt_bias = _kda_gate_inputs(lower_bound, True, True, shape=(40, 2, 16))  # g [..., H, K]
    g = g.to(dtype).requires_grad_()
    y = fla_npu.fused_kda_gate(g, A_log, dt_bias, lower_bound, output_dtype)
    y_ref = _fla_kda_gate(g.detach(), A_log, dt_bias, lower_bound, output_dtype)
    assert y.dtype == output_dtype
    check_close("y", y.detach(), y_ref, output_dtype)
    y.float().sum().backward()
    assert g.grad.dtype == dtype and torch.isfinite(g.grad).all()


@pytest.mark.parametrize("has_bias", [False, True])
def test_fused_gdn_gate_vs_fla_naive(has_bias):
    gen = torch.Generator().manual_seed(0)
    HV = 4
    g = torch.randn(2, 64, HV, generator=gen) * 10
    A_log = torch.log(torch.empty(HV).uniform_(1, 16, generator=gen))
    dt_bias = torch.randn(HV, generator=gen) if has_bias else None
    leaves = [x for x in (g, A_log, dt_bias) if x is not None]
    ours = [x.clone().requires_grad_() for x in leaves]
    theirs = [x.clone().requires_grad_() for x in leaves]
    y = fla_npu.fused_gdn_gate(*ours)
    y_ref = naive_gdn_gate(*theirs)
    close_to_fla("y", y, y_ref)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
    y.backward(dy)
    y_ref.backward(dy)
    for name, a, b in zip(("dg", "dA_log", "ddt_bias"), ours, theirs):
        assert a.grad.shape == b.grad.shape == a.shape, name
        close_to_fla(name, a.grad, b.grad)


def chunk_restarting_cumsum(y: torch.Tensor, chunk_size: int, cu_seqlens: torch.Tensor | None = None) -> torch.Tensor:
    """Cumsum over time (dim 1) restarting at every chunk of every sequence."""
    out = torch.zeros_like(y)
    B, T = y.shape[:2]
    rows = [(b, 0, T) for b in range(B)] if cu_seqlens is None else \
        [(0, s, e) for s, e in zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist())]
    for b, s, e in rows:
        for c in range(s, e, chunk_size):
            out[b, c:min(c + chunk_size, e)] = y[b, c:min(c + chunk_size, e)].cumsum(0)
    return out


CUMSUM_CASES = {  # (B, T, chunk_size, scale, cu_seqlens, pass chunk_indices)
    "dense_64": (2, 100, 64, None, None, False),
    "dense_16_log2": (2, 100, 16, 1 / math.log(2), None, False),
    "varlen_64": (1, 170, 64, None, [0, 30, 100, 170], False),
    "varlen_32_log2_indices": (1, 170, 32, 1 / math.log(2), [0, 1, 30, 100, 170], True),
}


@pytest.mark.parametrize("gate", [(None, True, True), (-5.0, True, False), (-5.0, False, True)],
                         ids=["softplus", "lower_bound", "lower_bound_no_A_log"])
@pytest.mark.parametrize("case", CUMSUM_CASES)
def test_kda_gate_chunk_cumsum_vs_fla_naive(case, gate):
    B, T, BT, scale, cu, indices = CUMSUM_CASES[case]
    lower_bound, has_A, has_bias = gate
    g, A_log, dt_bias = _kda_gate_inputs(lower_bound, has_A, has_bias, shape=(B, T, 2, 16))
    cu = None if cu is None else torch.tensor(cu)
    ci = prepare_chunk_indices(cu, BT) if indices else None
    out = fla_npu.kda_gate_chunk_cumsum(g, A_log, BT, scale=scale, dt_bias=dt_bias, cu_seqlens=cu,
                                        chunk_indices=ci, lower_bound=lower_bound)
    ref = chunk_restarting_cumsum(_fla_kda_gate(g, A_log, dt_bias, lower_bound), BT, cu) * (scale or 1.0)
    assert out.dtype == torch.float32
    close_to_fla("cumsum", out, ref)


def test_kda_gate_chunk_cumsum_graph_padding_vs_fla_naive():
    """``use_graph`` (positional, as in FLA's signature): zero-length tail sequences in ``cu_seqlens``
    and FLA's fixed-size chunk list with sentinel rows (``prepare_chunk_indices_static``)."""
    BT, cu = 64, torch.tensor([0, 30, 100, 170, 170, 170])
    g, A_log, dt_bias = _kda_gate_inputs(None, True, True, shape=(1, 170, 2, 16))
    ci, _ = prepare_chunk_indices_static(cu, BT, nt_max=-(-170 // BT) + len(cu) - 2)
    assert int(ci[-1, 0]) < 0  # the list is padded with sentinel rows
    out = fla_npu.kda_gate_chunk_cumsum(g, A_log, BT, None, dt_bias, cu, torch.float, ci, None, True)
    close_to_fla("cumsum", out, chunk_restarting_cumsum(naive_kda_gate(g, A_log, dt_bias), BT, cu))


@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("case", CUMSUM_CASES)
def test_gdn_gate_chunk_cumsum_vs_fla_naive(case, has_bias):
    B, T, BT, scale, cu, indices = CUMSUM_CASES[case]
    gen = torch.Generator().manual_seed(0)
    HV = 3
    g = torch.randn(B, T, HV, generator=gen) * 3
    A_log = 0.5 * torch.randn(HV, generator=gen)
    dt_bias = torch.randn(HV, generator=gen) if has_bias else None
    cu = None if cu is None else torch.tensor(cu)
    ci = prepare_chunk_indices(cu, BT) if indices else None
    out = fla_npu.gdn_gate_chunk_cumsum(g, A_log, BT, scale=scale, dt_bias=dt_bias, cu_seqlens=cu, chunk_indices=ci)
    ref = chunk_restarting_cumsum(naive_gdn_gate(g, A_log, dt_bias), BT, cu) * (scale or 1.0)
    assert out.dtype == torch.float32
    close_to_fla("cumsum", out, ref)


def test_gate_chunk_cumsum_output_dtype():
    """``output_dtype=None`` keeps g's dtype (FLA: ``output_dtype or g.dtype``)."""
    g = torch.randn(1, 40, 2, 8).to(torch.bfloat16)
    A_log = torch.zeros(2)
    ref = chunk_restarting_cumsum(naive_kda_gate(g, A_log), 16)
    out = fla_npu.kda_gate_chunk_cumsum(g, A_log, 16, output_dtype=None)
    assert out.dtype == torch.bfloat16
    check_close("kda", out, ref, torch.bfloat16)
    out = fla_npu.gdn_gate_chunk_cumsum(g[..., 0], A_log, 16, output_dtype=None)
    assert out.dtype == torch.bfloat16
    check_close("gdn", out, chunk_restarting_cumsum(naive_gdn_gate(g[..., 0], A_log), 16), torch.bfloat16)
