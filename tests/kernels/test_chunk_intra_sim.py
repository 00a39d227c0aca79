"""Stage 2 kernel (csrc/chunk_intra/): the intra-chunk matrices Aqk and Akk = (I + L)^-1 per (chunk,
head), mixed Cube + vector, the triangular inverse in the same launch, run on the host simulation of
Ascend C through the installed library and fla_npu.runtime.

Against the reference stage in float64 (``ChunkDecay.tril`` as ``chunk_fwd.chunk_intra_fwd`` uses it,
on the same float32 G), relative RMS within the dtype's tolerance (fla_npu/testing.py), and exact
zeros above the diagonal; inputs built in the chunk layout from token tensors (``ChunkPlan``: tails
and varlen, padding rows of q and k zero and G filled with the chunk's last value, as the chunked
reference has them); gates mild (every diagonal block on the Cube), strong (per-step decays down to
the floor: diagonal blocks wider than the safe span, computed exactly on the vector unit, next to
mild heads) and all at the floor; outputs NaN-poisoned before the launch (tests/conftest.py);
bit-identical for 1, 3 and 16 AI cores; hazard checker clean (a hazard fails the launch); GM bytes
and Cube multiply-adds from the counters.
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
from sim_helpers import run_tiling_unit_test

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


def _stage_inputs(B, T, HV, K, BT, per_key, dtype, gate="mild", cu=None, seed=0):
    """Stage-2 inputs in the chunk layout: (q, k, beta, G, plan), q / k in ``dtype``, token-major
    [NC, BT, HV, K] as the kernel reads them (padding rows zero), beta float32 head-major, G (the
    chunk-local cumsum, padding rows the chunk's last value) float32 in natural-log units as the kernel reads it
    (sim_helpers.kernel_gate: KDA token-major)."""
    gen = torch.Generator().manual_seed(seed)
    cu_t = None if cu is None else torch.tensor(cu)
    plan = ChunkPlan.build(B, T, BT, cu_t, "cpu")
    Kg = K if per_key else 1
    q = plan.to_chunks(torch.randn(B, T, HV, K, generator=gen) * K ** -0.5, token_major=True)
    k = plan.to_chunks(torch.nn.functional.normalize(torch.randn(B, T, HV, K, generator=gen), dim=-1), token_major=True)
    beta = plan.to_chunks(torch.rand(B, T, HV, generator=gen))
    g = plan.to_chunks(fwd.clamp_gate(sim_helpers.step_gate(gate, B, T, HV, Kg, gen)))
    G = plan.fill_padding(fwd.chunk_local_cumsum(g, torch.float64)).float()
    return q.to(dtype), k.to(dtype), beta.contiguous(), sim_helpers.kernel_gate(G.contiguous()), plan


def _reference(q, k, beta, G):
    """The reference stage in float64 on the kernel's inputs: Aqk and Akk = (I + L)^-1
    (``chunk_fwd.chunk_intra_fwd``)."""
    q, k = q.transpose(1, 2), k.transpose(1, 2)   # head-major, as the reference takes them
    d = lambda t: t.double()  # noqa: E731
    return fwd.chunk_intra_fwd(d(q), d(k), d(beta), ChunkDecay(d(sim_helpers.reference_gate(G)), torch.float64))


def _check_outputs(Aqk, Akk, refs, dtype, what=""):
    """Aqk and Akk written everywhere (NaN-poisoned before), exact zeros above the lower triangle (Akk:
    ones on the diagonal), within ``dtype``'s tolerance of the float64 reference (the chunk layout,
    padding rows included: zero q and k there give zero rows of Aqk and identity rows of Akk)."""
    for name, x, ref, diag in (("Aqk", Aqk, refs[0], 1), ("Akk", Akk, refs[1], 1)):
        name += what
        assert torch.isfinite(x).all(), f"{name}: an element was not written (NaN-poisoned)"
        assert not x.triu(diag).any(), f"{name}: nonzero above the lower triangle"
        check_close(name, x, ref, dtype)
    assert torch.equal(torch.diagonal(Akk, dim1=-2, dim2=-1), torch.ones(Akk.shape[:-1], dtype=Akk.dtype))


def _gm_bytes(q, k, beta, G, out_dtype):
    """Compulsory minimum (q, k, beta, G read once, Aqk, Akk and the row factors written once) and, when every diagonal
    block goes through the Cube (mild gates), the kernel's own count, from its design
    (chunk_intra_tiling.h). KDA: the AIV owning blocks S (sub-block (I ^ (I >> 1)) & 1) reads G and k
    of the blocks in S (each block read by one AIV), q of them, and the first, middle and last rows of
    G of each block row I >= min(S) (they choose its reference row and hold it), and the AIVs write per
    I the operand rows (32 + 16 (I + 1), fp32) the AIC reads back; the AIC writes the columns left of the diagonal block
    to the outputs and the two 16 x 16 fp32 diagonal blocks to the workspace, which the AIV reads
    back. GDN: the AIC reads q and k and writes 2 BT x BT fp32 results; the AIV reads per block row
    the 32 x 16 (I + 1) it needs and g of the chunk. The inverse (BT > 16): L's blocks left of the
    diagonal into the inverse slot in fp32 (KDA: the AIC's Fixpipes; GDN: the AIVs' copies) and
    read back by the merges, plus the merges' own traffic (sim_helpers.inverse_merge_counters)."""
    NC, BT, HV, K = q.shape
    Kg, eb, ob, units, nb = G.shape[-1], q.element_size(), torch.finfo(out_dtype).bits // 8, NC * HV, BT // 16
    minimum = 2 * q.numel() * eb + beta.numel() * 4 + G.numel() * 4 + 2 * units * BT * BT * ob + 2 * NC * HV * BT * 4
    per_unit = 2 * BT * BT * ob + BT * 4 + 2 * BT * 4  # outputs, beta, q's and k's row factors (no GVA here)
    for i in range(nb):
        results = 32 * 16 * (i + 1) * 4
        if Kg == K:
            operands = (32 + 16 * (i + 1)) * K * 4
            per_unit += 16 * K * eb + 16 * K * (4 + eb) + 2 * operands + 2 * 2 * 16 * 16 * 4  # q; G, k; diagonals
        else:
            per_unit += results + BT * 4
    if Kg == K:
        for sub in (0, 1):
            owned = [i for i in range(nb) if (i ^ (i >> 1)) & 1 == sub]
            per_unit += (nb - min(owned)) * 3 * K * 4 if owned else 0
    else:
        per_unit += 2 * BT * K * eb + 2 * BT * BT * 4
    if nb > 1:
        below = sum(16 * 16 * i for i in range(1, nb)) * 4
        per_unit += 2 * below + sim_helpers.inverse_merge_counters(BT)[0]
    return minimum, units * per_unit


