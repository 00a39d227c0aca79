"""FLA's public gates on CPU tensors reach fla_npu through FLA's own dispatch (spied) and match FLA's
naive gates forward and backward; FLA's pieces keep FLA's return contract; off or rejected -> FLA.

What FLA dispatches (``fla/ops/kda/gate.py``, ``fla/ops/gated_delta_rule/gate.py``): the autograd
wrapper ``fused_kda_gate`` and the pieces its autograd function calls, ``kda_gate_fwd`` /
``kda_gate_bwd`` (operation ``kda``); ``fused_gdn_gate`` itself is not dispatched, its autograd
function calls the dispatched pieces ``gdn_gate_fwd`` / ``gdn_gate_bwd`` (operation ``gated_delta_rule``).
"""

from __future__ import annotations

import os
import traceback
from types import SimpleNamespace

import pytest
import torch

from fla.ops.gated_delta_rule.gate import fused_gdn_gate, gdn_gate_bwd, gdn_gate_fwd, naive_gdn_gate
from fla.ops.kda.gate import fused_kda_gate, kda_gate_bwd, kda_gate_fwd, naive_kda_gate, naive_kda_lowerbound_gate

from conftest import run_scenario
from fla_npu.testing import rel_rms
from fla_npu_adapter import _backend, _discovery

GATE_KEYS = ("kda.fused_kda_gate", "kda.kda_gate_fwd", "kda.kda_gate_bwd",
             "gated_delta_rule.gdn_gate_fwd", "gated_delta_rule.gdn_gate_bwd")
# rel_rms against FLA's naive gates: both compute in float32; bf16 results and gradients may differ
# by the rounding of a float32 value that differs in its last bits (a different summation order)
TOL = {torch.float32: 1e-5, torch.bfloat16: 4e-3}


@pytest.fixture
def pieces_only(monkeypatch):
    """An fla_npu flavour declaring FLA's gate pieces but not ``fused_kda_gate``: FLA's own
    ``KDAGateFunction`` runs and calls the dispatched ``kda_gate_fwd`` / ``kda_gate_bwd``."""
    installed = _discovery.read_claims()
    entries = [SimpleNamespace(name=f"{key}@cpu", value=claims[0].value, dist=None)
               for key, claims in installed.items() if key != "kda.fused_kda_gate"]
    with monkeypatch.context() as patch:
        patch.setattr(_discovery, "_entry_points", lambda: entries)
        _backend.refresh()
        _backend.register_operation("kda")
    yield
    _backend.refresh()
    _backend.register_operation("kda")  # the installed claims again


def test_gates_registered():
    assert set(GATE_KEYS) <= set(_backend.registered)


def _never_zero(*shape, dtype=torch.float32, scale=1.0, seed=None):
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, dtype=torch.float64, generator=generator)
    return (torch.where(x < 0, x - 0.1, x + 0.1) * scale).to(dtype)


