"""Decode ops against the float64 naive gold: fused_recurrent_kda, fused_recurrent_kda_fwd and
fused_recurrent_gated_delta_rule (forward only), decode continuity after a chunked prefill, and
the serving contract (state pool addressed by ssm_state_indices, written in place)."""

from __future__ import annotations

import pytest
import torch

from fla_npu import (
    chunk_gated_delta_rule,
    chunk_kda,
    fused_recurrent_gated_delta_rule,
    fused_recurrent_gdn,
    fused_recurrent_kda,
    fused_recurrent_kda_fwd,
)
from fla_npu.testing import check_close

from helpers import (
    BF16,
    DTYPES,
    FP16,
    FP32,
    Switches,
    cu,
    gold_forward,
    gold_token_states,
    make_inputs,
    one_thread,
    round_inputs,
    seq_bounds,
    state_in,
    state_out,
)

_ = one_thread  # autouse fixture: run this module single-threaded (see helpers.one_thread)
KDA_PROD = Switches(gate="lower_bound", lower_bound=-5.0, qk_l2norm=True, beta_sigmoid=True)
GDN_ALL = Switches(gate="softplus", qk_l2norm=True, beta_sigmoid=True, neg_eigval=True)


def recurrent_kwargs(op: str, x: dict, sw: Switches) -> dict:
    kw = dict(scale=sw.scale, use_qk_l2norm_in_kernel=sw.qk_l2norm, use_gate_in_kernel=sw.gate is not None,
              use_beta_sigmoid_in_kernel=sw.beta_sigmoid, allow_neg_eigval=sw.neg_eigval,
              state_v_first=sw.state_v_first)
    if sw.gate is not None:
        kw.update(A_log=x.get("A_log"), dt_bias=x.get("dt_bias"))
    if op == "kda":
        kw["lower_bound"] = sw.lower_bound
    return kw


def call_recurrent(fn, op: str, x: dict, sw: Switches, h0=None, **extra):
    """Call a decode op on the inputs ``x`` (``h0`` k-first, transposed here for state_v_first)."""
    kw = recurrent_kwargs(op, x, sw)
    kw.update(extra)
    if op == "kda":
        return fn(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=state_in(h0, sw), **kw)
    return fn(x["q"], x["k"], x["v"], g=x.get("g"), gk=x.get("gk"), gv=x.get("gv"), beta=x.get("beta"),
              initial_state=state_in(h0, sw), **kw)


def check_recurrent(fn, op, B, T, H, HV, K, V, sw=Switches(), dtype=FP32, *, cu_seqlens=None, initial_state=True,
                    seed=0, per_v_beta=False, gates=("g",), no_beta=False, **extra):
    """Seed, build rounded inputs, run the decode op and compare o and the final state with the gold."""
    torch.manual_seed(seed)
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    x = make_inputs(op, B, T, H, HV, K, V, sw, N=N, initial_state=initial_state)
    if per_v_beta:
        x["beta"] = torch.randn(B, T, HV, V) if sw.beta_sigmoid else torch.rand(B, T, HV, V).clamp_min(1e-3)
    if op == "gdn":
        if "gk" in gates:
            x["gk"] = torch.nn.functional.logsigmoid(torch.randn(B, T, HV, K))
        if "gv" in gates:
            x["gv"] = torch.nn.functional.logsigmoid(torch.randn(B, T, HV, V))
        if "g" not in gates:
            del x["g"]
    if no_beta:
        del x["beta"]
    x = round_inputs(x, dtype)
    o, ht = call_recurrent(fn, op, x, sw, x.get("h0"), output_final_state=True, cu_seqlens=cu_seqlens, **extra)
    gold = gold_forward(op, x, sw, cu_seqlens)
    assert o.dtype == x["v"].dtype and ht.dtype == FP32
    check_close("o", o, gold["o"], dtype)
    check_close("ht", state_out(ht, sw), gold["ht"], dtype)
    return x, o, ht, gold


# --------------------------------------------------------------------------------------------
# fused_recurrent_kda

