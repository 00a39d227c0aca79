"""Stages 4 and 5 in one launch (csrc/chunk_state/chunk_state_output*): the inter-chunk state kernel
forming each chunk's output where it holds the chunk-start state, run on the host simulation of
Ascend C through the installed library and fla_npu.runtime.

Inputs as the pipeline makes them (sim_helpers.state_stage: w, u, kg from the reference stages 2-3 in
float64, tails, varlen with empty and one-token sequences), q token-major with its own heads (GVA),
G the chunk-local gate cumsum and Aqk = decay.tril(q, k). Checked: o and final bit-identical to the
unfused pair (chunk_state with h and v_new in the Cube dtype, then chunk_output: the same products,
in the same order); o within the Cube dtype's tolerance and final within float32's of the reference
stages in float64; bit-identical for 1, 3 and 16 AI cores; the GM bytes and Cube multiply-adds from
the counters, against the pair's. Outputs NaN-poisoned before the launch (tests/conftest.py);
hazard checker clean (a hazard fails the launch).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import fla_npu
from fla_npu.ops.common import chunk_fwd as fwd
from fla_npu.ops.common.chunk_tensors import expand_heads
from fla_npu.runtime import kernels
from fla_npu.runtime._native import KernelError
from fla_npu.testing import check_close

import sim_helpers

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


def _inputs(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype, seed=0):
    """The fused kernel's inputs in the dtypes it reads: w, kg, q (token-major [NC, BT, HV / groups,
    K]), Aqk in ``dtype``; u, e_last, G (sim_helpers.kernel_gate: KDA token-major), h0 float32; plus the plan."""
    st = sim_helpers.state_stage(B, T, HV, K, V, BT, per_key, cu, h0, v_first, seed)
    q = st.plan.to_chunks(torch.randn(B, T, HV // groups, K, generator=st.gen, dtype=torch.float64) * 0.5)
    Aqk = st.decay.tril(expand_heads(q, groups), st.k, diagonal=True)
    f = lambda t: t.to(FP32)  # noqa: E731
    return SimpleNamespace(w=st.w.to(dtype), u=f(st.u), kg=st.kg.to(dtype), e_last=f(st.e_last), offsets=st.offsets,
                           h0=st.h0, q=q.transpose(1, 2).contiguous().to(dtype),
                           G=sim_helpers.kernel_gate(f(st.decay.G).contiguous()),
                           Aqk=Aqk.to(dtype), plan=st.plan, v_first=v_first, groups=groups)


def _fused(x):
    o, final = kernels.chunk_state_output(x.w, x.u, x.kg, x.e_last, x.offsets, x.q, x.G, x.Aqk, x.h0, x.v_first)
    launch = kernels.chunk_state_output.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    return o, final


def _pair(x):
    """The unfused route: chunk_state writing h and v_new in the Cube dtype, then chunk_output (q
    expanded to the value heads' token-major layout by the output kernel's own GVA)."""
    T = x.w.dtype
    h, v_new, final = kernels.chunk_state(x.w, x.u, x.kg, x.e_last, x.offsets, x.h0, x.v_first, T, T, T)
    o = kernels.chunk_output(x.q, x.G, h, x.Aqk, v_new, out_dtype=T)
    return o, final


CASES = [  # (B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype)
    pytest.param(2, 100, 2, 64, 64, 64, True, None, False, False, 1, BF16, id="kda-bt64-tail"),
    pytest.param(1, 150, 2, 128, 128, 64, True, None, True, False, 2, FP16, id="kda-bt64-k128-h0-gva-fp16"),
    pytest.param(1, 200, 4, 128, 128, 64, False, (0, 1, 1, 70, 129, 200), True, False, 2, BF16,
                 id="gdn-bt64-varlen-empty-one-h0-gva"),
    pytest.param(1, 90, 2, 80, 64, 32, True, (0, 37, 37, 90), True, True, 1, BF16, id="kda-bt32-k80-varlen-vfirst"),
    pytest.param(2, 45, 1, 64, 80, 16, False, None, True, True, 1, FP16, id="gdn-bt16-v80-vfirst"),
    pytest.param(1, 70, 1, 256, 128, 64, True, None, True, False, 1, BF16, id="kda-bt64-k256"),
    pytest.param(1, 40, 1, 16, 256, 16, True, (0, 3, 40), False, False, 1, FP16, id="kda-bt16-k16-v256"),
    pytest.param(1, 50, 2, 32, 16, 32, True, None, True, True, 2, BF16, id="kda-bt32-v16-one-lane-gva"),
]
ARGS = "B,T,HV,K,V,BT,per_key,cu,h0,v_first,groups,dtype"


@pytest.mark.parametrize(ARGS, CASES)
def test_equals_unfused_pair(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype):
    x = _inputs(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype)
    o, final = _fused(x)
    t = kernels.chunk_state_output.last_tiling()
    assert (t["fused_output"], t["groups"], t["N"], t["NC"], t["HV"]) == (1, groups, x.plan.num_seqs, x.plan.num_chunks, HV)
    assert o.shape == (x.plan.num_chunks, BT, HV, V) and o.dtype == dtype and final.dtype == FP32
    o2, final2 = _pair(x)
    assert torch.equal(o, o2) and torch.equal(final, final2)


@pytest.mark.parametrize(ARGS, CASES[1:4])
def test_matches_reference_stages(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype):
    """Against stages 4 and 5 of the reference in float64 on the kernel's inputs: o rounded once to
    the Cube dtype (its operands qe, S and v_new are), final float32-like (the hi + lo halves)."""
    x = _inputs(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype)
    o, final = _fused(x)
    d = lambda t: t.double()  # noqa: E731
    s0 = None if x.h0 is None else d(x.h0.transpose(-1, -2) if v_first else x.h0)
    h, v_new, ref_final = fwd.state_fwd(d(x.kg), d(x.w), d(x.u), SimpleNamespace(e_last=d(x.e_last)), s0, x.plan)
    q = expand_heads(d(x.q).transpose(1, 2), groups)
    ref_o = fwd.output_fwd(q, SimpleNamespace(e_row=torch.exp2(d(sim_helpers.reference_gate(x.G)))), h, d(x.Aqk), v_new)
    check_close("o", o.transpose(1, 2), ref_o, dtype)
    check_close("final", final, ref_final.transpose(-1, -2) if v_first else ref_final, FP32)


def test_core_count_invariance(monkeypatch):
    """1, 3 and 16 AI cores: bit-identical o and final (the V split changes; every column of o is
    formed alike in every block)."""
    x = _inputs(1, 300, 1, 64, 128, 32, True, (0, 40, 41, 300), True, False, 1, BF16, seed=3)
    outs, blocks = [], []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))
        outs.append(_fused(x))
        blocks.append(kernels.chunk_state_output.last_tiling()["num_vb"])
    assert blocks[0] == 1 and blocks[-1] > 1
    for o, final in outs[1:]:
        assert torch.equal(o, outs[0][0]) and torch.equal(final, outs[0][1])


def test_counters_against_the_pair(capsys, monkeypatch):
    """GM bytes (exact) and Cube multiply-adds for NC = 16, HV = 4, BT = 64, K = V = 128 (KDA, one V
    block per head on 4 cores): the fused launch reads w, kg, u, e_last, q, G and Aqk once and writes
    o and final once, plus its workspace round trips (the state kernel's hand-off and qe); the pair
    also writes and reads h and v_new in bf16, with the same Cube work."""
    NC, HV, BT, K, V = 16, 4, 64, 128, 128
    x = _inputs(1, NC * BT, HV, K, V, BT, True, None, False, False, 1, BF16, seed=5)
    monkeypatch.setenv("FLA_NPU_SIM_CORES", "8")
    _fused(x)
    assert kernels.chunk_state_output.last_tiling()["num_vb"] == 1
    fused = kernels.chunk_state_output.last_launch().totals
    with fla_npu.profile() as prof:
        _pair(x)
    assert [launch["kernel"] for launch in prof.launches] == ["flaNpuChunkState", "flaNpuChunkOutput"]
    chunks = NC * HV
    reads = chunks * (2 * BT * K * 2 + BT * V * 4 + K * 4 + BT * K * 2 + BT * K * 4 + BT * BT * 2)
    writes = chunks * BT * V * 2 + HV * K * V * 4
    workspace = chunks * (2 * (K + BT) * V * 2 + (K + BT) * V * 4 + BT * K * 2)
    assert (fused.ws_to_local_bytes, fused.local_to_ws_bytes) == (workspace, workspace)
    moved = fused.gm_to_local_bytes + fused.local_to_gm_bytes
    assert moved == reads + writes + 2 * workspace, (moved, reads + writes + 2 * workspace)
    # the Cube: w S and kg^T v_new on hi and lo halves, then qe S_hi and Aqk v_hi: the pair's products
    assert fused.cube_macs == chunks * (4 * BT * K * V + BT * K * V + BT * BT * V)
    assert fused.cube_macs == sum(launch["cube_macs"] for launch in prof.launches)
    pair_moved = sum(launch["gm_read_bytes"] + launch["gm_write_bytes"] for launch in prof.launches)
    assert pair_moved - moved == chunks * 2 * (K * V * 2 + BT * V * 2)  # h and v_new written and read back
    share = fused.cube_macs / (fused.cube_macs + fused.vector_elem_ops)
    with capsys.disabled():
        print(f"\nchunk_state_output NC=16 HV=4 BT=64 K=V=128: GM bytes {moved} (the pair {pair_moved}: "
              f"{pair_moved / moved:.3f}x); workspace each way {workspace}; Cube share {share:.3f}")
    assert share > 0.9


def test_refusals():
    x = _inputs(1, 64, 2, 64, 64, 64, True, None, False, False, 1, BF16)
    with pytest.raises(ValueError, match="float16 or torch.bfloat16"):
        kernels.chunk_state_output(x.w.float(), x.u, x.kg, x.e_last, x.offsets, x.q, x.G, x.Aqk)
    q3 = torch.zeros(x.q.shape[0], 64, 3, 64, dtype=BF16)
    with pytest.raises(KernelError, match="`q` must be"):
        kernels.chunk_state_output(x.w, x.u, x.kg, x.e_last, x.offsets, q3, x.G, x.Aqk)
    with pytest.raises(KernelError, match="`aqk` must be"):
        kernels.chunk_state_output(x.w, x.u, x.kg, x.e_last, x.offsets, x.q, x.G, x.Aqk[..., :32])


# ---- the public chunk ops with FLA_NPU_CPU_IMPL=sim: stages 4 and 5 on this kernel ----------------

@pytest.fixture
def launches(monkeypatch):
    """Route the chunk ops to the simulated kernels and record the fused kernel's launches."""
    return sim_helpers.record_launches(monkeypatch, kernels, "chunk_state_output", before=lambda args, kwargs: args[0].dtype)


@pytest.mark.parametrize("op,sw,chunk_size,cu,dtype,K,V", sim_helpers.STAGE_OP_CASES)
def test_chunk_op_with_simulated_state_and_output_matches_gold(launches, op, sw, chunk_size, cu, dtype, K, V):
    sim_helpers.check_stage_op_case(op, sw, chunk_size, cu, dtype, K, V)
    # In the forward only (the backward recomputes what it needs with the reference, never o).
    assert launches == [dtype]


def test_chunk_op_float32_keeps_reference_output(launches, caplog, monkeypatch):
    """The kernels take no fp32 Cube inputs: stages 4 and 5 stay on the reference, logged once as a warning."""
    sim_helpers.check_float32_keeps_reference(launches, caplog, monkeypatch, "stage 5: output")


def test_verify_sim_row_runs_the_fused_kernel(launches):
    """`fla-npu verify`'s sim implementation covers stages 4 and 5: its first bf16 KDA and GDN rows pass."""
    sim_helpers.verify_sim_first_rows()
    assert len(launches) >= 2 and set(launches) == {BF16}
