"""fla_npu.prefix_shared_attention on the PyTorch reference: semantics against an fp64 computation,
the default scale, the output dtype, and the validation errors raised before any computation."""

from __future__ import annotations

import pytest
import torch

import fla_npu
from fla_npu.ops.prefix_shared_attention import naive_prefix_shared_attention


@pytest.fixture(autouse=True)
def reference(monkeypatch):
    monkeypatch.delenv("FLA_NPU_CPU_IMPL", raising=False)


def _inputs(bs=2, G=3, Lq=4, Lkv=9, D=128, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(bs, G, Lq, D, generator=gen).to(dtype), torch.randn(bs, Lkv, D, generator=gen).to(dtype),
            torch.randn(bs, Lkv, D, generator=gen).to(dtype))


def _fp64(q, k, v, scale):
    """Per response, the textbook formula with K/V repeated over G (fp64)."""
    out = torch.empty(q.shape, dtype=torch.float64)
    for b in range(q.shape[0]):
        for g in range(q.shape[1]):
            s = q[b, g].double() @ k[b].double().T * scale
            out[b, g] = torch.softmax(s, -1) @ v[b].double()
    return out


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2), (torch.float16, 2e-3)])
@pytest.mark.parametrize("shape", [(2, 3, 4, 9, 128), (1, 1, 1, 1, 64), (3, 2, 1, 300, 128)])
def test_reference_matches_fp64(shape, dtype, tol):
    bs, G, Lq, Lkv, D = shape
    q, k, v = _inputs(bs, G, Lq, Lkv, D, dtype)
    out = fla_npu.prefix_shared_attention(q, k, v)
    assert out.dtype == dtype and out.shape == q.shape
    torch.testing.assert_close(out.double(), _fp64(q, k, v, D ** -0.5), atol=tol, rtol=tol)
    out2 = fla_npu.prefix_shared_attention(q, k, v, scale=0.3)
    torch.testing.assert_close(out2.double(), _fp64(q, k, v, 0.3), atol=tol, rtol=tol)


def test_shared_prefix_and_default_scale():
    q, k, v = _inputs(1, 2, 3, 7, 64)
    q[0, 1] = q[0, 0]
    out = fla_npu.prefix_shared_attention(q, k, v)
    torch.testing.assert_close(out[0, 0], out[0, 1], atol=1e-6, rtol=1e-6)  # the reference is not bitwise batch-invariant
    assert torch.equal(out, fla_npu.prefix_shared_attention(q, k, v, scale=64 ** -0.5))
    assert torch.equal(out, naive_prefix_shared_attention(q, k, v))


def test_empty_batch():
    q, k, v = _inputs(0, 2, 3, 7, 128, torch.bfloat16)
    out = fla_npu.prefix_shared_attention(q, k, v)
    assert out.shape == q.shape and out.dtype == torch.bfloat16


@pytest.mark.parametrize("make,err,match", [
    (lambda q, k, v: (q[0], k, v), ValueError, "q must be 4-D"),
    (lambda q, k, v: (q, k[None], v), ValueError, "k, v 3-D"),
    (lambda q, k, v: (q, k[:1], v[:1]), ValueError, "batch size mismatch"),
    (lambda q, k, v: (q, k, v[:, :5]), ValueError, "k/v length mismatch"),
    (lambda q, k, v: (q, k[..., :64], v), ValueError, "head dim mismatch"),
    (lambda q, k, v: (q[..., :96], k[..., :96], v[..., :96]), ValueError, "head dim D must be 128 or 64"),
    (lambda q, k, v: (q.double(), k.double(), v.double()), ValueError, "bfloat16 or float16"),
    (lambda q, k, v: (q.bfloat16(), k.bfloat16(), v.half()), ValueError, "share one dtype"),
    (lambda q, k, v: (q.int(), k.int(), v.int()), ValueError, "share one dtype"),
    (lambda q, k, v: (q[:, :, :0], k, v), ValueError, "must be positive"),
    (lambda q, k, v: (q, k[:, :0], v[:, :0]), ValueError, "must be positive"),
    (lambda q, k, v: (q[:, :0], k, v), ValueError, "must be positive"),
    (lambda q, k, v: (q, k.to("meta"), v), ValueError, "one device"),
    (lambda q, k, v: (q.to("meta"), k.to("meta"), v.to("meta")), ValueError, "NPU tensors"),
    (lambda q, k, v: (q.numpy(), k, v), TypeError, "torch.Tensor"),
])
def test_validation_errors(make, err, match):
    q, k, v = _inputs()
    with pytest.raises(err, match=match):
        fla_npu.prefix_shared_attention(*make(q, k, v))


@pytest.mark.parametrize("scale,err", [("0.1", TypeError), (float("nan"), ValueError), (float("inf"), ValueError),
                                       (torch.tensor(0.1), TypeError)])
def test_bad_scale(scale, err):
    q, k, v = _inputs()
    with pytest.raises(err, match="scale"):
        fla_npu.prefix_shared_attention(q, k, v, scale=scale)


def test_validation_precedes_computation(monkeypatch):
    """A rejected call computes nothing (the reference is never reached)."""
    import fla_npu.ops.prefix_shared_attention.attention as A

    def boom(*a, **kw):
        raise AssertionError("computed")
    monkeypatch.setattr(A, "naive_prefix_shared_attention", boom)
    q, k, v = _inputs()
    with pytest.raises(ValueError):
        fla_npu.prefix_shared_attention(q, k, v[:, :3])
