"""Subprocess scenarios for the adapter tests (run by ``conftest.Scenario``; prints one JSON line).

Each runs in a fresh interpreter so that environment variables read at import time
(``TRITON_INTERPRET``, ``FLA_DISABLE_BACKEND_DISPATCH``, ``FLA_NPU_AUTOLOAD``) are in force before
torch, Triton and FLA are imported.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings

warnings.filterwarnings("ignore")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


records = _Records()
for _name in ("fla_npu", "fla.backends"):
    logging.getLogger(_name).addHandler(records)
    logging.getLogger(_name).setLevel(logging.INFO)


def _fla_npu_in(registry) -> bool:
    return "fla_npu" in registry._backends


def _registries():
    import fla.backends as fb
    from fla.ops.kda.chunk import chunk_kda
    import inspect
    chunk = fb._function_registries.get(inspect.unwrap(chunk_kda))
    return {
        "kda.chunk_kda": chunk is not None and _fla_npu_in(chunk),
        "kda": "kda" in fb._operation_registries and _fla_npu_in(fb._operation_registries["kda"]),
        "gated_delta_rule": ("gated_delta_rule" in fb._operation_registries
                             and _fla_npu_in(fb._operation_registries["gated_delta_rule"])),
    }


def _no_op_autotuner_benchmark():
    """Under TRITON_INTERPRET=1 there is nothing to time: every autotuner config scores the same."""
    from triton.runtime.autotuner import Autotuner
    Autotuner.do_bench = property(lambda self: (lambda fn, quantiles=None, **kw: [1.0] * len(quantiles or (0,))))


def _decode_inputs():
    import torch
    torch.manual_seed(0)
    B, T, H, D = 2, 12, 2, 16
    q, k, v = (torch.randn(B, T, H, D) for _ in range(3))
    g = torch.nn.functional.logsigmoid(torch.randn(B, T, H, D))
    beta = torch.rand(B, T, H)
    h0 = torch.randn(B, H, D, D)
    return q, k, v, g, beta, h0


class _FakeEntryPoint:
    def __init__(self, name, value):
        self.name, self.value, self.dist = name, value, None


def real_fallback() -> dict:
    """FLA's Triton fused_recurrent_kda (interpreted on the CPU) against the adapter's routing."""
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import torch
    import fla_npu_adapter
    _no_op_autotuner_benchmark()
    from fla.ops.kda import fused_recurrent_kda
    from fla.ops.kda.naive import naive_recurrent_kda
    from fla_npu_adapter import _backend, _discovery  # after FLA: the hook imported it on FLA's import

    q, k, v, g, beta, h0 = _decode_inputs()

    def run():
        return fused_recurrent_kda(q, k, v, g, beta, initial_state=h0.clone(), output_final_state=True)

    fla_npu_adapter.disable()
    fla_o, fla_h = run()                                   # FLA's own Triton result
    ref_o, ref_h = naive_recurrent_kda(q, k, v, g, beta, initial_state=h0.clone(), output_final_state=True)

    cls = _backend.registered["kda.fused_recurrent_kda_fwd"]
    calls = []
    original = cls.fused_recurrent_kda_fwd

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)  # the class attribute is a staticmethod

    cls.fused_recurrent_kda_fwd = spy
    fla_npu_adapter.enable()
    npu_o, npu_h = run()                                   # served by fla_npu
    served = len(calls)

    # A flavour built for an NPU SoC only: the CPU call is rejected and FLA's Triton path runs.
    _discovery._entry_points = lambda: [
        _FakeEntryPoint("kda.fused_recurrent_kda_fwd@npu:Ascend910B2", "fla_npu:fused_recurrent_kda_fwd")]
    _backend.refresh()
    _backend.register_operation("kda")
    fb_o, fb_h = run()
    rejected_calls = len(calls) - served

    def err(x, ref):
        return ((x - ref).abs().max() / ref.abs().max()).item()

    return {
        "served_calls": served,
        "fallback_spy_calls": rejected_calls,
        "fla_vs_naive": max(err(fla_o, ref_o), err(fla_h, ref_h)),
        "npu_vs_naive": max(err(npu_o, ref_o), err(npu_h, ref_h)),
        "fallback_equals_fla": bool(torch.equal(fb_o, fla_o) and torch.equal(fb_h, fla_h)),
        "logs": records.lines,
    }


def entry_points_absent() -> dict:
    """No fla_npu entry points: nothing is claimed, nothing registered, FLA's Triton path answers."""
    import torch
    import fla_npu_adapter
    from fla_npu_adapter import _discovery
    _discovery._entry_points = lambda: []
    _no_op_autotuner_benchmark()
    fla_npu_adapter.enable()
    from fla.ops.kda import fused_recurrent_kda
    from fla.ops.kda.naive import naive_recurrent_kda
    q, k, v, g, beta, h0 = _decode_inputs()
    o, h = fused_recurrent_kda(q, k, v, g, beta, initial_state=h0.clone(), output_final_state=True)
    ref_o, ref_h = naive_recurrent_kda(q, k, v, g, beta, initial_state=h0.clone(), output_final_state=True)
    return {"registries": _registries(), "status": fla_npu_adapter.status()["registered"],
            "err": max((o - ref_o).abs().max().item(), (h - ref_h).abs().max().item()),
            "finite": bool(torch.isfinite(o).all()), "logs": records.lines}


