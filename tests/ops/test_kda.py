"""chunk_kda against the float64 naive gold: forward (o, final state) and every gradient.

Inputs are rounded to the dtype under test and the gold runs on the rounded values, so the
tolerances of fla_npu.testing bound the op's own error (see helpers.py).
"""

from __future__ import annotations

import pytest
import torch

from fla_npu import chunk_kda
from fla_npu.testing import check_close
from fla_npu.verify import load_production_shapes

from helpers import (
    BF16,
    DTYPES,
    FP16,
    FP32,
    FP32_BF16,
    HEAD_DIMS,
    LOW_PRECISION,
    VARLEN_CASES,
    Switches,
    assert_matches,
    check_chunk_op,
    check_cu_seqlens_cpu_same_result,
    check_varlen_equals_separate_calls,
    cu,
    gold_forward,
    gold_forward_backward,
    gold_state_after,
    make_cotangents,
    make_inputs,
    one_thread,
    round_inputs,
    run_chunk,
    seq_bounds,
)

# The six switches of the production configuration, from the package's copy of the production
# shapes ("kda_switches_production").
PROD = load_production_shapes()["kda_switches_production"]
PROD_SW = Switches(
    qk_l2norm=PROD["use_qk_l2norm_in_kernel"],
    gate=("lower_bound" if PROD["lower_bound"] is not None else "softplus") if PROD["use_gate_in_kernel"] else None,
    lower_bound=PROD["lower_bound"],
    beta_sigmoid=PROD["use_beta_sigmoid_in_kernel"],
    safe_gate=PROD["safe_gate"],
    disable_recompute=PROD["disable_recompute"],
)

_ = one_thread  # autouse fixture: run this module single-threaded (see helpers.one_thread)


def check_op(*args, **kwargs):
    return check_chunk_op(chunk_kda, "kda", *args, **kwargs)


# --------------------------------------------------------------------------------------------
# each switch alone (fp32, T not a multiple of the chunk)

SWITCH_CASES = [
    pytest.param(Switches(), {}, id="plain"),
    pytest.param(Switches(qk_l2norm=True), {}, id="qk_l2norm"),
    pytest.param(Switches(gate="softplus"), {}, id="gate_softplus_dt_bias"),
    pytest.param(Switches(gate="softplus", use_dt_bias=False), {}, id="gate_softplus_no_dt_bias"),
    pytest.param(Switches(gate="lower_bound", lower_bound=-5.0), {}, id="gate_lower_bound"),
    pytest.param(Switches(gate="lower_bound", lower_bound=-2.0, use_A_log=False), {}, id="gate_lower_bound_no_A_log"),
    pytest.param(Switches(gate="lower_bound", lower_bound=-5.0, use_A_log=False, use_dt_bias=False), {},
                 id="gate_lower_bound_no_A_log_no_dt_bias"),
    pytest.param(Switches(beta_sigmoid=True), {}, id="beta_sigmoid"),
    pytest.param(Switches(beta_sigmoid=True, neg_eigval=True), {}, id="beta_sigmoid_neg_eigval"),
    pytest.param(Switches(safe_gate=True, lower_bound=-5.0), {"g_clamp": -5.0}, id="safe_gate_pregated"),
    pytest.param(Switches(safe_gate=True, gate="lower_bound", lower_bound=-5.0), {}, id="safe_gate_in_kernel"),
    pytest.param(Switches(disable_recompute=True), {}, id="disable_recompute"),
    pytest.param(Switches(state_v_first=True), {}, id="state_v_first"),
    pytest.param(Switches(chunk_size=32), {}, id="chunk32"),
    pytest.param(Switches(scale=0.37), {}, id="scale"),
]


@pytest.mark.parametrize("sw,make_kw", SWITCH_CASES)
def test_chunk_switch(sw, make_kw):
    check_op(2, 100, 2, 2, 32, 32, sw, make_kw=make_kw, seed=1)


@pytest.mark.parametrize("initial_state", [True, False], ids=["h0", "no_h0"])
@pytest.mark.parametrize("chunk_size", [32, 64], ids=["bt32", "bt64"])
def test_chunk_initial_state(initial_state, chunk_size):
    check_op(2, 130, 2, 2, 32, 32, Switches(chunk_size=chunk_size), initial_state=initial_state, seed=2)


