"""Kernel 1 (csrc/gate/): gate activation + chunk-local cumsum, run on the host simulation of Ascend C
through the installed library (fla_npu/lib/libfla_npu_kernels.so) and fla_npu.runtime.

The simulated kernel must equal the reference stage (fla_npu's kda_gate_chunk_cumsum /
gdn_gate_chunk_cumsum on the PyTorch reference) within fp32 rounding, read and write exactly the
bytes predicted by its tiling, and launch without a hazard or any other simulated-device fault.
Outputs are poisoned with NaN before every launch (tests/conftest.py poisons fla_npu's torch.empty).
"""

from __future__ import annotations

import logging
import math

import pytest
import torch

import fla_npu
from fla_npu.ops.common.chunk_fwd import chunk_local_cumsum_tokens
from fla_npu.ops.common.chunk_plan import ChunkPlan
from fla_npu.ops.gated_delta_rule.gate import gdn_gate_fwd
from fla_npu.ops.kda.gate import kda_gate_fwd
from fla_npu.runtime import _native, kernels, op_calls, routing

from sim_helpers import run_tiling_unit_test

RCP_LN2 = 1.0 / math.log(2.0)
EPS32 = 2.0 ** -24
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# Varlen with length-1 and zero-length sequences (and tails): lengths 1, 0, 69, 0, 1, 79.
VARLEN_CU = (0, 1, 1, 70, 70, 71, 150)


@pytest.fixture
def sim(monkeypatch):
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")


def _inputs(family, form, dtype, T=150, B=2, H=3, K=16, cu=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shape = (1 if cu else B, T, H, K) if family == "kda" else (1 if cu else B, T, H)
    g = (torch.randn(shape, generator=gen) * 2.0).to(dtype)
    A_log = torch.rand(H, generator=gen) * 2.0 - 1.0 if form != "sigmoid_noA" else None
    dt_bias = torch.randn(H * K if family == "kda" else H, generator=gen)
    cu_t = torch.tensor(cu, dtype=torch.int64) if cu else None
    return g, A_log, dt_bias, cu_t


def _call(family, form, g, A_log, dt_bias, chunk_size, scale, cu):
    if family == "kda":
        lb = None if form == "softplus" else -5.0
        return fla_npu.kda_gate_chunk_cumsum(g, A_log, chunk_size, scale=scale, dt_bias=dt_bias, cu_seqlens=cu,
                                             lower_bound=lb)
    return fla_npu.gdn_gate_chunk_cumsum(g, A_log, chunk_size, scale=scale, dt_bias=dt_bias, cu_seqlens=cu)


def _bound(family, form, g, A_log, dt_bias, chunk_size, scale, cu):
    """What fp32 rounding allows: each term a few ulp, the in-order fp32 cumsum of a chunk up to
    (chunk_size - 1) ulp of the running sum of magnitudes (the reference accumulates in double)."""
    if family == "kda":
        y = kda_gate_fwd(g, A_log, dt_bias, None if form == "softplus" else -5.0, None)
    else:
        y = gdn_gate_fwd(g, A_log, dt_bias, None)
    abscum = chunk_local_cumsum_tokens(y.abs(), chunk_size, abs(scale), cu, None, torch.float32, "bound")
    return (chunk_size + 16) * 2 * EPS32 * abscum + 1e-30


def _check_close(got, ref, bound):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert torch.isfinite(got).all(), "an output element was not written (still NaN) or is not finite"
    err = (got - ref).abs()
    worst = (err / bound).max().item()
    assert worst <= 1.0, f"error {err.max().item():.3e} exceeds the fp32-rounding bound (ratio {worst:.2f})"


FORMS = [("kda", "softplus"), ("kda", "sigmoid"), ("kda", "sigmoid_noA"), ("gdn", "softplus")]


@pytest.mark.parametrize("chunk_size", [16, 32, 64])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("family,form", FORMS)
@pytest.mark.parametrize("layout", ["dense", "varlen"])
def test_kernel_equals_reference_stage(sim, monkeypatch, layout, family, form, dtype, chunk_size):
    cu = VARLEN_CU if layout == "varlen" else None
    g, A_log, dt_bias, cu_t = _inputs(family, form, DTYPES[dtype], cu=cu, seed=chunk_size)
    got = _call(family, form, g, A_log, dt_bias, chunk_size, RCP_LN2, cu_t)
    launch = kernels.gate_chunk_cumsum.last_launch()
    assert launch is not None and launch.ok and launch.error == ""
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "reference")
    ref = _call(family, form, g, A_log, dt_bias, chunk_size, RCP_LN2, cu_t)
    _check_close(got, ref, _bound(family, form, g, A_log, dt_bias, chunk_size, RCP_LN2, cu_t))


