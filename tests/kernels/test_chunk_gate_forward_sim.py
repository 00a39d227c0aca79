"""KDA's chunked forward, stages 1 to 5 in one launch (csrc/chunk_state/chunk_gate_forward*): the one-launch
forward whose vector cores form G and e_last from the raw gate, run on the host simulation through the
installed library and fla_npu.runtime.

The launch must give, bit for bit, what the two launches it replaces give: chunk_gate_intra (G formed
with the same operations in the same order, Aqk and Akk diag(beta) in the Cube dtype) followed by
chunk_state_output on its G and e_last (both are checked against the float64 reference in their own
tests; the chain's tests check the op against the float64 gold). Inputs in the chunk layout from token
tensors (``ChunkPlan``: tails, varlen with one-token and empty sequences), every gate form, float32
and 16-bit raw gates, GVA, chunk sizes 16, 32 and 64, K 64 to 128, gates strong enough for the exact
diagonal path, h0 and both state layouts; 1, 3 and 16 AI cores; the GM bytes (the raw gate read once,
no G); refusals with the caller's tensors untouched. Outputs NaN-poisoned before the launch
(tests/conftest.py); hazard checker clean (a hazard fails the launch).
"""

from __future__ import annotations

import pytest
import torch

from fla_npu.runtime import kernels
from fla_npu.runtime._native import KernelError

from sim_helpers import raw_gate_inputs

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32
LOWER_BOUND = -5.0


def _inputs(B, T, HV, HQ, K, V, BT, dtype, form, raw_dtype, cu=None, params=True, h0=False, v_first=False, seed=0):
    """raw_gate_inputs' (q, k, beta, g, A_log, dt_bias, plan) and v [NC, BT, HV, V] (token-major, in
    ``dtype``), the chunk lengths and offsets, h0 (float32, ``[N, HV, K, V]`` or ``[N, HV, V, K]``) or None."""
    q, k, beta, g, A_log, dt_bias, plan = raw_gate_inputs(B, T, HV, HQ, K, BT, dtype, form, raw_dtype, cu, params, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    v = plan.to_chunks(torch.randn(B, T, HV, V, generator=gen), token_major=True).to(dtype)
    counts = torch.tensor(plan.chunk_counts, dtype=torch.long)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)]).to(torch.int32)
    s0 = torch.randn(plan.num_seqs, HV, *((V, K) if v_first else (K, V)), generator=gen) * 0.5 if h0 else None
    return dict(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, lengths=plan.chunk_lengths(), offsets=offsets,
                h0=s0, v_first=v_first, form=form)


def _lower_bound(form):
    return LOWER_BOUND if form == "sigmoid" else None


def _launch(x, scale=0.25):
    o, final = kernels.chunk_gate_forward(x["q"], x["k"], x["v"], x["g"], x["beta"], x["lengths"], x["offsets"], x["form"],
                                          x["A_log"], x["dt_bias"], _lower_bound(x["form"]), x["h0"], True, scale,
                                          x["v_first"])
    launch = kernels.chunk_gate_forward.last_launch()
    assert launch is not None and launch.ok, launch and launch.error
    return o, final


def _two_launches(x, scale=0.25):
    """chunk_gate_intra (G, e_last, Aqk, Akk diag(beta), the rows' factors) then chunk_state_output."""
    q, k = x["q"], x["k"]
    Aqk, Akk, qs, ks, G, e_last = kernels.chunk_gate_intra(q, k, x["beta"], x["g"], x["lengths"], x["form"], x["A_log"],
                                                           x["dt_bias"], _lower_bound(x["form"]), True, scale, True)
    return kernels.chunk_state_output(q, k, x["v"], G, Akk, Aqk, e_last, x["offsets"], x["h0"], x["v_first"], qs, ks)


CASES = [  # (B, T, HV, HQ, K, V, BT, dtype, form, raw_dtype, cu, params, h0, v_first)
    pytest.param(2, 100, 2, 2, 128, 128, 64, BF16, "softplus", FP32, None, True, True, False,
                 id="softplus-bt64-k128-tail-h0-bf16-raw-f32"),
    pytest.param(1, 150, 4, 2, 64, 48, 32, FP16, "sigmoid", FP16, (0, 1, 1, 70, 150), True, True, True,
                 id="sigmoid-bt32-varlen-gva-vfirst-f16-raw-f16"),
    pytest.param(1, 90, 2, 2, 128, 64, 64, BF16, "sigmoid", BF16, None, False, False, False,
                 id="sigmoid-no-params-bt64-bf16-raw-bf16"),
    pytest.param(2, 40, 2, 1, 64, 64, 16, BF16, "none", FP32, None, True, True, False, id="none-strong-bt16-gva-h0-bf16"),
    pytest.param(1, 130, 2, 2, 96, 64, 64, FP16, "none", FP32, (0, 64, 65, 130), False, False, True,
                 id="none-strong-bt64-k96-varlen-vfirst-f16"),
    pytest.param(1, 70, 2, 2, 64, 32, 32, BF16, "softplus", FP32, None, True, False, False, id="softplus-bt32-v32-bf16"),
]
ARGS = "B,T,HV,HQ,K,V,BT,dtype,form,raw_dtype,cu,params,h0,v_first"


