"""The chunked forward's kernel chain (fla_npu/runtime/chunk_pipeline.py) and what surrounds it: the
router (routing.chunk_route), the launches fla_npu.profile() records, the kernels as torch custom ops
(fake implementations checked by torch.library.opcheck, traced by torch.compile)."""

from __future__ import annotations

import pytest
import torch

import fla_npu
from fla_npu.ops.common.chunk_plan import ChunkPlan
from fla_npu.runtime import chunk_pipeline, routing
from fla_npu.runtime.routing import KernelRouteError, chunk_route

from sim_helpers import Switches, check_chunk_op

CHAIN = ("flaNpuGateChunkCumsum", "flaNpuChunkIntra", "flaNpuWyFast", "flaNpuChunkState", "flaNpuChunkOutput")


def _expected_chain(op: str, dtype: torch.dtype, BT: int, K: int, V: int) -> list:
    """The entry points the chain launches for these facts, in order (stages the build has no kernel for
    skipped; with every stage on a kernel, stages 2 to 5 in one launch, KDA's with stage 1 too (K up to
    128))."""
    skip = chunk_pipeline.stage_reasons(dtype, BT, K, V)
    names = {"stage 2: intra-chunk": CHAIN[1:2], "stage 3: WY factors": CHAIN[2:3],
             "stage 4: state recurrence": CHAIN[3:4], "stage 5: output": CHAIN[4:]}
    out = [CHAIN[0]]
    for stage, entries in names.items():
        if stage not in skip:
            out.extend(entries)
    if not chunk_pipeline.FUSED_STAGES & skip.keys():  # stages 3-5 in one launch
        out[-3:] = ["flaNpuChunkStateOutput"]
        if chunk_pipeline.runs_one_launch(skip, False, op == "kda", K):
            out[-2:] = ["flaNpuChunkForward"]
        if op == "kda" and chunk_pipeline.gate_in_launch(skip, False, True, dtype, BT, K):
            out[:] = ["flaNpuChunkGateForward"]
    return out


@pytest.mark.parametrize("op", ["kda", "gdn"])
def test_profile_records_every_launch_of_the_chain(monkeypatch, op):
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    fn = fla_npu.chunk_kda if op == "kda" else fla_npu.chunk_gated_delta_rule
    with fla_npu.profile() as prof:
        check_chunk_op(fn, op, 1, 70, 2, 2, 32, 32, Switches(chunk_size=32), torch.bfloat16, seed=3)
    assert prof.kernels() == _expected_chain(op, torch.bfloat16, 32, 32, 32)
    for launch in prof.launches:
        assert launch["block_dim"] > 0 and launch["device"] == "cpu" and launch["sim_kernel"]
        assert launch["gm_read_bytes"] > 0 and launch["gm_write_bytes"] > 0
        # the workspace's bytes are part of the GM bytes; the mixed kernels hand off through it, the
        # gate (vector only) has none
        assert 0 <= launch["ws_read_bytes"] < launch["gm_read_bytes"] and 0 <= launch["ws_write_bytes"] < launch["gm_write_bytes"]
        assert (launch["ws_read_bytes"] > 0) == (launch["kernel"] != "flaNpuGateChunkCumsum")
    assert prof.kernels()[0] == ("flaNpuChunkGateForward" if op == "kda" else "flaNpuGateChunkCumsum")
    assert prof.total("gm_read_bytes") == sum(x["gm_read_bytes"] for x in prof.launches)
    cube = [x["cube_macs"] for x in prof.launches
            if x["kernel"] in ("flaNpuChunkIntra", "flaNpuChunkStateOutput", "flaNpuChunkForward", "flaNpuChunkGateForward")]
    assert cube and all(c > 0 for c in cube)


def test_profile_scopes(monkeypatch):
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    g, A_log = torch.randn(1, 40, 2), torch.randn(2)

    def gate(x):
        return fla_npu.gdn_gate_chunk_cumsum(x, A_log, chunk_size=32)

    with fla_npu.profile() as outer:
        gate(g)
        with fla_npu.profile() as inner:
            gate(g)
    gate(g)   # outside every block: recorded nowhere
    assert outer.kernels() == ["flaNpuGateChunkCumsum"] * 2 and inner.kernels() == ["flaNpuGateChunkCumsum"]
    with fla_npu.profile() as empty:
        gate(g[:, :0])   # no token: nothing launched
    assert empty.launches == []


