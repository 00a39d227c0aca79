"""FLA's public functions, called on CPU tensors, reach fla_npu through FLA's own dispatch (spied),
match FLA's naive references forward and backward, and fall back to FLA's default path otherwise."""

from __future__ import annotations

import inspect
import traceback

import pytest
import torch
import torch.nn.functional as F

import fla.backends as fb
from fla.ops.gated_delta_rule import chunk_gated_delta_rule
from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
from fla.ops.kda import chunk_kda
from fla.ops.kda.naive import naive_recurrent_kda

from conftest import Scenario
from fla_npu.testing import rel_rms
from fla_npu_adapter import _backend


def _registry(key):
    if key == "kda.chunk_kda":
        return fb._function_registries[inspect.unwrap(chunk_kda)]
    return fb._operation_registries[key.partition(".")[0]]


@pytest.mark.parametrize("key", sorted(_backend.FLA_FUNCTIONS))
def test_registered_in_fla_registry_ahead_of_builtins(key):
    registry = _registry(key)
    assert key in _backend.registered
    backend = registry._backends["fla_npu"]
    assert isinstance(backend, _backend.registered[key])
    assert registry._get_sorted_backends()[0] is backend
    assert all(backend.priority < other.priority for other in registry._backends.values() if other is not backend)
    assert backend.priority < fb.TritonAscendBackend.priority


def _inputs(B=2, T=70, H=2, HV=4, D=32, per_key_gate=True, seed=0):
    torch.manual_seed(seed)
    q = torch.rand(B, T, H, D)
    k = torch.rand(B, T, H, D)
    v = torch.randn(B, T, HV, D)
    g = F.logsigmoid(torch.randn(B, T, HV, D if per_key_gate else 1)).squeeze(-1) / 4
    beta = torch.rand(B, T, HV).sigmoid()
    h0 = torch.randn(B, HV, D, D)
    return [t.requires_grad_() for t in (q, k, v, g, beta, h0)]


def _grads(out, ht, inputs, seed=1):
    torch.manual_seed(seed)
    loss = (out * torch.randn_like(out)).sum() + (ht * torch.randn_like(ht)).sum()
    return torch.autograd.grad(loss, inputs)


def _naive_kda(q, k, v, g, beta, h0):
    G = v.shape[2] // q.shape[2]
    rep = lambda x: x.repeat_interleave(G, dim=2)  # noqa: E731
    return naive_recurrent_kda(rep(F.normalize(q, dim=-1)), rep(F.normalize(k, dim=-1)), v, g, beta,
                               initial_state=h0, output_final_state=True)


@pytest.mark.parametrize("form", ["keyword", "positional"])
def test_chunk_kda_routed_matches_naive(adapter_switch, spy, form):
    adapter_switch.enable()
    q, k, v, g, beta, h0 = inputs = _inputs()
    if form == "keyword":
        o, ht = chunk_kda(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, output_final_state=True,
                          use_qk_l2norm_in_kernel=True, chunk_size=32)
    else:
        o, ht = chunk_kda(q, k, v, g, beta, None, h0, True, True)
    assert spy == {"kda.chunk_kda": 1}
    ref_o, ref_ht = _naive_kda(q, k, v, g, beta, h0)
    assert o.dtype == q.dtype and ht.dtype == torch.float32 and o.shape == v.shape
    assert rel_rms(o.detach(), ref_o.detach()) < 1e-4 and rel_rms(ht.detach(), ref_ht.detach()) < 1e-4
    for name, got, ref in zip("q k v g beta h0".split(), _grads(o, ht, inputs), _grads(ref_o, ref_ht, inputs)):
        assert rel_rms(got, ref) < 1e-4, name


def test_chunk_gated_delta_rule_routed_matches_naive(adapter_switch, spy):
    adapter_switch.enable()
    q, k, v, g, beta, h0 = inputs = _inputs(per_key_gate=False, HV=2)
    o, ht = chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                   use_qk_l2norm_in_kernel=True)
    assert spy == {"gated_delta_rule.chunk_gated_delta_rule": 1}
    ref_o, ref_ht = naive_recurrent_gated_delta_rule(F.normalize(q, dim=-1), F.normalize(k, dim=-1), v, beta, g,
                                                     initial_state=h0, output_final_state=True)
    assert rel_rms(o.detach(), ref_o.detach()) < 1e-4 and rel_rms(ht.detach(), ref_ht.detach()) < 1e-4
    for name, got, ref in zip("q k v g beta h0".split(), _grads(o, ht, inputs), _grads(ref_o, ref_ht, inputs)):
        assert rel_rms(got, ref) < 1e-4, name


def _raised_by_fla(call):
    """Run ``call``; return the file of the innermost frame of the exception it raises."""
    with pytest.raises(ValueError) as info:
        call()
    return traceback.extract_tb(info.tb)[-1].filename, str(info.value)


