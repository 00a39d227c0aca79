"""Stages 2 to 5 of chunked Gated DeltaNet in one launch (csrc/chunk_state/chunk_forward*): the fused
state kernel with each chunk's intra-chunk matrices formed in its own loop, run on the host simulation
of Ascend C through the installed library and fla_npu.runtime.

Inputs as the pipeline makes them (sim_helpers.state_stage: tails, varlen with empty and one-token
sequences, beta zero on padding), q and k token-major with their own heads (GVA), G the chunk-local
gate cumsum. Checked: o and final against the reference stages 2-5 in float64 on the kernel's inputs
(q's and k's rows l2-normalised and q's scaled in float64), within the Cube dtype's tolerance (the
kernel rounds the Cube's operands once: Aqk and Akk, X1, w, kg and qe); against the two launches it
replaces (chunk_intra + chunk_state_output: the same products and roundings); bit-identical for 1, 3
and 16 AI cores; the GM bytes: the inputs read once per unit, o and final written once, Aqk and Akk
never outside the workspace. Outputs NaN-poisoned before the launch (tests/conftest.py); hazard
checker clean (a hazard fails the launch).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fla_npu.ops.common import chunk_fwd as fwd
from fla_npu.ops.common.chunk_tensors import expand_heads
from fla_npu.ops.common.decay import ChunkDecay
from fla_npu.runtime import kernels
from fla_npu.runtime._native import KernelError
from fla_npu.testing import check_close

import sim_helpers

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32
SCALE = 0.25


def _inputs(B, T, HV, K, V, BT, cu, h0, v_first, groups, dtype, seed=0, kda=False, gate="mild"):
    """The kernel's inputs: q, k token-major [NC, BT, HV / groups, K] and v [NC, BT, HV, V] in ``dtype``;
    G (natural log: GDN head-major [NC, HV, BT, 1], KDA token-major [NC, BT, HV, K]), beta, e_last and h0
    float32; the plan. ``gate``: sim_helpers.step_gate's kind of per-step decay."""
    st = sim_helpers.state_stage(B, T, HV, K, V, BT, kda, cu, h0, v_first, seed, groups, gate)
    q = st.plan.to_chunks(torch.randn(B, T, HV // groups, K, generator=st.gen, dtype=torch.float64) * 0.5)
    tm = lambda t: t.transpose(1, 2).contiguous().to(dtype)  # noqa: E731  (token-major)
    return SimpleNamespace(q=tm(q), k=tm(st.k_heads), v=tm(st.v), beta=st.beta.to(FP32).contiguous(),
                           G=sim_helpers.kernel_gate(st.decay.G.to(FP32).contiguous()), e_last=st.e_last.to(FP32),
                           offsets=st.offsets, h0=st.h0, plan=st.plan, v_first=v_first, groups=groups)


def _launch(x, l2norm=True, scale=SCALE):
    o, final = kernels.chunk_forward(x.q, x.k, x.v, x.G, x.beta, x.e_last, x.offsets, x.h0, l2norm, scale, x.v_first)
    launch = kernels.chunk_forward.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    return o, final


def _reference(x, l2norm=True, scale=SCALE):
    """Stages 2-5 in float64 on the kernel's inputs: o [NC, HV, BT, V] and final (the kernel's layout)."""
    d = lambda t: t.double()  # noqa: E731
    q, k = (expand_heads(d(t).transpose(1, 2), x.groups) for t in (x.q, x.k))
    if l2norm:
        q, k = (t / (t.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt() for t in (q, k))
    q = q * scale
    decay = ChunkDecay(d(sim_helpers.reference_gate(x.G)), torch.float64)
    v, beta = d(x.v).transpose(1, 2), d(x.beta)
    Aqk, Akk = fwd.chunk_intra_fwd(q, k, beta, decay)
    w, u, kg = fwd.wy_fwd(k, v, beta, decay, Akk)
    s0 = None if x.h0 is None else d(x.h0.transpose(-1, -2) if x.v_first else x.h0)
    h, v_new, final = fwd.state_fwd(kg, w, u, decay, s0, x.plan)
    return fwd.output_fwd(q, decay, h, Aqk, v_new), final.transpose(-1, -2) if x.v_first else final


CASES = [  # (B, T, HV, K, V, BT, cu, h0, v_first, groups, dtype, l2norm, kda)
    pytest.param(2, 100, 2, 64, 64, 64, None, False, False, 1, BF16, True, False, id="bt64-tail"),
    pytest.param(1, 150, 2, 128, 128, 64, None, True, False, 2, FP16, True, False, id="bt64-k128-h0-gva-fp16"),
    pytest.param(1, 200, 4, 128, 128, 64, (0, 1, 1, 70, 129, 200), True, False, 2, BF16, True, False,
                 id="bt64-varlen-empty-one-h0-gva"),
    pytest.param(1, 90, 2, 80, 64, 32, (0, 37, 37, 90), True, True, 1, BF16, False, False,
                 id="bt32-k80-varlen-vfirst-no-norm"),
    pytest.param(2, 45, 1, 64, 80, 16, None, True, True, 1, FP16, True, False, id="bt16-v80-vfirst"),
    pytest.param(1, 100, 2, 32, 32, 16, (0, 37, 37, 100), False, False, 1, FP16, False, False, id="bt16-k32-varlen-no-norm"),
    pytest.param(1, 70, 1, 256, 128, 64, None, True, False, 1, BF16, True, False, id="bt64-k256"),
    pytest.param(1, 50, 2, 32, 16, 32, None, True, True, 2, BF16, True, False, id="bt32-v16-one-lane-gva"),
    # KDA: the per-key gate (K up to 128)
    pytest.param(2, 100, 2, 64, 64, 64, None, False, False, 1, BF16, True, True, id="kda-bt64-tail"),
    pytest.param(1, 150, 2, 128, 128, 64, None, True, False, 2, FP16, True, True, id="kda-bt64-k128-h0-gva-fp16"),
    pytest.param(1, 200, 4, 128, 128, 64, (0, 1, 1, 70, 129, 200), True, False, 2, BF16, True, True,
                 id="kda-bt64-varlen-empty-one-h0-gva"),
    pytest.param(1, 90, 2, 80, 64, 32, (0, 37, 37, 90), True, True, 1, BF16, False, True,
                 id="kda-bt32-k80-varlen-vfirst-no-norm"),
    pytest.param(2, 45, 1, 64, 80, 16, None, True, True, 1, FP16, True, True, id="kda-bt16-v80-vfirst"),
    pytest.param(1, 50, 2, 32, 16, 32, None, True, True, 2, BF16, True, True, id="kda-bt32-v16-one-lane-gva"),
]
ARGS = "B,T,HV,K,V,BT,cu,h0,v_first,groups,dtype,l2norm,kda"


@pytest.mark.parametrize(ARGS, CASES)
def test_matches_reference_stages(B, T, HV, K, V, BT, cu, h0, v_first, groups, dtype, l2norm, kda):
    x = _inputs(B, T, HV, K, V, BT, cu, h0, v_first, groups, dtype, kda=kda)
    o, final = _launch(x, l2norm)
    t = kernels.chunk_forward.last_tiling()
    assert (t["intra"], t["groups"], t["N"], t["NC"], t["qk_l2norm"]) == (1, groups, x.plan.num_seqs, x.plan.num_chunks, l2norm)
    assert t["Kg"] == (K if kda else 1)
    assert o.shape == (x.plan.num_chunks, BT, HV, V) and o.dtype == dtype and final.dtype == FP32
    ref_o, ref_final = _reference(x, l2norm)
    check_close("o", o.transpose(1, 2), ref_o, dtype)
    check_close("final", final, ref_final, dtype)


@pytest.mark.parametrize(ARGS, CASES)
def test_matches_the_two_launches(B, T, HV, K, V, BT, cu, h0, v_first, groups, dtype, l2norm, kda):
    """chunk_intra (Aqk and Akk diag(beta) in the Cube dtype, q's and k's row factors) followed by
    chunk_state_output: the same products and roundings. Gated DeltaNet's l2 norms' sums of squares are
    added by the vector unit here, from the Cube's diagonals there (a float32 rounding apart), so with
    the norms final within float32's tolerance and o equal but where that flips a rounding to the Cube
    dtype; without them, and for KDA (both form the norms on the vector unit), bit for bit."""
    x = _inputs(B, T, HV, K, V, BT, cu, h0, v_first, groups, dtype, kda=kda)
    o, final = _launch(x, l2norm)
    Aqk, Akk, qs, ks = kernels.chunk_intra(x.q, x.k, x.beta, x.G, l2norm, SCALE, dtype, dtype, True)
    o2, final2 = kernels.chunk_state_output(x.q, x.k, x.v, x.G, Akk, Aqk, x.e_last, x.offsets, x.h0, x.v_first, qs, ks)
    check_close("final", final, final2, FP32)
    assert (o != o2).float().mean() < 0.01
    if kda or not l2norm:
        assert torch.equal(o, o2) and torch.equal(final, final2)


@pytest.mark.parametrize("gate", ["strong", "steep", "floor"])
@pytest.mark.parametrize("BT", [64, 32, 16])
def test_kda_strong_gates(BT, gate):
    """KDA's decays beyond the safe span within a block (strong: diagonal blocks computed exactly per
    pair on the vector unit next to mild heads; steep: middle reference rows; floor: every step at the
    floor): o and final within the tolerance of the float64 stages, bit for bit the two launches'."""
    x = _inputs(1, 150, 2, 64, 64, BT, (0, 70, 150), True, False, 1, BF16, seed=7, kda=True, gate=gate)
    o, final = _launch(x)
    ref_o, ref_final = _reference(x)
    check_close("o", o.transpose(1, 2), ref_o, BF16)
    check_close("final", final, ref_final, BF16)
    Aqk, Akk, qs, ks = kernels.chunk_intra(x.q, x.k, x.beta, x.G, True, SCALE, BF16, BF16, True)
    o2, final2 = kernels.chunk_state_output(x.q, x.k, x.v, x.G, Akk, Aqk, x.e_last, x.offsets, x.h0, x.v_first, qs, ks)
    assert torch.equal(o, o2) and torch.equal(final, final2)


@pytest.mark.parametrize("kda", [False, True], ids=["gdn", "kda"])
def test_core_count_invariance(monkeypatch, kda):
    """1, 3 and 16 AI cores: bit-identical o and final (the V split changes; each V block forms the
    chunk's stage 2 alike)."""
    x = _inputs(1, 300, 1, 64, 128, 32, (0, 40, 41, 300), True, False, 1, BF16, seed=3, kda=kda)
    outs, blocks = [], []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))
        outs.append(_launch(x))
        blocks.append(kernels.chunk_forward.last_tiling()["num_vb"])
    assert blocks[0] == 1 and blocks[-1] > 1
    for o, final in outs[1:]:
        assert torch.equal(o, outs[0][0]) and torch.equal(final, outs[0][1])


@pytest.mark.parametrize("kda", [False, True], ids=["gdn", "kda"])
def test_gm_bytes(monkeypatch, kda):
    """NC = 16, HV = 4, BT = 64, K = V = 128, one V block per head on 4 cores, GVA (q and k with 2
    heads): outside the workspace the launch reads q, k, v, G, beta and e_last once per unit and writes
    o and final once: Aqk and Akk never leave the workspace. Beyond that: GDN reads G's BT floats once
    more per vector core that finishes stage 2 block rows, and a few scalars; KDA (mild gates: no block
    computed exactly) reads per chunk the reference rows (first, middle, last) of the block rows a vector
    core needs but does not own (6 rows on one core, 3 on the other) and G's last row once (e_last's
    logarithm, for the state operands of the core that does not own the last block)."""
    NC, HV, BT, K, V = 16, 4, 64, 128, 128
    x = _inputs(1, NC * BT, HV, K, V, BT, None, False, False, 2, BF16, seed=5, kda=kda)
    monkeypatch.setenv("FLA_NPU_SIM_CORES", "8")
    _launch(x)
    assert kernels.chunk_forward.last_tiling()["num_vb"] == 1
    tot = kernels.chunk_forward.last_launch().totals
    chunks, Kg = NC * HV, K if kda else 1
    reads = chunks * (2 * BT * K * 2 + BT * V * 2 + BT * Kg * 4 + BT * 4 + Kg * 4)  # q, k, v, G, beta; e_last
    writes = chunks * BT * V * 2 + HV * K * V * 4
    outside = tot.gm_to_local_bytes + tot.local_to_gm_bytes - tot.ws_to_local_bytes - tot.local_to_ws_bytes
    if kda:
        assert outside == reads + writes + chunks * (6 + 3 + 1) * K * 4, (outside, reads + writes)
    else:
        assert reads + writes <= outside <= reads + writes + chunks * (2 * BT * 4 + 16), (outside, reads + writes)
    assert outside / (reads + writes) < (1.05 if kda else 1.01)


def test_refusals():
    x = _inputs(1, 64, 2, 64, 64, 64, None, False, False, 1, BF16)
    before = [t.clone() for t in (x.q, x.k, x.v, x.G, x.beta)]
    Gk = torch.zeros(x.q.shape[0], 64, 2, 64)  # KDA's per-key gate with GDN's e_last
    with pytest.raises(KernelError, match="`e_last`"):
        kernels.chunk_forward(x.q, x.k, x.v, Gk, x.beta, x.e_last, x.offsets, None, True, SCALE, False)
    y = _inputs(1, 64, 2, 256, 64, 64, None, False, False, 1, BF16, kda=True)  # KDA in one launch: K up to 128
    with pytest.raises(KernelError, match="K up to 128"):
        kernels.chunk_forward(y.q, y.k, y.v, y.G, y.beta, y.e_last, y.offsets, None, True, SCALE, False)
    with pytest.raises(KernelError, match="`qk_l2norm`|`beta`"):
        kernels.chunk_forward(x.q, x.k, x.v, x.G, x.beta[:, :, :32], x.e_last, x.offsets, None, True, SCALE, False)
    with pytest.raises(ValueError, match="float16 or torch.bfloat16"):
        kernels.chunk_forward(x.q.float(), x.k.float(), x.v, x.G, x.beta, x.e_last, x.offsets, None, True, SCALE, False)
    for t, t0 in zip((x.q, x.k, x.v, x.G, x.beta), before):
        assert torch.equal(t, t0)