def test_profile_total_refuses_launches_without_counters():
    from fla_npu.runtime import profile as P

    with fla_npu.profile() as prof:
        P.record("flaNpuWyFast", 4, "npu:0", None)
    assert prof.launches[0]["cube_macs"] is None
    with pytest.raises(ValueError, match="host simulation only"):
        prof.total("cube_macs")


def test_router_on_device_tensors_never_falls_back_to_the_reference():
    q = torch.empty(1, 64, 2, 32, dtype=torch.float32, device="meta")
    with pytest.raises(KernelRouteError, match="float16 / bfloat16"):
        chunk_route("chunk_kda", q, q, q, 64)
    q16 = q.to(torch.bfloat16)
    with pytest.raises(KernelRouteError, match="chunk_size 48"):
        chunk_route("chunk_kda", q16, q16, q16, 48)


def test_router_on_cpu(monkeypatch):
    q = torch.zeros(1, 64, 2, 32, dtype=torch.bfloat16)
    monkeypatch.delenv("FLA_NPU_CPU_IMPL", raising=False)
    assert chunk_route("chunk_kda", q, q, q, 64) is None
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    monkeypatch.setattr(routing, "_logged", set())
    assert chunk_route("chunk_kda", q, q, q, 64) == chunk_pipeline.stage_reasons(torch.bfloat16, 64, 32, 32)
    assert chunk_route("chunk_kda", q.float(), q.float(), q.float(), 64) is None   # no stage takes float32


def _wy_inputs(dtype=torch.bfloat16):
    torch.manual_seed(0)
    NC, HV, BT, K, V = 2, 2, 32, 32, 48
    k, v = torch.randn(NC, BT, HV, K).to(dtype), torch.randn(NC, BT, HV, V).to(dtype)   # token-major
    beta = torch.rand(NC, HV, BT) + 0.1
    Akk = (torch.randn(NC, HV, BT, BT) * 0.1).tril(-1) + torch.eye(BT)
    G = -torch.rand(NC, BT, HV, K).cumsum(1)   # the gate cumsum (natural log), KDA token-major
    return k, v, beta, Akk.to(dtype), G


def test_custom_ops_pass_opcheck():
    from fla_npu.runtime import torch_ops  # noqa: F401

    for out_dtype in (torch.float32, torch.bfloat16):  # w and kg: float32 or the Cube type
        torch.library.opcheck(torch.ops.fla_npu.wy_fast.default, (*_wy_inputs(), out_dtype))
    NC, HV, BT, K, V = 2, 2, 32, 32, 48
    torch.manual_seed(1)
    q = torch.randn(NC, BT, HV, K).to(torch.bfloat16)   # token-major
    args = (q, -torch.rand(NC, BT, HV, K), torch.randn(NC, HV, K, V).to(torch.bfloat16),
            torch.randn(NC, HV, BT, BT).tril().to(torch.bfloat16), torch.randn(NC, HV, BT, V).to(torch.bfloat16))
    for out_dtype in (torch.float32, torch.bfloat16):  # o: float32 or the Cube type
        torch.library.opcheck(torch.ops.fla_npu.chunk_output.default, (*args, out_dtype))
    g = torch.randn(1, 40, 2, 16)
    torch.library.opcheck(torch.ops.fla_npu.gate_chunk_cumsum.default, (g, 32, "none", None, None, None, 1.0, None, None))
    plan = ChunkPlan.build_on_device(40, 32, torch.tensor([0, 15, 40]))   # varlen: offsets and rows as tensors
    torch.library.opcheck(torch.ops.fla_npu.gate_chunk_cumsum.default,
                          (g[:1], 32, "none", None, None, None, 1.0, plan.cu_seqlens, plan.chunk_list))


