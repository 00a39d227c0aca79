"""Varlen chunk tables built on the device (``ChunkPlan.build_on_device``), what a call with
``cu_seqlens`` on an NPU and no ``cu_seqlens_cpu`` uses: nothing of ``cu_seqlens`` is read on the host
(shown on meta tensors, which have no values), the tables agree with the host-built plan on every
real chunk, the chunks past them are empty, and ``chunk_kda`` / ``chunk_gated_delta_rule`` on the
kernels give the same results from either plan (forced on CPU tensors under the simulation)."""

from __future__ import annotations

import itertools

import pytest
import torch

import fla_npu
from fla_npu.ops.common import validate
from fla_npu.ops.common.chunk_plan import ChunkPlan

LENGTHS = [  # lengths of the packed sequences, chunk size
    pytest.param((1, 63, 64, 65, 200), 64, id="one-tails-exact"),
    pytest.param((0, 5, 0, 130), 32, id="empty-first-and-middle"),
    pytest.param((7,), 16, id="one-short-sequence"),
    pytest.param((64, 64), 64, id="exact-multiples"),
    pytest.param((300, 1, 0), 64, id="empty-last"),
]


def _cu(lengths) -> torch.Tensor:
    return torch.tensor([0, *itertools.accumulate(lengths)])


@pytest.mark.parametrize("lengths,BT", LENGTHS)
def test_tables_agree_with_the_host_plan_on_the_real_chunks(lengths, BT):
    cu = _cu(lengths)
    T = int(cu[-1])
    host, dev = ChunkPlan.build(1, T, BT, cu, "cpu"), ChunkPlan.build_on_device(T, BT, cu)
    NC, N = host.num_chunks, len(lengths)
    assert dev.on_device and not host.on_device and dev.num_seqs == N
    assert NC <= dev.num_chunks == min(T, (T + N * (BT - 1)) // BT)
    assert torch.equal(dev.slot_token[:NC * BT], host.slot_token)
    assert (dev.slot_token[NC * BT:] == T).all()              # the extra chunks hold padding rows only
    assert torch.equal(dev.token_slot, host.token_slot)
    assert torch.equal(dev.chunk_list[:NC], host.chunk_list)
    extra = dev.chunk_list[NC:]                               # ... rows of the last sequence past its end
    assert (extra[:, 0] == N - 1).all() and (_cu(lengths)[-2] + extra[:, 1] * BT >= T).all()
    assert torch.equal(dev.offsets[:-1], host.offsets[:-1]) and int(dev.offsets[-1]) == dev.num_chunks
    assert dev.offsets.dtype == dev.chunk_list.dtype == dev.cu_seqlens.dtype == torch.int32
    assert dev.host_plan.num_chunks == NC and torch.equal(dev.host_plan.slot_token, host.slot_token)


def test_nothing_is_read_on_the_host():
    """Meta tensors have no values: reading one (``tolist``, ``item``, ``bool``) raises, so building the
    tables and checking the offsets on them proves no device-to-host copy."""
    cu = torch.tensor([0, 5, 70, 200], dtype=torch.int32, device="meta")
    assert validate.check_cu_seqlens("op", cu, 200, cu.device, host_copy=False) is None
    plan = ChunkPlan.of_call(1, 200, 64, cu, None, cu.device)
    assert plan.on_device and plan.num_chunks == 6 and plan.slot_token.shape == (6 * 64,)
    assert plan.token_slot.shape == (200,) and plan.offsets.shape == (4,) and plan.chunk_list.shape == (6, 2)
    with pytest.raises(ValueError, match="at least 2 entries"):
        validate.check_cu_seqlens("op", cu[:1], 200, cu.device, host_copy=False)
    with pytest.raises((RuntimeError, NotImplementedError)):   # the host copy does read
        validate.check_cu_seqlens("op", cu, 200, cu.device)


def test_offsets_out_of_order_or_range_stay_in_bounds():
    """Offsets are not checked without a host read: out of order or range, they are clamped, so every
    index the tables hold stays in range (no kernel reads out of bounds)."""
    T, BT = 100, 32
    plan = ChunkPlan.build_on_device(T, BT, torch.tensor([3, 60, 20, 500]))
    assert plan.cu_seqlens.tolist() == [0, 60, 60, 100]
    assert ((plan.slot_token >= 0) & (plan.slot_token <= T)).all()
    assert ((plan.token_slot >= 0) & (plan.token_slot < plan.num_chunks * BT)).all()
    assert (plan.offsets[1:] >= plan.offsets[:-1]).all() and int(plan.offsets[-1]) == plan.num_chunks


def _inputs(op: str, T: int, H: int, HV: int, K: int, V: int, dtype, N: int, seed: int):
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen)

    q, k, v = rnd(1, T, H, K).to(dtype), rnd(1, T, H, K).to(dtype), rnd(1, T, HV, V).to(dtype)
    beta = torch.rand(1, T, HV, generator=gen).to(dtype)
    g = (-torch.rand(1, T, HV, K, generator=gen) if op == "kda" else -torch.rand(1, T, HV, generator=gen)).to(dtype)
    h0 = rnd(N, HV, K, V)
    return [x.requires_grad_() for x in (q, k, v, g, beta, h0)]