KDA_CASES = [
    pytest.param(Switches(), {}, id="plain"),
    pytest.param(Switches(), {"per_v_beta": True}, id="per_v_beta"),
    pytest.param(Switches(beta_sigmoid=True), {"per_v_beta": True}, id="per_v_beta_sigmoid"),
    pytest.param(Switches(qk_l2norm=True), {}, id="qk_l2norm"),
    pytest.param(Switches(gate="softplus"), {}, id="gate_softplus"),
    pytest.param(Switches(gate="softplus", use_dt_bias=False), {}, id="gate_softplus_no_dt_bias"),
    pytest.param(Switches(gate="lower_bound", lower_bound=-5.0), {}, id="gate_lower_bound"),
    pytest.param(Switches(gate="lower_bound", lower_bound=-3.0, use_A_log=False), {}, id="gate_lower_bound_no_A_log"),
    pytest.param(Switches(beta_sigmoid=True), {}, id="beta_sigmoid"),
    pytest.param(Switches(beta_sigmoid=True, neg_eigval=True), {}, id="beta_sigmoid_neg_eigval"),
    pytest.param(Switches(state_v_first=True), {}, id="state_v_first"),
    pytest.param(Switches(scale=0.37), {"initial_state": False}, id="scale_no_h0"),
    pytest.param(KDA_PROD, {}, id="production"),
]


@pytest.mark.parametrize("sw,kw", KDA_CASES)
def test_fused_recurrent_kda(sw, kw):
    check_recurrent(fused_recurrent_kda, "kda", 2, 40, 2, 4, 32, 16, sw, seed=201, **kw)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_recurrent_kda_dtypes(dtype):
    check_recurrent(fused_recurrent_kda, "kda", 2, 30, 1, 2, 64, 64, KDA_PROD, dtype, seed=202, per_v_beta=True)


@pytest.mark.parametrize("lengths", [pytest.param([5, 0, 17, 1], id="zero_len_middle"),
                                     pytest.param([0, 9, 0], id="zero_len_ends")])
def test_fused_recurrent_kda_varlen(lengths):
    """A zero-length sequence is skipped: its final state is its initial state."""
    x, _, ht, _ = check_recurrent(fused_recurrent_kda, "kda", 1, sum(lengths), 2, 2, 32, 32, KDA_PROD,
                                  cu_seqlens=cu(*lengths, dtype=torch.int32), seed=203)
    for n, length in enumerate(lengths):
        if length == 0:
            assert torch.equal(ht[n], x["h0"][n]), f"sequence {n} (empty) changed its state"


@pytest.mark.parametrize("inplace", [False, True], ids=["new_state", "inplace"])
@pytest.mark.parametrize("state_v_first", [False, True], ids=["k_first", "v_first"])
def test_fused_recurrent_kda_fwd(inplace, state_v_first):
    """The dispatched wrapper: final state into a new tensor, or written into initial_state; `out` filled."""
    torch.manual_seed(204)
    sw = KDA_PROD.but(state_v_first=state_v_first)
    B, T, H, HV, K, V = 2, 20, 2, 2, 32, 16
    x = round_inputs(make_inputs("kda", B, T, H, HV, K, V, sw), BF16)
    h0 = state_in(x["h0"], sw).clone()
    out = torch.full_like(x["v"], float("nan"))
    kw = recurrent_kwargs("kda", x, sw)
    o, ht = fused_recurrent_kda_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=h0,
                                    output_final_state=True, inplace_final_state=inplace, out=out, **kw)
    gold = gold_forward("kda", x, sw)
    assert o.data_ptr() == out.data_ptr()
    check_close("o", out, gold["o"], BF16)
    check_close("ht", state_out(ht, sw), gold["ht"], BF16)
    if inplace:
        assert ht.data_ptr() == h0.data_ptr()
    else:
        assert torch.equal(h0, state_in(x["h0"], sw)), "initial_state modified without inplace_final_state"


# --------------------------------------------------------------------------------------------
# fused_recurrent_gated_delta_rule

