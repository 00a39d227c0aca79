"""Verifier accept/reject, every branch, exact reasons; entry-point name parsing; FLA signature binding."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

from fla.ops.gated_delta_rule.chunk import chunk_gated_delta_rule as fla_chunk_gdn
from fla.ops.kda.chunk import chunk_kda as fla_chunk_kda
from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd as fla_fused_recurrent_kda_fwd

from fla_npu_adapter import _discovery, _verify
from fla_npu_adapter._discovery import Claim, Target, parse_name
from fla_npu_adapter._verify import RULES, Binder, Verifier

FLA = {"kda.chunk_kda": fla_chunk_kda, "kda.fused_recurrent_kda_fwd": fla_fused_recurrent_kda_fwd,
       "gated_delta_rule.chunk_gated_delta_rule": fla_chunk_gdn}


def make(key="kda.chunk_kda", devices="cpu"):
    op, _, fn = key.partition(".")
    _, _, targets = parse_name(f"{key}@{devices}")
    return Verifier(key, [Claim(op, fn, targets, f"fla_npu:{fn}", "fla-npu")], Binder.of(FLA[key]), RULES[key])


def tensors(B=1, T=8, H=2, D=16, dtype=torch.float32):
    q, k, v = (torch.randn(B, T, H, D, dtype=dtype) for _ in range(3))
    return q, k, v, -torch.rand(B, T, H, D, dtype=dtype), torch.rand(B, T, H, dtype=dtype)


def fake(shape, device="npu", dtype=torch.bfloat16, requires_grad=False):
    return SimpleNamespace(device=SimpleNamespace(type=device), dtype=dtype, shape=shape, ndim=len(shape),
                           requires_grad=requires_grad)


@pytest.mark.parametrize("key", sorted(FLA))
def test_accepts_positional_and_keyword_forms(key):
    verifier = make(key)
    q, k, v, g, beta = tensors()
    assert verifier(q, k, v, g, beta) == (True, None)
    assert verifier(q=q, k=k, v=v, g=g, beta=beta) == (True, None)
    assert verifier(q, k, v, g=g, beta=beta) == (True, None)


def test_accepts_fla_call_forms_with_every_switch():
    q, k, v, g, beta = tensors()
    h0 = torch.zeros(1, 2, 16, 16)
    cu = torch.tensor([0, 3, 8])
    kda = make()
    assert kda(q, k, v, g, beta, 0.5, h0[:1].expand(2, -1, -1, -1), True, True, True, True, True, True, -5.0,
               False, False, False, cu, None, None, False, None, A_log=torch.zeros(2), dt_bias=torch.zeros(32),
               chunk_size=32) == (True, None)
    assert make("gated_delta_rule.chunk_gated_delta_rule")(q, k, v, g[..., 0], beta, chunk_size=16) == (True, None)
    rec = make("kda.fused_recurrent_kda_fwd")
    assert rec(q, k, v, g, beta, None, None, h0, None, True, True, False, None, torch.zeros(1, dtype=torch.int32),
               None, True, out=torch.empty_like(v)) == (True, None)


def _cp(**fields):
    """A context with FLA's field names (the process group is never looked at)."""
    return SimpleNamespace(**{"group": None, "cu_seqlens": torch.tensor([0, 8]), **fields})


# Context-parallel calls fla_npu serves: FLA's context fields, whatever the group object is.
CP_SERVED = [
    _cp(),
    _cp(group=object(), is_first_rank=False, is_last_rank=True),
    _cp(group=object(), layout="zigzag", part_len=4, front_num_seqs=1, is_first_by_part=(True, False),
        is_last_by_part=(False, True)),
]


@pytest.mark.parametrize("ctx", CP_SERVED, ids=["no group", "contiguous", "zigzag"])
def test_cp_context_served(ctx):
    q, k, v, g, b = tensors()
    assert make()(q, k, v, g, b, cp_context=ctx) == (True, None)
    assert make("gated_delta_rule.chunk_gated_delta_rule")(q, k, v, g[..., 0], b, cp_context=ctx) == (True, None)


