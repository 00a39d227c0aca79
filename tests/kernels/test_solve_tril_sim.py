"""Second half of stage 2 (csrc/solve_tril/): Akk = (I + L)^-1 per (chunk, head), the 16 x 16
diagonal blocks inverted on the vector unit and the blocks below them merged on the Cube, run on the
host simulation of Ascend C through the installed library and fla_npu.runtime.

Against the float64 triangular solve (``torch.linalg.solve_triangular``, as the reference stage
``chunk_fwd.chunk_intra_fwd``) on L as the model forms it (``beta * (k k^T) * decay`` below the
diagonal, l2-normalised keys, beta in (0, 1): never zero, well conditioned), with junk (NaN, Inf,
large values) on and above the diagonal to show that it is never read; relative RMS within the
output dtype's tolerance (fla_npu/testing.py); outputs NaN-poisoned before the launch
(tests/conftest.py); exact zeros above the diagonal and ones on it; bit-identical for 1, 3 and 16
AI cores; hazard checker clean (a hazard fails the launch); GM bytes and Cube multiply-adds from the
counters.
"""

from __future__ import annotations

import pytest
import torch

from fla_npu.ops.common import chunk_fwd as fwd
from fla_npu.ops.common.chunk_plan import ChunkPlan
from fla_npu.ops.common.decay import ChunkDecay
from fla_npu.runtime import _native, kernels
from fla_npu.testing import check_close, rel_rms

import sim_helpers
from sim_helpers import run_tiling_unit_test

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


def _make_L(NC, HV, BT, K=64, seed=0, junk=True):
    """L [NC, HV, BT, BT] float32 as stage 2 forms it: beta_i (k_i . k_j) exp(G_i - G_j) for j < i
    (G a decreasing cumsum per row), and junk on and above the diagonal when ``junk``."""
    gen = torch.Generator().manual_seed(seed)
    k = torch.nn.functional.normalize(torch.randn(NC, HV, BT, K, generator=gen, dtype=torch.float64), dim=-1)
    beta = torch.rand(NC, HV, BT, 1, generator=gen, dtype=torch.float64) * 0.98 + 0.01
    G = torch.cumsum(-torch.rand(NC, HV, BT, generator=gen, dtype=torch.float64) * 0.1 - 0.005, -1)
    L = torch.tril(beta * (k @ k.transpose(-1, -2)) * torch.exp(G[..., :, None] - G[..., None, :]), -1).float()
    if junk:
        upper = torch.triu(torch.ones(BT, BT, dtype=torch.bool))
        noise = torch.randn(NC, HV, BT, BT, generator=gen) * 1e6
        noise.view(-1)[::7] = float("nan")
        noise.view(-1)[3::11] = float("inf")
        L = torch.where(upper, noise, L)
    return L


def _gold(L):
    """(I + strictly-lower(L))^-1 in float64."""
    BT = L.shape[-1]
    eye = torch.eye(BT, dtype=torch.float64)
    Ls = torch.tril(torch.nan_to_num(L.double(), nan=0.0, posinf=0.0, neginf=0.0), -1)
    return torch.linalg.solve_triangular(Ls + eye, eye.expand_as(Ls), upper=False, unitriangular=True)


def _check_structure(A):
    """Exact zeros above the diagonal, exact ones on it."""
    BT = A.shape[-1]
    upper = torch.triu(torch.ones(BT, BT, dtype=torch.bool), 1)
    assert (A.float()[..., upper] == 0).all(), "the upper triangle is not exact zeros"
    assert (torch.diagonal(A.float(), dim1=-2, dim2=-1) == 1).all(), "the diagonal is not exact ones"