def test_chunk_no_initial_state_dh0_absent():
    """Without an initial state, the final state still comes back and there is no dh0 to return."""
    torch.manual_seed(3)
    sw = Switches()
    x = round_inputs(make_inputs("kda", 1, 40, 1, 1, 16, 16, sw, initial_state=False), FP32)
    do, dht = make_cotangents((1, 40, 1, 16), 1, 1, 16, 16, FP32)
    out = run_chunk(chunk_kda, "kda", x, sw, do, dht)
    assert "dh0" not in out
    assert_matches(out, gold_forward_backward("kda", x, sw, do, dht), FP32)


# --------------------------------------------------------------------------------------------
# production switch combination, dtypes, chunk sizes

@pytest.mark.parametrize("chunk_size", [32, 64], ids=["bt32", "bt64"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_chunk_production(dtype, chunk_size):
    check_op(2, 150, 2, 4, 64, 64, PROD_SW.but(chunk_size=chunk_size), dtype, seed=4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="pregated"),
                                pytest.param(Switches(gate="softplus", beta_sigmoid=True, qk_l2norm=True),
                                             id="softplus_gate_beta_sigmoid_l2")])
def test_chunk_dtypes(dtype, sw):
    check_op(2, 120, 2, 2, 64, 64, sw, dtype, seed=5)


def test_production_switches_file():
    """The production combination really sets all six switches (guards the JSON parsing above)."""
    assert PROD_SW.gate == "lower_bound" and PROD_SW.lower_bound == -5.0
    assert PROD_SW.qk_l2norm and PROD_SW.beta_sigmoid and PROD_SW.safe_gate and PROD_SW.disable_recompute


# --------------------------------------------------------------------------------------------
# GVA, head dims

@pytest.mark.parametrize("dtype", FP32_BF16)
@pytest.mark.parametrize("H,HV", [(2, 4), (1, 4), (2, 8)], ids=["HV=2H", "HV=4H", "HV=4H_H2"])
def test_chunk_gva(H, HV, dtype):
    check_op(2, 90, H, HV, 32, 32, Switches(gate="softplus", qk_l2norm=True), dtype, seed=6)


@HEAD_DIMS
def test_chunk_head_dims(K, V):
    T = 70 if K * V > 64 * 64 else 100
    check_op(1, T, 2, 2, K, V, Switches(qk_l2norm=True), seed=7)


@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_chunk_head_dim_128_low_precision(dtype):
    check_op(1, 80, 1, 2, 128, 128, PROD_SW, dtype, seed=8)


# --------------------------------------------------------------------------------------------
# varlen

VARLEN_CASES_KDA = VARLEN_CASES + [pytest.param([64, 128, 1], id="chunk_multiples")]


@pytest.mark.parametrize("lengths", VARLEN_CASES_KDA)
def test_chunk_varlen(lengths):
    sw = Switches(gate="softplus", qk_l2norm=True, beta_sigmoid=True)
    check_op(1, sum(lengths), 2, 4, 32, 32, sw, cu_seqlens=cu(*lengths), seed=9)


@pytest.mark.parametrize("chunk_size", [32, 64], ids=["bt32", "bt64"])
@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_chunk_varlen_production(dtype, chunk_size):
    lengths = [17, 1, 96, 0, 40]
    check_op(1, sum(lengths), 2, 2, 64, 64, PROD_SW.but(chunk_size=chunk_size), dtype,
             cu_seqlens=cu(*lengths, dtype=torch.int32), seed=10)


def test_chunk_varlen_no_initial_state_state_v_first():
    lengths = [33, 0, 70]
    check_op(1, sum(lengths), 1, 2, 32, 16, Switches(state_v_first=True), cu_seqlens=cu(*lengths),
             initial_state=False, seed=11)


def test_chunk_varlen_cu_seqlens_cpu_same_result():
    """Passing the CPU copy of cu_seqlens gives bit-identical outputs and gradients."""
    check_cu_seqlens_cpu_same_result(chunk_kda, "kda", Switches(gate="softplus"), seed=12)


def test_chunk_varlen_equals_separate_calls():
    """A varlen batch gives each sequence what a call on that sequence alone gives."""
    check_varlen_equals_separate_calls(chunk_kda, "kda", seed=13)


# --------------------------------------------------------------------------------------------
# layouts

