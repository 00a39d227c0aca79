"""Stages 1 and 2 of chunked KDA in one launch (csrc/chunk_intra/chunk_gate_intra*): the intra-chunk
kernel whose vector cores form G from the raw gate, run on the host simulation through the installed
library and fla_npu.runtime.

The launch must give what the two launches it replaces give: the gate cumsum kernel's G (its rows
past a chunk's length holding the last valid row's value) within float32 rounding (the launch sums
G's rows per 16-row block, then carries the blocks' totals; the gate kernel sums them in order), and,
bit for bit, the intra-chunk kernel's Aqk, Akk, q_scale and k_scale on the G it wrote (both kernels
are checked against the float64 reference in their own tests); G is also checked here against the
float64 activation and cumsum, and e_last against e^G of the last row. Inputs are built in the chunk
layout from token tensors (``ChunkPlan``: tails, varlen with one-token and empty sequences), every
gate form, float32 and 16-bit raw gates, GVA, chunk sizes 16, 32 and 64, K 64, 96 and 128, gates
strong enough for the exact diagonal path; outputs NaN-poisoned before the launch
(tests/conftest.py); hazard checker clean (a hazard fails the launch).
"""

from __future__ import annotations

import pytest
import torch

from fla_npu.ops.kda.gate import kda_gate_fwd
from fla_npu.runtime import _native, kernels
from fla_npu.testing import check_close

from sim_helpers import raw_gate_inputs as _inputs, run_tiling_unit_test

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32
LOWER_BOUND = -5.0


def _lower_bound(form):
    return LOWER_BOUND if form == "sigmoid" else None


def _gate_kernel_G(g, A_log, dt_bias, lengths, form):
    """The first of the two launches the fused one replaces: the gate cumsum kernel on the chunk layout
    (each chunk a sequence of BT tokens), its rows past a chunk's length set to the last valid row
    (zero for an empty chunk)."""
    NC, BT = g.shape[:2]
    G = kernels.gate_chunk_cumsum(g, BT, form, A_log, dt_bias, _lower_bound(form))
    last = (lengths.long() - 1).clamp(min=0)
    rows = torch.minimum(torch.arange(BT)[None, :], last[:, None])
    G = G.gather(1, rows.view(NC, BT, 1, 1).expand_as(G)).clone()
    G[lengths == 0] = 0.0
    return G


def _intra(q, k, beta, G, l2norm, scale):
    """The second: the intra-chunk kernel on G as the chain calls it (Aqk, Akk in q's dtype, akk_beta)."""
    return kernels.chunk_intra(q, k, beta, G, l2norm, scale, q.dtype, q.dtype, True)


def _activated(g, A_log, dt_bias, lengths, form):
    """The activated gate in float64 from the raw gate (``kda_gate_fwd``), rows past the length zero."""
    d = lambda t: None if t is None else t.double()  # noqa: E731
    y = g.double() if form == "none" else kda_gate_fwd(g.double(), d(A_log), d(dt_bias), _lower_bound(form), None)
    if form == "none" and dt_bias is not None:
        y = y + dt_bias.double().view(g.shape[2], g.shape[3])
    valid = torch.arange(g.shape[1])[None, :] < lengths[:, None].long()
    return y * valid[:, :, None, None]


def _check_sums(G, G_in_order, y):
    """G against the in-order float32 sums of the gate kernel: two summations of the same float32 terms
    y, each within (rows) ulp of the running sum of |y| of the exact one."""
    bound = 2 * G.shape[1] * 2.0 ** -24 * y.abs().cumsum(1) + 1e-30
    worst = ((G.double() - G_in_order.double()).abs() / bound).max().item()
    assert worst <= 1.0, f"G is {worst:.2f} x the float32 bound from the gate kernel's in-order sums"


CASES = [  # (B, T, HV, HQ, K, BT, dtype, form, raw_dtype, cu, params)
    pytest.param(2, 100, 2, 2, 128, 64, BF16, "softplus", FP32, None, True, id="softplus-bt64-k128-tail-bf16-raw-f32"),
    pytest.param(1, 150, 4, 2, 64, 32, FP16, "sigmoid", FP16, (0, 1, 1, 70, 150), True, id="sigmoid-bt32-varlen-gva-f16-raw-f16"),
    pytest.param(1, 90, 2, 2, 128, 64, BF16, "sigmoid", BF16, None, False, id="sigmoid-no-params-bt64-bf16-raw-bf16"),
    pytest.param(2, 40, 2, 1, 64, 16, BF16, "none", FP32, None, True, id="none-strong-bt16-gva-bf16"),
    pytest.param(1, 130, 2, 2, 96, 64, FP16, "none", FP32, (0, 64, 65, 130), False, id="none-strong-bt64-k96-varlen-f16"),
]