# Invalid calls (whichever implementation runs them): accepted when q is on a served device, so that
# fla_npu's validation raises FLA's own error. (key, call builder, exact reason)
INVALID = [
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b) + (None,) * 18, {}),
     "call does not match FLA's signature: chunk_kda() takes 22 positional arguments but 23 were given"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"q": q}),
     "call does not match FLA's signature: chunk_kda() got multiple values for argument 'q'"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v), {}),
     "call does not match FLA's signature: chunk_kda() missing required argument: 'g'"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"head_first": True, "foo": 1}),
     "unsupported keyword argument(s): foo, head_first"),
    ("kda.fused_recurrent_kda_fwd", lambda q, k, v, g, b: ((q, k, v, g, b), {"chunk_size": 64}),
     "unsupported keyword argument(s): chunk_size"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"initial_state": torch.zeros(1, 2, 16, 16,
                                                                                            device="meta")}),
     "`initial_state` is on meta, `q` on cpu"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"initial_state": [0.0]}),
     "`initial_state` is a list, not a tensor, `q` on cpu"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q.int(), k, v, g, b), {}),
     "dtype torch.int32 is not supported (float16, bfloat16, float32, float64)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q[0], k, v, g, b), {}), "`q` must be 4-D, got 3-D"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((torch.zeros(1, 8, 2, 300), k, v, g, b), {}),
     "head dim K=300 is not supported (K <= 256)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"chunk_size": 16}),
     "chunk_size=16 is not supported (supported: 32, 64)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"chunk_size": "64"}),
     "chunk_size='64' is not supported (supported: 32, 64)"),
    ("gated_delta_rule.chunk_gated_delta_rule", lambda q, k, v, g, b: ((q, k, v, g[..., 0], b), {"chunk_size": 128}),
     "chunk_size=128 is not supported (supported: 16, 32, 64)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cu_seqlens": torch.tensor([0.0, 8.0])}),
     "`cu_seqlens` must be a 1-D int32/int64 tensor, got 1-D torch.float32"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cu_seqlens": [0, 8]}),
     "`cu_seqlens` must be a 1-D int32/int64 tensor, got a list"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cp_context": _cp(cu_seqlens=None)}),
     "`cp_context.cu_seqlens` is None"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cp_context": _cp(cu_seqlens=torch.tensor([0., 8.]))}),
     "`cp_context.cu_seqlens` must be a 1-D int32/int64 tensor on q's device"),
]

# Valid calls fla_npu does not serve, and calls it cannot route (no tensor q): FLA's default path.
REJECTIONS = [
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cp_context": object()}),
     "`cp_context` (object) has no `group` / `cu_seqlens` fields of FLA's context"),
    ("gated_delta_rule.chunk_gated_delta_rule", lambda q, k, v, g, b: ((q, k, v, g[..., 0], b), {"cp_context": 1}),
     "`cp_context` (int) has no `group` / `cu_seqlens` fields of FLA's context"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cp_context": _cp(group=object())}),
     "`cp_context.is_first_rank` is not set (contiguous layout)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cp_context": _cp(group=object(), layout="zigzag",
                                                                                  part_len=4, front_num_seqs=1,
                                                                                  is_first_by_part=(True,),
                                                                                  is_last_by_part=(True, False))}),
     "`cp_context.is_first_by_part` is not set (zigzag layout)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q, k, v, g, b), {"cp_context": _cp(group=object(), layout="ring")}),
     "`cp_context.layout` 'ring' is not supported (contiguous, zigzag)"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((None, k, v, g, b), {}),
     "verifier error: AttributeError: 'NoneType' object has no attribute 'device'"),
    ("kda.chunk_kda", lambda q, k, v, g, b: ((q.int().tolist(), k, v, g, b), {}),
     "verifier error: AttributeError: 'list' object has no attribute 'device'"),
]


@pytest.mark.parametrize("key,build,reason", INVALID, ids=[r[2][:40] for r in INVALID])
def test_invalid_calls_are_handed_to_fla_npu_validation(key, build, reason):
    args, kwargs = build(*tensors())
    verifier = make(key)
    assert verifier(*args, **kwargs) == (True, None)
    got = verifier.reason(*args, **kwargs)
    assert got == reason and type(got) is _verify.Invalid


@pytest.mark.parametrize("key,build,reason", REJECTIONS, ids=[r[2][:40] for r in REJECTIONS])
def test_rejections_with_exact_reasons(key, build, reason):
    args, kwargs = build(*tensors())
    assert make(key)(*args, **kwargs) == (False, reason)


def test_invalid_call_on_an_unserved_device_falls_back():
    """An invalid call whose q is on a device no flavour serves cannot reach fla_npu: FLA's path."""
    q = fake((1, 8, 2, 64))
    assert make()(q, q, q, q, fake((1, 8, 2)), chunk_size=16) == (
        False, "no fla_npu implementation of kda.chunk_kda for device type 'npu' (installed: cpu)")


def test_rejects_npu_tensors_until_a_flavour_declares_them():
    q = fake((1, 8, 2, 64))
    assert make()(q, q, q, q, fake((1, 8, 2))) == (
        False, "no fla_npu implementation of kda.chunk_kda for device type 'npu' (installed: cpu)")


def test_wrong_soc_flavour(monkeypatch):
    monkeypatch.setattr(_verify, "current_soc", lambda device: "Ascend910_9382")
    q = fake((1, 8, 2, 64))
    assert make(devices="npu:Ascend910B2")(q, q, q, q, fake((1, 8, 2))) == (
        False, "the fla_npu implementation of kda.chunk_kda is built for npu:Ascend910B2, this device is "
               "npu:Ascend910_9382")


def test_a_flavour_claims_its_soc_family(monkeypatch):
    """An NPU wheel claims ``npu:a2`` (build_wheel); every SoC of the family matches, no other does."""
    q, beta = fake((1, 8, 2, 64)), fake((1, 8, 2))
    verifier = make(devices="cpu,npu:a2")
    for soc, ok in (("Ascend910B3", True), ("Ascend910B1", True), ("Ascend910_9382", False), ("Ascend950PR_9599", False)):
        monkeypatch.setattr(_verify, "current_soc", lambda device, soc=soc: soc)
        verifier.served.clear()
        assert verifier(q, q, q, q, beta)[0] is ok, soc