@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="plain"), pytest.param(PROD_SW, id="production")])
def test_chunk_bnsd_layout(sw):
    """input_layout="BNSD" (head-major q, k, v, g, beta and o) equals the BSND result transposed,
    gradients included, and matches the gold."""
    torch.manual_seed(14)
    B, T, H, HV, K, V = 2, 80, 2, 4, 32, 32
    x = round_inputs(make_inputs("kda", B, T, H, HV, K, V, sw), FP32)
    do, dht = make_cotangents((B, T, HV, V), B, HV, K, V, FP32)
    ref = run_chunk(chunk_kda, "kda", x, sw, do, dht)
    head_major = ("q", "k", "v", "g", "beta")
    xb = {n: (t.transpose(1, 2).contiguous() if n in head_major else t) for n, t in x.items()}
    out = run_chunk(chunk_kda, "kda", xb, sw, do.transpose(1, 2).contiguous(), dht, input_layout="BNSD")
    assert out["o"].shape == (B, HV, T, V)
    to_bsnd = {"o": "o", "dq": "q", "dk": "k", "dv": "v", "dg": "g", "dbeta": "beta"}
    for name in ref:
        got = out[name].transpose(1, 2) if name in to_bsnd else out[name]
        assert torch.equal(got, ref[name]), f"{name}: BNSD result differs from the transposed BSND result"
    gold = gold_forward_backward("kda", x, sw, do, dht)
    assert_matches({n: (t.transpose(1, 2) if n in to_bsnd else t) for n, t in out.items()}, gold, FP32)


def test_chunk_state_v_first_is_transpose():
    """state_v_first only transposes the state layouts (initial, final, dh0)."""
    torch.manual_seed(15)
    sw = Switches(gate="softplus")
    x = round_inputs(make_inputs("kda", 1, 70, 2, 2, 32, 16, sw), FP32)
    do, dht = make_cotangents((1, 70, 2, 16), 1, 2, 32, 16, FP32)
    a = run_chunk(chunk_kda, "kda", x, sw, do, dht)
    b = run_chunk(chunk_kda, "kda", x, sw.but(state_v_first=True), do, dht)   # ht/dh0 transposed back by run_chunk
    for name in a:
        check_close(name, b[name], a[name].double(), FP32)


# --------------------------------------------------------------------------------------------
# return_intermediate_states