@pytest.mark.parametrize("switch", ["off", "on"])
def test_invalid_call_raises_fla_error_either_way(adapter_switch, spy, switch):
    """Switch off: FLA's own function raises its error; on: the invalid call is handed to fla_npu,
    whose validation raises the same error (type and message)."""
    if switch == "on":
        adapter_switch.enable()
    q, k, v, g, beta, _ = _inputs(T=8)
    where, message = _raised_by_fla(lambda: chunk_kda(q, k, v, g, beta, chunk_size=16))
    assert spy == ({"kda.chunk_kda": 1} if switch == "on" else {})
    assert where.replace("\\", "/").endswith("fla/ops/kda/chunk.py" if switch == "off" else "fla_npu/ops/common/validate.py")
    assert message == "`chunk_size` must be either 32 or 64 for KDA, got 16."


def test_unsupported_call_reaches_fla_default_path(adapter_switch, spy):
    """A valid call fla_npu does not serve (``cp_context``): FLA's own function runs."""
    adapter_switch.enable()
    q, k, v, g, beta, _ = _inputs(T=8)
    with pytest.raises(Exception) as info:
        chunk_kda(q, k, v, g, beta, cp_context=object())
    assert spy == {}
    assert traceback.extract_tb(info.tb)[-1].filename.replace("\\", "/").endswith("fla/ops/kda/chunk.py")


def test_disable_overrides_environment(adapter_switch, monkeypatch):
    monkeypatch.setenv("FLA_ASCENDC", "1")
    assert adapter_switch.is_enabled()
    adapter_switch.disable()
    assert not adapter_switch.is_enabled()
    adapter_switch.reset()
    monkeypatch.setenv("FLA_ASCENDC", "0")
    assert not adapter_switch.is_enabled()


# --- subprocess scenarios: environment read at import time ---------------------------------------

# Each a fresh interpreter importing torch, FLA and Triton (most of its time), with the environment
# given here; the module's scenarios start side by side when the first test asks for one.
SCENARIOS = {
    "routed_by_env": dict(FLA_ASCENDC="1"),
    "autoload": dict(FLA_NPU_AUTOLOAD="0"),
    "entry_points_absent": dict(TRITON_INTERPRET="1"),
    "real_fallback": dict(TRITON_INTERPRET="1"),
    "dispatch_disabled": dict(FLA_DISABLE_BACKEND_DISPATCH="1", FLA_ASCENDC="1"),
}


@pytest.fixture(scope="module")
def scenarios():
    started = {name: Scenario(name, **env) for name, env in SCENARIOS.items()}
    yield started
    for s in started.values():
        s.stop()


def test_env_switch_routes_and_torch_autoload_registers(scenarios):
    result = scenarios["routed_by_env"].result()
    assert result["finite"]
    assert "[FLA Backend] fla.ops.kda.chunk.chunk_kda -> fla_npu" in result["logs"]


def test_autoload_off_registers_nothing_until_imported(scenarios):
    result = scenarios["autoload"].result()
    assert result["adapter_imported_by_torch"] is False
    assert result["registries"] == {"kda.chunk_kda": False, "kda": False, "gated_delta_rule": False}
    assert result["after_import"] == {"kda.chunk_kda": True, "kda": True, "gated_delta_rule": True}


def test_entry_points_absent_nothing_claimed(scenarios):
    result = scenarios["entry_points_absent"].result()
    assert result["registries"] == {"kda.chunk_kda": False, "kda": False, "gated_delta_rule": False}
    assert result["status"] == []
    assert result["finite"] and result["err"] < 1e-4  # FLA's Triton kernel (interpreted) answered
    assert result["logs"] == ["fla_npu_adapter: no fla_npu kernels installed (entry-point group fla_npu.kernels "
                              "is empty) -> FLA's default path"]


def test_real_fallback_returns_fla_result(scenarios):
    """FLA's Triton fused_recurrent_kda under TRITON_INTERPRET=1: served by fla_npu when accepted; when a
    wrong-device flavour makes the verifier reject, FLA's own result comes back bit for bit."""
    result = scenarios["real_fallback"].result()
    assert result["served_calls"] == 1
    assert result["fallback_spy_calls"] == 0
    assert result["fla_vs_naive"] < 1e-5 and result["npu_vs_naive"] < 1e-5
    assert result["fallback_equals_fla"]
    reason = ("no fla_npu implementation of kda.fused_recurrent_kda_fwd for device type 'cpu' "
              "(installed: npu:Ascend910B2)")
    assert f"fla_npu_adapter: kda.fused_recurrent_kda_fwd rejected -> FLA's default path: {reason}" in result["logs"]
    assert sum(reason in line for line in result["logs"]) == 2  # ours and FLA's, once each


def test_fla_disable_backend_dispatch_leaves_fla_untouched(scenarios):
    result = scenarios["dispatch_disabled"].result()
    assert result["dispatch_disabled"] is True
    assert result["function_registries"] == 0 and result["chunk_kda_wrapped"] is False
    assert not result["fla_npu_in_kda"] and not result["fla_npu_in_gdr"]
    assert result["registered"] == []
