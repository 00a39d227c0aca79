"""Empty inputs of every public op.

No token (``T == 0``, ``B == 0``, or a varlen batch of empty sequences) is well defined: the output
is empty and each sequence's final state is its initial state (zeros without one); the gradient
of the initial state is the final state's, every other gradient is empty. Zero heads or zero-width
heads have no meaning (FLA divides by zero there): a ValueError naming them.
"""

from __future__ import annotations

import pytest
import torch

import fla_npu
from fla_npu.runtime import library_available

from helpers import cu, one_thread

_ = one_thread
K, V, H = 8, 8, 2
CHUNK = [pytest.param("kda", fla_npu.chunk_kda, id="chunk_kda"),
         pytest.param("gdn", fla_npu.chunk_gated_delta_rule, id="chunk_gdn")]
EMPTY = [pytest.param(dict(B=1, T=0), id="T0"), pytest.param(dict(B=0, T=5), id="B0"),
         pytest.param(dict(B=3, T=0), id="B3-T0"),
         pytest.param(dict(B=1, T=0, cu_seqlens=cu(0, 0, 0)), id="varlen-empty")]


def _inputs(op, B, T, HV=H, k_dim=K, v_dim=V, h=H, grad=False):
    g = -torch.rand(B, T, HV, k_dim) if op == "kda" else -torch.rand(B, T, HV)
    x = dict(q=torch.randn(B, T, h, k_dim), k=torch.randn(B, T, h, k_dim), v=torch.randn(B, T, HV, v_dim), g=g,
             beta=torch.rand(B, T, HV))
    return {n: t.requires_grad_(grad) for n, t in x.items()}


@pytest.mark.parametrize("op,fn", CHUNK)
@pytest.mark.parametrize("case", EMPTY)
@pytest.mark.parametrize("state_v_first", [False, True])
def test_chunk_op_without_tokens_passes_the_state_through(op, fn, case, state_v_first):
    B, T, cs = case["B"], case["T"], case.get("cu_seqlens")
    N = B if cs is None else len(cs) - 1
    x = _inputs(op, B, T, grad=True)
    h0 = torch.randn(N, H, K, V, requires_grad=True)
    o, ht = fn(**x, initial_state=h0, output_final_state=True, cu_seqlens=cs, state_v_first=state_v_first)
    assert o.shape == (B, T, H, V) and o.dtype == x["q"].dtype
    assert ht.dtype == torch.float32 and torch.equal(ht, h0.detach())
    dht = torch.randn_like(ht)
    ((o.sum() + (ht * dht).sum())).backward()
    assert torch.equal(h0.grad, dht)
    for name, t in x.items():
        assert t.grad is not None and t.grad.shape == t.shape and t.grad.dtype == t.dtype, name


@pytest.mark.parametrize("op,fn", CHUNK)
@pytest.mark.parametrize("case", EMPTY)
def test_chunk_op_without_tokens_or_initial_state(op, fn, case):
    B, T, cs = case["B"], case["T"], case.get("cu_seqlens")
    N = B if cs is None else len(cs) - 1
    o, ht = fn(**_inputs(op, B, T), output_final_state=True, cu_seqlens=cs)
    assert o.shape == (B, T, H, V)
    assert ht.shape == (N, H, K, V) and not ht.any()


def test_chunk_kda_without_tokens_returns_empty_intermediate_states():
    with torch.inference_mode():
        out = fla_npu.chunk_kda(**_inputs("kda", 2, 0), output_final_state=True, return_intermediate_states=True)
    assert out[2].shape == (2, 0, H, K, V)


@pytest.mark.parametrize("fn,op", [(fla_npu.fused_recurrent_kda, "kda"), (fla_npu.fused_recurrent_kda_fwd, "kda"),
                                   (fla_npu.fused_recurrent_gated_delta_rule, "gdn")])
@pytest.mark.parametrize("case", EMPTY)
def test_fused_recurrent_without_tokens_passes_the_state_through(fn, op, case):
    B, T, cs = case["B"], case["T"], case.get("cu_seqlens")
    N = B if cs is None else len(cs) - 1
    h0 = torch.randn(N, H, K, V)
    o, ht = fn(**_inputs(op, B, T), initial_state=h0, output_final_state=True, cu_seqlens=cs)
    assert o.shape == (B, T, H, V)
    assert torch.equal(ht, h0)


@pytest.mark.parametrize("fn,op", [(fla_npu.chunk_kda, "kda"), (fla_npu.chunk_gated_delta_rule, "gdn"),
                                   (fla_npu.fused_recurrent_kda, "kda"), (fla_npu.fused_recurrent_kda_fwd, "kda"),
                                   (fla_npu.fused_recurrent_gated_delta_rule, "gdn")])
@pytest.mark.parametrize("dims,named", [(dict(h=0, HV=0), "H=0, HV=0"), (dict(k_dim=0), "K=0"), (dict(v_dim=0), "V=0")])
def test_zero_heads_or_head_dims_are_refused(fn, op, dims, named):
    with pytest.raises(ValueError, match=f"{named}: every head count and head dimension must be at least 1"):
        fn(**_inputs(op, 1, 4, **dims), **({"inplace_final_state": False} if fn is fla_npu.fused_recurrent_kda_fwd else {}))


@pytest.mark.parametrize("sim", [False, True])
@pytest.mark.parametrize("shape", [(1, 0, H), (0, 5, H), (1, 5, 0)], ids=["T0", "B0", "H0"])
def test_gate_helpers_on_empty_inputs(shape, sim, monkeypatch):
    """The gates and the gate + chunk-local cumsum helpers return an empty result of the input's shape."""
    if sim:
        if not library_available():
            pytest.skip("the native library (host simulation) is not built")
        monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    B, T, h = shape
    gk, gs = torch.randn(B, T, h, K), torch.randn(B, T, h)
    A, bk, bs = torch.randn(h), torch.randn(h * K), torch.randn(h)
    assert fla_npu.fused_kda_gate(gk, A, bk).shape == gk.shape
    assert fla_npu.fused_gdn_gate(gs, A, bs).shape == gs.shape
    assert fla_npu.kda_gate_chunk_cumsum(gk, A, 64, dt_bias=bk).shape == gk.shape
    assert fla_npu.gdn_gate_chunk_cumsum(gs, A, 64, dt_bias=bs).shape == gs.shape


def test_prefix_shared_attention_empty_batch_and_refused_empty_keys():
    """bs = 0: an empty output; no keys (softmax over nothing is undefined): a ValueError."""
    assert fla_npu.prefix_shared_attention(torch.randn(0, 4, 3, 64), torch.randn(0, 5, 64),
                                           torch.randn(0, 5, 64)).shape == (0, 4, 3, 64)
    with pytest.raises(ValueError, match="must be positive"):
        fla_npu.prefix_shared_attention(torch.randn(1, 4, 3, 64), torch.randn(1, 0, 64), torch.randn(1, 0, 64))