GDN_CASES = [
    pytest.param(Switches(), {}, id="g"),
    pytest.param(Switches(), {"gates": ("gk",)}, id="gk"),
    pytest.param(Switches(), {"gates": ("gv",)}, id="gv"),
    pytest.param(Switches(), {"gates": ("g", "gk", "gv")}, id="g_gk_gv"),
    pytest.param(Switches(), {"gates": ()}, id="no_gate"),
    pytest.param(Switches(), {"no_beta": True}, id="beta_none"),
    pytest.param(Switches(), {"per_v_beta": True}, id="per_v_beta"),
    pytest.param(Switches(qk_l2norm=True), {}, id="qk_l2norm"),
    pytest.param(Switches(gate="softplus"), {}, id="gate_in_kernel"),
    pytest.param(Switches(gate="softplus", use_dt_bias=False), {"gates": ("g", "gk")}, id="gate_in_kernel_plus_gk"),
    pytest.param(Switches(beta_sigmoid=True), {}, id="beta_sigmoid"),
    pytest.param(Switches(beta_sigmoid=True, neg_eigval=True), {"per_v_beta": True}, id="beta_sigmoid_neg_per_v"),
    pytest.param(Switches(state_v_first=True), {"gates": ("g", "gv")}, id="state_v_first"),
    pytest.param(GDN_ALL, {"initial_state": False}, id="all_switches_no_h0"),
]


@pytest.mark.parametrize("sw,kw", GDN_CASES)
def test_fused_recurrent_gdn(sw, kw):
    check_recurrent(fused_recurrent_gated_delta_rule, "gdn", 2, 40, 2, 4, 32, 16, sw, seed=205, **kw)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_recurrent_gdn_dtypes(dtype):
    check_recurrent(fused_recurrent_gated_delta_rule, "gdn", 2, 30, 1, 2, 64, 64, GDN_ALL, dtype, seed=206)


@pytest.mark.parametrize("lengths", [pytest.param([5, 0, 17, 1], id="zero_len_middle"),
                                     pytest.param([0, 9, 0], id="zero_len_ends")])
def test_fused_recurrent_gdn_varlen(lengths):
    x, _, ht, _ = check_recurrent(fused_recurrent_gated_delta_rule, "gdn", 1, sum(lengths), 2, 4, 32, 32, GDN_ALL,
                                  cu_seqlens=cu(*lengths), seed=207)
    for n, length in enumerate(lengths):
        if length == 0:
            assert torch.equal(ht[n], x["h0"][n]), f"sequence {n} (empty) changed its state"


def test_fused_recurrent_gdn_alias():
    assert fused_recurrent_gdn is fused_recurrent_gated_delta_rule


# --------------------------------------------------------------------------------------------
# decode continuity: chunked prefill, then token-by-token decode == the chunked op on everything

CONTINUITY = [
    pytest.param("kda", KDA_PROD, FP32, id="kda-production-fp32"),
    pytest.param("kda", KDA_PROD.but(state_v_first=True), BF16, id="kda-production-v_first-bf16"),
    pytest.param("kda", Switches(gate="softplus", chunk_size=32), FP16, id="kda-softplus-bt32-fp16"),
    pytest.param("gdn", GDN_ALL, FP32, id="gdn-all-fp32"),
    pytest.param("gdn", GDN_ALL.but(state_v_first=True, chunk_size=16), BF16, id="gdn-all-v_first-bt16-bf16"),
]