@pytest.mark.parametrize("B,T,HV,HQ,K,BT,dtype,form,raw_dtype,cu,params", CASES)
def test_equals_the_two_launches(B, T, HV, HQ, K, BT, dtype, form, raw_dtype, cu, params):
    q, k, beta, g, A_log, dt_bias, plan = _inputs(B, T, HV, HQ, K, BT, dtype, form, raw_dtype, cu, params)
    lengths = plan.chunk_lengths()
    assert lengths.dtype == torch.int32 and lengths.shape == (plan.num_chunks,)
    out = kernels.chunk_gate_intra(q, k, beta, g, lengths, form, A_log, dt_bias, _lower_bound(form), True,
                                   K ** -0.5, True)
    launch = kernels.chunk_gate_intra.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    Aqk, Akk, q_scale, k_scale, G, e_last = out
    for name, x in zip(("Aqk", "Akk", "q_scale", "k_scale", "gate", "e_last"), out):
        assert torch.isfinite(x).all(), f"{name}: an element was not written (NaN-poisoned) or is not finite"
    y = _activated(g, A_log, dt_bias, lengths, form)
    _check_sums(G, _gate_kernel_G(g, A_log, dt_bias, lengths, form), y)
    for name, x, z in zip(("Aqk", "Akk", "q_scale", "k_scale"), out[:4], _intra(q, k, beta, G, True, K ** -0.5)):
        assert torch.equal(x, z), f"{name} differs from the intra-chunk kernel's on the G the launch wrote"
    check_close("G", G, y.cumsum(1), FP32)
    # e_last: the vector unit's exponential of the last row (a few float32 ulp from torch's)
    torch.testing.assert_close(e_last, G[:, -1].exp(), rtol=4e-7, atol=1e-38)
    t = kernels.chunk_gate_intra.last_tiling()
    assert (t["gate_in"], t["gate_form"], t["has_dt_bias"]) == (1, {"none": 0, "softplus": 1, "sigmoid": 2}[form], int(params))
    assert t["has_a_log"] == int(A_log is not None)


@pytest.mark.parametrize("BT", [16, 64])
def test_core_count_invariance(monkeypatch, BT):
    """1, 3 and 16 AI cores give bit-identical outputs: one core takes every unit in turn (the two gate
    slots alternating, G of the next unit formed while the Cube works), three an uneven share."""
    q, k, beta, g, A_log, dt_bias, plan = _inputs(2, 150, 3, 3, 64, BT, BF16, "sigmoid", BF16, (0, 1, 60, 61, 150), seed=3)
    lengths = plan.chunk_lengths()
    outs = []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))  # vector cores: two per AI core
        outs.append(kernels.chunk_gate_intra(q, k, beta, g, lengths, "sigmoid", A_log, dt_bias, LOWER_BOUND, True, 0.125, True))
        launch = kernels.chunk_gate_intra.last_launch()
        assert launch.ok and kernels.chunk_gate_intra.last_tiling()["block_dim"] == min(cores, g.shape[0] * g.shape[2])
    for o in outs[1:]:
        for x, x0 in zip(o, outs[0]):
            assert torch.equal(x, x0)
    for x, y in zip(outs[0][:4], _intra(q, k, beta, outs[0][4], True, 0.125)):
        assert torch.equal(x, y)


def test_exact_diagonal_blocks_read_g_back():
    """Strong gates put the diagonal blocks of the odd heads beyond the Cube's safe span: the vector
    unit computes them exactly from the G rows the launch wrote (read back from GM), bit for bit as
    the intra-chunk kernel does on that G; more vector work than mild gates."""
    ops = {}
    for strong in (False, True):
        q, k, beta, g, A_log, dt_bias, plan = _inputs(1, 128, 2, 2, 64, 64, BF16, "none", FP32, seed=4)
        if not strong:
            g = g.clamp(min=-0.2)
        lengths = plan.chunk_lengths()
        out = kernels.chunk_gate_intra(q, k, beta, g, lengths, "none", None, dt_bias, akk_beta=True)
        ops[strong] = kernels.chunk_gate_intra.last_launch().totals.vector_elem_ops
        for x, y in zip(out[:4], _intra(q, k, beta, out[4], False, 1.0)):
            assert torch.equal(x, y)
    assert ops[True] > 1.5 * ops[False]