@pytest.mark.parametrize("family,K,H", [("kda", 128, 2), ("kda", 12, 5), ("kda", 8, 40), ("gdn", 1, 70)])
def test_head_layouts_and_scales(sim, monkeypatch, family, K, H):
    """Whole-head tiles, pieces of a head (K = 128 at chunk 64, K = 12 not a multiple of 8), many heads
    per tile, a wide GDN row; scale None, 1/ln 2 and negative."""
    for scale in (None, RCP_LN2, -0.5):
        g, A_log, dt_bias, _ = _inputs(family, "softplus", torch.bfloat16, T=77, B=2, H=H, K=K, seed=K + H)
        got = _call(family, "softplus", g, A_log, dt_bias, 64, scale, None)
        monkeypatch.setenv("FLA_NPU_CPU_IMPL", "reference")
        ref = _call(family, "softplus", g, A_log, dt_bias, 64, scale, None)
        monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
        _check_close(got, ref, _bound(family, "softplus", g, A_log, dt_bias, 64, 1.0 if scale is None else scale, None))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_no_activation(dtype):
    """Gate form 'none': the chunk-local cumsum of g + dt_bias alone (FLA's chunk_local_cumsum)."""
    gen = torch.Generator().manual_seed(3)
    g = torch.randn(2, 100, 4, 16, generator=gen).to(DTYPES[dtype])
    cu = torch.tensor(VARLEN_CU)
    for x, cu_t in ((g, None), (g[:1, :150] if g.shape[1] >= 150 else torch.randn(1, 150, 4, 16).to(DTYPES[dtype]), cu)):
        got = kernels.gate_chunk_cumsum(x, 32, "none", scale=RCP_LN2, cu_seqlens=cu_t)
        ref = chunk_local_cumsum_tokens(x.float(), 32, RCP_LN2, cu_t, None, torch.float32, "ref")
        bound = (32 + 16) * 2 * EPS32 * chunk_local_cumsum_tokens(x.float().abs(), 32, RCP_LN2, cu_t, None,
                                                                  torch.float32, "b") + 1e-30
        _check_close(got, ref, bound)
        if cu_t is not None:  # the rows of tables built on the device (empty rows past the last sequence's end)
            plan = ChunkPlan.build_on_device(x.shape[1], 32, cu_t)
            assert plan.num_chunks > ChunkPlan.build(1, x.shape[1], 32, cu_t, "cpu").num_chunks
            rows = kernels.gate_chunk_cumsum(x, 32, "none", scale=RCP_LN2, cu_seqlens=plan.cu_seqlens,
                                             chunk_indices=plan.chunk_list)
            assert torch.equal(rows, got)


def test_varlen_arguments_are_refused_alone():
    g = torch.randn(1, 40, 2, 16)
    rows = torch.zeros(2, 2, dtype=torch.int32)
    with pytest.raises(ValueError, match="`chunk_indices` was given without `cu_seqlens`"):
        kernels.gate_chunk_cumsum(g, 32, chunk_indices=rows)
    with pytest.raises(ValueError, match="needs `chunk_indices`"):
        kernels.gate_chunk_cumsum(g, 32, cu_seqlens=torch.tensor([0, 40], device="meta"))


def test_output_dtype_and_empty(sim):
    g, A_log, dt_bias, _ = _inputs("gdn", "softplus", torch.float16, T=40)
    out = fla_npu.gdn_gate_chunk_cumsum(g, A_log, 16, dt_bias=dt_bias, output_dtype=None)
    assert out.dtype == torch.float16
    empty = fla_npu.gdn_gate_chunk_cumsum(g[:, :0], A_log, 16, dt_bias=dt_bias)
    assert empty.shape == (2, 0, 3) and kernels.gate_chunk_cumsum.last_launch() is None  # nothing to launch
    cu = torch.tensor([0, 0, 0])
    assert fla_npu.gdn_gate_chunk_cumsum(g[:1, :0], A_log, 16, cu_seqlens=cu).shape == (1, 0, 3)


