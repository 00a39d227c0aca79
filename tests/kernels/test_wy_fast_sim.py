"""Stage 3 kernel (csrc/wy_fast/): w = Akk @ (beta k e_row), u = Akk @ (beta v), kg = k e_tail per
(chunk, head), e_row = 2^G and e_tail = 2^(G_last - G) formed from the gate cumsum G; mixed Cube +
vector, run on the host simulation of Ascend C through the installed library and fla_npu.runtime.

Against the reference stage (``chunk_fwd.wy_fwd``) in float64 on the same inputs, relative RMS within
the dtype's tolerance (fla_npu/testing.py); the inputs are built in the chunk layout from token
tensors as the chunked reference builds them (``ChunkPlan``: tails and varlen; ``Akk`` from stage 2
on those keys, so that token rows never read padding rows; padding rows of ``v`` filled with junk to
show it cannot leak into a token row); outputs NaN-poisoned before the launch (tests/conftest.py);
bit-identical for 1, 3 and 16 AI cores; hazard checker clean (a hazard fails the launch); GM bytes
and Cube multiply-adds from the counters. The chained forward runs stage 3 here when it keeps the
chunk-start states (``return_intermediate_states``: tests/kernels/test_chunk_chain_sim.py), otherwise
in the fused WY + state + output kernel (tests/kernels/test_chunk_state_output_sim.py).
"""

from __future__ import annotations

import pytest
import torch

from fla_npu.ops.common import chunk_fwd as fwd
from fla_npu.ops.common.chunk_plan import ChunkPlan
from fla_npu.ops.common.decay import ChunkDecay
from fla_npu.runtime import _native, kernels
from fla_npu.testing import check_close

import sim_helpers

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


def _stage_inputs(B, T, HV, K, V, BT, per_key, dtype, cu=None, seed=0):
    """Stage-3 inputs in the chunk layout: (k, v, beta, Akk, G, plan), k / v / Akk in ``dtype`` (k and v
    token-major [NC, BT, HV, D], as the kernel reads them), the rest float32 head-major but G as the
    kernel reads it (sim_helpers.kernel_gate: KDA token-major); Akk from stage 2 of the reference on
    these keys."""
    gen = torch.Generator().manual_seed(seed)
    cu_t = None if cu is None else torch.tensor(cu)
    plan = ChunkPlan.build(B, T, BT, cu_t, "cpu")
    Kg = K if per_key else 1
    k = torch.nn.functional.normalize(torch.randn(B, T, HV, K, generator=gen), dim=-1)
    k = plan.to_chunks(k)
    beta = plan.to_chunks(torch.rand(B, T, HV, generator=gen))
    g = plan.to_chunks(-torch.rand(B, T, HV, Kg, generator=gen) * 0.2 - 0.01)
    decay = ChunkDecay(plan.fill_padding(fwd.chunk_local_cumsum(g, torch.float64)), torch.float32)
    _, Akk = fwd.chunk_intra_fwd(k, k, beta, decay)
    v = plan.to_chunks(torch.randn(B, T, HV, V, generator=gen))
    v = v + _padding_mask(plan, v) * 7.0  # junk in the padding rows
    tm = lambda x: x.transpose(1, 2).contiguous()  # noqa: E731  (token-major)
    return tm(k.to(dtype)), tm(v.to(dtype)), beta.contiguous(), Akk.to(dtype), sim_helpers.kernel_gate(decay.G.contiguous()), plan


def _padding_mask(plan, xc):
    """1 on the padding rows of the chunk layout, 0 on token rows (broadcast over the last axis)."""
    return 1.0 - plan.to_chunks(plan.from_chunks(torch.ones_like(xc[..., :1])))


def _reference(k, v, beta, Akk, G):
    """The reference stage in float64 on the kernel's inputs (the decay factors of G in float64)."""
    d = lambda t: t.double()  # noqa: E731
    k, v = k.transpose(1, 2), v.transpose(1, 2)   # head-major, as the reference takes them
    return fwd.wy_fwd(d(k), d(v), d(beta), ChunkDecay(d(sim_helpers.reference_gate(G)), torch.float64), d(Akk))


