"""Through FLA with the adapter on, an invalid call raises the error FLA raises for it (fla_npu's
validation reproduces FLA's messages), never an unrelated error from FLA's path on a machine without
its backend; fallbacks are logged once at WARNING while the switch is on."""

from __future__ import annotations

import logging

import pytest
import torch

from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_chunk_gdn
from fla.ops.kda import chunk_kda as fla_chunk_kda
from fla.ops.kda.gate import fused_kda_gate as fla_fused_kda_gate

import fla_npu
from fla_npu_adapter import _state


def _kda():
    torch.manual_seed(0)
    return dict(q=torch.randn(1, 8, 2, 16), k=torch.randn(1, 8, 2, 16), v=torch.randn(1, 8, 2, 16),
                g=-torch.rand(1, 8, 2, 16), beta=torch.rand(1, 8, 2))


def _gdn():
    return {**_kda(), "g": -torch.rand(1, 8, 2)}


CASES = [
    ("misspelt keyword", dict(output_final_sate=True)),
    ("integer q", dict(q=torch.randint(0, 3, (1, 8, 2, 16)))),
    ("float cu_seqlens", dict(cu_seqlens=torch.tensor([0.0, 8.0]))),
    ("list cu_seqlens", dict(cu_seqlens=[0, 8])),
    ("chunk_size 16 (KDA) / 8 (GDN)", None),
    ("string chunk_size", dict(chunk_size="64")),
    ("3-D q", None),
]


def _case(op, name, extra):
    x = _kda() if op == "kda" else _gdn()
    if name.startswith("chunk_size 16"):
        extra = dict(chunk_size=16 if op == "kda" else 8)
    if name == "3-D q":
        extra = dict(q=x["q"][0])
    return {**x, **extra}


def _raised(fn, kwargs):
    with pytest.raises(Exception) as info:
        fn(**kwargs)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("op,fla_fn,ours", [("kda", fla_chunk_kda, fla_npu.chunk_kda),
                                            ("gdn", fla_chunk_gdn, fla_npu.chunk_gated_delta_rule)])
@pytest.mark.parametrize("name,extra", CASES, ids=[c[0] for c in CASES])
def test_invalid_call_through_fla_raises_fla_npu_validation_error(adapter_switch, spy, op, fla_fn, ours, name, extra):
    adapter_switch.enable()
    kwargs = _case(op, name, extra)
    expected = _raised(ours, kwargs)
    assert expected[0] in (ValueError, TypeError, AssertionError), expected
    assert _raised(fla_fn, kwargs) == expected
    assert sum(spy.values()) == 1  # handed to fla_npu, not to FLA's path


def test_invalid_gate_call_through_fla(adapter_switch, spy):
    adapter_switch.enable()
    g = torch.randn(1, 8, 2, 16)
    kwargs = dict(g=g, A_log=torch.randn(3), dt_bias=torch.randn(32))
    assert _raised(fla_fused_kda_gate, kwargs) == (
        ValueError, "kda_gate_fwd: `A_log` must have one value per head (2), got shape [3].")
    assert spy == {"kda.fused_kda_gate": 1}


@pytest.mark.parametrize("on", [True, False])
def test_fallback_reasons_are_warnings_while_the_switch_is_on(adapter_switch, caplog, on):
    (adapter_switch.enable if on else adapter_switch.disable)()
    with caplog.at_level(logging.INFO, logger="fla_npu.adapter"):
        for _ in range(2):
            _state.log_fallback(("test", on), "fla_npu_adapter: not served (%s)", "why")
    assert [(r.levelno, r.getMessage()) for r in caplog.records if "not served" in r.getMessage()] == [
        (logging.WARNING if on else logging.INFO, "fla_npu_adapter: not served (why)")]