@pytest.mark.parametrize("dtype", FP32_BF16)
@pytest.mark.parametrize("state_v_first", [False, True], ids=["k_first", "v_first"])
@pytest.mark.parametrize("lengths", [None, [70, 1, 0, 129]], ids=["dense", "varlen"])
def test_chunk_return_intermediate_states(lengths, state_v_first, dtype):
    torch.manual_seed(16)
    BT, H, HV, K, V = 32, 1, 2, 32, 16
    sw = Switches(gate="softplus", qk_l2norm=True, state_v_first=state_v_first, chunk_size=BT)
    if lengths is None:
        B, T, cs = 2, 100, None
    else:
        B, T, cs = 1, sum(lengths), cu(*lengths)
    N = B if cs is None else len(lengths)
    x = round_inputs(make_inputs("kda", B, T, H, HV, K, V, sw, N=N), dtype)
    q, k, v, g, beta = (x[n] for n in ("q", "k", "v", "g", "beta"))
    h0 = x["h0"].transpose(-1, -2).contiguous() if state_v_first else x["h0"]
    with torch.inference_mode():
        o, ht, h = chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True, use_gate_in_kernel=True,
                             A_log=x["A_log"], dt_bias=x["dt_bias"], use_qk_l2norm_in_kernel=True,
                             state_v_first=state_v_first, chunk_size=BT, cu_seqlens=cs,
                             return_intermediate_states=True)
    gold = gold_forward("kda", x, sw, cs)
    check_close("o", o, gold["o"], dtype)
    check_close("ht", ht.transpose(-1, -2) if state_v_first else ht, gold["ht"], dtype)

    bounds = seq_bounds(B, T, cs)
    counts = [-(-(e - s) // BT) for _, s, e in bounds]
    NT = sum(counts) if cs is not None else counts[0]
    shape = (1 if cs is not None else B, NT, HV) + ((V, K) if state_v_first else (K, V))
    assert h.shape == shape and h.dtype == k.dtype
    hk = h.transpose(-1, -2) if state_v_first else h
    flat = 0
    for n, (b, s, _e) in enumerate(bounds):
        for c in range(counts[n]):
            got = hk[0, flat] if cs is not None else hk[b, c]
            ref = gold_state_after("kda", x, sw, n, b, s, c * BT)
            if c == 0:
                assert torch.equal(got, x["h0"][n].to(got.dtype)), f"seq {n}: first chunk state != initial state"
            check_close(f"h[seq {n}, chunk {c}]", got, ref, dtype)
            flat += 1


# --------------------------------------------------------------------------------------------
# extreme but valid inputs

# Strongly decaying gates: the chunk-local cumulative log-decay reaches ~1e2-1e4 within a chunk
# (every step at -5, or FLA's -1000 masked steps), far outside float32's exponent range once
# exponentiated, and large enough that its float32 rounding matters. These are held to the plain
# tolerances.


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("chunk_size", [32, 64], ids=["bt32", "bt64"])
def test_chunk_saturated_lower_bound_gates(chunk_size, dtype):
    """Every in-kernel gate at the lower bound -5 (safe_gate): a chunk decays by up to e^-320, far
    below float32's range. The raw-gate gradients (dg, dA_log, ddt_bias) are ~1e-17 in the gold
    (sigmoid fully saturated) and must only be finite; everything else is compared."""
    torch.manual_seed(17)
    sw = PROD_SW.but(chunk_size=chunk_size)
    B, T, H, HV, K, V = 1, 140, 2, 2, 32, 32
    x = round_inputs(make_inputs("kda", B, T, H, HV, K, V, sw, g_fill=200.0), dtype)
    do, dht = make_cotangents((B, T, HV, V), B, HV, K, V, dtype)
    gold = gold_forward_backward("kda", x, sw, do, dht)
    out = run_chunk(chunk_kda, "kda", x, sw, do, dht)
    assert gold["dg"].abs().max() < 1e-12  # the premise: the gate really is saturated
    assert_matches(out, gold, dtype, names=["o", "ht", "dq", "dk", "dv", "dbeta", "dh0"])
    for name in ("dg", "dA_log", "ddt_bias"):
        assert torch.isfinite(out[name]).all(), name


@pytest.mark.parametrize("dtype", FP32_BF16)
@pytest.mark.parametrize("chunk_size", [32, 64], ids=["bt32", "bt64"])
def test_chunk_pregated_at_minus_5(chunk_size, dtype):
    """Pre-activated gates exactly -5 everywhere with safe_gate (the bound FLA's safe kernels assume)."""
    _, out, _ = check_op(2, 100, 2, 2, 32, 32, Switches(safe_gate=True, chunk_size=chunk_size), dtype,
                         make_kw={"g_fill": -5.0}, seed=18)
    assert torch.isfinite(out["dg"]).all()


MASKED_CASES = [
    pytest.param(0.1, 64, FP32, id="p0.1-bt64-fp32"),
    pytest.param(0.5, 64, FP32, id="p0.5-bt64-fp32"),
    pytest.param(0.9, 32, FP32, id="p0.9-bt32-fp32"),
    pytest.param(0.5, 32, BF16, id="p0.5-bt32-bf16"),
    pytest.param(0.5, 64, FP16, id="p0.5-bt64-fp16"),
]


@pytest.mark.parametrize("mask_p,chunk_size,dtype", MASKED_CASES)
def test_chunk_masked_gates(mask_p, chunk_size, dtype):
    """A fraction of the gates at -1000 (FLA's masked gates), varlen, as FLA's test_chunk_varlen."""
    lengths = [15, 100, 60]
    check_op(1, sum(lengths), 2, 2, 32, 32, Switches(chunk_size=chunk_size), dtype, cu_seqlens=cu(*lengths),
             make_kw={"mask_p": mask_p}, seed=19)


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunk_masked_gates_all(dtype):
    """Every gate at -1000: the state is forgotten at every step."""
    _, out, gold = check_op(1, 70, 1, 1, 32, 32, Switches(), dtype, make_kw={"mask_p": 1.0}, seed=20)
    assert torch.isfinite(out["dg"]).all() and torch.isfinite(out["dh0"]).all()


@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="plain"), pytest.param(PROD_SW, id="production")])
@pytest.mark.parametrize("dtype", FP32_BF16)
def test_chunk_single_token(sw, dtype):
    check_op(2, 1, 2, 2, 32, 32, sw, dtype, seed=21)