KDA_FORMS = {  # name: (A_log, dt_bias, lower_bound)
    "softplus": (True, True, None),
    "softplus_no_bias": (True, False, None),
    "lower_bound": (True, True, -5.0),
    "lower_bound_no_bias": (True, False, -5.0),
    "lower_bound_no_A_log": (False, True, -5.0),
    "lower_bound_only": (False, False, -3.0),
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _kda_inputs(form, dtype, B=2, T=37, H=3, K=20, seed=0):
    """``g``, ``A_log`` (FLA's test shape ``[1, 1, H, 1]``), ``dt_bias`` ``[H*K]``, never zero; all leaves."""
    torch.manual_seed(seed)
    has_A, has_bias, lower_bound = KDA_FORMS[form]
    g = _never_zero(B, T, H, K, dtype=dtype, scale=3.0)
    A_log = torch.empty(1, 1, H, 1).uniform_(1, 16).log().to(dtype) if has_A else None
    dt_bias = _never_zero(H * K, dtype=dtype) if has_bias else None
    return [None if t is None else t.requires_grad_() for t in (g, A_log, dt_bias)], lower_bound


def _kda_naive(g, A_log, dt_bias, lower_bound):
    if lower_bound is None:
        return naive_kda_gate(g, A_log, dt_bias)
    return naive_kda_lowerbound_gate(g, A_log, dt_bias, lower_bound)


def _out_and_grads(y, inputs):
    """``[y, gradients of the inputs given]`` for a fixed never-zero output gradient."""
    dy = _never_zero(*y.shape, dtype=y.dtype, seed=1)
    return [y, *torch.autograd.grad(y, [t for t in inputs if t is not None], dy)]


def _assert_matches(got, ref, dtype):
    """Same dtypes and shapes as FLA's naive gate and its gradients, values within ``TOL``."""
    assert [(t.dtype, t.shape) for t in got] == [(t.dtype, t.shape) for t in ref]
    for i, (x, r) in enumerate(zip(got, ref)):
        assert rel_rms(x.detach(), r.detach()) < TOL[dtype], i


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("form", KDA_FORMS)
def test_fused_kda_gate_routed_matches_naive(adapter_switch, spy, form, dtype):
    adapter_switch.enable()
    (g, A_log, dt_bias), lower_bound = inputs = _kda_inputs(form, dtype)
    y = fused_kda_gate(g=g, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound)  # FLA's tests' call
    assert spy == {"kda.fused_kda_gate": 1}
    got = _out_and_grads(y, inputs[0])
    assert spy == {"kda.fused_kda_gate": 1}  # fla_npu's own autograd: FLA's pieces are not called
    assert y.dtype == torch.float32 and y.shape == g.shape
    _assert_matches(got, _out_and_grads(_kda_naive(g, A_log, dt_bias, lower_bound), inputs[0]), dtype)


@pytest.mark.parametrize("output_dtype", [None, torch.bfloat16, torch.float64], ids=["None", "bf16", "fp64"])
def test_fused_kda_gate_positional_and_output_dtype(adapter_switch, spy, output_dtype):
    """FLA's ``torch.empty_like(g, dtype=output_dtype)``: ``None`` keeps ``g``'s dtype."""
    adapter_switch.enable()
    (g, A_log, dt_bias), _ = _kda_inputs("softplus", torch.bfloat16)
    y = fused_kda_gate(g, A_log, dt_bias, None, output_dtype)
    assert spy == {"kda.fused_kda_gate": 1}
    assert y.dtype == (output_dtype or g.dtype)
    ref = naive_kda_gate(g, A_log, dt_bias, output_dtype=output_dtype or g.dtype)
    _assert_matches(_out_and_grads(y, [g, A_log, dt_bias]), _out_and_grads(ref, [g, A_log, dt_bias]), torch.bfloat16)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("form", ["softplus", "lower_bound", "lower_bound_no_A_log"])
def test_kda_gate_pieces_under_fla_autograd(adapter_switch, pieces_only, spy, form, dtype):
    """Without a ``fused_kda_gate`` claim, FLA's KDAGateFunction serves FLA's public function and
    its dispatched forward and backward pieces are fla_npu's."""
    adapter_switch.enable()
    assert "kda.fused_kda_gate" not in _backend.registered
    (g, A_log, dt_bias), lower_bound = inputs = _kda_inputs(form, dtype)
    y = fused_kda_gate(g=g, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound)
    assert spy == {"kda.kda_gate_fwd": 1}
    got = _out_and_grads(y, inputs[0])
    assert spy == {"kda.kda_gate_fwd": 1, "kda.kda_gate_bwd": 1}
    _assert_matches(got, _out_and_grads(_kda_naive(g, A_log, dt_bias, lower_bound), inputs[0]), dtype)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("bias", [True, False], ids=["dt_bias", "no_bias"])
@pytest.mark.parametrize("form", ["keyword", "positional"])
def test_fused_gdn_gate_pieces_routed_matches_naive(adapter_switch, spy, bias, dtype, form):
    adapter_switch.enable()
    torch.manual_seed(0)
    B, T, HV = 2, 45, 5
    g = _never_zero(B, T, HV, dtype=dtype, scale=3.0).requires_grad_()
    A_log = torch.empty(HV).uniform_(1, 16).log().to(dtype).requires_grad_()
    dt_bias = _never_zero(HV, dtype=dtype).requires_grad_() if bias else None
    if form == "keyword":
        y = fused_gdn_gate(g=g, A_log=A_log, dt_bias=dt_bias)
    else:
        y = fused_gdn_gate(g, A_log, dt_bias, torch.float32)
    assert spy == {"gated_delta_rule.gdn_gate_fwd": 1}
    got = _out_and_grads(y, [g, A_log, dt_bias])
    assert spy == {"gated_delta_rule.gdn_gate_fwd": 1, "gated_delta_rule.gdn_gate_bwd": 1}
    _assert_matches(got, _out_and_grads(naive_gdn_gate(g, A_log, dt_bias), [g, A_log, dt_bias]), dtype)


# --- the pieces called directly: FLA's return contract, checked against float64 -------------------

def _kda_gate64(g, A_log, dt_bias, lower_bound):
    H, K = g.shape[-2:]
    x = g.double() + (0 if dt_bias is None else dt_bias.double().view(H, K))
    if lower_bound is None:
        return -A_log.double().view(H, 1).exp() * torch.nn.functional.softplus(x)
    return lower_bound * torch.sigmoid((1 if A_log is None else A_log.double().view(H, 1).exp()) * x)


@pytest.mark.parametrize("form", KDA_FORMS)
def test_kda_gate_pieces_return_fla_contract(adapter_switch, spy, form):
    """bf16 ``g``, float32 ``dyg``, 2-D ``dt_bias``: ``dg`` in ``g``'s dtype, ``dA`` like ``A_log``,
    ``dbias`` flat in ``dt_bias``'s dtype (what FLA's kernels return); nothing records a graph."""
    adapter_switch.enable()
    (g, A_log, dt_bias), lower_bound = _kda_inputs(form, torch.bfloat16)
    if dt_bias is not None:
        dt_bias = dt_bias.detach().float().view(3, 20).requires_grad_()
    y = kda_gate_fwd(g=g, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, output_dtype=None)
    assert y.dtype == torch.bfloat16 and y.shape == g.shape and not y.requires_grad
    dyg = _never_zero(*g.shape)
    dg, dA, dbias = kda_gate_bwd(g=g, A_log=A_log, dt_bias=dt_bias, dyg=dyg, lower_bound=lower_bound)
    assert spy == {"kda.kda_gate_fwd": 1, "kda.kda_gate_bwd": 1}
    leaves = [t.detach().double().requires_grad_() if t is not None else None for t in (g, A_log, dt_bias)]
    y64 = _kda_gate64(*leaves, lower_bound)
    ref = torch.autograd.grad(y64, [t for t in leaves if t is not None], dyg.double())
    assert rel_rms(y, y64.detach()) < 1e-2
    assert dg.dtype == torch.bfloat16 and dg.shape == g.shape and not dg.requires_grad
    assert rel_rms(dg, ref[0]) < 1e-2
    if A_log is None:
        assert dA is None
    else:
        assert dA.dtype == A_log.dtype and dA.shape == A_log.shape and rel_rms(dA, ref[1]) < 1e-2
    if dt_bias is None:
        assert dbias is None
    else:
        assert dbias.dtype == torch.float32 and dbias.shape == (60,) and not dbias.requires_grad
        assert rel_rms(dbias, ref[-1].reshape(-1)) < 1e-5


def test_gdn_gate_pieces_return_fla_contract(adapter_switch, spy):
    adapter_switch.enable()
    torch.manual_seed(0)
    g = _never_zero(2, 9, 4, dtype=torch.bfloat16).requires_grad_()
    A_log = _never_zero(4, dtype=torch.bfloat16).requires_grad_()
    dt_bias = _never_zero(4, dtype=torch.float64).requires_grad_()
    y = gdn_gate_fwd(g, A_log, dt_bias, None)
    assert y.dtype == torch.bfloat16 and y.shape == g.shape and not y.requires_grad
    dyg = _never_zero(2, 9, 4)
    dg, dA, dbias = gdn_gate_bwd(g, A_log, dt_bias, dyg)
    assert spy == {"gated_delta_rule.gdn_gate_fwd": 1, "gated_delta_rule.gdn_gate_bwd": 1}
    leaves = [t.detach().double().requires_grad_() for t in (g, A_log, dt_bias)]
    y64 = -leaves[1].exp() * torch.nn.functional.softplus(leaves[0] + leaves[2])
    ref = torch.autograd.grad(y64, leaves, dyg.double())
    assert rel_rms(y, y64.detach()) < 1e-2
    assert [(t.dtype, t.shape, t.requires_grad) for t in (dg, dA, dbias)] == [
        (torch.bfloat16, g.shape, False), (torch.bfloat16, A_log.shape, False), (torch.float64, (4,), False)]
    for got, r in zip((dg, dA, dbias), ref):
        assert rel_rms(got, r) < 1e-2


# --- fallback -------------------------------------------------------------------------------------

def _fla_frames(call):
    """Run ``call`` (FLA's Triton gate: no Triton driver for CPU tensors); the (file, function) of the
    frames in FLA's and fla_npu's code of the exception it raises."""
    with pytest.raises(Exception) as info:
        call()
    frames = [(f.filename.replace("\\", "/"), f.name) for f in traceback.extract_tb(info.tb)]
    return [(path.rpartition("/fla/")[2], fn) for path, fn in frames if "/fla/" in path], \
        [path for path, _ in frames if "/fla_npu/" in path]


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") == "1", reason="FLA's Triton runs on the CPU when interpreted")
@pytest.mark.parametrize("switch", ["off", "on-rejected"])
def test_gate_fallback_reaches_fla_triton(adapter_switch, spy, switch):
    """Switch off, or a call the verifier rejects: FLA's own gates run (its Triton launch fails on CPU
    tensors without a driver) and fla_npu is never called."""
    g = torch.randn(2, 8, 2, 16)
    A_log = torch.randn(2)
    kda_kwargs, gdn_A = dict(A_log=A_log), torch.randn(2)
    if switch == "on-rejected":
        adapter_switch.enable()
        kda_kwargs, gdn_A = dict(A_log=None), None  # (no lower_bound): rejected, FLA's kernel decides
    fla_frames, npu_frames = _fla_frames(lambda: fused_kda_gate(g, **kda_kwargs))
    assert ("ops/kda/gate.py", "kda_gate_fwd") in fla_frames and not npu_frames
    fla_frames, npu_frames = _fla_frames(lambda: fused_gdn_gate(g[..., 0, :2], gdn_A))
    assert ("ops/gated_delta_rule/gate.py", "gdn_gate_fwd") in fla_frames and not npu_frames
    assert spy == {}


def test_gate_real_fallback_and_contract_against_fla_triton():
    """FLA's Triton gates under TRITON_INTERPRET=1: fla_npu's results, gradients and the pieces'
    dtypes/shapes match FLA's; a wrong-device flavour gives FLA's own result bit for bit."""
    result = run_scenario("gate_fallback", TRITON_INTERPRET="1")
    for name, case in result["cases"].items():
        gdn = name.startswith("gdn")
        assert case["served"] == ({"gated_delta_rule.gdn_gate_fwd": 1, "gated_delta_rule.gdn_gate_bwd": 1} if gdn
                                  else {"kda.fused_kda_gate": 1}), name
        assert case["same_meta"], name
        assert case["npu_vs_naive"] < 1e-5, name
        assert case["fla_vs_naive"] < (1e-5 if name.endswith("float32") else 1e-2), name
    for name, piece in result["pieces"].items():
        assert piece["served"] == 1 and piece["npu"] == piece["fla"], name
        assert piece["npu_vs_fla"] < 1e-2, name
    assert all(result["fallback_equals_fla"].values()) and len(result["fallback_equals_fla"]) == 10
    assert result["fallback_spy_calls"] == 0
    reason = "no fla_npu implementation of kda.fused_kda_gate for device type 'cpu' (installed: npu:Ascend910B2)"
    assert f"fla_npu_adapter: kda.fused_kda_gate rejected -> FLA's default path: {reason}" in result["logs"]
    assert f"[FLA Backend] kda.fused_kda_gate -> fla_npu rejected: {reason}" in result["logs"]
    assert "[FLA Backend] gated_delta_rule.gdn_gate_fwd -> fla_npu" in result["logs"]
