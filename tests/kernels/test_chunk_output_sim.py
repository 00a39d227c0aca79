"""Stage 5 kernel (csrc/chunk_output/): o = (q * 2^G) @ S + Aqk @ v_new per (chunk, head), mixed Cube +
vector, run on the host simulation of Ascend C through the installed library and fla_npu.runtime.

Against the reference stage (``chunk_fwd.output_fwd``) in float64 on the same inputs, relative RMS
within the dtype's tolerance (fla_npu/testing.py); the inputs are built in the chunk layout from
token tensors (``ChunkPlan``: tails and varlen, padding rows of tail chunks zero in q and Aqk as the
reference has them, and filled with junk in v_new to show it cannot leak into a token row); outputs
NaN-poisoned before the launch (tests/conftest.py); bit-identical for 1, 3 and 16 AI cores; hazard
checker clean (a hazard fails the launch); the GM bytes and Cube multiply-adds from the counters.
The chained forward runs stage 5 here when it keeps the chunk-start states (``return_intermediate_states``),
otherwise in the fused state + output kernel (tests/kernels/test_chunk_state_output_sim.py).
"""

from __future__ import annotations

from types import SimpleNamespace

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
    """Stage-5 inputs in the chunk layout: (q, G, S, Aqk, v_new, plan), q / S / Aqk / v_new in
    ``dtype``, G float32 as the kernel reads it (sim_helpers.kernel_gate: KDA token-major). Built as
    the chunked reference builds them: q and k from token tensors (padding rows zero), G the
    chunk-local cumsum of a decaying gate, Aqk = decay.tril(q, k)."""
    gen = torch.Generator().manual_seed(seed)
    cu_t = None if cu is None else torch.tensor(cu)
    plan = ChunkPlan.build(B, T, BT, cu_t, "cpu")
    Kg = K if per_key else 1
    q = plan.to_chunks(torch.randn(B, T, HV, K, generator=gen) * 0.5)
    k = plan.to_chunks(torch.randn(B, T, HV, K, generator=gen) * 0.5)
    g = plan.to_chunks(-torch.rand(B, T, HV, Kg, generator=gen) * 0.2 - 0.01)
    decay = ChunkDecay(fwd.chunk_local_cumsum(g, torch.float64), torch.float32)
    Aqk = decay.tril(q, k, diagonal=True)
    NC = plan.num_chunks
    v_new = torch.randn(NC, HV, BT, V, generator=gen)  # padding rows hold junk (the reference's are u - w S)
    S = torch.randn(NC, HV, K, V, generator=gen) * 0.3
    q = q.transpose(1, 2).contiguous()   # token-major [NC, BT, HV, K], as the kernel reads it
    return q.to(dtype), sim_helpers.kernel_gate(decay.G.contiguous()), S.to(dtype), Aqk.to(dtype), v_new.to(dtype), plan


def _reference(q, G, S, Aqk, v_new):
    """The reference stage in float64 on the kernel's inputs (2^G in float64)."""
    d = lambda t: t.double()  # noqa: E731
    q = q.transpose(1, 2)   # head-major, as the reference takes it
    return fwd.output_fwd(d(q), SimpleNamespace(e_row=torch.exp2(d(sim_helpers.reference_gate(G)))), d(S), d(Aqk), d(v_new))


def _gm_bytes(q, G, S, Aqk, v_new):
    """Compulsory minimum (each input read once, o written once in float32), the kernel's own (plus
    the workspace slot round trip of T(q * 2^G): written by the AIVs, read by the AIC) and the
    workspace bytes each way."""
    NC, BT, HV, K = q.shape
    V = v_new.shape[-1]
    minimum = sum(t.numel() * t.element_size() for t in (q, G, S, Aqk, v_new)) + NC * HV * BT * V * 4
    workspace = NC * HV * BT * K * q.element_size()
    return minimum, minimum + 2 * workspace, workspace


CASES = sim_helpers.HEADS_STAGE_CASES + [
    pytest.param(2, 90, 2, 128, 128, 64, False, BF16, None, id="gdn-bt64-k128-tail-bf16"),
]


@pytest.mark.parametrize("B,T,HV,K,V,BT,per_key,dtype,cu", CASES)
def test_matches_reference_stage(B, T, HV, K, V, BT, per_key, dtype, cu):
    q, G, S, Aqk, v_new, plan = _stage_inputs(B, T, HV, K, V, BT, per_key, dtype, cu)
    o = kernels.chunk_output(q, G, S, Aqk, v_new)
    launch = kernels.chunk_output.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    assert o.shape == (plan.num_chunks, BT, HV, V)   # token-major
    o = o.transpose(1, 2)                            # as the reference's [NC, HV, BT, V]
    ref = _reference(q, G, S, Aqk, v_new)
    assert o.dtype == FP32 and torch.isfinite(o).all(), "an output element was not written (NaN-poisoned)"
    check_close("o (chunk layout, padding rows included)", o, ref, dtype)
    # Token rows only, as the op uses them: the padding rows' junk in v_new did not leak.
    check_close("o (token rows)", plan.from_chunks(o), plan.from_chunks(ref), dtype)
    t = kernels.chunk_output.last_tiling()
    assert (t["NC"], t["HV"], t["BT"], t["K"], t["V"], t["Kg"]) == (plan.num_chunks, HV, BT, K, V, K if per_key else 1)
    # o written in the Cube type: the float32 result rounded once (Fixpipe's F322F16 / F322BF16)
    o_t = kernels.chunk_output(q, G, S, Aqk, v_new, out_dtype=dtype).transpose(1, 2)
    assert o_t.dtype == dtype and torch.equal(o_t, o.to(dtype))


