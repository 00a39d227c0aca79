"""Gate verifiers: FLA's call forms accepted, every rejection branch with its exact reason, FLA's
signatures bound, the entry points fla-npu declares for the gates."""

from __future__ import annotations

import inspect
import logging
from types import SimpleNamespace

import pytest
import torch

from fla.ops.gated_delta_rule.gate import gdn_gate_bwd, gdn_gate_fwd
from fla.ops.kda.gate import fused_kda_gate, kda_gate_bwd, kda_gate_fwd

from fla_npu_adapter import _backend, _discovery, _verify
from fla_npu_adapter._discovery import Claim, parse_name
from fla_npu_adapter._verify import GATE_RULES, Binder, GateVerifier, verifier_for

FLA = {"kda.fused_kda_gate": fused_kda_gate, "kda.kda_gate_fwd": kda_gate_fwd, "kda.kda_gate_bwd": kda_gate_bwd,
       "gated_delta_rule.gdn_gate_fwd": gdn_gate_fwd, "gated_delta_rule.gdn_gate_bwd": gdn_gate_bwd}
KDA = ("kda.fused_kda_gate", "kda.kda_gate_fwd", "kda.kda_gate_bwd")
GDN = ("gated_delta_rule.gdn_gate_fwd", "gated_delta_rule.gdn_gate_bwd")


def make(key, devices="cpu", fn=None):
    op, _, name = key.partition(".")
    _, _, targets = parse_name(f"{key}@{devices}")
    return verifier_for(key, [Claim(op, name, targets, f"fla_npu:{name}", "fla-npu")], Binder.of(fn or FLA[key]))


def kda_tensors(dtype=torch.float32):
    """``g [2, 8, 2, 16]``, ``A_log [2]``, ``dt_bias [32]``, ``dyg`` like ``g``."""
    return (torch.randn(2, 8, 2, 16, dtype=dtype), torch.randn(2), torch.randn(32), torch.randn(2, 8, 2, 16))


def gdn_tensors(dtype=torch.float32):
    """``g [2, 8, 4]``, ``A_log [4]``, ``dt_bias [4]``, ``dyg`` like ``g``."""
    return torch.randn(2, 8, 4, dtype=dtype), torch.randn(4), torch.randn(4), torch.randn(2, 8, 4)


def fake(shape, device="npu", dtype=torch.bfloat16, requires_grad=False):
    numel = 1
    for n in shape:
        numel *= n
    return SimpleNamespace(device=SimpleNamespace(type=device), dtype=dtype, shape=torch.Size(shape), ndim=len(shape),
                           requires_grad=requires_grad, numel=lambda: numel)


def test_verifiers_are_gate_verifiers():
    for key in FLA:
        assert isinstance(make(key), GateVerifier) and make(key).first == "g"
    assert set(GATE_RULES) == set(FLA) and set(FLA) <= set(_backend.FLA_FUNCTIONS)


def test_accepts_fla_call_forms():
    """As FLA's code and tests call them (FLA's autograd functions pass keywords)."""
    g, A, b, dy = kda_tensors()
    A4 = A.view(1, 1, 2, 1)
    accept = (True, None)
    f = make("kda.fused_kda_gate")
    assert f(g=g, A_log=A4, dt_bias=b, lower_bound=None) == accept     # FLA's test_gate
    assert f(g=g, A_log=None, dt_bias=b, lower_bound=-5.0) == accept
    assert f(g, None, None, -5.0, torch.bfloat16) == accept
    assert f(g, A) == accept
    fwd = make("kda.kda_gate_fwd")
    assert fwd(g=g, A_log=A, dt_bias=b, lower_bound=None, output_dtype=torch.float32) == accept  # KDAGateFunction
    assert fwd(g, A, b.view(2, 16), -5.0, None) == accept
    bwd = make("kda.kda_gate_bwd")
    assert bwd(g=g, A_log=A, dt_bias=b, dyg=dy, lower_bound=None) == accept  # KDAGateFunction, chunk_kda backward
    assert bwd(g, None, b, dy, -5.0) == accept
    gv, Av, bv, dyv = gdn_tensors(torch.bfloat16)
    assert make("gated_delta_rule.gdn_gate_fwd")(g=gv, A_log=Av, dt_bias=bv, output_dtype=torch.float32) == accept
    assert make("gated_delta_rule.gdn_gate_fwd")(gv, Av) == accept
    assert make("gated_delta_rule.gdn_gate_bwd")(g=gv, A_log=Av, dt_bias=None, dyg=dyv) == accept
    assert make("gated_delta_rule.gdn_gate_bwd")(gv, Av, bv, dyv) == accept
    assert make("gated_delta_rule.gdn_gate_fwd")(gv[0, 0], Av) == accept  # 1-D g: [HV]