def test_kernel_device_refuses_what_the_kernels_cannot_take(monkeypatch):
    """On an NPU the call must fit every stage kernel (fla_npu's chunk_pipeline.stage_reasons), else FLA's path."""
    monkeypatch.setattr(_verify, "current_soc", lambda device: "Ascend910B3")
    verifier = make(devices="cpu,npu:a2")
    q32, beta = fake((1, 8, 2, 64), dtype=torch.float32), fake((1, 8, 2))
    ok, reason = verifier(q32, q32, q32, q32, beta)
    assert not ok and reason.startswith("the Ascend C kernels cannot take this call (stage 2: intra-chunk: ")
    assert "float16 / bfloat16" in reason
    q, v80 = fake((1, 8, 2, 64)), fake((1, 8, 2, 72))
    ok, reason = verifier(q, q, v80, q, beta)
    assert not ok and "V=72" in reason


def test_forward_only_device(monkeypatch):
    monkeypatch.setattr(_verify, "current_soc", lambda device: "ascend910b2")
    verifier = make(devices="cpu,npu:Ascend910B2")
    q, beta = fake((1, 8, 2, 64), requires_grad=True), fake((1, 8, 2))
    assert verifier(q, q, q, q, beta) == (False, "fla_npu on npu is forward-only and gradients are required")
    with torch.no_grad():
        assert verifier(q, q, q, q, beta) == (True, None)
    assert verifier(*tensors()) == (True, None)


def test_each_reason_logged_once_and_no_side_effects(caplog):
    verifier = make()
    q, k, v, g, beta = tensors()
    versions = [t._version for t in (q, k, v, g, beta)]
    with caplog.at_level(logging.INFO, logger="fla_npu.adapter"):
        for _ in range(3):
            assert verifier(3.5, k, v, g, beta)[0] is False
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "fla_npu_adapter: kda.chunk_kda rejected -> FLA's default path: "
                          "verifier error: AttributeError: 'float' object has no attribute 'device'")]
    assert [t._version for t in (q, k, v, g, beta)] == versions


def test_verifier_never_raises():
    """Whatever the arguments, the verifier answers (a check that fails is a reason, not an exception)."""
    q, k, v, g, beta = tensors()
    weird = [None, 1, "x", [0, 8], object(), torch.tensor(1.0)]
    verifier = make()
    for value in weird:
        for i in range(5):
            args = [q, k, v, g, beta]
            args[i] = value
            accepted, reason = verifier(*args, cu_seqlens=value)
            assert accepted in (True, False) and (reason is None) == accepted


@pytest.mark.parametrize("key", sorted(FLA))
def test_binder_follows_fla_signature(key):
    import inspect
    params = inspect.signature(FLA[key]).parameters
    binder = Binder.of(FLA[key])
    assert binder.names == tuple(n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD)
    assert binder.var_keyword


def test_rules_match_fla_npu_extra_keywords():
    from fla_npu.ops.gated_delta_rule import chunk as gdn
    from fla_npu.ops.kda import chunk as kda
    assert set(RULES["kda.chunk_kda"].extra_kwargs) == set(kda._EXTRA_KWARGS)
    assert set(RULES["gated_delta_rule.chunk_gated_delta_rule"].extra_kwargs) == set(gdn._EXTRA_KWARGS)


def test_parse_entry_point_names():
    assert parse_name("kda.chunk_kda@cpu") == ("kda", "chunk_kda", (Target("cpu"),))
    assert parse_name("gated_delta_rule.chunk_gated_delta_rule@cpu, npu:Ascend910B2") == (
        "gated_delta_rule", "chunk_gated_delta_rule", (Target("cpu"), Target("npu", "Ascend910B2")))
    for bad in ("chunk_kda@cpu", "kda.chunk_kda", "kda.chunk_kda@", "kda.chunk_kda@cpu,,npu"):
        with pytest.raises(ValueError):
            parse_name(bad)


def test_installed_fla_npu_declares_its_functions_for_cpu():
    claims = _discovery.read_claims()
    assert set(FLA) <= set(claims)  # and the gates: test_gate_verifier.py
    for key in FLA:
        found = claims[key]
        assert [str(t) for c in found for t in c.targets] == ["cpu"]
        assert found[0].value == "fla_npu:" + key.partition(".")[2]


def test_malformed_entry_point_is_skipped(monkeypatch, caplog):
    entries = [SimpleNamespace(name="chunk_kda", value="x:y", dist=None),
               SimpleNamespace(name="kda.chunk_kda@cpu", value="fla_npu:chunk_kda", dist=None)]
    monkeypatch.setattr(_discovery, "_entry_points", lambda: entries)
    with caplog.at_level(logging.WARNING, logger="fla_npu.adapter"):
        assert list(_discovery.read_claims()) == ["kda.chunk_kda"]
    assert "is not '<operation>.<function>@<device>[,<device>...]'" in caplog.text