def test_core_count_invariance_and_counters(monkeypatch):
    """1, 3 and 16 AI cores give bit-identical outputs; GM bytes and Cube share from the counters."""
    q, G, S, Aqk, v_new, _ = _stage_inputs(2, 150, 3, 128, 128, 64, True, BF16, seed=3)
    outs = []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))  # vector cores: two per AI core
        outs.append(kernels.chunk_output(q, G, S, Aqk, v_new))
        assert kernels.chunk_output.last_tiling()["block_dim"] == min(cores, q.shape[0] * q.shape[2])
        launch = kernels.chunk_output.last_launch()
        assert launch.ok and len(launch.cores) == 3 * kernels.chunk_output.last_tiling()["block_dim"]
        NC, BT, HV, K = q.shape
        V = v_new.shape[-1]
        minimum, expected, workspace = _gm_bytes(q, G, S, Aqk, v_new)
        tot = launch.totals
        assert tot.gm_to_local_bytes + tot.local_to_gm_bytes == expected
        assert (tot.ws_to_local_bytes, tot.local_to_ws_bytes) == (workspace, workspace)
        assert tot.cube_macs == NC * HV * BT * V * (K + BT)  # both products, all on the Cube
        cube_share = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
        assert cube_share > 0.97, cube_share
    for o in outs[1:]:
        assert torch.equal(o, outs[0])
    # The numbers the README states (KDA, bf16, BT 64, K = V = 128).
    assert round(expected / minimum, 2) == 1.24


@pytest.mark.parametrize("per_key,expect_ratio,expect_share", [(True, 1.235, 0.980), (False, 1.307, 0.984)])
def test_gm_bytes_and_cube_share_production_head(per_key, expect_ratio, expect_share):
    q, G, S, Aqk, v_new, _ = _stage_inputs(1, 128, 2, 128, 128, 64, per_key, BF16, seed=5)
    kernels.chunk_output(q, G, S, Aqk, v_new)
    tot = kernels.chunk_output.last_launch().totals
    minimum, _, _ = _gm_bytes(q, G, S, Aqk, v_new)
    ratio = (tot.gm_to_local_bytes + tot.local_to_gm_bytes) / minimum
    share = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
    assert round(ratio, 3) == expect_ratio and round(share, 3) == expect_share, (ratio, share)


def test_no_chunk_launches_nothing():
    q, G, S, Aqk, v_new, _ = _stage_inputs(1, 64, 2, 64, 64, 64, True, BF16)
    o = kernels.chunk_output(q[:0], G[:0], S[:0], Aqk[:0], v_new[:0])
    assert o.shape == (0, 64, 2, 64) and kernels.chunk_output.last_launch() is None


def test_refusals():
    q, G, S, Aqk, v_new, _ = _stage_inputs(1, 64, 2, 64, 64, 64, True, BF16)
    with pytest.raises(_native.KernelError, match="float32 Cube inputs are not supported"):
        kernels.chunk_output(q.float(), G, S.float(), Aqk.float(), v_new.float())
    with pytest.raises(_native.KernelError, match="one dtype"):
        kernels.chunk_output(q, G, S, Aqk.half(), v_new)
    with pytest.raises(_native.KernelError, match="`g` must be float32"):
        kernels.chunk_output(q, G.bfloat16(), S, Aqk, v_new)
    with pytest.raises(_native.KernelError, match="one dtype"):
        kernels.chunk_output(q, G, S.float(), Aqk, v_new)
    with pytest.raises(_native.KernelError, match="`out` must be float32 or the dtype of `q`"):
        kernels.chunk_output(q, G, S, Aqk, v_new, out_dtype=torch.float16)
    with pytest.raises(_native.KernelError, match=r"`s` must be \[NC, HV, K, V\]"):
        kernels.chunk_output(q, G, S[..., :32], Aqk, v_new)
    with pytest.raises(_native.KernelError, match="multiples of 16"):
        kernels.chunk_output(q[..., :40], G[..., :40], S[:, :, :40], Aqk, v_new)
    sim_helpers.check_chunk_layout_limits(kernels.chunk_output)


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/chunk_output/tests/), from the session's native build."""
    sim_helpers.run_tiling_unit_test(native_build, "chunk_output")


@pytest.mark.parametrize("per_key", [True, False], ids=["kda", "gdn"])
def test_gva_reads_q_by_head_group(per_key):
    """GVA: q with HV / groups heads, value head h reading head h // groups: the result is that of
    the call on q expanded to the value heads, bit for bit."""
    q, G, S, Aqk, v_new, _ = _stage_inputs(1, 100, 4, 64, 32, 32, per_key, BF16, seed=2)
    qs = q[:, :, ::2].contiguous()
    o = kernels.chunk_output(qs, G, S, Aqk, v_new, out_dtype=BF16)
    assert kernels.chunk_output.last_tiling()["groups"] == 2
    assert torch.equal(o, kernels.chunk_output(qs.repeat_interleave(2, 2), G, S, Aqk, v_new, out_dtype=BF16))
    with pytest.raises(_native.KernelError, match="GVA"):
        kernels.chunk_output(q[:, :, :3].contiguous(), G, S, Aqk, v_new)