def _gm_bytes(k, v, beta, Akk, G):
    """Compulsory minimum (each input read once, w, u, kg written once) and the kernel's own: plus
    the workspace slot round trip of T(beta k e_row) and T(beta v) (written by the AIVs, read by the
    AIC) and the chunk's last row of G, which each AIV reads again (KDA: a row; GDN: one scalar)."""
    NC, BT, HV, K = k.shape
    V, Kg = v.shape[-1], G.shape[-1]
    minimum = sum(t.numel() * t.element_size() for t in (k, v, beta, Akk, G)) + NC * HV * BT * (2 * K + V) * 4
    return minimum, minimum + 2 * NC * HV * BT * (K + V) * k.element_size() + NC * HV * 2 * Kg * 4


CASES = sim_helpers.HEADS_STAGE_CASES + [
    pytest.param(1, 40, 1, 256, 128, 16, True, FP16, None, id="kda-bt16-k256-v128-fp16"),
    pytest.param(2, 90, 2, 128, 256, 64, False, BF16, None, id="gdn-bt64-k128-v256-tail-bf16"),
]


@pytest.mark.parametrize("B,T,HV,K,V,BT,per_key,dtype,cu", CASES)
def test_matches_reference_stage(B, T, HV, K, V, BT, per_key, dtype, cu):
    k, v, beta, Akk, G, plan = _stage_inputs(B, T, HV, K, V, BT, per_key, dtype, cu)
    w, u, kg = kernels.wy_fast(k, v, beta, Akk, G)
    launch = kernels.wy_fast.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    refs = _reference(k, v, beta, Akk, G)
    for name, x, ref in zip(("w", "u", "kg"), (w, u, kg), refs):
        assert x.dtype == FP32 and torch.isfinite(x).all(), f"{name}: an element was not written (NaN-poisoned)"
        # Token rows, as the op uses them: the padding rows' junk in v did not leak.
        check_close(f"{name} (token rows)", plan.from_chunks(x), plan.from_chunks(ref), dtype)
    # kg: one fp32 product of k and a factor the kernel forms in fp32 (Muls by ln 2, Exp): within a
    # few fp32 roundings of the float64 value (the exponent's rounding grows with |G_last - G| <= 20).
    assert torch.allclose(kg.double(), refs[2], rtol=2 ** -18, atol=0)
    t = kernels.wy_fast.last_tiling()
    assert (t["NC"], t["HV"], t["BT"], t["K"], t["V"], t["Kg"]) == (plan.num_chunks, HV, BT, K, V, K if per_key else 1)


@pytest.mark.parametrize("per_key,dtype", [(True, BF16), (False, FP16)], ids=["kda-bf16", "gdn-fp16"])
def test_w_and_kg_in_the_cube_type_are_the_float32_results_rounded_once(per_key, dtype):
    """out_dtype = the Cube type (what the state kernel reads): w and kg written by the kernel in it,
    each the float32 result rounded once (bit-identical to rounding the float32 outputs), u float32;
    w and kg's write bytes halve."""
    k, v, beta, Akk, G, _ = _stage_inputs(2, 100, 2, 64, 128, 32, per_key, dtype, seed=5)
    w32, u32, kg32 = kernels.wy_fast(k, v, beta, Akk, G)
    wrote32 = kernels.wy_fast.last_launch().totals.local_to_gm_bytes
    w, u, kg = kernels.wy_fast(k, v, beta, Akk, G, out_dtype=dtype)
    launch = kernels.wy_fast.last_launch()
    assert launch.ok, launch.error
    assert (w.dtype, u.dtype, kg.dtype) == (dtype, FP32, dtype)
    assert torch.equal(w, w32.to(dtype)) and torch.equal(kg, kg32.to(dtype)) and torch.equal(u, u32)
    assert wrote32 - launch.totals.local_to_gm_bytes == (w.numel() + kg.numel()) * (4 - w.element_size())


def test_core_count_invariance_and_counters(monkeypatch):
    """1, 3 and 16 AI cores give bit-identical outputs; GM bytes and Cube share from the counters."""
    k, v, beta, Akk, G, _ = _stage_inputs(2, 150, 3, 128, 128, 64, True, BF16, seed=3)
    outs = []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))  # vector cores: two per AI core
        outs.append(kernels.wy_fast(k, v, beta, Akk, G))
        assert kernels.wy_fast.last_tiling()["block_dim"] == min(cores, k.shape[0] * k.shape[2])
        launch = kernels.wy_fast.last_launch()
        assert launch.ok and len(launch.cores) == 3 * kernels.wy_fast.last_tiling()["block_dim"]
        NC, BT, HV, K = k.shape
        V = v.shape[-1]
        _, expected = _gm_bytes(k, v, beta, Akk, G)
        tot = launch.totals
        assert tot.gm_to_local_bytes + tot.local_to_gm_bytes == expected
        assert tot.cube_macs == NC * HV * BT * BT * (K + V)  # both products, all on the Cube
    for o in outs[1:]:
        for x, x0 in zip(o, outs[0]):
            assert torch.equal(x, x0)


