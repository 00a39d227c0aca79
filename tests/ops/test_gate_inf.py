"""Infinite gates in chunk_kda and chunk_gated_delta_rule.

A log decay of -inf is a full state reset (the state is multiplied by exp(-inf) = 0): the float64
gold is finite, forward and every gradient (the gate of a reset step gets 0), and so must the
chunked op be, equal to it, on the reference and with stage 1 on the simulated kernel. A raw gate
(``use_gate_in_kernel``) of +inf activates to a reset through softplus, -inf to no decay; the
lower-bound form maps both to finite gates. There the gold's ``dA_log`` is ``0 * inf = NaN``; the
op gives the limit instead: the gold with the infinite raw gates replaced by +-1e4, whose steps
decay by exactly 0 (or 1) as well. A log decay of +inf makes the gold infinite: a ValueError.
"""

from __future__ import annotations

import pytest
import torch

from fla_npu import chunk_gated_delta_rule, chunk_kda
from fla_npu.runtime import library_available

from helpers import (
    Switches,
    assert_matches,
    check_chunk_op,
    cu,
    gold_forward,
    gold_forward_backward,
    make_cotangents,
    make_inputs,
    one_thread,
    round_inputs,
    run_chunk,
)

_ = one_thread
OPS = [pytest.param("kda", chunk_kda, id="kda"), pytest.param("gdn", chunk_gated_delta_rule, id="gdn")]
INF = float("inf")


def _set_gate(x: dict, positions, value: float) -> dict:
    """``x`` with the gate of every (batch, token) in ``positions`` set to ``value`` (all heads;
    for KDA every key if ``value`` is positive, only keys 0 and 3 if it is negative)."""
    g = x["g"].clone()
    for b, t in positions:
        if g.dim() == 4 and value < 0:
            g[b, t, :, 0] = value
            g[b, t, :, 3] = value
        else:
            g[b, t] = value
    return {**x, "g": g}


@pytest.mark.parametrize("op,fn", OPS)
@pytest.mark.parametrize("where", [
    pytest.param([(0, 0)], id="first-token"),
    pytest.param([(0, 10), (0, 70)], id="mid-chunks"),
    pytest.param([(0, 63), (0, 64), (1, 99)], id="chunk-edges-and-last"),
    pytest.param([(b, t) for b in range(2) for t in range(64, 128)], id="whole-chunk"),
])
def test_minus_inf_log_decay_matches_gold(op, fn, where):
    """-inf gates (a reset) give the gold's output, final state and gradients, all finite."""
    check_chunk_op(fn, op, 2, 100 if where[-1][1] < 100 else 130, 2, 4, 16, 16, Switches(qk_l2norm=True),
                   transform=lambda x: _set_gate(x, where, -INF))


@pytest.mark.parametrize("op,fn", OPS)
def test_minus_inf_log_decay_varlen_matches_gold(op, fn):
    """The same in a varlen batch (a reset in the first token of a sequence, and in a tail chunk)."""
    lengths = [37, 1, 70]
    check_chunk_op(fn, op, 1, sum(lengths), 2, 2, 16, 16, cu_seqlens=cu(*lengths),
                   transform=lambda x: _set_gate(x, [(0, 37), (0, 38), (0, 107)], -INF))


@pytest.mark.parametrize("op,fn", OPS)
@pytest.mark.parametrize("sw", [
    pytest.param(Switches(gate="softplus"), id="softplus"),
    pytest.param(Switches(gate="lower_bound", lower_bound=-5.0), id="lower-bound"),
])
def test_infinite_raw_gate_matches_gold_limit(op, fn, sw):
    """Raw gates of +inf and -inf: forward equal to the gold, gradients to the gold's limit."""
    if op == "gdn" and sw.gate == "lower_bound":
        pytest.skip("GDN has no lower-bound gate form")
    torch.manual_seed(3)
    x = round_inputs(make_inputs(op, 1, 90, 2, 2, 16, 16, sw), torch.float32)
    x = _set_gate(_set_gate(x, [(0, 5), (0, 64)], INF), [(0, 30), (0, 80)], -INF)
    limit = _set_gate(_set_gate(x, [(0, 5), (0, 64)], 1e4), [(0, 30), (0, 80)], -1e4)
    do, dht = make_cotangents((1, 90, 2, 16), 1, 2, 16, 16, torch.float32)
    out = run_chunk(fn, op, x, sw, do, dht)
    assert_matches(out, gold_forward(op, x, sw), torch.float32)
    assert_matches(out, gold_forward_backward(op, limit, sw, do, dht), torch.float32)


@pytest.mark.skipif(not library_available(), reason="the native library (host simulation) is not built")
@pytest.mark.parametrize("op,fn", OPS)
@pytest.mark.parametrize("sw", [pytest.param(Switches(), id="log-decay"), pytest.param(Switches(gate="softplus"), id="softplus")])
def test_infinite_gates_on_the_simulated_stage1_kernel(op, fn, sw, monkeypatch):
    """``FLA_NPU_CPU_IMPL=sim`` (stage 1 on the simulated kernel, bf16): the same results."""
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    torch.manual_seed(4)
    x = round_inputs(make_inputs(op, 1, 90, 2, 2, 16, 16, sw), torch.bfloat16)
    x = _set_gate(x, [(0, 7), (0, 70)], INF if sw.gate else -INF)
    gold_x = x if sw.gate is None else _set_gate(x, [(0, 7), (0, 70)], 1e4)
    do, dht = make_cotangents((1, 90, 2, 16), 1, 2, 16, 16, torch.bfloat16)
    out = run_chunk(fn, op, x, sw, do, dht)
    assert_matches(out, gold_forward_backward(op, gold_x, sw, do, dht), torch.bfloat16)


@pytest.mark.parametrize("op,fn", OPS)
def test_plus_inf_log_decay_is_refused(op, fn):
    """A log decay of +inf: a ValueError naming it, before anything runs, inputs untouched."""
    torch.manual_seed(5)
    x = round_inputs(make_inputs(op, 1, 20, 2, 2, 16, 16), torch.float32)
    x = _set_gate(x, [(0, 3)], INF)
    before = {k: v.clone() for k, v in x.items()}
    with pytest.raises(ValueError, match=r"`g` contains \+inf"):
        run_chunk(fn, op, x, Switches(), None, None)
    for k, v in x.items():
        assert torch.equal(v, before[k]), k