INVALID = [
    # (key, call builder on (g, A_log, dt_bias, dyg) of the key's family, exact reason)
    ("kda.kda_gate_fwd", lambda g, A, b, dy: ((g, A, b, None, torch.float32, 1), {}),
     "call does not match FLA's signature: kda_gate_fwd() takes 5 positional arguments but 6 were given"),
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((g, A), {"g": g}),
     "call does not match FLA's signature: fused_kda_gate() got multiple values for argument 'g'"),
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((g, A), {"beta": b}),
     "call does not match FLA's signature: fused_kda_gate() got an unexpected keyword argument 'beta'"),
    ("gated_delta_rule.gdn_gate_fwd", lambda g, A, b, dy: ((g,), {}),
     "call does not match FLA's signature: gdn_gate_fwd() missing required argument: 'A_log'"),
    ("gated_delta_rule.gdn_gate_bwd", lambda g, A, b, dy: ((g, A, b), {}),
     "call does not match FLA's signature: gdn_gate_bwd() missing required argument: 'dyg'"),
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((g, A, torch.zeros(32, device="meta")), {}),
     "`dt_bias` is on meta, `g` on cpu"),
    ("kda.kda_gate_fwd", lambda g, A, b, dy: ((g, A.to("meta")), {}), "`A_log` is on meta, `g` on cpu"),
    ("kda.kda_gate_bwd", lambda g, A, b, dy: ((g, A, b, dy.to("meta")), {}), "`dyg` is on meta, `g` on cpu"),
    ("gated_delta_rule.gdn_gate_bwd", lambda g, A, b, dy: ((g, A, b, dy.to("meta")), {}),
     "`dyg` is on meta, `g` on cpu"),
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((g.int(), A), {}),
     "`g` dtype torch.int32 is not supported (float16, bfloat16, float32, float64)"),
    ("gated_delta_rule.gdn_gate_fwd", lambda g, A, b, dy: ((g.long(), A), {}),
     "`g` dtype torch.int64 is not supported (float16, bfloat16, float32, float64)"),
    ("kda.kda_gate_fwd", lambda g, A, b, dy: ((g[0, 0, 0], A), {}), "`g` must be [..., H, K], got 1-D"),
    ("gated_delta_rule.gdn_gate_fwd", lambda g, A, b, dy: ((g[0, 0, 0], A), {}), "`g` must be [..., HV], got 0-D"),
    ("kda.kda_gate_fwd", lambda g, A, b, dy: ((g, torch.zeros(3), b), {}), "`A_log` has 3 elements, `g` has H=2 heads"),
    ("gated_delta_rule.gdn_gate_bwd", lambda g, A, b, dy: ((g, A[:3], b, dy), {}),
     "`A_log` has 3 elements, `g` has HV=4 heads"),
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((g, None, b[:16], -5.0), {}),
     "`dt_bias` has 16 elements, expected H*K=32"),
    ("gated_delta_rule.gdn_gate_fwd", lambda g, A, b, dy: ((g, A, torch.zeros(2, 4)), {}),
     "`dt_bias` has 8 elements, expected HV=4"),
    ("kda.kda_gate_bwd", lambda g, A, b, dy: ((g, A, b), {}), "`dyg` is None"),
    ("kda.kda_gate_bwd", lambda g, A, b, dy: ((g, A, b, dy[..., :8]), {}),
     "`dyg` has shape [2, 8, 2, 8], `g` [2, 8, 2, 16]"),
    ("gated_delta_rule.gdn_gate_bwd", lambda g, A, b, dy: ((g, A, None, dy[0]), {}),
     "`dyg` has shape [8, 4], `g` [2, 8, 4]"),
    ("gated_delta_rule.gdn_gate_fwd", lambda g, A, b, dy: ((g, 1.0), {}),
     "`A_log` is a float, not a tensor, `g` on cpu"),
]