def dispatch_disabled() -> dict:
    """FLA_DISABLE_BACKEND_DISPATCH=1: FLA's functions stay undecorated and nothing is registered."""
    import fla_npu_adapter
    import fla.backends as fb
    from fla.ops.kda import chunk_kda
    import fla.ops.gated_delta_rule  # noqa: F401
    kda_ops = fb._operation_registries.get("kda")
    gdr_ops = fb._operation_registries.get("gated_delta_rule")
    return {
        "dispatch_disabled": fb._DISPATCH_DISABLED,
        "function_registries": len(fb._function_registries),
        "chunk_kda_wrapped": hasattr(chunk_kda, "__wrapped__") and "backends" in chunk_kda.__wrapped__.__module__,
        "fla_npu_in_kda": kda_ops is not None and _fla_npu_in(kda_ops),
        "fla_npu_in_gdr": gdr_ops is not None and _fla_npu_in(gdr_ops),
        "registered": fla_npu_adapter.status()["registered"],
        "logs": records.lines,
    }


def autoload() -> dict:
    """Only ``import torch`` and FLA: does the torch autoload entry point register fla_npu?"""
    import torch  # noqa: F401
    before = "fla_npu_adapter" in sys.modules
    import fla.ops.kda  # noqa: F401
    import fla.ops.gated_delta_rule  # noqa: F401
    result = {"adapter_imported_by_torch": before, "registries": _registries()}
    import fla_npu_adapter  # noqa: F401  (an explicit import registers in any case)
    result["after_import"] = _registries()
    result["logs"] = records.lines
    return result


def _gate_cases():
    """FLA's public gates with their inputs: ``(name, FLA function, naive reference, args, kwargs)``."""
    import torch
    from fla.ops.gated_delta_rule.gate import fused_gdn_gate, naive_gdn_gate
    from fla.ops.kda.gate import fused_kda_gate, naive_kda_gate, naive_kda_lowerbound_gate
    torch.manual_seed(0)
    B, T, H, K, HV = 2, 19, 2, 12, 3

    def nz(*shape, dtype=torch.float32):
        x = torch.randn(*shape)
        return torch.where(x < 0, x - 0.1, x + 0.1).to(dtype)

    A = torch.empty(H).uniform_(1, 16).log()
    cases = []
    for dtype in (torch.float32, torch.bfloat16):
        tag = str(dtype).rpartition(".")[2]
        g = nz(B, T, H, K, dtype=dtype) * 3
        cases += [
            (f"kda_softplus_{tag}", fused_kda_gate, naive_kda_gate, (g, A, nz(H * K)), {}),
            (f"kda_lower_bound_{tag}", fused_kda_gate, naive_kda_lowerbound_gate, (g, A.view(1, 1, H, 1), nz(H * K)),
             {"lower_bound": -5.0}),
            (f"kda_lower_bound_no_A_log_{tag}", fused_kda_gate, naive_kda_lowerbound_gate, (g, None, nz(H * K)),
             {"lower_bound": -5.0}),
            (f"gdn_{tag}", fused_gdn_gate, naive_gdn_gate, (nz(B, T, HV, dtype=dtype) * 3, A.new_empty(HV).uniform_(0, 2),
                                                            nz(HV)), {}),
            (f"gdn_no_bias_{tag}", fused_gdn_gate, naive_gdn_gate, (nz(B, T, HV, dtype=dtype) * 3, nz(HV), None), {}),
        ]
    return cases