def test_results_do_not_depend_on_the_core_count(sim, monkeypatch):
    g, A_log, dt_bias, cu = _inputs("kda", "softplus", torch.bfloat16, cu=VARLEN_CU, K=128, H=2)
    outs = []
    for cores in ("1", "3", "16"):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", cores)
        outs.append(fla_npu.kda_gate_chunk_cumsum(g, A_log, 64, scale=RCP_LN2, dt_bias=dt_bias, cu_seqlens=cu))
        tiling = kernels.gate_chunk_cumsum.last_tiling()
        assert tiling["block_dim"] == min(int(cores), tiling["num_units"])
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])


def _param_loads(t):
    """Bytes of per-column parameters the kernel copies GM->UB: one load per (core, column tile)."""
    per_col = 4 * (t["has_dt_bias"] + (1 if (t["has_a_log"] and t["D"] == 1) else 0))
    total = 0
    for b in range(t["block_dim"]):
        count = t["units_per_core"] + (1 if b < t["units_rem"] else 0)
        first = b * t["units_per_core"] + min(b, t["units_rem"])
        for tile in range(first // t["num_chunks"], (first + count - 1) // t["num_chunks"] + 1):
            if t["heads_per_tile"] > 0:
                w = min(t["tile_w"], t["W"] - tile * t["tile_w"])
            else:
                w = min(t["tile_w"], t["D"] - (tile % t["tiles_per_head"]) * t["tile_w"])
            total += per_col * w
    return total


@pytest.mark.parametrize("family,dtype,K,H,cu", [
    ("kda", torch.bfloat16, 128, 4, None), ("kda", torch.float32, 64, 2, VARLEN_CU),
    ("gdn", torch.bfloat16, 1, 32, None), ("gdn", torch.float16, 1, 8, VARLEN_CU)])
def test_counters_are_the_compulsory_traffic(sim, family, dtype, K, H, cu):
    """Every element of g is read once and every output element written once; the only extra reads
    are the per-column parameters, once per (core, column tile). No hazard, no fault; UB within
    the SoC's."""
    g, A_log, dt_bias, cu_t = _inputs(family, "softplus", dtype, T=300 if cu is None else 150, B=2, H=H, K=K, cu=cu)
    fla_npu.kda_gate_chunk_cumsum(g, A_log, 64, scale=RCP_LN2, dt_bias=dt_bias, cu_seqlens=cu_t) if family == "kda" \
        else fla_npu.gdn_gate_chunk_cumsum(g, A_log, 64, scale=RCP_LN2, dt_bias=dt_bias, cu_seqlens=cu_t)
    t, launch = kernels.gate_chunk_cumsum.last_tiling(), kernels.gate_chunk_cumsum.last_launch()
    assert launch.ok and launch.error == "" and launch.kernel.startswith("fla_gate_chunk_cumsum_")
    tot = launch.totals
    g_bytes = g.numel() * g.element_size()
    assert tot.local_to_gm_bytes == g.numel() * 4                      # written once, fp32
    assert tot.gm_to_local_bytes == g_bytes + _param_loads(t)          # g once + parameters per (core, tile)
    compulsory = g_bytes + dt_bias.numel() * 4 + A_log.numel() * 4
    ratio = tot.gm_to_local_bytes / compulsory
    assert ratio <= 1.25, ratio
    assert tot.peak_ub_bytes == t["ub_bytes_used"] <= 192 * 1024 - 8 * 1024 - 256
    assert tot.cube_macs == 0 and tot.peak_l1_bytes == 0
    assert len(launch.cores) == t["block_dim"] and all(info[0] == 1 for info, _ in launch.cores)  # AIV only


def test_routing_default_sim_and_fallback(monkeypatch, caplog):
    g, A_log, dt_bias, _ = _inputs("gdn", "softplus", torch.float32, T=20)
    monkeypatch.delenv("FLA_NPU_CPU_IMPL", raising=False)
    assert routing.cpu_impl() == "reference"
    monkeypatch.setattr(routing, "_logged", set())
    with caplog.at_level(logging.INFO, logger="fla_npu"):
        fla_npu.gdn_gate_chunk_cumsum(g, A_log, 16)
        fla_npu.gdn_gate_chunk_cumsum(g, A_log, 16)
        monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
        _native.forget_launch(kernels.gate_chunk_cumsum.entry)
        fla_npu.gdn_gate_chunk_cumsum(g, A_log, 16)
        assert kernels.gate_chunk_cumsum.last_launch() is not None  # the kernel ran
        fla_npu.gdn_gate_chunk_cumsum(g, A_log, 16)
        fla_npu.gdn_gate_chunk_cumsum(g.double(), A_log, 16)  # no fp64 kernel: the reference, with a warning
        fla_npu.gdn_gate_chunk_cumsum(g.double(), A_log, 16)
    msgs = [r.getMessage() for r in caplog.records if r.name == "fla_npu"]
    assert sum("reference" in m and "sim" not in m for m in msgs) == 1
    assert sum("host simulation" in m for m in msgs) == 1
    assert sum("no torch.float64" in m for m in msgs) == 1
    assert [r.levelno for r in caplog.records if "float64" in r.getMessage()] == [logging.WARNING]
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "cuda")
    with pytest.raises(ValueError, match="FLA_NPU_CPU_IMPL"):
        fla_npu.gdn_gate_chunk_cumsum(g, A_log, 16)