@pytest.mark.parametrize("dtype", FP32_BF16)
@pytest.mark.parametrize("chunk_size", [32, 64], ids=["bt32", "bt64"])
@pytest.mark.parametrize("sw", [pytest.param(Switches(gate="softplus"), id="softplus"),
                                pytest.param(Switches(gate="lower_bound", lower_bound=-5.0, safe_gate=True),
                                             id="lower_bound")])
def test_chunk_strong_gate_in_kernel(sw, chunk_size, dtype):
    """In-kernel gates with A_log = log U(1, 16) (real models' range of A) on randn inputs: the
    softplus form decays by ~e^-12 per step on average."""
    check_op(2, 100, 2, 2, 32, 32, sw.but(chunk_size=chunk_size), dtype, make_kw={"strong_gate": True}, seed=22)


# --------------------------------------------------------------------------------------------
# argument forms FLA's callers use

@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_chunk_fp32_gate_and_beta(dtype):
    """q, k, v in low precision with g and beta in float32 (FLA's tests and models): dg and dbeta
    come back in float32 (everything is held to the tolerance of q's dtype)."""
    check_op(2, 90, 2, 2, 32, 32, Switches(), dtype, overrides={"g": FP32, "beta": FP32}, seed=23)


def test_chunk_A_log_4d():
    """A_log shaped [1, 1, HV, 1] as in FLA's varlen tests: its gradient keeps that shape."""
    def reshape(x):
        return dict(x, A_log=x["A_log"].reshape(1, 1, -1, 1))
    check_op(1, 70, 2, 4, 32, 32, Switches(gate="softplus"), transform=reshape, seed=24)


@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="plain"), pytest.param(PROD_SW, id="production")])
def test_chunk_noncontiguous_inputs(sw):
    """q, k, v split from one fused projection and g, beta sliced from wider tensors (strided views),
    as models produce them: same results and gradients as the gold."""
    torch.manual_seed(25)
    B, T, H, K, V = 2, 75, 2, 32, 16
    x = round_inputs(make_inputs("kda", B, T, H, H, K, V, sw), FP32)
    do = torch.randn(B, T, H, V)
    dht = torch.randn(B, H, K, V)
    gold = gold_forward_backward("kda", x, sw, do, dht)
    qkv = torch.cat([x["q"], x["k"], x["v"]], -1).requires_grad_()
    gw = torch.cat([x["g"], torch.zeros_like(x["g"])], -1).requires_grad_()
    bw = torch.stack([torch.zeros_like(x["beta"]), x["beta"]], -1).requires_grad_()
    q, k, v = qkv.split([K, K, V], -1)
    g, beta = gw[..., :K], bw[..., 1]
    assert not (q.is_contiguous() or g.is_contiguous() or beta.is_contiguous())
    A_log, dt_bias = x.get("A_log"), x.get("dt_bias")
    o, ht = chunk_kda(q, k, v, g, beta, initial_state=x["h0"], output_final_state=True,
                      use_qk_l2norm_in_kernel=sw.qk_l2norm, use_gate_in_kernel=sw.gate is not None,
                      use_beta_sigmoid_in_kernel=sw.beta_sigmoid, safe_gate=sw.safe_gate, lower_bound=sw.lower_bound,
                      disable_recompute=sw.disable_recompute, A_log=A_log, dt_bias=dt_bias)
    ((o * do).sum() + (ht * dht).sum()).backward()
    dq, dk, dv = qkv.grad.split([K, K, V], -1)
    out = {"o": o.detach(), "ht": ht.detach(), "dq": dq, "dk": dk, "dv": dv, "dg": gw.grad[..., :K],
           "dbeta": bw.grad[..., 1]}
    assert_matches(out, gold, FP32, names=list(out))
    assert gw.grad[..., K:].abs().max() == 0 and bw.grad[..., 0].abs().max() == 0


# --------------------------------------------------------------------------------------------
# more value heads than the reference computes at once (fla_npu.ops.common.chunk.HEADS_PER_SLICE)

@pytest.mark.parametrize("H,HV", [(4, 16), (12, 12)], ids=["gva-2-slices", "12-heads-8+4"])
@pytest.mark.parametrize("sw", [PROD_SW, Switches(gate="softplus")], ids=["production", "softplus"])
def test_chunk_many_heads_sliced(H, HV, sw):
    check_op(1, 90, H, HV, 16, 16, sw, cu_seqlens=cu(40, 0, 50), seed=21)
