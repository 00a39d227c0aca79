"""Stage 4 kernel (csrc/chunk_state/): the inter-chunk state recurrence per (sequence, head), mixed
Cube + vector, run on the host simulation of Ascend C through the installed library and
fla_npu.runtime.

Inputs made as the pipeline makes them: w, u, kg from the reference stages 2-3 (``chunk_fwd``) in
float64 on random keys, values, gates and betas in the chunk layout of ``ChunkPlan`` (tails, varlen
with empty and one-token sequences), then cast as the kernel takes them (w, kg to the Cube dtype, u
and e_last float32). Against the reference stage (``chunk_fwd.state_fwd``) in float64 on exactly
those inputs, so the tolerance bounds the kernel's own error: float32 outputs within the float32
tolerance (the hi + lo halves keep S and v_new to about 16 bits in the Cube and the state itself
is never rounded), 16-bit outputs within the Cube dtype's. Outputs NaN-poisoned before the launch
(tests/conftest.py); bit-identical for 1, 3 and 16 AI cores; hazard checker clean (a hazard fails
the launch); GM bytes and Cube multiply-adds from the counters; the error over 64 chunks.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fla_npu.ops.common import chunk_fwd as fwd
from fla_npu.runtime import _native, kernels
from fla_npu.testing import TOLERANCES, check_close, rel_rms

import sim_helpers
from sim_helpers import check_chunk_layout_limits, run_tiling_unit_test

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


def _inputs(B, T, HV, K, V, BT, per_key, cu=None, h0=False, v_first=False, seed=0):
    """Stage-4 inputs (sim_helpers.state_stage): (w, u, kg, e_last, chunk_offsets, h0, plan)."""
    st = sim_helpers.state_stage(B, T, HV, K, V, BT, per_key, cu, h0, v_first, seed)
    return st.w, st.u, st.kg, st.e_last, st.offsets, st.h0, st.plan


def _reference(w, u, kg, e_last, h0, v_first, plan, cube_dtype):
    """The reference stage in float64 on the values the kernel reads (w, kg rounded to the Cube dtype)."""
    c = lambda t: t.to(cube_dtype).double()  # noqa: E731
    s0 = None if h0 is None else (h0.transpose(-1, -2) if v_first else h0).double()
    h, v_new, final = fwd.state_fwd(c(kg), c(w), u.float().double(), SimpleNamespace(e_last=e_last.float().double()), s0, plan)
    return h, v_new, (final.transpose(-1, -2) if v_first else final)


def _run(w, u, kg, e_last, offsets, h0, v_first=False, **kw):
    out = kernels.chunk_state(w.float(), u.float(), kg.float(), e_last.float(), offsets, h0, state_v_first=v_first, **kw)
    launch = kernels.chunk_state.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    return out


CASES = [  # (B, T, HV, K, V, BT, per_key, cu, h0, v_first, h_dtype, v_new_dtype, cube_dtype)
    pytest.param(2, 100, 2, 64, 64, 64, True, None, False, False, FP32, FP32, BF16, id="kda-bt64-k64-tail"),
    pytest.param(1, 150, 2, 128, 128, 64, True, None, True, False, FP32, FP32, FP16, id="kda-bt64-k128-h0-fp16cube"),
    pytest.param(1, 200, 3, 128, 128, 64, False, (0, 1, 1, 70, 129, 200), True, False, BF16, BF16, BF16,
                 id="gdn-bt64-varlen-empty-one-h0-bf16out"),
    pytest.param(1, 90, 2, 80, 64, 32, True, (0, 37, 37, 90), True, True, FP32, BF16, BF16,
                 id="kda-bt32-k80-varlen-vfirst"),
    pytest.param(2, 45, 1, 64, 80, 16, False, None, True, True, FP16, FP32, FP16, id="gdn-bt16-v80-vfirst-fp16out"),
    pytest.param(1, 64, 2, 128, 64, 32, False, None, False, True, FP32, FP32, BF16, id="gdn-bt32-no-h0-vfirst"),
    pytest.param(1, 70, 1, 256, 128, 64, True, None, True, False, FP32, FP32, BF16, id="kda-bt64-k256"),
    pytest.param(1, 40, 1, 16, 256, 16, True, (0, 3, 40), False, False, FP32, FP16, FP16, id="kda-bt16-k16-v256"),
    pytest.param(1, 50, 2, 32, 16, 32, True, None, True, True, FP32, FP32, BF16, id="kda-bt32-v16-one-lane-vfirst"),
]


@pytest.mark.parametrize("B,T,HV,K,V,BT,per_key,cu,h0,v_first,h_dtype,v_new_dtype,cube_dtype", CASES)
def test_matches_reference_stage(B, T, HV, K, V, BT, per_key, cu, h0, v_first, h_dtype, v_new_dtype, cube_dtype):
    w, u, kg, e_last, offsets, s0, plan = _inputs(B, T, HV, K, V, BT, per_key, cu, h0, v_first)
    h, v_new, final = _run(w, u, kg, e_last, offsets, s0, v_first, h_dtype=h_dtype, v_new_dtype=v_new_dtype,
                           cube_dtype=cube_dtype)
    assert (h.dtype, v_new.dtype, final.dtype) == (h_dtype, v_new_dtype, FP32)
    refs = _reference(w, u, kg, e_last, s0, v_first, plan, cube_dtype)
    for name, x, ref in zip(("h", "v_new", "final"), (h, v_new, final), refs):
        # float32 outputs: the kernel's own error is float32-like; a 16-bit output is rounded once.
        check_close(name, x, ref, FP32 if x.dtype == FP32 else cube_dtype)
    t = kernels.chunk_state.last_tiling()
    assert (t["N"], t["NC"], t["HV"], t["BT"], t["K"], t["V"], t["Kg"]) == (
        plan.num_seqs, plan.num_chunks, HV, BT, K, V, K if per_key else 1)
    assert (t["has_h0"], t["state_v_first"], t["h_f32"], t["v_new_f32"]) == (h0, v_first, h_dtype == FP32, v_new_dtype == FP32)
    if cu is not None and h0:  # an empty sequence hands its h0 through unchanged
        for n, (a, b) in enumerate(zip(cu[:-1], cu[1:])):
            if a == b:
                assert torch.equal(final[n], s0[n])


@pytest.mark.parametrize("per_key", [True, False], ids=["kda", "gdn"])
def test_final_state_matches_naive_gold(per_key):
    """End to end against the token-by-token recurrence (float64): the kernel's final states, fed with
    w, u, kg from the reference stages 2-3 on the same tokens (varlen, an empty sequence, tails, h0).
    The only rounding is of w and kg to the Cube dtype (float16 here)."""
    from fla_npu.ops.common.naive import naive_recurrent_batch

    B, T, HV, K, V, BT, cu = 1, 150, 2, 64, 48, 32, (0, 61, 61, 150)
    w, u, kg, e_last, offsets, s0, plan = _inputs(B, T, HV, K, V, BT, per_key, cu, h0=True, seed=9)
    _, _, final = _run(w, u, kg, e_last, offsets, s0, cube_dtype=FP16)
    k, v, beta, g = sim_helpers.state_tokens(B, T, HV, K, V, per_key, torch.Generator().manual_seed(9))
    q = torch.zeros_like(k)
    gates = dict(gk=g) if per_key else dict(g=g[..., 0])
    _, gold = naive_recurrent_batch(q, k, v, beta, 1.0, initial_state=s0.double(), cu_seqlens=torch.tensor(cu), **gates)
    check_close("final vs naive gold", final, gold, FP16)


def test_core_count_invariance(monkeypatch):
    """1, 3 and 16 AI cores give bit-identical outputs (the V-block split changes with the core count:
    each column of S is computed alike in every block)."""
    w, u, kg, e_last, offsets, s0, _ = _inputs(1, 300, 1, 64, 128, 32, True, (0, 40, 41, 300), h0=True, seed=3)
    outs, blocks = [], []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))  # vector cores: two per AI core
        outs.append(_run(w, u, kg, e_last, offsets, s0))
        t = kernels.chunk_state.last_tiling()
        assert t["block_dim"] == min(cores, t["num_units"]) and len(kernels.chunk_state.last_launch().cores) == 3 * t["block_dim"]
        blocks.append(t["num_vb"])
    assert blocks[0] == 1 and blocks[-1] > 1  # 3 (sequence, head) pairs on 16 cores: V is split
    for o in outs[1:]:
        for x, x0 in zip(o, outs[0]):
            assert torch.equal(x, x0)


def _gm_bytes(NC, HV, BT, K, V, N, num_vb, cube_bytes=2):
    """Compulsory minimum (w, kg, u, e_last read once; h, v_new, final written once; fp32 outputs),
    the kernel's total: w and kg once per V block, plus the workspace round trips, and the bytes of
    the workspace each way: per chunk and V block S_hi, S_lo, v_hi, v_lo in the Cube type (AIV ->
    AIC) and w S, kg^T v_new in fp32 (AIC -> AIV), each written once and read once."""
    minimum = NC * HV * (2 * BT * K * cube_bytes + BT * V * 4 + K * 4) + NC * HV * (K * V + BT * V) * 4 + N * HV * K * V * 4
    workspace = NC * HV * (2 * (K + BT) * V * cube_bytes + (K + BT) * V * 4)
    extra = (num_vb - 1) * NC * HV * 2 * BT * K * cube_bytes + 2 * workspace
    return minimum, minimum + extra, workspace


def test_counters_production_head(capsys):
    """GM bytes and Cube share for NC = 16, HV = 4, BT = 64, K = V = 128 (KDA, one sequence)."""
    w, u, kg, e_last, offsets, _, _ = _inputs(1, 16 * 64, 4, 128, 128, 64, True, seed=5)
    _run(w, u, kg, e_last, offsets, None)
    t = kernels.chunk_state.last_tiling()
    tot = kernels.chunk_state.last_launch().totals
    minimum, expected, workspace = _gm_bytes(16, 4, 64, 128, 128, 1, t["num_vb"])
    moved = tot.gm_to_local_bytes + tot.local_to_gm_bytes
    assert moved == expected, (moved, expected)
    assert (tot.ws_to_local_bytes, tot.local_to_ws_bytes) == (workspace, workspace)
    assert tot.cube_macs == 4 * 16 * 4 * 64 * 128 * 128  # two products, each on hi and lo halves
    share = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
    with capsys.disabled():
        print(f"\nchunk_state NC=16 HV=4 BT=64 K=V=128: {t['block_dim']} cores, {t['num_vb']} V blocks; GM bytes "
              f"{moved} = {moved / minimum:.3f} x compulsory {minimum} (workspace round trips "
              f"{2 * workspace}); Cube share of MACs {share:.3f}")
    assert share > 0.9


def test_error_does_not_grow_with_chunks(capsys):
    """64 chunks of one sequence: the relative error of the chunk-start states stays flat (S is kept
    in fp32; only its Cube operand is split, afresh each chunk)."""
    w, u, kg, e_last, offsets, s0, plan = _inputs(1, 64 * 32, 2, 64, 64, 32, True, h0=True, seed=7)
    h, v_new, final = _run(w, u, kg, e_last, offsets, s0)
    ref_h, _, ref_final = _reference(w, u, kg, e_last, s0, False, plan, BF16)
    errs = [rel_rms(h[c], ref_h[c]) for c in range(64)]
    early, late = max(errs[1:9]), max(errs[56:64])
    with capsys.disabled():
        by_chunk = ", ".join(f"{c}:{errs[c]:.1e}" for c in (1, 4, 8, 16, 32, 48, 63))
        print(f"\nchunk_state rel. RMS error of h by chunk: {by_chunk}; final {rel_rms(final, ref_final):.1e}")
    assert late < 4 * early + 1e-7 and late < TOLERANCES[FP32]


def test_no_sequence_launches_nothing_and_no_chunk_passes_h0():
    w, u, kg, e_last, offsets, s0, _ = _inputs(1, 64, 2, 64, 64, 64, True, h0=True)
    h, v_new, final = kernels.chunk_state(w[:0], u[:0], kg[:0], e_last[:0], offsets[:1], s0[:0])
    assert h.shape == (0, 2, 64, 64) and final.shape == (0, 2, 64, 64) and kernels.chunk_state.last_launch() is None
    # Two sequences, no chunk at all: final = h0, nothing else written.
    h, v_new, final = _run(w[:0], u[:0], kg[:0], e_last[:0], torch.zeros(3, dtype=torch.int32), torch.cat([s0, s0 + 1]))
    assert h.shape[0] == 0 and torch.equal(final, torch.cat([s0, s0 + 1]))


def test_refusals():
    w, u, kg, e_last, offsets, s0, _ = _inputs(1, 64, 2, 64, 64, 64, True, h0=True)
    w, u, kg, e_last = w.float(), u.float(), kg.float(), e_last.float()
    with pytest.raises(ValueError, match="cube_dtype"):
        kernels.chunk_state(w, u, kg, e_last, offsets, cube_dtype=FP32)
    with pytest.raises(ValueError, match="h_dtype"):
        kernels.chunk_state(w, u, kg, e_last, offsets, h_dtype=FP16, cube_dtype=BF16)
    with pytest.raises(ValueError, match="non-decreasing"):
        kernels.chunk_state(w, u, kg, e_last, torch.tensor([0, 2], dtype=torch.int32))  # 2 chunks of 1
    with pytest.raises(ValueError, match="non-decreasing"):
        kernels.chunk_state(w, u, kg, e_last, torch.tensor([1, 0, 1], dtype=torch.int32))
    with pytest.raises(_native.KernelError, match="`chunk_offsets` must be int32"):
        kernels.chunk_state(w, u, kg, e_last, offsets.long())
    with pytest.raises(_native.KernelError, match="`e_last`"):
        kernels.chunk_state(w, u, kg, e_last[..., :3], offsets)
    with pytest.raises(_native.KernelError, match="`u`"):
        kernels.chunk_state(w, u[:, :, :32], kg, e_last, offsets)
    with pytest.raises(_native.KernelError, match="`h0` must be"):
        kernels.chunk_state(w, u, kg, e_last, offsets, s0[..., :32])
    with pytest.raises(_native.KernelError, match="multiples of 16"):
        kernels.chunk_state(w[..., :40], u, kg[..., :40], e_last[..., :40], offsets)
    with pytest.raises(_native.KernelError, match="BT"):
        kernels.chunk_state(w[:, :, :48], u[:, :, :48], kg[:, :, :48], e_last, offsets)
    # The C entry point itself refuses float32 Cube inputs with the reason.
    lib = _native.load_library()
    outs = kernels.chunk_state(w, u, kg, e_last, offsets)
    descs = [_native.tensor_desc(t) for t in (w, u, kg, e_last, offsets, None, *outs)]
    with pytest.raises(_native.KernelError, match="float32 `w` and `kg` are not supported"):
        _native.run_two_phase(lib, kernels.chunk_state.entry, tuple(_native.ref(d) for d in descs) + (0,), w.device)
    check_chunk_layout_limits(kernels.chunk_state)


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/chunk_state/tests/), from the session's native build."""
    run_tiling_unit_test(native_build, "chunk_state")
