"""``fla_npu.perf.torch_traffic``: the bytes the PyTorch operations around the kernels move, counted
per ATen operation (inputs read whole, results written whole); views and allocations move nothing,
the fla_npu custom ops are the profile's."""

from __future__ import annotations

import torch

from fla_npu.perf.torch_traffic import torch_traffic


def test_counts_each_operation_once_and_views_not_at_all():
    a, b = torch.ones(100, dtype=torch.float32), torch.ones(100, dtype=torch.bfloat16)
    with torch_traffic() as t:
        c = a + a                        # reads 2 x 400, writes 400
        d = b.to(torch.float32)          # reads 200, writes 400
        v = c.view(10, 10).transpose(0, 1)   # views: nothing
        e = torch.empty(1000)            # an allocation: nothing
        v.contiguous()                   # a copy: reads 400, writes 400
        c.mul_(2.0)                      # in place: reads 400, writes 400
        c.fill_(1.0)                     # overwrites: writes 400
        torch.mul(a, 2.0, out=c)         # into out=: reads 400, writes 400
    assert t.read_bytes == 800 + 200 + 400 + 400 + 400 and t.write_bytes == 400 + 400 + 400 + 400 + 400 + 400
    assert dict(t.by_op()) == {"aten.add": 1200, "aten._to_copy": 600, "aten.clone": 800, "aten.mul_": 800,
                               "aten.fill_": 400, "aten.mul": 800}
    assert d.dtype == torch.float32 and e.numel() == 1000


def test_kernel_custom_ops_are_left_to_the_profile(monkeypatch):
    """A kernel's custom op is not counted; what its Python call runs around the kernel is."""
    from fla_npu.runtime import torch_ops  # noqa: F401  (registers torch.ops.fla_npu)

    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    g, A_log = torch.randn(1, 64, 2, 16), torch.randn(2, dtype=torch.float64)
    with torch_traffic() as t:
        torch.ops.fla_npu.gate_chunk_cumsum(g, 32, "softplus", A_log, None, None, 1.0, None, None)
    # the call casts A_log to float32 (16 + 8 bytes), the kernel does the rest (the tests' conftest
    # also fills the output with NaN before the launch: an in-place write)
    cast = t.ops.pop("aten.to", 0) + t.ops.pop("aten._to_copy", 0)   # the name depends on the dispatch level
    assert cast == 16 + 8 and set(t.ops) == {"aten.fill_"}
    assert t.ops["aten.fill_"] == g.numel() * 4 and (t.read_bytes, t.write_bytes) == (16, 8 + g.numel() * 4)