def gate_fallback() -> dict:
    """FLA's Triton gates (interpreted on the CPU) against fla_npu's: results, gradients, the pieces'
    return contract, and FLA's own result bit for bit when a wrong-device flavour makes the verifier reject."""
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import torch
    import fla_npu_adapter
    _no_op_autotuner_benchmark()
    from fla.ops.gated_delta_rule.gate import gdn_gate_bwd, gdn_gate_fwd
    from fla.ops.kda.gate import kda_gate_bwd, kda_gate_fwd
    from fla_npu_adapter import _backend, _discovery

    from backend_spy import count_backend_calls

    gate_keys = [k for k in _backend.registered if "gate" in k]
    calls = count_backend_calls(gate_keys)

    def run(fn, args, kwargs):
        leaves = [a.detach().clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]
        y = fn(*leaves, **kwargs)
        dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).to(y.dtype)
        grads = torch.autograd.grad(y, [a for a in leaves if isinstance(a, torch.Tensor)], dy)
        return [y.detach(), *grads]

    def err(x, ref):
        x, ref = x.double(), ref.double()
        return ((x - ref).square().mean().sqrt() / ref.square().mean().sqrt()).item()

    def meta(ts):
        return [None if t is None else [str(t.dtype), list(t.shape), t.requires_grad] for t in ts]

    result = {"cases": {}}
    cases = _gate_cases()
    fla_out = {}
    for name, fn, naive, args, kwargs in cases:
        fla_npu_adapter.disable()
        fla = fla_out[name] = run(fn, args, kwargs)
        before = dict(calls)
        fla_npu_adapter.enable()
        npu = run(fn, args, kwargs)
        ref = run(naive, args, kwargs)
        result["cases"][name] = {
            "fla_vs_naive": max(err(a, b) for a, b in zip(fla, ref)),
            "npu_vs_naive": max(err(a, b) for a, b in zip(npu, ref)),
            "npu_vs_fla": max(err(a, b) for a, b in zip(npu, fla)),
            "same_meta": meta(npu) == meta(fla),
            "served": {k: calls.get(k, 0) - before.get(k, 0) for k in calls if calls.get(k, 0) != before.get(k, 0)},
        }

    # The pieces FLA dispatches, called directly: the same dtypes, shapes and (no) autograd as FLA's kernels.
    g = torch.randn(2, 5, 2, 8, dtype=torch.bfloat16, requires_grad=True)
    A = torch.rand(1, 1, 2, 1, requires_grad=True)
    b = torch.randn(2, 8, requires_grad=True)  # FLA's ddt_bias is flat whatever dt_bias's shape
    dyg = torch.randn(2, 5, 2, 8)
    gv = torch.randn(2, 5, 3, dtype=torch.bfloat16, requires_grad=True)
    Av = torch.rand(3, dtype=torch.bfloat16, requires_grad=True)
    bv = torch.randn(3, dtype=torch.float64, requires_grad=True)
    dygv = torch.randn(2, 5, 3)
    pieces = {
        "kda_gate_fwd(None)": lambda: [kda_gate_fwd(g, A, b.view(-1), output_dtype=None)],
        "kda_gate_fwd(bf16,lb)": lambda: [kda_gate_fwd(g, None, b.view(-1), -5.0, torch.bfloat16)],
        "kda_gate_bwd": lambda: kda_gate_bwd(g=g, A_log=A, dt_bias=b, dyg=dyg),
        "kda_gate_bwd(lb)": lambda: kda_gate_bwd(g=g, A_log=None, dt_bias=b, dyg=dyg, lower_bound=-5.0),
        "gdn_gate_fwd(None)": lambda: [gdn_gate_fwd(gv, Av, bv, None)],
        "gdn_gate_bwd": lambda: gdn_gate_bwd(g=gv, A_log=Av, dt_bias=bv, dyg=dygv),
    }
    result["pieces"] = {}
    for name, call in pieces.items():
        fla_npu_adapter.disable()
        fla = call()
        before = sum(calls.values())
        fla_npu_adapter.enable()
        npu = call()
        result["pieces"][name] = {
            "fla": meta(fla), "npu": meta(npu), "served": sum(calls.values()) - before,
            "npu_vs_fla": max(err(a, b) for a, b in zip(npu, fla) if a is not None),
        }

    # A flavour built for an NPU SoC only: every CPU call is rejected and FLA's Triton gates answer.
    values = {key: claims[0].value for key, claims in _discovery.read_claims().items()}
    _discovery._entry_points = lambda: [
        _FakeEntryPoint(f"{key}@npu:Ascend910B2", values[key]) for key in gate_keys]
    _backend.refresh()
    _backend.register_operation("kda")
    _backend.register_operation("gated_delta_rule")
    count_backend_calls(gate_keys, calls=calls)
    before = sum(calls.values())
    result["fallback_equals_fla"] = {
        name: all(torch.equal(a, b) for a, b in zip(run(fn, args, kwargs), fla_out[name]))
        for name, fn, naive, args, kwargs in cases}
    result["fallback_spy_calls"] = sum(calls.values()) - before
    result["logs"] = records.lines
    return result


def routed_by_env() -> dict:
    """FLA_ASCENDC=1 alone (no Python call): chunk_kda on CPU tensors is served by fla_npu."""
    import torch
    from fla.ops.kda import chunk_kda
    q, k, v, g, beta, h0 = _decode_inputs()
    o, h = chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True)
    return {"finite": bool(torch.isfinite(o).all()), "logs": records.lines}


if __name__ == "__main__":
    print(json.dumps(globals()[sys.argv[1]]()))