@pytest.mark.parametrize("per_key,expect_ratio,expect_share", [(True, 1.386, 0.920), (False, 1.469, 0.947)])
def test_gm_bytes_and_cube_share_production_head(per_key, expect_ratio, expect_share):
    """The numbers the README states (bf16, BT 64, K = V = 128)."""
    k, v, beta, Akk, G, _ = _stage_inputs(1, 128, 2, 128, 128, 64, per_key, BF16, seed=5)
    kernels.wy_fast(k, v, beta, Akk, G)
    tot = kernels.wy_fast.last_launch().totals
    minimum, _ = _gm_bytes(k, v, beta, Akk, G)
    ratio = (tot.gm_to_local_bytes + tot.local_to_gm_bytes) / minimum
    share = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
    print(f"wy_fast {'KDA' if per_key else 'GDN'}: GM bytes / minimum {ratio:.3f}, Cube share {share:.3f}")
    assert round(ratio, 3) == expect_ratio and round(share, 3) == expect_share, (ratio, share)


def test_no_chunk_launches_nothing():
    k, v, beta, Akk, G, _ = _stage_inputs(1, 64, 2, 64, 64, 64, True, BF16)
    w, u, kg = kernels.wy_fast(k[:0], v[:0], beta[:0], Akk[:0], G[:0])
    assert w.shape == kg.shape == (0, 2, 64, 64) and u.shape == (0, 2, 64, 64) and kernels.wy_fast.last_launch() is None


def test_refusals():
    k, v, beta, Akk, G, _ = _stage_inputs(1, 64, 2, 64, 64, 64, True, BF16)
    with pytest.raises(_native.KernelError, match="float32 Cube inputs are not supported"):
        kernels.wy_fast(k.float(), v.float(), beta, Akk.float(), G)
    with pytest.raises(_native.KernelError, match="one dtype"):
        kernels.wy_fast(k, v, beta, Akk.half(), G)
    with pytest.raises(_native.KernelError, match="must be float32"):
        kernels.wy_fast(k, v, beta.bfloat16(), Akk, G)
    with pytest.raises(_native.KernelError, match="`w` and `kg` must have one dtype, float32 or the dtype of `k`"):
        kernels.wy_fast(k, v, beta, Akk, G, out_dtype=torch.float16)  # neither float32 nor k's dtype
    with pytest.raises(_native.KernelError, match=r"`beta` must be \[NC, HV, BT\]"):
        kernels.wy_fast(k, v, beta[..., :32], Akk, G)
    with pytest.raises(_native.KernelError, match=r"`g` must be \[NC, BT, HV, K\] \(KDA, token-major\) or \[NC, HV, BT, 1\]"):
        kernels.wy_fast(k, v, beta, Akk, G[..., :8])
    with pytest.raises(_native.KernelError, match="multiples of 16"):
        kernels.wy_fast(k[..., :40], v, beta, Akk, G[..., :40])
    sim_helpers.check_chunk_layout_limits(kernels.wy_fast)


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/wy_fast/tests/), from the session's native build."""
    sim_helpers.run_tiling_unit_test(native_build, "wy_fast")


@pytest.mark.parametrize("per_key", [True, False], ids=["kda", "gdn"])
def test_gva_reads_k_by_head_group(per_key):
    """GVA: k with HV / groups heads, value head h reading head h // groups: the results are those
    of the call on k expanded to the value heads, bit for bit."""
    k, v, beta, Akk, G, _ = _stage_inputs(1, 100, 4, 64, 32, 32, per_key, BF16, seed=2)
    ks = k[:, :, ::2].contiguous()
    out = kernels.wy_fast(ks, v, beta, Akk, G, out_dtype=BF16)
    assert kernels.wy_fast.last_tiling()["groups"] == 2 and out[0].shape == (k.shape[0], 4, 32, 64)
    ref = kernels.wy_fast(ks.repeat_interleave(2, 2), v, beta, Akk, G, out_dtype=BF16)
    for x, r in zip(out, ref):
        assert torch.equal(x, r)
    with pytest.raises(_native.KernelError, match="GVA"):
        kernels.wy_fast(k[:, :, :3].contiguous(), v, beta, Akk, G)