def test_every_kernel_custom_op_passes_opcheck():
    """The other kernels' custom ops: their fakes come from the descriptors' shape rules and dtypes
    (an output dtype the caller picks; the final state's layout swapped by ``state_v_first``)."""
    from fla_npu.runtime import torch_ops  # noqa: F401

    ops = torch.ops.fla_npu
    NC, HV, BT, K, V = 2, 2, 32, 32, 48
    torch.manual_seed(2)
    q = torch.randn(NC, BT, HV, K).to(torch.bfloat16)   # token-major
    G = torch.cumsum(-torch.rand(NC, BT, HV, K) * 0.1, dim=1)   # KDA token-major
    for l2norm, scale in ((False, 1.0), (True, 0.125)):   # q's and k's l2 norms and scale
        torch.library.opcheck(ops.chunk_intra.default, (q, q.clone(), torch.rand(NC, HV, BT), G, l2norm, scale,
                                                        torch.bfloat16, torch.bfloat16, l2norm))   # akk_beta too
    raw, lengths = torch.randn(NC, BT, HV, K).to(torch.bfloat16), torch.tensor([BT, 5], dtype=torch.int32)
    for activation, A_log, lower_bound in (("sigmoid", torch.rand(HV), -5.0), ("none", None, None)):  # the raw gate
        torch.library.opcheck(ops.chunk_gate_intra.default, (q, q.clone(), torch.rand(NC, HV, BT), raw, lengths, activation,
                                                             A_log, torch.randn(HV * K), lower_bound, True, 0.125, True))
    s = torch.rand(NC, HV, BT) + 0.5   # the row factors of q and k
    torch.library.opcheck(ops.solve_tril.default, (torch.randn(NC, HV, BT, BT).tril(-1) * 0.1, torch.float16))
    w, u, e_last = (torch.randn(NC, HV, BT, K) * 0.1).to(torch.bfloat16), torch.randn(NC, HV, BT, V), torch.rand(NC, HV, K)
    offsets, h0 = torch.tensor([0, 1, 2], dtype=torch.int32), torch.randn(2, HV, V, K)
    args = (w, u, w.clone(), e_last + 0.5, offsets, h0, True, torch.float32, torch.bfloat16, torch.bfloat16)
    torch.library.opcheck(ops.chunk_state.default, args)
    assert ops.chunk_state(*args)[2].shape == (2, HV, V, K)  # state_v_first: [N, HV, V, K]
    aqk = torch.randn(NC, HV, BT, BT).tril().to(torch.bfloat16)
    k, v, beta, akk, _ = _wy_inputs()
    args = (q, k, v, G, akk * beta.unsqueeze(-2).to(akk.dtype), aqk, e_last + 0.5, offsets, h0, True, None, None)
    torch.library.opcheck(ops.chunk_state_output.default, args)
    torch.library.opcheck(ops.chunk_state_output.default, (*args[:-2], s, s.clone()))   # q's and k's row factors
    o, final = ops.chunk_state_output(*args)
    assert o.shape == (NC, BT, HV, V) and final.shape == (2, HV, V, K)  # o token-major; state_v_first
    vt = torch.randn(NC, BT, HV, V).to(torch.bfloat16)   # the whole KDA forward from the raw gate
    args = (q, q.clone(), vt, raw, torch.rand(NC, HV, BT), lengths, offsets, "sigmoid", torch.rand(HV), torch.randn(HV * K),
            -5.0, h0, True, 0.125, True)
    torch.library.opcheck(ops.chunk_gate_forward.default, args)
    o, final = ops.chunk_gate_forward(*args)
    assert o.shape == (NC, BT, HV, V) and final.shape == (2, HV, V, K)
    q, kv = torch.randn(1, 2, 3, 64).to(torch.bfloat16), torch.randn(1, 5, 64).to(torch.bfloat16)
    torch.library.opcheck(ops.prefix_shared_attention.default, (q, kv, kv.clone(), 0.125))


def test_custom_op_traced_by_torch_compile():
    from fla_npu.runtime import torch_ops  # noqa: F401

    def f(k, v, beta, Akk, G):
        w, u, kg = torch.ops.fla_npu.wy_fast(k, v, beta, Akk, G, torch.float32)
        return w + 1, u * 2, kg

    args = _wy_inputs()
    eager = f(*args)
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)(*args)
    for a, b in zip(eager, compiled):
        assert torch.equal(a, b)