@pytest.mark.parametrize("op,sw,dtype", CONTINUITY)
def test_prefill_then_decode(op, sw, dtype):
    torch.manual_seed(208)
    B, T0, steps, H, HV, K, V = 2, 70, 5, 1, 2, 32, 32
    T = T0 + steps
    chunk_fn = chunk_kda if op == "kda" else chunk_gated_delta_rule
    dec_fn = fused_recurrent_kda if op == "kda" else fused_recurrent_gated_delta_rule
    x = round_inputs(make_inputs(op, B, T, H, HV, K, V, sw), dtype)
    chunk_kw = dict(scale=sw.scale, use_qk_l2norm_in_kernel=sw.qk_l2norm, use_beta_sigmoid_in_kernel=sw.beta_sigmoid,
                    allow_neg_eigval=sw.neg_eigval, state_v_first=sw.state_v_first, chunk_size=sw.chunk_size,
                    use_gate_in_kernel=sw.gate is not None, A_log=x.get("A_log"), dt_bias=x.get("dt_bias"))
    if op == "kda":
        chunk_kw.update(lower_bound=sw.lower_bound, safe_gate=sw.gate == "lower_bound")

    def part(s, e):
        return {n: (t[:, s:e] if n in ("q", "k", "v", "g", "beta") else t) for n, t in x.items()}

    h0 = state_in(x["h0"], sw)
    with torch.no_grad():
        o_full, ht_full = chunk_fn(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=h0,
                                   output_final_state=True, **chunk_kw)
        p = part(0, T0)
        o_pre, state = chunk_fn(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=h0,
                                output_final_state=True, **chunk_kw)
        decoded = []
        for t in range(T0, T):
            o_t, state = call_recurrent(dec_fn, op, part(t, t + 1), sw, state_out(state, sw), output_final_state=True)
            decoded.append(o_t)
    o_dec = torch.cat(decoded, dim=1)
    check_close("o prefill", o_pre, o_full[:, :T0].double(), dtype)
    check_close("o decoded", o_dec, o_full[:, T0:].double(), dtype)
    check_close("final state", state, ht_full.double(), dtype)
    gold = gold_forward(op, x, sw)   # and both are right
    check_close("o decoded vs gold", o_dec, gold["o"][:, T0:], dtype)
    check_close("final state vs gold", state_out(state, sw), gold["ht"], dtype)


# --------------------------------------------------------------------------------------------
# serving: a state pool addressed by ssm_state_indices

POOL_FILL = 1e30


def serving_call(op, x, sw, pool, idx, cs, accepted=None, inplace=True):
    kw = recurrent_kwargs(op, x, sw)
    if op == "kda":
        return fused_recurrent_kda_fwd(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=pool,
                                       output_final_state=False, inplace_final_state=inplace, cu_seqlens=cs,
                                       ssm_state_indices=idx, num_accepted_tokens=accepted, **kw)
    return fused_recurrent_gated_delta_rule(x["q"], x["k"], x["v"], g=x["g"], beta=x["beta"], initial_state=pool,
                                            output_final_state=False, cu_seqlens=cs, ssm_state_indices=idx,
                                            num_accepted_tokens=accepted, inplace_final_state=inplace, **kw)


SERVING = [
    pytest.param("kda", KDA_PROD, BF16, id="kda-production-bf16"),
    pytest.param("kda", Switches(gate="softplus", qk_l2norm=True, state_v_first=True), FP16, id="kda-v_first-fp16"),
    pytest.param("kda", Switches(), FP32, id="kda-plain-fp32"),
    pytest.param("gdn", GDN_ALL, BF16, id="gdn-all-bf16"),
    pytest.param("gdn", GDN_ALL.but(state_v_first=True), FP32, id="gdn-all-v_first-fp32"),
]