# Calls fla_npu does not serve (A_log None: FLA's kernel has its own meaning for it) and calls that
# cannot reach fla_npu (no tensor g): FLA's default path.
REJECTIONS = [
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((g, None, b), {}),
     "`A_log` is None without `lower_bound`: the softplus gate needs `A_log`"),
    ("kda.kda_gate_bwd", lambda g, A, b, dy: ((g,), {"dyg": dy}),
     "`A_log` is None without `lower_bound`: the softplus gate needs `A_log`"),
    ("gated_delta_rule.gdn_gate_fwd", lambda g, A, b, dy: ((g, None), {}),
     "`A_log` is None: the GDN gate needs `A_log`"),
    ("kda.fused_kda_gate", lambda g, A, b, dy: ((None, A), {}),
     "verifier error: AttributeError: 'NoneType' object has no attribute 'device'"),
]


@pytest.mark.parametrize("key,build,reason", INVALID, ids=[f"{r[0].rpartition('.')[2]}-{r[2][:40]}" for r in INVALID])
def test_invalid_calls_are_handed_to_fla_npu_validation(key, build, reason):
    """fla_npu's gate validation then raises (checked in test_invalid_calls.py)."""
    args, kwargs = build(*(kda_tensors() if key in KDA else gdn_tensors()))
    verifier = make(key)
    assert verifier(*args, **kwargs) == (True, None)
    assert verifier.reason(*args, **kwargs) == reason


@pytest.mark.parametrize("key,build,reason", REJECTIONS, ids=[f"{r[0].rpartition('.')[2]}-{r[2][:40]}" for r in REJECTIONS])
def test_rejections_with_exact_reasons(key, build, reason):
    args, kwargs = build(*(kda_tensors() if key in KDA else gdn_tensors()))
    assert make(key)(*args, **kwargs) == (False, reason)


def test_unsupported_extra_keyword():
    """FLA's gate signatures take no ``**kwargs`` today; one that did would be refused beyond its names."""
    def kda_gate_fwd(g, A_log=None, dt_bias=None, lower_bound=None, output_dtype=torch.float32, **kwargs):
        pass

    g, A, b, _ = kda_tensors()
    verifier = make("kda.kda_gate_fwd", fn=kda_gate_fwd)
    assert verifier.reason(g, A, b, foo=1, bar=2) == "unsupported keyword argument(s): bar, foo"
    assert verifier(g, A, b, foo=1, bar=2) == (True, None)  # fla_npu's own signature refuses them


@pytest.mark.parametrize("key", sorted(FLA))
def test_rejects_npu_tensors_until_a_flavour_declares_them(key):
    g = fake((2, 8, 2, 16)) if key in KDA else fake((2, 8, 4))
    dyg = (g,) if key.endswith("_bwd") else ()
    assert make(key)(g, fake((2,) if key in KDA else (4,)), None, *dyg) == (
        False, f"no fla_npu implementation of {key} for device type 'npu' (installed: cpu)")


def test_wrong_soc_flavour(monkeypatch):
    monkeypatch.setattr(_verify, "current_soc", lambda device: "Ascend910_9382")
    g = fake((2, 8, 4))
    assert make("gated_delta_rule.gdn_gate_fwd", devices="npu:Ascend910B2")(g, fake((4,))) == (
        False, "the fla_npu implementation of gated_delta_rule.gdn_gate_fwd is built for npu:Ascend910B2, this "
               "device is npu:Ascend910_9382")


