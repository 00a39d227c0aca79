"""Shared pieces of the simulated-kernel tests (tests/kernels/test_*_sim.py): the C++ unit tests of
an op's host tiling, run from the session's one native build; the spy that routes the public ops to the simulated
kernels and records the launches of one kernel; the checks shared by the chunk kernels' tests.

(Not named ``helpers``: the tests import tests/ops/helpers.py under that name.)
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import fla_npu
from fla_npu.ops.common import chunk_fwd as fwd
from fla_npu.ops.common.chunk_plan import ChunkPlan
from fla_npu.ops.common.chunk_tensors import expand_heads
from fla_npu.ops.common.decay import LN2, RCP_LN2, ChunkDecay
from fla_npu.runtime import routing

from helpers import Switches, check_chunk_op

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32

# The shapes both stage kernels over [K, V] heads (WY, output) are tested on, in the chunk layout of
# B sequences of T tokens (or varlen over cu): (B, T, HV, K, V, BT, per_key, dtype, cu)
HEADS_STAGE_CASES = [
    pytest.param(2, 100, 2, 64, 64, 64, True, BF16, None, id="kda-bt64-k64-tail-bf16"),
    pytest.param(1, 150, 2, 128, 128, 64, True, FP16, None, id="kda-bt64-k128-fp16"),
    pytest.param(2, 70, 3, 64, 128, 32, True, BF16, None, id="kda-bt32-k64-v128-bf16"),
    pytest.param(1, 160, 2, 128, 64, 32, False, FP16, (0, 1, 1, 70, 150, 160), id="gdn-bt32-varlen-fp16"),
    pytest.param(1, 40, 1, 256, 256, 16, False, BF16, None, id="gdn-bt16-k256-v256-bf16"),
]

# Public chunk-op calls that put one stage's kernel to use (the WY and the output kernels' tests):
# op, switches, chunk_size, cu_seqlens, dtype, K, V
STAGE_OP_CASES = [
    pytest.param("kda", Switches(gate="lower_bound", lower_bound=-5.0, safe_gate=True, beta_sigmoid=True, qk_l2norm=True),
                 64, None, BF16, 64, 64, id="kda-production-bf16-tail"),
    pytest.param("kda", Switches(gate="softplus", qk_l2norm=True), 32, (0, 1, 1, 70, 150), FP16, 32, 48,
                 id="kda-softplus-varlen-fp16-k32-v48"),
    pytest.param("gdn", Switches(gate="softplus", beta_sigmoid=True), 64, None, BF16, 64, 32, id="gdn-softplus-bf16-tail"),
    pytest.param("gdn", Switches(), 16, (0, 37, 37, 100), FP16, 32, 32, id="gdn-pregated-varlen-fp16-bt16"),
    pytest.param("kda", Switches(disable_recompute=True), 64, None, BF16, 32, 32, id="kda-keep-intermediates-bf16"),
]


def check_stage_op_case(op: str, sw: Switches, chunk_size: int, cu, dtype: torch.dtype, K: int = 32, V: int = 32,
                        seed: int = 11) -> None:
    """One public chunk op call against the float64 gold: ``chunk_kda`` or ``chunk_gated_delta_rule``,
    H = 2, HV = 4, dense (B = 2, T = 100) or varlen over ``cu`` (B = 1)."""
    fn = fla_npu.chunk_kda if op == "kda" else fla_npu.chunk_gated_delta_rule
    T = 100 if cu is None else cu[-1]
    B = 2 if cu is None else 1
    check_chunk_op(fn, op, B, T, 2, 4, K, V, sw.but(chunk_size=chunk_size), dtype,
                   cu_seqlens=None if cu is None else torch.tensor(cu), seed=seed)


def check_chunk_layout_limits(kernel) -> None:
    """What a router reads off a chunk-layout kernel taking (dtype, BT, K, V): float16 / bfloat16 Cube
    inputs, BT 16, 32 or 64, K and V multiples of 16 up to 256."""
    assert kernel.unsupported(FP32, 64, 128, 128) and kernel.unsupported(BF16, 128, 128, 128)
    assert kernel.unsupported(BF16, 64, 100, 128) and kernel.unsupported(BF16, 64, 128, 128) is None


def run_tiling_unit_test(native_build: Path, name: str) -> None:
    """Run <name>_tiling_test: csrc/<op>/tests/<name>_tiling_test.cpp with csrc/<op>/<name>_tiling.cpp
    (plain C++17, warnings as errors), built by the session's ``native_build`` fixture (tests/conftest.py).
    It must exit 0 (every check passed)."""
    r = subprocess.run([str(native_build / f"{name}_tiling_test")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def inverse_merge_counters(BT: int) -> tuple[int, int]:
    """Per unit, the workspace bytes and Cube multiply-adds of the inverse's merges
    (csrc/solve_tril/tril_inverse.h; solve_tril_tiling.h's algorithm), BT > 16: -X_bb (b > 0) and
    X_bb^T (b < nb - 1) written by the AIVs; per block row i (n = 16 i) XT's upper blocks, R^T (out and
    back in) and -X_ii read or written by the AIC, and XT's next column block (i < nb - 1). L's blocks
    are not counted here (solve_tril reads them from its input, chunk_intra from its workspace)."""
    nb, f = BT // 16, 4
    if nb == 1:
        return 0, 0
    ws, macs = 2 * (nb - 1) * 256 * f, 0
    for i in range(1, nb):
        n = 16 * i
        xt = sum(16 * (n - 16 * r) for r in range(i))
        ws += (xt + n * 16 + n * 16 + 256) * f
        macs += n * 16 * n + 16 * n * 16
        if i + 1 < nb:
            ws += n * 16 * f
            macs += n * 16 * 16
    return ws, macs


def record_launches(monkeypatch, module, name: str, *, before=None, after=None, calls: list | None = None) -> list:
    """Route the ops to the simulated kernels (FLA_NPU_CPU_IMPL=sim) and wrap ``module.<name>``: each
    call appends ``before(args, kwargs)`` before running the real function and/or
    ``after(args, kwargs)`` once it returned. Returns the list they are appended to (``calls``, given
    to record several functions' calls in one list)."""
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    calls = [] if calls is None else calls
    real = getattr(module, name)

    def spy(*args, **kwargs):
        if before is not None:
            calls.append(before(args, kwargs))
        out = real(*args, **kwargs)
        if after is not None:
            calls.append(after(args, kwargs))
        return out

    monkeypatch.setattr(module, name, spy)
    return calls


def check_float32_keeps_reference(launches: list, caplog, monkeypatch, stage: str) -> None:
    """A float32 chunk op: the kernel takes no fp32 Cube inputs, so ``stage`` (e.g. "stage 5: output")
    stays on the reference (nothing launched), logged once as a warning."""
    monkeypatch.setattr(routing, "_logged", set())  # earlier tests may have logged this choice already
    with caplog.at_level(logging.WARNING, logger="fla_npu"):
        check_chunk_op(fla_npu.chunk_kda, "kda", 1, 70, 1, 2, 32, 32, Switches(chunk_size=32), torch.float32, seed=2)
    assert launches == []
    assert any(stage in r.getMessage() and "float16 / bfloat16" in r.getMessage() for r in caplog.records)


def verify_sim_first_rows() -> list:
    """`fla-npu verify`'s sim implementation on the first bf16 non-decode case of each op (KDA, GDN):
    two rows, both passed. Returns them."""
    from fla_npu import verify

    impl = next(i for i in verify.implementations() if i.name == "sim")
    cases = []
    for op in verify.OPS:
        cases += [c for c in verify.build_cases(ops=(op,), quick=True) if c.kind != "decode"][:1]
    rows = verify.verify(cases, [impl], "bf16")
    assert len(rows) == 2 and all(r["passed"] for r in rows), rows
    return rows


def state_tokens(B, T, HV, K, V, per_key, gen, groups=1):
    """Token inputs of the state stage in float64: unit keys (HV / groups heads: GVA), values, betas in
    [0.1, 1), per-step log decays in [-0.21, -0.01) ([B, T, HV, K] for KDA, [B, T, HV, 1] for GDN)."""
    d = torch.float64
    k = torch.nn.functional.normalize(torch.randn(B, T, HV // groups, K, generator=gen, dtype=d), dim=-1)
    v = torch.randn(B, T, HV, V, generator=gen, dtype=d)
    beta = torch.rand(B, T, HV, generator=gen, dtype=d) * 0.9 + 0.1
    g = -torch.rand(B, T, HV, K if per_key else 1, generator=gen, dtype=d) * 0.2 - 0.01
    return k, v, beta, g


def step_gate(kind: str, B, T, HV, Kg, gen):
    """Per-step log decay (natural log) ``[B, T, HV, Kg]``: "mild" (within the safe span over any 16
    rows), "wide" (-2.3 to -2.6 per step: 50 to 57 log2 units over a 16-row block, inside bf16's safe
    span, outside fp16's), "steep" (-3.6 to -4.0 per step: 78 to 87 log2 units over a block, beyond
    bf16's safe span from the block's first row, within it from its middle row), "strong" (odd heads:
    down to -8 per step with 5 % at the floor, spans of hundreds of log2 units in a block; even heads
    mild) or "floor" (every step at GATE_FLOOR)."""
    mild = -torch.rand(B, T, HV, Kg, generator=gen) * 0.2 - 0.01
    if kind == "mild":
        return mild
    if kind == "wide":
        return -2.3 - torch.rand(B, T, HV, Kg, generator=gen) * 0.3
    if kind == "steep":
        return -3.6 - torch.rand(B, T, HV, Kg, generator=gen) * 0.4
    if kind == "floor":
        return torch.full_like(mild, fwd.GATE_FLOOR)
    strong = -torch.rand(B, T, HV, Kg, generator=gen) * 8.0
    strong = torch.where(torch.rand(strong.shape, generator=gen) < 0.05, torch.full_like(strong, fwd.GATE_FLOOR), strong)
    odd = (torch.arange(HV) % 2 == 1).view(1, 1, HV, 1)
    return torch.where(odd, strong, mild)


def raw_gate_inputs(B, T, HV, HQ, K, BT, dtype, form, raw_dtype, cu=None, params=True, seed=0):
    """(q, k, beta, g, A_log, dt_bias, plan): q, k token-major [NC, BT, HQ, K] in ``dtype``, beta
    [NC, HV, BT], the raw gate g token-major [NC, BT, HV, K] in ``raw_dtype`` (form "none": per-step log
    decays, the odd heads' strong enough to need the exact diagonal path; else raw values, |g| up to ~6)."""
    gen = torch.Generator().manual_seed(seed)
    plan = ChunkPlan.build(B, T, BT, None if cu is None else torch.tensor(cu), "cpu")
    q = plan.to_chunks(torch.randn(B, T, HQ, K, generator=gen) * K ** -0.5, token_major=True).to(dtype)
    k = plan.to_chunks(torch.nn.functional.normalize(torch.randn(B, T, HQ, K, generator=gen), dim=-1),
                       token_major=True).to(dtype)
    beta = plan.to_chunks(torch.rand(B, T, HV, generator=gen))
    if form == "none":
        raw = -torch.rand(B, T, HV, K, generator=gen) * torch.where(torch.arange(HV) % 2 == 1, 16.0, 0.2).view(1, 1, HV, 1)
    else:
        raw = torch.randn(B, T, HV, K, generator=gen) * 2.0
    g = plan.to_chunks(raw, token_major=True).to(raw_dtype)
    A_log = torch.rand(HV, generator=gen) * 2.0 - 1.0 if params and form != "none" else None
    # dt_bias: form "none" adds it to the log decays, which must stay <= 0
    bias = -torch.rand(HV * K, generator=gen) * 0.05 if form == "none" else torch.randn(HV * K, generator=gen) * 0.5
    dt_bias = bias if params else None
    return q, k, beta.contiguous(), g, A_log, dt_bias, plan


def state_stage(B, T, HV, K, V, BT, per_key, cu=None, h0=False, v_first=False, seed=0, groups=1,
                gate="mild") -> SimpleNamespace:
    """Inputs of the state kernels (chunk_state, chunk_state_output) in float64 as the reference stages
    2-3 make them from :func:`state_tokens`, in the chunk layout of a ``ChunkPlan`` (tails, varlen):
    ``w``, ``u``, ``kg``, ``e_last``, ``offsets`` (int32 chunk offsets), ``h0`` (float32 ``[N, HV, K, V]``,
    ``[N, HV, V, K]`` with ``v_first``, or None), ``plan``; the chunked keys ``k`` (expanded to the HV
    value heads) and ``k_heads`` (their own HV / groups heads: GVA), ``v``, ``beta``, ``Akk`` and ``decay``
    (the WY and output operands) and the generator ``gen``, to draw more from. ``gate``: a
    :func:`step_gate` kind in place of :func:`state_tokens`' mild decays."""
    gen = torch.Generator().manual_seed(seed)
    plan = ChunkPlan.build(B, T, BT, None if cu is None else torch.tensor(cu), "cpu")
    k_heads, v, beta, g = (plan.to_chunks(x) for x in state_tokens(B, T, HV, K, V, per_key, gen, groups))
    if gate != "mild":
        g = plan.to_chunks(fwd.clamp_gate(step_gate(gate, B, T, HV, K if per_key else 1, gen)).double())
    k = expand_heads(k_heads, groups)
    d = torch.float64
    decay = ChunkDecay(plan.fill_padding(fwd.chunk_local_cumsum(g, d)), d)
    _, Akk = fwd.chunk_intra_fwd(k, k, beta, decay)
    w, u, kg = fwd.wy_fwd(k, v, beta, decay, Akk)
    offsets = torch.tensor([0, *torch.tensor(plan.chunk_counts, dtype=torch.long).cumsum(0).tolist()], dtype=torch.int32)
    s0 = None
    if h0:
        s0 = torch.randn(plan.num_seqs, HV, V, K, generator=gen).mul_(0.5)
        s0 = s0 if v_first else s0.transpose(-1, -2).contiguous()
    return SimpleNamespace(w=w, u=u, kg=kg, e_last=decay.e_last.contiguous(), offsets=offsets, h0=s0, plan=plan, k=k,
                           k_heads=k_heads, v=v, beta=beta, Akk=Akk, decay=decay, gen=gen)


def kernel_gate(G: torch.Tensor) -> torch.Tensor:
    """The gate cumsum ``G`` ``[NC, HV, BT, Kg]`` (log2 units, as the reference stages take it) as the
    chunk kernels read it: in natural-log units, float32, KDA token-major ``[NC, BT, HV, K]``
    (contiguous), GDN (``Kg == 1``) head-major (common/chunk_shapes.h's GateHeadMajor)."""
    G = (G.double() * LN2).float()
    return G.transpose(1, 2).contiguous() if G.shape[-1] != 1 else G


def reference_gate(G: torch.Tensor) -> torch.Tensor:
    """:func:`kernel_gate`'s ``G`` back in the head-major ``[NC, HV, BT, Kg]`` log2 units of the
    reference stages, float64 (the kernel's float32 values converted exactly enough: the reference
    sees the gate the kernel read)."""
    G = G.double() * RCP_LN2
    return G.transpose(1, 2) if G.shape[-1] != 1 else G
