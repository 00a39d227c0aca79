"""chunk_gated_delta_rule against the float64 naive gold: forward (o, final state) and every gradient.

Inputs are rounded to the dtype under test and the gold runs on the rounded values, so the
tolerances of fla_npu.testing bound the op's own error (see helpers.py).
"""

from __future__ import annotations

import pytest
import torch

from fla_npu import chunk_gated_delta_rule, chunk_gdn
from fla_npu.testing import check_close

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
    make_cotangents,
    make_inputs,
    one_thread,
    round_inputs,
    run_chunk,
)

_ = one_thread  # autouse fixture: run this module single-threaded (see helpers.one_thread)
GATE = Switches(gate="softplus")   # GDN's in-kernel gate: -exp(A_log) * softplus(g + dt_bias)
ALL_ON = Switches(gate="softplus", qk_l2norm=True, beta_sigmoid=True, neg_eigval=True)


def check_op(*args, **kwargs):
    return check_chunk_op(chunk_gated_delta_rule, "gdn", *args, **kwargs)


# --------------------------------------------------------------------------------------------
# each switch alone (fp32, T not a multiple of the chunk)

SWITCH_CASES = [
    pytest.param(Switches(), id="plain"),
    pytest.param(Switches(qk_l2norm=True), id="qk_l2norm"),
    pytest.param(GATE, id="gate_dt_bias"),
    pytest.param(GATE.but(use_dt_bias=False), id="gate_no_dt_bias"),
    pytest.param(Switches(beta_sigmoid=True), id="beta_sigmoid"),
    pytest.param(Switches(beta_sigmoid=True, neg_eigval=True), id="beta_sigmoid_neg_eigval"),
    pytest.param(Switches(state_v_first=True), id="state_v_first"),
    pytest.param(Switches(chunk_size=16), id="chunk16"),
    pytest.param(Switches(chunk_size=32), id="chunk32"),
    pytest.param(Switches(scale=0.37), id="scale"),
    pytest.param(ALL_ON, id="all_switches"),
]


@pytest.mark.parametrize("sw", SWITCH_CASES)
def test_chunk_switch(sw):
    check_op(2, 100, 2, 2, 32, 32, sw, seed=101)


@pytest.mark.parametrize("initial_state", [True, False], ids=["h0", "no_h0"])
@pytest.mark.parametrize("chunk_size", [16, 32, 64], ids=["bt16", "bt32", "bt64"])
def test_chunk_chunk_sizes(chunk_size, initial_state):
    check_op(2, 130, 2, 4, 32, 32, ALL_ON.but(chunk_size=chunk_size), initial_state=initial_state, seed=102)


def test_chunk_gdn_alias():
    assert chunk_gdn is chunk_gated_delta_rule


# --------------------------------------------------------------------------------------------
# dtypes, GVA, head dims

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="pregated"), pytest.param(ALL_ON, id="all_switches")])
def test_chunk_dtypes(sw, dtype):
    check_op(2, 120, 2, 2, 64, 64, sw, dtype, seed=103)


@pytest.mark.parametrize("dtype", FP32_BF16)
@pytest.mark.parametrize("H,HV", [(2, 4), (1, 4), (2, 8)], ids=["HV=2H", "HV=4H", "HV=4H_H2"])
def test_chunk_gva(H, HV, dtype):
    check_op(2, 90, H, HV, 32, 32, ALL_ON.but(chunk_size=32), dtype, seed=104)


@HEAD_DIMS
def test_chunk_head_dims(K, V):
    T = 70 if K * V > 64 * 64 else 100
    check_op(1, T, 2, 2, K, V, Switches(qk_l2norm=True, gate="softplus"), seed=105)


@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_chunk_head_dim_128_low_precision(dtype):
    check_op(1, 80, 1, 2, 128, 128, ALL_ON, dtype, seed=106)


# --------------------------------------------------------------------------------------------
# initial state in float16 (FLA's GDN accepts any float dtype; dh0 comes back in it)

@pytest.mark.parametrize("dtype", [pytest.param(FP16, id="qkv_fp16"), pytest.param(FP32, id="qkv_fp32")])
def test_chunk_fp16_initial_state(dtype):
    # dh0 is stored in float16, so it is held to the float16 tolerance (check_chunk_op passes
    # h0_dtype as the dtype of dh0); everything else to the tolerance of q/k/v's dtype.
    lengths = [40, 1, 90]
    _, out, _ = check_op(1, sum(lengths), 2, 4, 32, 32, GATE, dtype, cu_seqlens=cu(*lengths), h0_dtype=FP16,
                         seed=107)
    assert out["dh0"].dtype == FP16 and out["ht"].dtype == FP32