def test_gm_bytes_against_the_two_launches():
    """One launch instead of two: the raw gate read once (each vector core activates its own block rows
    and hands them to the other through the workspace), G written once (its owned block rows per
    vector core) with e_last, and no G read back: fewer GM bytes outside the workspace than the gate
    cumsum launch and the intra-chunk launch together (production head: BT 64, K 128, bf16)."""
    q, k, beta, g, A_log, dt_bias, plan = _inputs(4, 128, 4, 4, 128, 64, BF16, "softplus", FP32, seed=5)
    lengths = plan.chunk_lengths()
    kernels.chunk_gate_intra(q, k, beta, g, lengths, "softplus", A_log, dt_bias, None, True, 128 ** -0.5, True)
    fused = kernels.chunk_gate_intra.last_launch().totals
    kernels.gate_chunk_cumsum(g, 64, "softplus", A_log, dt_bias)
    gate = kernels.gate_chunk_cumsum.last_launch().totals
    _intra(q, k, beta, _gate_kernel_G(g, A_log, dt_bias, lengths, "softplus"), True, 128 ** -0.5)
    intra = kernels.chunk_intra.last_launch().totals
    NC, BT, HV, K = g.shape
    units, nb, tile = NC * HV, BT // 16, BT * K * 4
    # per unit: the raw rows once (float32 here), dt_bias per vector core (A_log and the chunk's length
    # are scalar reads, not GM copies), the other core's activated rows from the workspace; the
    # intra-chunk launch read instead its owned blocks of G and the first, middle and last rows of the
    # block rows from its first owned one on (chunk_intra_tiling.h's ownership: {0, 3} and {1, 2}).
    # Written: G once, e_last, the activated rows to the workspace.
    reference_rows = sum(3 * (nb - min(i for i in range(nb) if (i ^ (i >> 1)) & 1 == sub)) for sub in (0, 1))
    assert fused.gm_to_local_bytes - intra.gm_to_local_bytes == units * (tile + 2 * K * 4 - reference_rows * K * 4)
    assert fused.local_to_gm_bytes - intra.local_to_gm_bytes == units * (2 * tile + K * 4)
    assert fused.ws_to_local_bytes - intra.ws_to_local_bytes == fused.local_to_ws_bytes - intra.local_to_ws_bytes == units * tile
    outside = lambda c: c.gm_to_local_bytes + c.local_to_gm_bytes - c.ws_to_local_bytes - c.local_to_ws_bytes  # noqa: E731
    assert outside(fused) < outside(gate) + outside(intra), (outside(fused), outside(gate), outside(intra))
    assert fused.cube_macs == intra.cube_macs


def test_refusals_leave_inputs_untouched():
    q, k, beta, g, A_log, dt_bias, plan = _inputs(1, 64, 2, 2, 64, 64, BF16, "softplus", FP32)
    lengths = plan.chunk_lengths()
    before = [x.clone() for x in (q, k, beta, g, A_log, dt_bias, lengths)]
    with pytest.raises(_native.KernelError, match="needs `a_log`"):
        kernels.chunk_gate_intra(q, k, beta, g, lengths, "softplus", None, dt_bias)
    with pytest.raises(_native.KernelError, match="K up to 128"):
        wide = lambda x: torch.cat([x] * 4, -1).contiguous()  # noqa: E731  (K 256)
        kernels.chunk_gate_intra(wide(q), wide(k), beta, wide(g), lengths, "softplus", A_log, torch.cat([dt_bias] * 4))
    with pytest.raises(_native.KernelError, match="raw per-key gate"):
        kernels.chunk_gate_intra(q, k, beta, g[..., :1].transpose(1, 2).contiguous(), lengths, "none")
    with pytest.raises(_native.KernelError, match=r"`chunk_len` must be \[NC\]"):
        kernels.chunk_gate_intra(q, k, beta, g, torch.cat([lengths, lengths]), "softplus", A_log, dt_bias)
    with pytest.raises(ValueError, match=r"`chunk_len` must lie in \[0, BT = 64\]"):
        kernels.chunk_gate_intra(q, k, beta, g, lengths + 1, "softplus", A_log, dt_bias)
    with pytest.raises(_native.KernelError, match="`q`, `k`, `aqk` and `akk` must have one dtype"):
        kernels.chunk_gate_intra(q, k.half(), beta, g, lengths, "softplus", A_log, dt_bias)
    for x, x0 in zip((q, k, beta, g, A_log, dt_bias, lengths), before):
        assert torch.equal(x, x0)


def test_no_chunk_launches_nothing():
    q, k, beta, g, A_log, dt_bias, plan = _inputs(1, 64, 2, 2, 64, 64, BF16, "softplus", FP32)
    out = kernels.chunk_gate_intra(q[:0], k[:0], beta[:0], g[:0], plan.chunk_lengths()[:0], "softplus", A_log, dt_bias)
    assert out[0].shape == (0, 2, 64, 64) and out[5].shape == (0, 2, 64)
    assert kernels.chunk_gate_intra.last_launch() is None


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/chunk_intra/tests/chunk_gate_intra_tiling_test.cpp)."""
    run_tiling_unit_test(native_build, "chunk_gate_intra")