CASES = [  # (B, T, HV, K, BT, per_key, dtype, gate, out_dtype, cu)
    pytest.param(2, 100, 2, 128, 64, True, BF16, "mild", FP32, None, id="kda-bt64-k128-tail-bf16-mild"),
    pytest.param(1, 150, 2, 64, 64, True, FP16, "strong", FP32, None, id="kda-bt64-k64-fp16-strong"),
    pytest.param(2, 70, 2, 80, 32, True, BF16, "strong", BF16, None, id="kda-bt32-k80-bf16-strong-out-bf16"),
    pytest.param(1, 160, 2, 96, 32, True, FP16, "mild", FP16, (0, 1, 1, 70, 150, 160), id="kda-bt32-k96-varlen-fp16-out-fp16"),
    pytest.param(1, 90, 2, 128, 64, True, BF16, "floor", FP32, None, id="kda-bt64-k128-bf16-floor"),
    pytest.param(1, 40, 2, 64, 16, True, BF16, "strong", FP32, None, id="kda-bt16-k64-bf16-strong"),
    pytest.param(1, 70, 2, 256, 64, True, BF16, "strong", BF16, None, id="kda-bt64-k256-bf16-strong-out-bf16"),
    pytest.param(1, 100, 2, 64, 16, False, FP16, "mild", FP32, (0, 37, 37, 100), id="gdn-bt16-k64-varlen-fp16"),
    pytest.param(2, 90, 2, 128, 64, False, BF16, "strong", BF16, None, id="gdn-bt64-k128-tail-bf16-strong-out-bf16"),
    pytest.param(1, 70, 3, 96, 32, False, FP16, "floor", FP32, None, id="gdn-bt32-k96-fp16-floor"),
]