@pytest.mark.parametrize("out_dtype", [FP32, FP16, BF16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("BT", [16, 32, 64])
def test_matches_float64_solve(BT, out_dtype):
    L = _make_L(5, 3, BT, seed=BT)  # 15 units: not a multiple of the AI cores
    A = kernels.solve_tril(L, out_dtype)
    launch = kernels.solve_tril.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    assert A.dtype == out_dtype and A.shape == L.shape and torch.isfinite(A).all(), "an element was not written (NaN-poisoned)"
    _check_structure(A)
    ref = _gold(L)
    err = check_close(f"Akk BT={BT}", A, ref, out_dtype)
    if out_dtype == FP32:  # fp32 substitution and fp32 Cube products: a few ulps
        assert err < 1e-7, err
    else:  # computed in fp32, rounded once on write: the error is that of rounding the gold
        assert err <= 1.02 * rel_rms(ref.to(out_dtype), ref) + 1e-7, err
    t = kernels.solve_tril.last_tiling()
    assert (t["NC"], t["HV"], t["BT"], t["nb"]) == (5, 3, BT, BT // 16)


def test_matches_reference_stage_on_model_inputs():
    """L from the reference's own decay (KDA, per-key gate, tails) and its Akk (stage 2 in float64)."""
    B, T, HV, K, BT = 2, 100, 2, 64, 64
    gen = torch.Generator().manual_seed(7)
    plan = ChunkPlan.build(B, T, BT, None, "cpu")
    k = plan.to_chunks(torch.nn.functional.normalize(torch.randn(B, T, HV, K, generator=gen, dtype=torch.float64), dim=-1))
    beta = plan.to_chunks(torch.rand(B, T, HV, generator=gen, dtype=torch.float64))
    g = plan.to_chunks(-torch.rand(B, T, HV, K, generator=gen, dtype=torch.float64) * 0.2 - 0.01)
    decay = ChunkDecay(plan.fill_padding(fwd.chunk_local_cumsum(g, torch.float64)), torch.float64)
    L = beta.unsqueeze(-1) * decay.tril(k, k, diagonal=False)
    _, Akk = fwd.chunk_intra_fwd(k, k, beta, decay)
    A = kernels.solve_tril(L.float())
    assert kernels.solve_tril.last_launch().ok
    err = check_close("Akk (reference stage)", A, Akk, FP32)
    assert err < 1e-6, err


def test_core_count_invariance(monkeypatch):
    """1, 3 and 16 AI cores give bit-identical outputs."""
    L = _make_L(7, 3, 64, seed=3)
    outs = []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))  # vector cores: two per AI core
        outs.append(kernels.solve_tril(L, BF16))
        assert kernels.solve_tril.last_tiling()["block_dim"] == min(cores, 21)
        launch = kernels.solve_tril.last_launch()
        assert launch.ok and len(launch.cores) == 3 * kernels.solve_tril.last_tiling()["block_dim"]
    for o in outs[1:]:
        assert torch.equal(o, outs[0])


def _expected_counters(units, BT, out_bytes):
    """GM bytes the kernel moves and its Cube multiply-adds, from its algorithm (solve_tril_tiling.h).
    L: the AIVs read the diagonal blocks, the AIC the blocks below them (each element once, the upper
    blocks never); Akk written once; the slot: sim_helpers.inverse_merge_counters."""
    nb, f = BT // 16, 4
    read_l = units * (nb * 256 + sum(16 * 16 * i for i in range(1, nb))) * f
    write_akk = units * BT * BT * out_bytes
    ws, macs = sim_helpers.inverse_merge_counters(BT)
    return read_l + write_akk + units * ws, units * macs


@pytest.mark.parametrize("BT", [16, 32, 64])
def test_gm_bytes_and_cube_macs(BT):
    L = _make_L(3, 5, BT, seed=11)
    kernels.solve_tril(L, FP16)
    tot = kernels.solve_tril.last_launch().totals
    gm, macs = _expected_counters(15, BT, 2)
    assert tot.gm_to_local_bytes + tot.local_to_gm_bytes == gm
    assert tot.cube_macs == macs


def test_counters_production_shape():
    """The numbers the report states: NC = 8, HV = 4, BT = 64, fp32 and bf16 Akk. Compulsory: L read
    once, Akk written once. Cube share: Cube multiply-adds against all of the vector unit's element
    operations (the substitutions' multiply-adds, Brcb, casts, fills)."""
    L = _make_L(8, 4, 64, seed=5)
    rows = []
    for od in (FP32, BF16):
        kernels.solve_tril(L, od)
        tot = kernels.solve_tril.last_launch().totals
        ob = torch.empty(0, dtype=od).element_size()
        minimum = L.numel() * 4 + L.numel() * ob
        ratio = (tot.gm_to_local_bytes + tot.local_to_gm_bytes) / minimum
        share = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
        rows.append((od, ratio, share, tot.cube_macs, tot.vector_elem_ops))
        print(f"solve_tril BT=64 {od}: GM bytes / minimum {ratio:.3f}, Cube MACs {tot.cube_macs}, "
              f"vector element ops {tot.vector_elem_ops}, Cube share {share:.3f}")
    assert [(round(r, 3), round(s, 3)) for _, r, s, _, _ in rows] == [(1.875, 0.779), (2.167, 0.780)], rows


def test_no_chunk_launches_nothing():
    L = _make_L(1, 2, 64)
    A = kernels.solve_tril(L[:0])
    assert A.shape == (0, 2, 64, 64) and kernels.solve_tril.last_launch() is None


def test_refusals():
    L = _make_L(1, 2, 64)
    with pytest.raises(_native.KernelError, match="`l` must be float32"):
        kernels.solve_tril(L.half())
    with pytest.raises(_native.KernelError, match="`akk` must be float32, float16 or bfloat16"):
        kernels.solve_tril(L, torch.int32)
    with pytest.raises(_native.KernelError, match="BT must be 16, 32 or 64"):
        kernels.solve_tril(_make_L(1, 2, 48))
    with pytest.raises(_native.KernelError, match=r"\[NC, HV, BT, BT\]"):
        kernels.solve_tril(L[..., :32])
    with pytest.raises(_native.KernelError, match="4-D"):
        kernels.solve_tril(L[0])
    unsupported = kernels.solve_tril.unsupported
    assert unsupported(BF16, 64) and unsupported(FP32, 128) and unsupported(FP32, 64, out_dtype=torch.int32)
    assert unsupported(FP32, 64) is None and unsupported(FP32, 16, out_dtype=BF16) is None


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/solve_tril/tests/), from the session's native build."""
    run_tiling_unit_test(native_build, "solve_tril")
