"""Stages 3, 4 and 5 in one launch (csrc/chunk_state/chunk_state_output*): the inter-chunk state
kernel forming the WY factors of each chunk before its recurrence step and each chunk's output where
it holds the chunk-start state, run on the host simulation of Ascend C through the installed library
and fla_npu.runtime.

Inputs as the pipeline makes them (sim_helpers.state_stage: k, v, and Akk from the reference stage 2
in float64, beta powers of two, tails, varlen with empty and one-token sequences), q and k token-major
with their own heads (GVA), G the chunk-local gate cumsum, Aqk = decay.tril(q, k) and the fused
kernel's Akk diag(beta). Checked: o and final against the unfused chain (wy_fast with w and kg in the
Cube dtype, chunk_state with h and v_new in it, then chunk_output: the same products, beta's place
changing no rounding as a power of two; v_new = u - w S accumulated at once here): final within
float32's tolerance, o equal in all but a few elements a rounding apart; o within the Cube dtype's
tolerance and final within float32's of the reference stages 3-5 in float64 on the kernel's inputs;
bit-identical for 1, 3 and 16 AI cores; the GM bytes and Cube multiply-adds from the counters,
against the chain's. Outputs NaN-poisoned before the launch (tests/conftest.py); hazard checker clean
(a hazard fails the launch).
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
    """The fused kernel's inputs in the dtypes it reads: q, k (token-major [NC, BT, HV / groups, K]), v
    (token-major [NC, BT, HV, V]), Akkb = (I + L)^-1 diag(beta) and Aqk in ``dtype``; e_last, G
    (sim_helpers.kernel_gate: KDA token-major), h0 float32; plus the plan, and for the chain beta
    (float32; powers of two on the tokens, zeros on padding) and Akk = (I + L)^-1 in ``dtype``."""
    st = sim_helpers.state_stage(B, T, HV, K, V, BT, per_key, cu, h0, v_first, seed, groups)
    beta = torch.where(st.beta != 0, 2.0 ** -torch.randint(0, 4, st.beta.shape, generator=st.gen).double(), 0.0)
    _, Akk = fwd.chunk_intra_fwd(st.k, st.k, beta, st.decay)
    q = st.plan.to_chunks(torch.randn(B, T, HV // groups, K, generator=st.gen, dtype=torch.float64) * 0.5)
    Aqk = st.decay.tril(expand_heads(q, groups), st.k, diagonal=True)
    f = lambda t: t.to(FP32)  # noqa: E731
    tm = lambda t: t.transpose(1, 2).contiguous().to(dtype)  # noqa: E731  (token-major)
    return SimpleNamespace(q=tm(q), k=tm(st.k_heads), v=tm(st.v), beta=f(beta).contiguous(),
                           G=sim_helpers.kernel_gate(f(st.decay.G).contiguous()), Akk=Akk.to(dtype),
                           Akkb=(Akk * beta.unsqueeze(-2)).to(dtype), Aqk=Aqk.to(dtype), e_last=f(st.e_last),
                           offsets=st.offsets, h0=st.h0, plan=st.plan, v_first=v_first, groups=groups)


def _fused(x, q_scale=None, k_scale=None):
    o, final = kernels.chunk_state_output(x.q, x.k, x.v, x.G, x.Akkb, x.Aqk, x.e_last, x.offsets, x.h0, x.v_first,
                                          q_scale, k_scale)
    launch = kernels.chunk_state_output.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    return o, final


def _chain(x):
    """The unfused route: wy_fast writing w and kg in the Cube dtype, chunk_state writing h and v_new
    in it, then chunk_output (each kernel with its own GVA)."""
    T = x.k.dtype
    w, u, kg = kernels.wy_fast(x.k, x.v, x.beta, x.Akk, x.G, out_dtype=T)
    h, v_new, final = kernels.chunk_state(w, u, kg, x.e_last, x.offsets, x.h0, x.v_first, T, T, T)
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
def test_matches_unfused_chain(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype):
    x = _inputs(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype)
    o, final = _fused(x)
    t = kernels.chunk_state_output.last_tiling()
    assert (t["fused_output"], t["groups"], t["N"], t["NC"], t["HV"]) == (1, groups, x.plan.num_seqs, x.plan.num_chunks, HV)
    assert o.shape == (x.plan.num_chunks, BT, HV, V) and o.dtype == dtype and final.dtype == FP32
    o2, final2 = _chain(x)
    # The same products; only v_new = u - w S is one fp32 accumulation here (u and w S are rounded
    # apart to fp32 in the chain): final a float32 rounding apart, o equal but where that flips v_new's
    # rounding to the Cube dtype.
    check_close("final", final, final2, FP32)
    check_close("o", o, o2, dtype)
    assert (o != o2).float().mean() < 0.01


@pytest.mark.parametrize("scaled", [False, True], ids=["", "row-factors"])
@pytest.mark.parametrize(ARGS, CASES[1:4])
def test_matches_reference_stages(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype, scaled):
    """Against stages 3-5 in float64 on the kernel's inputs (Akk diag(beta) as given), with the Cube
    operands the kernel rounds once to the Cube dtype (X1 = k e_row, w, kg) rounded alike: o within the Cube
    dtype's tolerance (its operands qe, S and v_new are rounded once), final within float32's (S and
    v_new reach the Cube as hi + lo halves). ``scaled``: with q_scale / k_scale (factors of q's and
    k's rows, per q / k head), the reference on q * q_scale and k * k_scale."""
    x = _inputs(B, T, HV, K, V, BT, per_key, cu, h0, v_first, groups, dtype)
    d = lambda t: t.double()  # noqa: E731
    factors = (None, None)
    if scaled:  # rows of q and k three times larger, scaled back by factors in [0.2, 0.5)
        gen = torch.Generator().manual_seed(3)
        x.q, x.k = (t * 3 for t in (x.q, x.k))
        factors = tuple(0.2 + 0.3 * torch.rand(x.q.shape[0], x.q.shape[2], BT, generator=gen) for _ in range(2))
    o, final = _fused(x, *factors)
    assert kernels.chunk_state_output.last_tiling()["qk_scaled"] == int(scaled)
    if scaled:
        x.q, x.k = (d(t) * f.transpose(1, 2).unsqueeze(-1).double() for t, f in zip((x.q, x.k), factors))
    s0 = None if x.h0 is None else d(x.h0.transpose(-1, -2) if v_first else x.h0)
    G = d(sim_helpers.reference_gate(x.G))
    decay = SimpleNamespace(e_row=torch.exp2(G), e_tail=torch.exp2(G[:, :, -1:] - G), e_last=d(x.e_last))
    k, v, A = expand_heads(d(x.k).transpose(1, 2), groups), d(x.v).transpose(1, 2), d(x.Akkb)
    r = lambda t: t.to(dtype).double()  # noqa: E731  (rounded once to the Cube dtype)
    w, u, kg = r(A @ r(k * decay.e_row)), A @ v, r(k * decay.e_tail)
    h, v_new, ref_final = fwd.state_fwd(kg, w, u, decay, s0, x.plan)
    q = expand_heads(d(x.q).transpose(1, 2), groups)
    ref_o = fwd.output_fwd(q, decay, h, d(x.Aqk), v_new)
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


def test_counters_against_the_chain(capsys, monkeypatch):
    """GM bytes (exact) and Cube multiply-adds for NC = 16, HV = 4, BT = 64, K = V = 128 (KDA, one V
    block per head on 4 cores): the fused launch reads q, k, v, G, Akk, Aqk and e_last once (and G's
    last row once per vector core) and writes o and final once, plus its workspace round trips (S's
    halves and dS; qe, X1 and kg; -I once per core: the Cube forms v_new's halves itself, loads v as
    it is); the chain also reads beta, writes and reads w, kg, u, h and v_new, and reads G twice, with
    the same Cube work but the subtraction -I v_hi. With q's and k's row factors, those are read once
    more."""
    NC, HV, BT, K, V = 16, 4, 64, 128, 128
    x = _inputs(1, NC * BT, HV, K, V, BT, True, None, False, False, 1, BF16, seed=5)
    monkeypatch.setenv("FLA_NPU_SIM_CORES", "8")
    _fused(x)
    assert kernels.chunk_state_output.last_tiling()["num_vb"] == 1
    fused = kernels.chunk_state_output.last_launch().totals
    with fla_npu.profile() as prof:
        _chain(x)
    assert [launch["kernel"] for launch in prof.launches] == ["flaNpuWyFast", "flaNpuChunkState", "flaNpuChunkOutput"]
    chunks = NC * HV
    reads = chunks * (2 * BT * K * 2 + BT * V * 2 + BT * K * 4 + 2 * K * 4 + 2 * BT * BT * 2 + K * 4)
    writes = chunks * BT * V * 2 + HV * K * V * 4
    # per chunk S's halves to the Cube and dS back, qe, X1 and kg to the Cube; -I once per core
    workspace = chunks * (2 * K * V * 2 + K * V * 4 + 3 * BT * K * 2) + 4 * BT * BT * 2
    assert (fused.ws_to_local_bytes, fused.local_to_ws_bytes) == (workspace, workspace)
    moved = fused.gm_to_local_bytes + fused.local_to_gm_bytes
    assert moved == reads + writes + 2 * workspace, (moved, reads + writes + 2 * workspace)
    # the Cube: Akk X1 and Akk v, w S and kg^T v_new on hi and lo halves, then qe S_hi and Aqk v_hi:
    # the chain's products; and -I v_hi, the subtraction that forms v_lo
    chain_macs = sum(launch["cube_macs"] for launch in prof.launches)
    assert chain_macs == chunks * (BT * BT * (K + V) + 4 * BT * K * V + BT * K * V + BT * BT * V)
    assert fused.cube_macs == chain_macs + chunks * BT * BT * V
    chain_moved = sum(launch["gm_read_bytes"] + launch["gm_write_bytes"] for launch in prof.launches)
    chain_ws = sum(launch["ws_read_bytes"] + launch["ws_write_bytes"] for launch in prof.launches)
    # outside the workspaces: beta read, w, kg (bf16), u (fp32), h and v_new (bf16) written and read
    # back, G read again by the output kernel
    assert chain_moved - chain_ws - (reads + writes) == chunks * (
        BT * 4 + 2 * (2 * BT * K * 2 + BT * V * 4 + K * V * 2 + BT * V * 2) + BT * K * 4)
    # q's and k's row factors: read once more, a float per row each; the Cube's work the same
    _fused(x, *(torch.rand(NC, HV, BT, generator=torch.Generator().manual_seed(i)) + 0.5 for i in (1, 2)))
    scaled = kernels.chunk_state_output.last_launch().totals
    assert scaled.gm_to_local_bytes + scaled.local_to_gm_bytes == moved + chunks * 2 * BT * 4
    assert scaled.cube_macs == fused.cube_macs
    share = fused.cube_macs / (fused.cube_macs + fused.vector_elem_ops)
    with capsys.disabled():
        print(f"\nchunk_state_output NC=16 HV=4 BT=64 K=V=128: GM bytes {moved} (the chain {chain_moved}: "
              f"{chain_moved / moved:.3f}x); without the workspaces {reads + writes} (the chain {chain_moved - chain_ws}: "
              f"{(chain_moved - chain_ws) / (reads + writes):.3f}x); workspace each way {workspace}; Cube share {share:.3f}")
    assert share > 0.9


def test_refusals():
    x = _inputs(1, 64, 2, 64, 64, 64, True, None, False, False, 1, BF16)
    args = lambda **kw: {**dict(q=x.q, k=x.k, v=x.v, g=x.G, akk=x.Akkb, aqk=x.Aqk, e_last=x.e_last,  # noqa: E731
                                chunk_offsets=x.offsets), **kw}
    with pytest.raises(ValueError, match="float16 or torch.bfloat16"):
        kernels.chunk_state_output(**args(k=x.k.float()))
    k3 = torch.zeros(x.k.shape[0], 64, 3, 64, dtype=BF16)
    with pytest.raises(KernelError, match="`k` must be"):
        kernels.chunk_state_output(**args(q=k3, k=k3))
    with pytest.raises(KernelError, match="`akk` must be"):
        kernels.chunk_state_output(**args(akk=x.Akkb[..., :32]))
    with pytest.raises(KernelError, match="`aqk` must be"):
        kernels.chunk_state_output(**args(aqk=x.Aqk[..., :32]))
    with pytest.raises(ValueError, match="non-decreasing"):
        kernels.chunk_state_output(**args(chunk_offsets=torch.tensor([0, 5], dtype=torch.int32)))
    f = torch.ones(x.q.shape[0], x.q.shape[2], 64)
    with pytest.raises(KernelError, match="given together"):
        kernels.chunk_state_output(**args(k_scale=f))
    with pytest.raises(KernelError, match=r"\[NC, HQ, BT\]"):
        kernels.chunk_state_output(**args(q_scale=f[..., :32].contiguous(), k_scale=f[..., :32].contiguous()))


def test_unit_row_factors_change_nothing():
    """q_scale = k_scale = 1: the call without them, bit for bit (the factors multiply in float32)."""
    x = _inputs(1, 150, 2, 128, 128, 64, True, None, True, False, 2, BF16)
    ones = torch.ones(x.q.shape[0], x.q.shape[2], 64)
    for a, b in zip(_fused(x, ones, ones.clone()), _fused(x)):
        assert torch.equal(a, b)


# ---- the public chunk ops with FLA_NPU_CPU_IMPL=sim: stages 3, 4 and 5 on this kernel -------------

@pytest.fixture
def launches(monkeypatch):
    """Route the chunk ops to the simulated kernels and record the fused kernel's launches (stages 3-5)
    and the one launch's (stages 2-5, chunk_forward; KDA's 1-5, chunk_gate_forward), as (kernel, dtype)."""
    calls = []
    for name in ("chunk_state_output", "chunk_forward", "chunk_gate_forward"):
        sim_helpers.record_launches(monkeypatch, kernels, name, before=lambda args, kwargs, n=name: (n, args[0].dtype),
                                    calls=calls)
    return calls


@pytest.mark.parametrize("op,sw,chunk_size,cu,dtype,K,V", sim_helpers.STAGE_OP_CASES)
def test_chunk_op_with_simulated_state_and_output_matches_gold(launches, op, sw, chunk_size, cu, dtype, K, V):
    sim_helpers.check_stage_op_case(op, sw, chunk_size, cu, dtype, K, V)
    # In the forward only (the backward recomputes what it needs with the reference, never o).
    # every case K <= 128, no states kept: stages 2-5 in one launch (KDA's with stage 1)
    assert launches == [("chunk_gate_forward" if op == "kda" else "chunk_forward", dtype)]


@pytest.mark.parametrize("keep", [False, True], ids=["recompute", "disable_recompute"])
def test_backward_recomputes_wy_with_the_reference(launches, monkeypatch, keep):
    """The backward's recomputation of stage 3 takes the reference path (``wy_fwd``), not a kernel,
    also when the forward keeps its intermediates (the forward's stage 3 ran in the fused kernel)."""
    calls = []
    real = fwd.wy_fwd
    monkeypatch.setattr(fwd, "wy_fwd", lambda *a: calls.append(1) or real(*a))
    q, k, v = (torch.randn(1, 64, 2, 32, dtype=BF16, requires_grad=True) for _ in range(3))
    g = -torch.rand(1, 64, 2, 32, dtype=BF16)
    beta = torch.rand(1, 64, 2, dtype=BF16)
    o, _ = fla_npu.chunk_kda(q, k, v, g.requires_grad_(), beta.requires_grad_(), chunk_size=32, disable_recompute=keep)
    assert len(launches) == 1 and calls == []
    o.float().square().sum().backward()
    assert len(launches) == 1 and calls == [1]


def test_chunk_op_float32_keeps_reference_output(launches, caplog, monkeypatch):
    """The kernels take no fp32 Cube inputs: stages 3, 4 and 5 stay on the reference, logged once as a warning."""
    sim_helpers.check_float32_keeps_reference(launches, caplog, monkeypatch, "stage 5: output")


def test_verify_sim_row_runs_the_fused_kernel(launches):
    """`fla-npu verify`'s sim implementation covers stages 2 to 5: its first bf16 KDA and GDN rows pass."""
    sim_helpers.verify_sim_first_rows()
    assert set(launches) == {("chunk_gate_forward", BF16), ("chunk_forward", BF16)}