@pytest.mark.parametrize(ARGS, CASES)
def test_equals_the_two_launches(B, T, HV, HQ, K, V, BT, dtype, form, raw_dtype, cu, params, h0, v_first):
    x = _inputs(B, T, HV, HQ, K, V, BT, dtype, form, raw_dtype, cu, params, h0, v_first)
    o, final = _launch(x)
    t = kernels.chunk_gate_forward.last_tiling()
    assert (t["gate_in"], t["intra"], t["Kg"], t["groups"]) == (1, 1, K, HV // HQ)
    assert o.shape == x["v"].shape and o.dtype == dtype and final.dtype == FP32
    o2, final2 = _two_launches(x)
    assert torch.equal(o, o2) and torch.equal(final, final2)


def test_core_count_invariance(monkeypatch):
    """1, 3 and 16 AI cores: bit-identical o and final (the V split changes; each V block forms the
    chunk's gate and stage 2 alike)."""
    x = _inputs(1, 300, 1, 1, 64, 128, 32, BF16, "sigmoid", FP32, (0, 40, 41, 300), True, True, seed=3)
    outs, blocks = [], []
    for cores in (1, 3, 16):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * cores))
        outs.append(_launch(x))
        blocks.append(kernels.chunk_gate_forward.last_tiling()["num_vb"])
    assert blocks[0] == 1 and blocks[-1] > 1
    for o, final in outs[1:]:
        assert torch.equal(o, outs[0][0]) and torch.equal(final, outs[0][1])


def test_gm_bytes(monkeypatch):
    """NC = 16, HV = 4, BT = 64, K = V = 128, one V block per head on 4 cores, GVA (q and k with 2
    heads), a float32 raw gate: outside the workspace the launch reads q, k, v, the raw gate, beta and
    the chunk lengths once per unit, A_log and dt_bias once per vector core and head (and a few
    scalars), and writes o and final once: no G, no e_last, no Aqk or Akk in GM."""
    NC, HV, BT, K, V = 16, 4, 64, 128, 128
    x = _inputs(1, NC * BT, HV, 2, K, V, BT, BF16, "sigmoid", FP32, None, True, seed=5)
    monkeypatch.setenv("FLA_NPU_SIM_CORES", "8")
    _launch(x)
    assert kernels.chunk_gate_forward.last_tiling()["num_vb"] == 1
    tot = kernels.chunk_gate_forward.last_launch().totals
    chunks = NC * HV
    reads = chunks * (2 * BT * K * 2 + BT * V * 2 + BT * K * 4 + BT * 4)  # q, k, v, raw g, beta
    writes = chunks * BT * V * 2 + HV * K * V * 4
    outside = tot.gm_to_local_bytes + tot.local_to_gm_bytes - tot.ws_to_local_bytes - tot.local_to_ws_bytes
    params = 8 * HV * (4 + K * 4) + chunks * 2 * 4 + 4 * 64  # A_log, dt_bias per vector core and head; lengths
    assert reads + writes <= outside <= reads + writes + params, (outside, reads + writes)
    assert outside / (reads + writes) < 1.02


def test_refusals():
    x = _inputs(1, 64, 2, 2, 64, 64, 64, BF16, "softplus", FP32)
    before = [t.clone() for t in (x["q"], x["k"], x["v"], x["g"], x["beta"])]
    with pytest.raises(KernelError, match="`a_log`"):  # softplus needs it
        kernels.chunk_gate_forward(x["q"], x["k"], x["v"], x["g"], x["beta"], x["lengths"], x["offsets"], "softplus", None,
                                   x["dt_bias"])
    with pytest.raises(KernelError, match="`g`"):  # Gated DeltaNet's gate
        kernels.chunk_gate_forward(x["q"], x["k"], x["v"], x["g"][..., :1].contiguous(), x["beta"], x["lengths"],
                                   x["offsets"], "sigmoid")
    with pytest.raises(ValueError, match="`chunk_len` must lie in"):
        kernels.chunk_gate_forward(x["q"], x["k"], x["v"], x["g"], x["beta"], x["lengths"] + 100, x["offsets"], "sigmoid")
    y = _inputs(1, 64, 2, 2, 256, 64, 64, BF16, "sigmoid", FP32)
    with pytest.raises(KernelError, match="128"):
        kernels.chunk_gate_forward(y["q"], y["k"], y["v"], y["g"], y["beta"], y["lengths"], y["offsets"], "sigmoid")
    for t, t0 in zip((x["q"], x["k"], x["v"], x["g"], x["beta"]), before):
        assert torch.equal(t, t0)