# --------------------------------------------------------------------------------------------
# varlen

@pytest.mark.parametrize("lengths", VARLEN_CASES)
def test_chunk_varlen(lengths):
    check_op(1, sum(lengths), 2, 4, 32, 32, ALL_ON, cu_seqlens=cu(*lengths), seed=108)


@pytest.mark.parametrize("chunk_size", [16, 64], ids=["bt16", "bt64"])
@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_chunk_varlen_low_precision(dtype, chunk_size):
    lengths = [17, 1, 96, 0, 40]
    check_op(1, sum(lengths), 2, 2, 64, 64, ALL_ON.but(chunk_size=chunk_size), dtype,
             cu_seqlens=cu(*lengths, dtype=torch.int32), seed=109)


def test_chunk_varlen_no_initial_state_state_v_first():
    lengths = [33, 0, 70]
    check_op(1, sum(lengths), 1, 2, 32, 16, Switches(state_v_first=True), cu_seqlens=cu(*lengths),
             initial_state=False, seed=110)


def test_chunk_varlen_cu_seqlens_cpu_same_result():
    """Passing the CPU copy of cu_seqlens (and FLA's chunk_indices) gives bit-identical results."""
    check_cu_seqlens_cpu_same_result(chunk_gated_delta_rule, "gdn", GATE, seed=111)


def test_chunk_varlen_equals_separate_calls():
    """A varlen batch gives each sequence what a call on that sequence alone gives."""
    check_varlen_equals_separate_calls(chunk_gated_delta_rule, "gdn", seed=112)


# --------------------------------------------------------------------------------------------
# layouts

def test_chunk_bnsd_layout():
    """input_layout="BNSD" equals the BSND result transposed, gradients included, and matches the gold."""
    torch.manual_seed(113)
    B, T, H, HV, K, V = 2, 80, 2, 4, 32, 32
    sw = ALL_ON
    x = round_inputs(make_inputs("gdn", B, T, H, HV, K, V, sw), FP32)
    do, dht = make_cotangents((B, T, HV, V), B, HV, K, V, FP32)
    ref = run_chunk(chunk_gated_delta_rule, "gdn", x, sw, do, dht)
    head_major = ("q", "k", "v", "g", "beta")
    xb = {n: (t.transpose(1, 2).contiguous() if n in head_major else t) for n, t in x.items()}
    out = run_chunk(chunk_gated_delta_rule, "gdn", xb, sw, do.transpose(1, 2).contiguous(), dht, input_layout="BNSD")
    assert out["o"].shape == (B, HV, T, V)
    to_bsnd = {"o", "dq", "dk", "dv", "dg", "dbeta"}
    for name in ref:
        got = out[name].transpose(1, 2) if name in to_bsnd else out[name]
        assert torch.equal(got, ref[name]), f"{name}: BNSD result differs from the transposed BSND result"
    gold = gold_forward_backward("gdn", x, sw, do, dht)
    assert_matches({n: (t.transpose(1, 2) if n in to_bsnd else t) for n, t in out.items()}, gold, FP32)


# --------------------------------------------------------------------------------------------
# extreme but valid inputs

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_p", [0.1, 0.5, 1.0], ids=["p0.1", "p0.5", "p1.0"])
def test_chunk_masked_gates(mask_p, dtype):
    """A fraction of the gates at -1000 (FLA's masked gates); 1.0: the state is forgotten at every step."""
    lengths = [15, 100, 60]
    _, out, _ = check_op(1, sum(lengths), 2, 2, 32, 32, Switches(), dtype, cu_seqlens=cu(*lengths),
                         make_kw={"mask_p": mask_p}, seed=114)
    assert torch.isfinite(out["dg"]).all()


@pytest.mark.parametrize("dtype", FP32_BF16)
@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="plain"), pytest.param(ALL_ON, id="all_switches")])
def test_chunk_single_token(sw, dtype):
    check_op(2, 1, 2, 2, 32, 32, sw, dtype, seed=115)