CALLS = [  # op, lengths, chunk size, dtype, H, HV, K, V
    pytest.param("kda", (1, 63, 0, 130), 64, torch.bfloat16, 1, 2, 32, 32, id="kda-bf16-bt64-gva"),
    pytest.param("gdn", (5, 0, 70, 1), 32, torch.float16, 2, 2, 32, 48, id="gdn-fp16-bt32-empty-last-but-one"),
]


@pytest.mark.parametrize("op,lengths,BT,dtype,H,HV,K,V", CALLS)
def test_chunk_ops_give_the_same_results_from_device_tables(monkeypatch, op, lengths, BT, dtype, H, HV, K, V):
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    fn = fla_npu.chunk_kda if op == "kda" else fla_npu.chunk_gated_delta_rule
    cu = _cu(lengths)
    T = int(cu[-1])

    def run(on_device: bool):
        inputs = _inputs(op, T, H, HV, K, V, dtype, len(lengths), seed=7)
        q, k, v, g, beta, h0 = inputs
        with fla_npu.profile() as prof:
            o, final = fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu, chunk_size=BT,
                          use_qk_l2norm_in_kernel=True)
        (o.float().square().sum() + final.square().sum()).backward()
        grads = {f"d{name}": x.grad for name, x in zip(("q", "k", "v", "g", "beta", "h0"), inputs)}
        if op != "kda":   # GDN returns no chunk-start states
            return prof, {"o": o, "final": final, **grads}
        with torch.inference_mode():   # the chunk-start states: FLA allows them in inference only
            h = fn(q, k, v, g, beta, initial_state=h0, cu_seqlens=cu, chunk_size=BT, use_qk_l2norm_in_kernel=True,
                   return_intermediate_states=True)[2]
        return prof, {"o": o, "final": final, "h": h, **grads}

    host_prof, host = run(False)
    check = validate.check_cu_seqlens

    def as_on_a_device(fn_name, cu_seqlens, T, device, cu_seqlens_cpu=None, host_copy=True):
        """What the check returns for NPU tensors without a CPU copy: nothing (tables on the device)."""
        got = check(fn_name, cu_seqlens, T, device, cu_seqlens_cpu, host_copy)
        return None if not host_copy and cu_seqlens_cpu is None else got

    monkeypatch.setattr(validate, "check_cu_seqlens", as_on_a_device)
    built = []
    monkeypatch.setattr(ChunkPlan, "build_on_device", staticmethod(
        lambda *a, _build=ChunkPlan.build_on_device: built.append(_build(*a)) or built[-1]))
    dev_prof, dev = run(True)
    assert len(built) == (2 if op == "kda" else 1)
    assert built[0].num_chunks > built[0].host_plan.num_chunks   # empty chunks were run
    # KDA one launch (stages 1-5), GDN two (the gate cumsum, stages 2-5)
    assert dev_prof.kernels() == host_prof.kernels() and len(dev_prof.kernels()) == (1 if op == "kda" else 2)
    assert host.keys() == dev.keys()
    for name in host:
        a, b = host[name], dev[name]
        assert torch.isfinite(a).all() and a.shape == b.shape and torch.equal(a, b), name


def test_chunk_indices_are_not_counted_against_device_tables(monkeypatch):
    """FLA's chunk list is checked against the chunk count only when that count is known on the host;
    with tables built on the device it is not read (and a wrong row count is no error there)."""
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    cu = _cu((5, 70, 1))
    q, k, v, g, beta, _ = _inputs("gdn", int(cu[-1]), 1, 1, 32, 32, torch.bfloat16, 3, seed=2)
    args = [x.detach() for x in (q, k, v, g, beta)]
    wrong = torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="`chunk_indices` has 1 rows, the sequences have 5 chunks"):
        fla_npu.chunk_gated_delta_rule(*args, cu_seqlens=cu, chunk_indices=wrong, chunk_size=32)
    monkeypatch.setattr(validate, "check_cu_seqlens", lambda *a, **kw: None)   # as for NPU tensors
    with torch.no_grad():
        o, _ = fla_npu.chunk_gated_delta_rule(*args, cu_seqlens=cu, chunk_indices=wrong, chunk_size=32)
    assert torch.isfinite(o).all()