@pytest.mark.parametrize("B,T,HV,K,BT,per_key,dtype,gate,out_dtype,cu", CASES)
def test_matches_reference_stage(B, T, HV, K, BT, per_key, dtype, gate, out_dtype, cu):
    q, k, beta, G, plan = _stage_inputs(B, T, HV, K, BT, per_key, dtype, gate, cu)
    Aqk, Akk, *_ = kernels.chunk_intra(q, k, beta, G, aqk_dtype=out_dtype, akk_dtype=out_dtype)
    launch = kernels.chunk_intra.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    assert Aqk.dtype == Akk.dtype == out_dtype
    _check_outputs(Aqk, Akk, _reference(q, k, beta, G), dtype)
    t = kernels.chunk_intra.last_tiling()
    assert (t["NC"], t["HV"], t["BT"], t["K"], t["Kg"]) == (plan.num_chunks, HV, BT, K, K if per_key else 1)
    assert t["aqk_f32"] == t["akk_f32"] == (out_dtype == FP32)


@pytest.mark.parametrize("B,T,HV,K,BT,per_key,dtype,gate,out_dtype,cu", [CASES[i] for i in (0, 2, 4, 5, 7, 9)])
def test_akk_times_beta(B, T, HV, K, BT, per_key, dtype, gate, out_dtype, cu):
    """akk_beta (the fused state kernel's operand): Akk diag(beta), every block of it (the diagonal
    blocks scaled on the vector unit, the merged ones through the scaled transposes), against the
    float64 reference's Akk times beta's columns; its diagonal beta itself (rounded once), Aqk the
    bits of the plain call, the Cube's work unchanged."""
    q, k, beta, G, _ = _stage_inputs(B, T, HV, K, BT, per_key, dtype, gate, cu)
    A0, _, *_ = kernels.chunk_intra(q, k, beta, G, aqk_dtype=out_dtype, akk_dtype=out_dtype)
    plain = kernels.chunk_intra.last_launch().totals
    Aqk, Akk, *_ = kernels.chunk_intra(q, k, beta, G, aqk_dtype=out_dtype, akk_dtype=out_dtype, akk_beta=True)
    launch = kernels.chunk_intra.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    assert kernels.chunk_intra.last_tiling()["akk_beta"] == 1
    assert torch.equal(Aqk, A0)
    ref = _reference(q, k, beta, G)[1] * beta.double()[..., None, :]
    assert torch.isfinite(Akk).all(), "Akk: an element was not written (NaN-poisoned)"
    assert not Akk.triu(1).any(), "Akk: nonzero above the diagonal"
    check_close("Akk diag(beta)", Akk, ref, dtype)
    assert torch.equal(torch.diagonal(Akk, dim1=-2, dim2=-1), beta.to(out_dtype))
    assert launch.totals.cube_macs == plain.cube_macs


def _norm_factors(x, scale):
    """The factors of the rows of ``x`` (token-major [NC, BT, H, K]) in float64: ``scale`` over their l2
    norms (FLA's l2norm, eps 1e-6), head-major [NC, H, BT]."""
    return (scale * x.double().square().sum(-1).add(1e-6).rsqrt()).transpose(1, 2)