def test_chunk_forward_inference_mode():
    """Forward under inference_mode (no autograd graph) gives the gold too."""
    torch.manual_seed(116)
    lengths = [70, 0, 5]
    cs = cu(*lengths)
    x = round_inputs(make_inputs("gdn", 1, 75, 2, 4, 32, 32, ALL_ON, N=3), BF16)
    with torch.inference_mode():
        o, ht = chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=x["h0"],
                                       output_final_state=True, use_qk_l2norm_in_kernel=True,
                                       use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True,
                                       use_gate_in_kernel=True, A_log=x["A_log"], dt_bias=x["dt_bias"], cu_seqlens=cs)
    gold = gold_forward("gdn", x, ALL_ON, cs)
    check_close("o", o, gold["o"], BF16)
    check_close("ht", ht, gold["ht"], BF16)


STRONG_CASES = [
    pytest.param(16, FP32, id="bt16-fp32"),
    pytest.param(32, FP32, id="bt32-fp32"),
    pytest.param(64, FP32, id="bt64-fp32"),
    pytest.param(16, BF16, id="bt16-bf16"),
    pytest.param(64, BF16, id="bt64-bf16"),
    pytest.param(64, FP16, id="bt64-fp16"),
]


@pytest.mark.parametrize("chunk_size,dtype", STRONG_CASES)
def test_chunk_strong_gate_in_kernel(chunk_size, dtype):
    """In-kernel gate with A_log = log U(1, 16) (real models' range of A) on randn inputs: the
    state decays by ~e^-12 per step on average. The float32 gate gradients are the sensitive part
    here: each step's gradient is the in-chunk reverse sum of much larger terms, and dA_log sums
    those over all tokens."""
    lengths = [45, 100, 77]
    check_op(1, sum(lengths), 2, 4, 32, 32, ALL_ON.but(chunk_size=chunk_size), dtype, cu_seqlens=cu(*lengths),
             make_kw={"strong_gate": True}, seed=108)


# --------------------------------------------------------------------------------------------
# argument forms FLA's callers use

@pytest.mark.parametrize("dtype", LOW_PRECISION)
def test_chunk_fp32_gate_and_beta(dtype):
    """q, k, v in low precision with g and beta in float32 (FLA's tests): dg and dbeta in float32."""
    check_op(2, 90, 2, 4, 32, 32, Switches(), dtype, overrides={"g": FP32, "beta": FP32}, seed=118)


def test_chunk_A_log_dt_bias_shapes():
    """A_log and dt_bias shaped [1, 1, HV] (any shape with HV elements): gradients keep the shapes."""
    def reshape(x):
        return dict(x, A_log=x["A_log"].reshape(1, 1, -1), dt_bias=x["dt_bias"].reshape(1, 1, -1))
    check_op(1, 70, 2, 4, 32, 32, GATE, transform=reshape, seed=119)


def test_chunk_noncontiguous_inputs():
    """q, k, v split from one fused projection, g and beta strided: same results as the gold."""
    torch.manual_seed(120)
    B, T, H, K, V = 2, 75, 2, 32, 16
    sw = ALL_ON
    x = round_inputs(make_inputs("gdn", B, T, H, H, K, V, sw), FP32)
    do, dht = torch.randn(B, T, H, V), torch.randn(B, H, K, V)
    gold = gold_forward_backward("gdn", x, sw, do, dht)
    qkv = torch.cat([x["q"], x["k"], x["v"]], -1).requires_grad_()
    gb = torch.stack([x["g"], x["beta"]], -1).requires_grad_()
    q, k, v = qkv.split([K, K, V], -1)
    g, beta = gb[..., 0], gb[..., 1]
    assert not (q.is_contiguous() or g.is_contiguous() or beta.is_contiguous())
    o, ht = chunk_gated_delta_rule(q, k, v, g, beta, initial_state=x["h0"], output_final_state=True,
                                   use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True,
                                   use_gate_in_kernel=True, A_log=x["A_log"], dt_bias=x["dt_bias"])
    ((o * do).sum() + (ht * dht).sum()).backward()
    dq, dk, dv = qkv.grad.split([K, K, V], -1)
    out = {"o": o.detach(), "ht": ht.detach(), "dq": dq, "dk": dk, "dv": dv, "dg": gb.grad[..., 0],
           "dbeta": gb.grad[..., 1]}
    assert_matches(out, gold, FP32, names=list(out))


# --------------------------------------------------------------------------------------------
# more value heads than the reference computes at once (fla_npu.ops.common.chunk.HEADS_PER_SLICE)

@pytest.mark.parametrize("H,HV", [(4, 16), (12, 12)], ids=["gva-2-slices", "12-heads-8+4"])
def test_chunk_many_heads_sliced(H, HV):
    check_op(1, 90, H, HV, 16, 16, ALL_ON, cu_seqlens=cu(40, 0, 50), seed=121)