@pytest.mark.parametrize("op,sw,dtype", SERVING)
def test_serving_single_token(op, sw, dtype):
    """1-D int32 ssm_state_indices [N], one token per sequence, in place: outputs right, the
    addressed slots hold the new states, every other slot is bit-exact untouched."""
    torch.manual_seed(209)
    N, H, HV, K, V = 5, 2, 4, 32, 32
    x = round_inputs(make_inputs(op, 1, N, H, HV, K, V, sw, N=N), dtype)
    cs = torch.arange(N + 1, dtype=torch.int32)
    idx = torch.randperm(3 * N)[:N].to(torch.int32)
    pool_k = torch.full((3 * N, HV, K, V), POOL_FILL)
    pool_k[idx.long()] = x["h0"]
    pool = state_in(pool_k, sw).clone()
    before = pool.clone()
    o, final = serving_call(op, x, sw, pool, idx, cs)
    assert final.data_ptr() == pool.data_ptr()
    gold = gold_forward(op, x, sw, cs)           # x["h0"][n] is the state in slot idx[n]
    check_close("o", o, gold["o"], dtype)
    check_close("addressed slots", state_out(pool, sw)[idx.long()], gold["ht"], dtype)
    untouched = torch.ones(3 * N, dtype=torch.bool)
    untouched[idx.long()] = False
    assert torch.equal(pool[untouched], before[untouched]), "a slot that was not addressed changed"


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "per_token_states"])
@pytest.mark.parametrize("op,sw,dtype", SERVING[:1] + SERVING[3:5])
def test_serving_multi_token(op, sw, dtype, inplace):
    """2-D ssm_state_indices [N, L] with multi-token sequences (speculative decoding) and
    num_accepted_tokens: sequence n starts from slot idx[n, accepted[n] - 1] and the state after
    its token t goes to slot idx[n, t] (in place) or to row bos + t of a new tensor."""
    torch.manual_seed(210)
    L, H, HV, K, V = 4, 1, 2, 32, 16
    lengths = [3, 1, 4, 0, 2]
    accepted = torch.tensor([2, 1, 4, 1, 3], dtype=torch.int32)
    N, T = len(lengths), sum(lengths)
    cs = cu(*lengths, dtype=torch.int32)
    x = round_inputs(make_inputs(op, 1, T, H, HV, K, V, sw, N=N), dtype)
    P = 3 * N * L
    idx = torch.randperm(P)[:N * L].view(N, L).to(torch.int32)
    read = idx.long().gather(1, accepted.long()[:, None] - 1)[:, 0]
    pool_k = torch.full((P, HV, K, V), POOL_FILL)
    pool_k[read] = x["h0"]
    pool = state_in(pool_k, sw).clone()
    before = pool.clone()
    o, final = serving_call(op, x, sw, pool, idx, cs, accepted, inplace)

    bounds = seq_bounds(1, T, cs)
    written = torch.zeros(P, dtype=torch.bool)
    o_gold = torch.zeros(x["v"].shape, dtype=torch.float64)
    for n, (b, s, e) in enumerate(bounds):
        o_n, states = gold_token_states(op, x, sw, n, b, s, e, x["h0"][n])
        o_gold[0, s:e] = o_n
        for t in range(e - s):
            if inplace:
                check_close(f"slot of seq {n} token {t}", state_out(pool, sw)[idx[n, t].long()], states[t], dtype)
                written[idx[n, t].long()] = True
            else:
                check_close(f"state row of seq {n} token {t}", state_out(final, sw)[s + t], states[t], dtype)
    check_close("o", o, o_gold, dtype)
    if inplace:
        assert final.data_ptr() == pool.data_ptr()
        assert torch.equal(pool[~written], before[~written]), "a slot that was not written changed"
    else:
        assert final.shape[0] == T and final.dtype == FP32
        assert torch.equal(pool, before), "the pool changed without inplace_final_state"


@pytest.mark.parametrize("op", ["kda", "gdn"])
def test_recurrent_is_forward_only(op):
    """Like FLA's, the decode ops keep no autograd history, even for inputs that require grad."""
    torch.manual_seed(0)
    B, T, H, K = 1, 5, 2, 16
    q, k, v = (torch.randn(B, T, H, K, requires_grad=True) for _ in range(3))
    beta = torch.rand(B, T, H, requires_grad=True)
    if op == "kda":
        g = torch.nn.functional.logsigmoid(torch.randn(B, T, H, K)).requires_grad_()
        o, ht = fused_recurrent_kda(q, k, v, g, beta, output_final_state=True)
    else:
        g = torch.nn.functional.logsigmoid(torch.randn(B, T, H)).requires_grad_()
        o, ht = fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, output_final_state=True)
    assert not o.requires_grad and not ht.requires_grad
    assert torch.isfinite(o).all()