L2NORM_CASES = [  # (B, T, HV, HQ, K, BT, per_key, dtype, gate, cu): the Cube's diagonal blocks, the exact ones, GDN, GVA
    pytest.param(2, 100, 2, 2, 128, 64, True, BF16, "mild", None, id="kda-bt64-mild-bf16"),
    pytest.param(1, 150, 2, 2, 64, 64, True, FP16, "strong", None, id="kda-bt64-strong-fp16"),
    pytest.param(1, 100, 4, 2, 64, 32, True, BF16, "steep", (0, 1, 1, 60, 100), id="kda-bt32-steep-varlen-gva"),
    pytest.param(2, 90, 2, 2, 128, 64, False, BF16, "strong", None, id="gdn-bt64-strong-bf16"),
    pytest.param(1, 100, 4, 1, 64, 16, False, FP16, "mild", (0, 37, 37, 100), id="gdn-bt16-varlen-gva-fp16"),
    # K 16, BT 64: the spread k k^T diagonal (8 BT floats) outgrows KDA's reference rows (3 K BT / 16)
    pytest.param(1, 70, 2, 2, 16, 64, False, FP16, "mild", None, id="gdn-bt64-k16-fp16"),
]


@pytest.mark.parametrize("B,T,HV,HQ,K,BT,per_key,dtype,gate,cu", L2NORM_CASES)
def test_l2norm_and_scale_of_q_and_k(B, T, HV, HQ, K, BT, per_key, dtype, gate, cu):
    """qk_l2norm and scale (the chain's pre-processing, done by the kernel): every row of q and k times
    its factor (scale / |q_i|, 1 / |k_j|) in float32 before anything is rounded, on every path (the
    Cube's factored blocks, the exact diagonal blocks, GDN's scaled results; GDN's key norms from the
    Cube's k k^T), GVA's factors per q / k head: against the reference stage in float64 on the
    normalised rows; the factors returned (every row written, NaN-poisoned before) within float32's
    tolerance of theirs in float64. Without qk_l2norm: scale for q, 1 for k, and at scale 1 the
    results of unscaled rows."""
    q, k, beta, G, plan = _stage_inputs(B, T, HV, K, BT, per_key, dtype, gate, cu)
    q, k = (x[:, :, ::HV // HQ].contiguous() * 3 for x in (q, k))   # HQ heads, rows of norm ~3
    scale = K ** -0.5
    Aqk, Akk, fq, fk = kernels.chunk_intra(q, k, beta, G, True, scale, aqk_dtype=dtype)
    launch = kernels.chunk_intra.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    t = kernels.chunk_intra.last_tiling()
    assert t["qk_l2norm"] == 1 and t["scale"] == pytest.approx(scale)
    ref_fq, ref_fk = _norm_factors(q, scale), _norm_factors(k, 1.0)
    assert fq.shape == fk.shape == (q.shape[0], HQ, BT) and fq.dtype == fk.dtype == FP32
    check_close("q_scale", fq, ref_fq, FP32)
    check_close("k_scale", fk, ref_fk, FP32)
    scaled = lambda x, f: x.double() * f.transpose(1, 2).unsqueeze(-1)  # noqa: E731
    groups = HV // HQ
    refs = _reference(*(x.repeat_interleave(groups, 2) for x in (scaled(q, ref_fq), scaled(k, ref_fk))), beta, G)
    _check_outputs(Aqk, Akk, refs, dtype)
    # no l2norm: the factors are scale and 1; at scale 1 the results of the rows as given
    _, _, fq2, fk2 = kernels.chunk_intra(q, k, beta, G, False, 0.25, aqk_dtype=dtype)
    assert torch.equal(fq2, torch.full_like(fq2, 0.25)) and torch.equal(fk2, torch.ones_like(fk2))
    A1, Akk1, *_ = kernels.chunk_intra(q, k, beta, G, False, 1.0, aqk_dtype=dtype)
    _check_outputs(A1, Akk1, _reference(*(x.repeat_interleave(groups, 2) for x in (q, k)), beta, G), dtype, " (scale 1)")


@pytest.mark.parametrize("per_key,dtype", [(True, BF16), (False, FP16)], ids=["kda-bf16", "gdn-fp16"])
def test_outputs_in_the_cube_type(per_key, dtype):
    """The chain's call: Aqk and Akk in the Cube type (what the fused state kernel's Cube reads), each the
    float32 result rounded once (bit-identical to rounding the float32 outputs); each one's write bytes
    halve."""
    q, k, beta, G, _ = _stage_inputs(2, 100, 2, 64, 64, per_key, dtype, "strong")
    A32, X32, *_ = kernels.chunk_intra(q, k, beta, G)
    wrote32 = kernels.chunk_intra.last_launch().totals.local_to_gm_bytes
    Aqk, Akk, *_ = kernels.chunk_intra(q, k, beta, G, aqk_dtype=dtype)
    wrote = kernels.chunk_intra.last_launch().totals.local_to_gm_bytes
    assert (Aqk.dtype, Akk.dtype) == (dtype, FP32) and torch.equal(Aqk, A32.to(dtype)) and torch.equal(Akk, X32)
    assert wrote32 - wrote == Aqk.numel() * (4 - Aqk.element_size())
    Aqk, Akk, *_ = kernels.chunk_intra(q, k, beta, G, aqk_dtype=dtype, akk_dtype=dtype)
    launch = kernels.chunk_intra.last_launch()
    assert launch.ok, launch.error
    assert Akk.dtype == dtype and torch.equal(Akk, X32.to(dtype)) and torch.equal(Aqk, A32.to(dtype))
    assert wrote32 - launch.totals.local_to_gm_bytes == 2 * Aqk.numel() * (4 - Aqk.element_size())
    t = kernels.chunk_intra.last_tiling()
    assert (t["aqk_f32"], t["akk_f32"]) == (0, 0)


def test_strong_gates_take_the_exact_path():
    """With strong gates the diagonal blocks of the strongly decaying heads exceed the safe span: the
    vector unit computes them (more vector work, same Cube work), and the result stays within the
    tolerance (a Cube product there would overflow: the floor alone spans 1443 log2 units a row)."""
    counts = {}
    for gate in ("mild", "strong"):
        q, k, beta, G, _ = _stage_inputs(1, 128, 2, 64, 64, True, BF16, gate, seed=4)
        Aqk, Akk, *_ = kernels.chunk_intra(q, k, beta, G)
        counts[gate] = kernels.chunk_intra.last_launch().totals
        _check_outputs(Aqk, Akk, _reference(q, k, beta, G), BF16, f" ({gate})")
    assert counts["strong"].cube_macs == counts["mild"].cube_macs
    assert counts["strong"].vector_elem_ops > 2 * counts["mild"].vector_elem_ops


def test_safe_span_either_dtype():
    """Diagonal blocks spanning 50 to 57 log2 units: the Cube takes them for bf16 and fp16 inputs alike
    (the operands are fp32: factors up to 2^57, no more vector work than mild gates), within each
    dtype's tolerance. Blocks spanning 78 to 87: still on the Cube, factored through their middle row
    (factors up to 2^47 either way)."""
    vector_ops = {}
    for dtype in (BF16, FP16):
        for gate in ("mild", "wide", "steep"):
            q, k, beta, G, _ = _stage_inputs(1, 128, 2, 128, 64, True, dtype, gate, seed=9)
            Aqk, Akk, *_ = kernels.chunk_intra(q, k, beta, G)
            vector_ops[dtype, gate] = kernels.chunk_intra.last_launch().totals.vector_elem_ops
            _check_outputs(Aqk, Akk, _reference(q, k, beta, G), dtype, f" ({dtype}, {gate})")
    assert len(set(vector_ops.values())) == 1, vector_ops


@pytest.mark.parametrize("per_key", [True, False], ids=["kda", "gdn"])
def test_core_count_invariance_and_counters(monkeypatch, per_key):
    """1, 3 and 16 AI cores give bit-identical outputs; GM bytes and Cube multiply-adds as designed."""
    q, k, beta, G, _ = _stage_inputs(2, 150, 3, 128, 64, per_key, BF16, "mild", seed=3)
    outs = []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))  # vector cores: two per AI core
        outs.append(kernels.chunk_intra(q, k, beta, G))
        assert kernels.chunk_intra.last_tiling()["block_dim"] == min(cores, q.shape[0] * q.shape[2])
        launch = kernels.chunk_intra.last_launch()
        assert launch.ok and len(launch.cores) == 3 * kernels.chunk_intra.last_tiling()["block_dim"]
        NC, BT, HV, K = q.shape
        _, expected = _gm_bytes(q, k, beta, G, FP32)
        tot = launch.totals
        assert tot.gm_to_local_bytes + tot.local_to_gm_bytes == expected
        # KDA: per block row I a 32 x K x 16 (I + 1) product; GDN: [q; k] (2 BT rows) times k^T; the merges.
        macs = sum(32 * K * 16 * (i + 1) for i in range(BT // 16)) if per_key else 2 * BT * BT * K
        macs += sim_helpers.inverse_merge_counters(BT)[1]
        assert tot.cube_macs == NC * HV * macs
    for o in outs[1:]:
        for x, x0 in zip(o, outs[0]):
            assert torch.equal(x, x0)
    # With qk_l2norm: KDA forms the norms from the rows it reads anyway; GDN's Cube also forms q q^T and
    # writes its 16 x 16 diagonal blocks, and per vector core with a block row the diagonals of k k^T
    # and q q^T are read (4 bytes a row each).
    kernels.chunk_intra(q, k, beta, G, True, 0.1)
    tot = kernels.chunk_intra.last_launch().totals
    extra = 0 if per_key else NC * HV * (BT * 16 * 4 + 2 * 2 * BT * 4)
    assert tot.gm_to_local_bytes + tot.local_to_gm_bytes == expected + extra
    assert tot.cube_macs == NC * HV * (macs + (0 if per_key else BT * BT * K))


@pytest.mark.parametrize("per_key,gate,expect_ratio,expect_share", [
    (True, "mild", 4.726, 0.831), (True, "strong", 5.057, 0.631),
    (False, "mild", 2.596, 0.962), (False, "strong", 2.596, 0.962)])
def test_gm_bytes_and_cube_share_production_head(per_key, gate, expect_ratio, expect_share):
    """The numbers the report states (bf16, NC 8, HV 4, BT 64, K 128, float32 outputs, the inverse in the
    launch (its merges' workspace round trips count: the minimum is Aqk and Akk written), q's and k's l2
    norms and scale in the kernel, as the chain calls it): GM bytes over the compulsory minimum, and
    the Cube's share of the multiply-adds (vector element operations counted as one multiply-add
    each)."""
    q, k, beta, G, _ = _stage_inputs(4, 128, 4, 128, 64, per_key, BF16, gate, seed=5)
    assert q.shape[0] == 8
    kernels.chunk_intra(q, k, beta, G, True, 128 ** -0.5)
    tot = kernels.chunk_intra.last_launch().totals
    minimum, _ = _gm_bytes(q, k, beta, G, FP32)
    ratio = (tot.gm_to_local_bytes + tot.local_to_gm_bytes) / minimum
    share = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
    print(f"chunk_intra {'KDA' if per_key else 'GDN'} {gate}: read {tot.gm_to_local_bytes} written {tot.local_to_gm_bytes} "
          f"minimum {minimum}, GM bytes / minimum {ratio:.3f}, Cube share {share:.3f}")
    assert round(ratio, 3) == expect_ratio and round(share, 3) == expect_share, (ratio, share)


def test_no_chunk_launches_nothing():
    q, k, beta, G, _ = _stage_inputs(1, 64, 2, 64, 64, True, BF16)
    Aqk, Akk, *_ = kernels.chunk_intra(q[:0], k[:0], beta[:0], G[:0])
    assert Aqk.shape == Akk.shape == (0, 2, 64, 64) and kernels.chunk_intra.last_launch() is None


def test_refusals():
    q, k, beta, G, _ = _stage_inputs(1, 64, 2, 64, 64, True, BF16)
    with pytest.raises(_native.KernelError, match="float32 Cube inputs are not supported"):
        kernels.chunk_intra(q.float(), k.float(), beta, G)
    with pytest.raises(_native.KernelError, match="one dtype"):
        kernels.chunk_intra(q, k.half(), beta, G)
    with pytest.raises(_native.KernelError, match="`beta`, `g`, `q_scale` and `k_scale` must be float32"):
        kernels.chunk_intra(q, k, beta.bfloat16(), G)
    with pytest.raises(_native.KernelError, match="float32 or the dtype of `q`"):
        kernels.chunk_intra(q, k, beta, G, akk_dtype=FP16)
    with pytest.raises(_native.KernelError, match=r"`beta` must be \[NC, HV, BT\]"):
        kernels.chunk_intra(q, k, beta[..., :32], G)
    with pytest.raises(_native.KernelError, match=r"`g` must be \[NC, BT, HV, K\] \(KDA, token-major\) or \[NC, HV, BT, 1\]"):
        kernels.chunk_intra(q, k, beta, G[..., :7])
    with pytest.raises(_native.KernelError, match="`g`"):   # KDA's G head-major
        kernels.chunk_intra(q, k, beta, sim_helpers.reference_gate(G).float().contiguous())
    with pytest.raises(_native.KernelError, match="multiple of 16"):
        kernels.chunk_intra(q[..., :40], k[..., :40], beta, G[..., :40])
    with pytest.raises(_native.KernelError, match="BT must be 16, 32 or 64"):
        kernels.chunk_intra(q[:, :48], k[:, :48], beta[:, :, :48], G[:, :48])
    unsupported = kernels.chunk_intra.unsupported
    assert unsupported(FP32, 64, 128) and unsupported(BF16, 128, 128) and unsupported(BF16, 64, 100)
    assert unsupported(BF16, 64, 128) is None and unsupported(FP16, 16, 256) is None


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/chunk_intra/tests/), from the session's native build."""
    run_tiling_unit_test(native_build, "chunk_intra")


@pytest.mark.parametrize("per_key", [True, False], ids=["kda", "gdn"])
def test_gva_reads_q_and_k_by_head_group(per_key):
    """GVA: q and k with HV / groups heads, value head h reading head h // groups: the results are
    those of the call on q and k expanded to the value heads, bit for bit."""
    q, k, beta, G, _ = _stage_inputs(1, 100, 4, 64, 32, per_key, BF16, "strong")
    qs, ks = q[:, :, ::2].contiguous(), k[:, :, ::2].contiguous()   # 2 q / k heads for 4 value heads
    A, X, *_ = kernels.chunk_intra(qs, ks, beta, G, aqk_dtype=BF16)
    assert kernels.chunk_intra.last_tiling()["groups"] == 2
    A_ref, X_ref, *_ = kernels.chunk_intra(qs.repeat_interleave(2, 2), ks.repeat_interleave(2, 2), beta, G, aqk_dtype=BF16)
    assert torch.equal(A, A_ref) and torch.equal(X, X_ref)
    with pytest.raises(_native.KernelError, match="GVA"):
        kernels.chunk_intra(q[:, :, :3].contiguous(), k[:, :, :3].contiguous(), beta, G)