def test_invalid_input_is_rejected_before_launch(sim):
    g, A_log, dt_bias, _ = _inputs("kda", "softplus", torch.float32, T=20)
    with pytest.raises(ValueError, match="A_log"):
        fla_npu.kda_gate_chunk_cumsum(g, None, 16)
    with pytest.raises(_native.KernelError, match="`a_log` must have H elements"):
        fla_npu.kda_gate_chunk_cumsum(g, torch.zeros(7), 16)
    with pytest.raises(_native.KernelError, match="dt_bias"):
        fla_npu.kda_gate_chunk_cumsum(g, A_log, 16, dt_bias=torch.zeros(5))
    with pytest.raises(_native.KernelError, match="power of two <= 128"):
        kernels.gate_chunk_cumsum(g, 256, "softplus", A_log)
    with pytest.raises(ValueError, match="batch size must be 1"):
        fla_npu.gdn_gate_chunk_cumsum(g[..., 0], A_log, 16, cu_seqlens=torch.tensor([0, 20]))
    with pytest.raises(ValueError, match="chunk_indices"):
        fla_npu.gdn_gate_chunk_cumsum(g[:1, :, :, 0], A_log, 16, cu_seqlens=torch.tensor([0, 5, 20]),
                                      chunk_indices=torch.zeros(5, 2, dtype=torch.long))


def test_missing_library_message(monkeypatch, tmp_path):
    monkeypatch.setattr(_native, "_lib", None)
    monkeypatch.setenv("FLA_NPU_KERNEL_LIB", str(tmp_path / "nope.so"))
    with pytest.raises(_native.NativeLibraryError, match="pip install"):
        _native.load_library()


def test_library_flavour():
    assert _native.library_path().is_file(), "the installed fla_npu has no native library"
    assert _native.target() == "sim-a2"
    assert _native.load_library().flaNpuVectorCoreNum() >= 1


def test_chunk_list_matches_the_reference_layout():
    from fla_npu.ops.common.chunk_plan import ChunkPlan
    cu = torch.tensor(VARLEN_CU)
    for bt in (16, 64):
        cl = op_calls.chunk_list(cu, bt)
        plan = ChunkPlan.build(1, 150, bt, cu, "cpu")
        assert cl.shape == (plan.num_chunks, 2) and cl.dtype == torch.int32
        counts = torch.bincount(cl[:, 0].long(), minlength=len(VARLEN_CU) - 1).tolist()
        assert counts == list(plan.chunk_counts)


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/gate/tests/), from the session's native build (plain C++)."""
    run_tiling_unit_test(native_build, "gate_cumsum")