def test_forward_only_device(monkeypatch):
    """Gradients are refused only for the autograd wrapper: FLA's pieces are kernels, not differentiated."""
    monkeypatch.setattr(_verify, "current_soc", lambda device: "ascend910b2")
    g, A = fake((2, 8, 2, 16), requires_grad=True), fake((2,))
    wrapper = make("kda.fused_kda_gate", devices="cpu,npu:Ascend910B2")
    assert wrapper(g, A) == (False, "fla_npu on npu is forward-only and gradients are required")
    assert wrapper(fake((2, 8, 2, 16)), fake((2,), requires_grad=True)) == (
        False, "fla_npu on npu is forward-only and gradients are required")
    with torch.no_grad():
        assert wrapper(g, A) == (True, None)
    assert make("kda.kda_gate_fwd", devices="npu:Ascend910B2")(g, A) == (True, None)
    assert make("kda.kda_gate_bwd", devices="npu:Ascend910B2")(g, A, None, fake((2, 8, 2, 16))) == (True, None)
    gk, Ak, bk, _ = kda_tensors()
    assert wrapper(gk.requires_grad_(), Ak, bk) == (True, None)  # CPU: fla_npu has the backward


def test_other_served_device_with_real_tensors():
    """A flavour for another device type (here ``meta``, without a backward): placement and the
    gradient rule on real tensors of that device."""
    cpu = kda_tensors()
    g, A, b, dy = (t.to("meta") for t in cpu)
    wrapper = make("kda.fused_kda_gate", devices="cpu,meta")
    assert wrapper(g, A, b) == (True, None)
    assert wrapper.reason(g, cpu[1], b) == "`A_log` is on cpu, `g` on meta"
    assert wrapper(g, cpu[1], b) == (True, None)  # invalid: fla_npu's validation raises
    assert make("kda.kda_gate_bwd", devices="meta").reason(g, A, b, cpu[3]) == "`dyg` is on cpu, `g` on meta"
    assert wrapper(g, A, b.requires_grad_()) == (False, "fla_npu on meta is forward-only and gradients are required")
    assert make("kda.kda_gate_fwd", devices="meta")(g, A, b) == (True, None)


def test_each_reason_logged_once_and_no_side_effects(caplog):
    verifier = make("gated_delta_rule.gdn_gate_bwd")
    g, A, b, dy = gdn_tensors()
    versions = [t._version for t in (g, A, b, dy)]
    with caplog.at_level(logging.INFO, logger="fla_npu.adapter"):
        for _ in range(3):
            assert verifier(None, A, b[:2], dy)[0] is False
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "fla_npu_adapter: gated_delta_rule.gdn_gate_bwd rejected -> FLA's default path: "
                          "verifier error: AttributeError: 'NoneType' object has no attribute 'device'")]
    assert [t._version for t in (g, A, b, dy)] == versions


@pytest.mark.parametrize("key", sorted(FLA))
def test_binder_follows_fla_signature(key):
    params = inspect.signature(FLA[key]).parameters
    binder = Binder.of(FLA[key])
    assert binder.function == key.partition(".")[2]
    assert binder.names == tuple(n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD)
    assert binder.names[:3] == ("g", "A_log", "dt_bias")


def test_installed_fla_npu_declares_the_gates_for_cpu():
    claims = _discovery.read_claims()
    assert sorted(claims) == sorted(_backend.FLA_FUNCTIONS)  # every function the adapter serves, nothing else
    expected = {"kda.fused_kda_gate": "fla_npu:fused_kda_gate",
                "kda.kda_gate_fwd": "fla_npu.ops.kda:kda_gate_fwd",
                "kda.kda_gate_bwd": "fla_npu.ops.kda:kda_gate_bwd",
                "gated_delta_rule.gdn_gate_fwd": "fla_npu.ops.gated_delta_rule:gdn_gate_fwd",
                "gated_delta_rule.gdn_gate_bwd": "fla_npu.ops.gated_delta_rule:gdn_gate_bwd"}
    for key, value in expected.items():
        assert [(c.value, [str(t) for t in c.targets]) for c in claims[key]] == [(value, ["cpu"])]
