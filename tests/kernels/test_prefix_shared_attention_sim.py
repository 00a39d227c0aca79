"""Kernel 2 (csrc/prefix_shared_attention/): prefix-shared attention forward, mixed Cube + vector,
run on the host simulation of Ascend C through the installed library and fla_npu.runtime.

Checked: the simulated kernel against an fp64 reference within the rounding the kernel's design
allows (P rounded to the input type for the Cube, the output rounded once); bitwise batch
invariance (a row's output depends only on its query and its batch's K/V: not on bs, the batch
position, G, len_q, the M-tile, the core count or whether the K/V splits ran on separate cores) and
determinism; the simulation counters (K/V read once per batch for decode shapes, once per 128-row
M-tile in general, split or not; every multiply-add of the two products on the Cube; decode shapes
spread over several AI cores; the partial-result traffic of the splits); a clean hazard checker (a
hazard or any other simulated-device fault fails the launch). Outputs are poisoned with NaN before
every launch (tests/conftest.py), and so is the GM workspace in the split tests.
"""

from __future__ import annotations

import math

import pytest
import torch

import fla_npu
from fla_npu.ops.prefix_shared_attention import naive_prefix_shared_attention
from fla_npu.runtime import _native, kernels, routing

from sim_helpers import run_tiling_unit_test

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
UNIT_ROUND = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}  # unit roundoff of the input type
BLOCK_M = 128


@pytest.fixture
def sim(monkeypatch):
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")


def _inputs(bs, G, Lq, Lkv, D, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(bs, G, Lq, D, generator=gen).to(dtype)
    k = torch.randn(bs, Lkv, D, generator=gen).to(dtype)
    v = torch.randn(bs, Lkv, D, generator=gen).to(dtype)
    return q, k, v


def _check_close(out, q, k, v, scale):
    """|out - ref| <= u * (sum_j p_j |v_j|) * 1.5 + u * |ref| + tiny: P rounded to the input type
    (relative u per probability), the output rounded once (u), fp32 arithmetic far below that."""
    assert out.dtype == q.dtype and out.shape == q.shape
    assert torch.isfinite(out).all(), "an output element was not written (still NaN) or is not finite"
    D = q.shape[-1]
    s = D ** -0.5 if scale is None else scale
    qd, kd, vd = q.double(), k.double(), v.double()
    p = torch.softmax(torch.einsum("bgqd,bkd->bgqk", qd, kd) * s, -1)
    ref = torch.einsum("bgqk,bkd->bgqd", p, vd)
    mag = torch.einsum("bgqk,bkd->bgqd", p, vd.abs())
    u = UNIT_ROUND[q.dtype]
    bound = 1.5 * u * mag + u * ref.abs() + 1e-6
    err = (out.double() - ref).abs()
    worst = (err / bound).max().item()
    assert worst <= 1.0, f"error {err.max().item():.3e} exceeds the rounding bound (ratio {worst:.2f})"


SHAPES = [  # (bs, G, len_q, len_kv, D); 4 AI cores (the simulation's default)
    (1, 1, 1, 1, 128),       # len_q = 1, len_kv = 1
    (2, 3, 5, 7, 128),       # tails everywhere, one M-tile
    (1, 4, 1, 300, 128),     # decode, 3 K/V tiles with a tail: 2 splits (2 + 1 tiles) on 2 cores
    (2, 2, 70, 129, 64),     # 140 rows: two M-tiles (the second of 12 rows), K/V tail of 1, D = 64
    (1, 1, 137, 1, 128),     # len_kv = 1, a 9-row second M-tile (AIV 1 gets 1 row)
    (1, 3, 2, 1000, 128),    # 8 tiles, tail 104: 4 splits on 4 cores
    (2, 5, 1, 2500, 64),     # 20 tiles, tail 68: 10 splits per batch, 20 split units > 4 cores, D = 64
    (1, 2, 3, 5000, 128),    # 40 tiles, tail 8: 20 splits of 2 tiles
    (1, 64, 8, 600, 128),    # 4 M-tiles, 5 tiles: 3 splits merged on chip (the M-tiles fill the cores)
]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_matches_fp64_reference(sim, shape, dtype):
    bs, G, Lq, Lkv, D = shape
    q, k, v = _inputs(bs, G, Lq, Lkv, D, DTYPES[dtype], seed=sum(shape))
    out = fla_npu.prefix_shared_attention(q, k, v)
    launch = kernels.prefix_shared_attention.last_launch()
    assert launch is not None and launch.ok and launch.error == ""
    assert launch.kernel == "fla_prefix_shared_attention_" + {"bf16": "bf16", "fp16": "f16"}[dtype]
    _check_close(out, q, k, v, None)


@pytest.mark.parametrize("scale", [0.3, -0.2, 0.0, 2.0])
def test_scales(sim, scale):
    """Any finite scale: negative (padding keys must still get no weight), 0 (uniform), large."""
    q, k, v = _inputs(1, 2, 3, 150, 64, torch.bfloat16, seed=5)
    out = fla_npu.prefix_shared_attention(q, k, v, scale=scale)
    _check_close(out, q, k, v, scale)


def _poisoned_workspace(monkeypatch):
    """Every GM workspace starts as 0xFF bytes (NaN as fp32), like the simulation's fresh buffers."""
    allocate = _native.allocate_workspace

    def poisoned(size, device):
        ws = allocate(size, device)
        if ws is not None:
            ws.fill_(0xFF)
        return ws

    monkeypatch.setattr(_native, "allocate_workspace", poisoned)


@pytest.mark.parametrize("Lkv", [200, 1000])
def test_batch_invariance(sim, monkeypatch, Lkv):
    """Rows of one response, placed at other batch positions, next to other responses, at other
    positions of other M-tiles, with other batch sizes, G, len_q and core counts: bitwise equal.
    With len_kv = 1000 (4 K/V splits) some of these calls run the splits on separate cores and merge
    them after the barrier, others merge them on chip."""
    _poisoned_workspace(monkeypatch)
    D = 128
    q, k, v = _inputs(1, 1, 5, Lkv, D, torch.bfloat16, seed=11)
    base = fla_npu.prefix_shared_attention(q, k, v)[0, 0]            # 5 rows, alone in their M-tile
    noise = _inputs(4, 40, 7, Lkv, D, torch.bfloat16, seed=12)

    # bs = 4, batch 2 holds the K/V; G = 40, len_q = 7 (280 rows, 3 M-tiles); our 5 queries at
    # stacked rows 3..7 (response 0), 124..128 (straddling M-tiles 0 and 1) and 273..277 (tile 2).
    q2, k2, v2 = (t.clone() for t in noise)
    k2[2], v2[2] = k[0], v[0]
    flat = q2[2].reshape(-1, D)
    for r0 in (3, 124, 273):
        flat[r0:r0 + 5] = q[0, 0]
    q2[2] = flat.reshape(40, 7, D)
    schedules = {kernels.prefix_shared_attention.last_tiling()["unit_splits"]}
    for cores in ("2", "8", "16", "48"):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", cores)
        out = fla_npu.prefix_shared_attention(q2, k2, v2)[2].reshape(-1, D)
        for r0 in (3, 124, 273):
            assert torch.equal(out[r0:r0 + 5], base), (cores, r0)
        schedules.add(kernels.prefix_shared_attention.last_tiling()["unit_splits"])
    tiling = kernels.prefix_shared_attention.last_tiling()
    assert tiling["block_dim"] == min(24, tiling["num_units"])
    monkeypatch.setenv("FLA_NPU_SIM_CORES", "8")
    t = kernels.prefix_shared_attention.last_tiling()
    if t["kv_splits"] > 1:  # both schedules were compared
        assert schedules == {1, t["kv_splits"]}, schedules

    # Decode layout: the 5 queries as 5 responses of len_q = 1, batch position 0 of 3.
    q3 = torch.cat([q[0, 0].reshape(1, 5, 1, D), noise[0][:1, :5, :1]], 0)
    q3 = torch.cat([q3, noise[0][:1, :5, :1]], 0)
    k3 = torch.cat([k, noise[1][:2]], 0)
    v3 = torch.cat([v, noise[2][:2]], 0)
    out3 = fla_npu.prefix_shared_attention(q3, k3, v3)
    assert torch.equal(out3[0, :, 0], base)

    # Deterministic across runs.
    again = fla_npu.prefix_shared_attention(q2, k2, v2)
    assert torch.equal(again, fla_npu.prefix_shared_attention(q2, k2, v2))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_split_schedules_agree_bitwise(sim, monkeypatch, dtype):
    """The same call with its K/V splits merged on chip (few cores) and spread over the cores and
    merged after the barrier (many cores), with a NaN-poisoned workspace: bitwise equal outputs."""
    _poisoned_workspace(monkeypatch)
    q, k, v = _inputs(4, 16, 1, 1000, 64, DTYPES[dtype], seed=21)
    outs = {}
    for cores in ("2", "8", "32"):
        monkeypatch.setenv("FLA_NPU_SIM_CORES", cores)
        outs[cores] = fla_npu.prefix_shared_attention(q, k, v)
        t = kernels.prefix_shared_attention.last_tiling()
        assert t["kv_splits"] == 4 and t["unit_splits"] == (4 if cores == "32" else 1), (cores, t)
    _check_close(outs["2"], q, k, v, None)
    assert torch.equal(outs["2"], outs["8"]) and torch.equal(outs["2"], outs["32"])


def _kv_bytes_read(launch, t, elem):
    """K/V bytes the AICs read: everything they read from GM less Q (once per unit: per M-tile, or
    per M-tile and split when the splits are units) and the P tiles (mLen x nLen per K/V tile of
    each M-tile). The AIVs read only the S and O_j tiles and the partial results."""
    aic = sum(c.gm_to_local_bytes for info, c in launch.cores if info[0] == 0)
    q_bytes = t["bs"] * t["rows"] * t["D"] * elem * t["unit_splits"]
    p_bytes = t["bs"] * t["rows"] * t["len_kv"] * elem
    return aic - q_bytes - p_bytes


def _check_counters(bs, G, Lq, Lkv, D=128, dtype=torch.bfloat16):
    q, k, v = _inputs(bs, G, Lq, Lkv, D, dtype, seed=G + Lq)
    out = fla_npu.prefix_shared_attention(q, k, v)
    t, launch = kernels.prefix_shared_attention.last_tiling(), kernels.prefix_shared_attention.last_launch()
    assert launch.ok and launch.error == ""
    tot = launch.totals
    elem = 2
    compulsory = 2 * bs * Lkv * D * elem                               # K and V once per batch
    kv = _kv_bytes_read(launch, t, elem)
    m_tiles = math.ceil(G * Lq / BLOCK_M)
    assert t["m_tiles"] == m_tiles
    assert kv == m_tiles * compulsory                                   # one K/V pass per M-tile
    rows = bs * G * Lq
    # Q K^T and P V on the M-tile's rows padded to 16 (zero rows: m = 1 would be GEMV mode).
    padded = sum(-(-min(BLOCK_M, G * Lq - i * BLOCK_M) // 16) * 16 for i in range(m_tiles))
    assert tot.cube_macs == 2 * bs * padded * Lkv * D
    # Split units write m, l and O (fp32) of each row per split; the combine reads them once.
    partial = rows * t["kv_splits"] * (D + 2) * 4 if t["unit_splits"] > 1 else 0
    # The AIVs read the S and O_j tiles and write whole 128-key P rows; the output is written once.
    vec_read = sum(c.gm_to_local_bytes for info, c in launch.cores if info[0] == 1)
    assert vec_read == rows * Lkv * 4 + rows * D * 4 * t["kv_tiles"] + partial
    assert tot.local_to_gm_bytes == (rows * Lkv * 4 + rows * t["kv_tiles"] * BLOCK_M * elem
                                     + rows * D * 4 * t["kv_tiles"] + rows * D * elem + partial)
    assert tot.peak_ub_bytes == t["ub_bytes_used"] <= 192 * 1024 - 8 * 1024 - 256
    assert tot.peak_l0a_bytes <= 64 * 1024 and tot.peak_l0b_bytes <= 64 * 1024 and tot.peak_l0c_bytes <= 128 * 1024
    per_response = G * math.ceil(Lq / 64)                               # a per-(response, 64-row block) schedule
    cube_fraction = tot.cube_macs / (tot.cube_macs + tot.vector_elem_ops)
    cube_cores = sum(1 for info, c in launch.cores if info[0] == 0 and c.cube_macs > 0)
    gm_bytes = tot.gm_to_local_bytes + tot.local_to_gm_bytes
    return dict(out=out, ratio=kv / compulsory, per_response=per_response, cube_fraction=cube_fraction,
                cube_cores=cube_cores, tiling=t, kv_bytes=kv, partial_bytes=2 * partial, gm_bytes=gm_bytes)


@pytest.mark.parametrize("bs,G,Lq,Lkv", [(2, 16, 1, 300), (1, 128, 1, 129), (3, 64, 2, 40), (1, 5, 3, 1)])
def test_decode_reads_kv_exactly_once(sim, bs, G, Lq, Lkv):
    """G * len_q <= 128: every K/V byte of a batch is read from GM exactly once."""
    assert _check_counters(bs, G, Lq, Lkv)["ratio"] == 1.0


def _tiling_only(bs, G, Lq, Lkv, D=128):
    """The tiling of a call, from flaNpuPrefixSharedAttentionGetWorkspaceSize alone (nothing launched)."""
    lib = _native.load_library()
    q = torch.zeros(bs, G, Lq, D, dtype=torch.bfloat16)
    k = torch.zeros(bs, Lkv, D, dtype=torch.bfloat16)
    descs = [_native.tensor_desc(t) for t in (q, k, k, q)]
    ws, ex = _native.ctypes.c_uint64(0), _native.ctypes.c_void_p(None)
    _native.check(lib.flaNpuPrefixSharedAttentionGetWorkspaceSize(
        _native.ref(descs[0]), _native.ref(descs[1]), _native.ref(descs[2]), 0.1, _native.ref(descs[3]),
        _native.ctypes.byref(ws), _native.ctypes.byref(ex)), "flaNpuPrefixSharedAttentionGetWorkspaceSize")
    lib.flaNpuDestroyExecutor(ex)
    return kernels.prefix_shared_attention.last_tiling(), ws.value


# production.json "prefix_shared_attention" on 24 AI cores (an A2 910B; FLA_NPU_SIM_CORES=48 vector
# cores), scaled for CI where needed: the decode shapes and 2x8x64x2048 run at full size; the two
# len_q = 512 prefill shapes keep G = 64 with len_q = 192 (96 M-tiles, 4 per core: the splits stay
# on chip as at full size) and len_kv = 512 / 1024 (the K/V ratio depends on G * len_q only).
PRODUCTION_SCALED = [
    ((1, 64, 1, 8192), (1, 64, 1, 8192)),
    ((4, 16, 1, 4096), (4, 16, 1, 4096)),
    ((1, 64, 2, 16384), (1, 64, 2, 16384)),
    ((2, 8, 64, 2048), (2, 8, 64, 2048)),
    ((1, 64, 512, 1024), (1, 64, 192, 512)),
    ((1, 64, 512, 16384), (1, 64, 192, 1024)),
]
PRODUCTION_CORES = 24


@pytest.mark.parametrize("full,scaled", PRODUCTION_SCALED, ids=lambda s: "x".join(map(str, s)))
def test_production_shape_counters(sim, monkeypatch, full, scaled, record_property):
    """K/V bytes read / compulsory (K, V once per batch) = ceil(G * len_q / 128), measured on the
    scaled shape; for the full shape the same formula (the tiling's m_tiles) against the analytic
    G * ceil(len_q / 64) of a per-(response, 64-row block) kernel; the Cube's share of the work; the
    AI cores doing Cube work, against the one per (batch, M-tile) of a kernel without K/V splits;
    the partial-result traffic against the K/V bytes. The full shape's schedule from its tiling."""
    monkeypatch.setenv("FLA_NPU_SIM_CORES", str(2 * PRODUCTION_CORES))
    bs, G, Lq, Lkv = scaled
    c = _check_counters(bs, G, Lq, Lkv)
    t = c["tiling"]
    assert c["ratio"] == math.ceil(G * Lq / BLOCK_M) <= c["per_response"]
    before = min(bs * t["m_tiles"], PRODUCTION_CORES)                  # one unit per (batch, M-tile)
    assert c["cube_cores"] == t["block_dim"] >= before
    if Lq <= 2:                                                         # decode: spread over the cores
        assert t["unit_splits"] == t["kv_splits"] > 1 and c["cube_cores"] > before
        assert c["partial_bytes"] <= 0.1 * c["gm_bytes"]
    ft, fws = _tiling_only(*full)
    if full[2] == 512:                                                  # prefill: the M-tiles fill the cores
        assert ft["unit_splits"] == 1 and ft["partial_slots"] == 0 and t["unit_splits"] == 1
    fG, fLq = full[1], full[2]
    full_ratio, full_per_response = math.ceil(fG * fLq / BLOCK_M), fG * math.ceil(fLq / 64)
    assert c["cube_fraction"] > 0.9
    record_property("kv_read_ratio_scaled", c["ratio"])
    record_property("kv_read_ratio_full", full_ratio)
    record_property("per_response_ratio_full", full_per_response)
    record_property("cube_mac_fraction", c["cube_fraction"])
    record_property("cube_cores", c["cube_cores"])
    print(f"\nprefix_shared_attention {full} (scaled {scaled}), {PRODUCTION_CORES} AI cores: K/V read / compulsory = "
          f"{c['ratio']:g} (scaled), {full_ratio} (full); per-(response, 64-row block) = {c['per_response']} (scaled), "
          f"{full_per_response} (full); Cube MACs / (Cube MACs + vector element ops) = {c['cube_fraction']:.4f}; "
          f"K/V splits {t['kv_splits']} x {t['kv_tiles_per_split']} tiles, run as units: {t['unit_splits'] > 1}; "
          f"AI cores with Cube work {c['cube_cores']} (without splits {before}); GM bytes {c['gm_bytes']} of which "
          f"K/V {c['kv_bytes']}, partial results {c['partial_bytes']} ({c['partial_bytes'] / c['kv_bytes']:.2%} of K/V); "
          f"full shape: {ft['kv_splits']} splits, units {ft['num_units']}, cores {ft['block_dim']}, workspace {fws} bytes")


def test_kernel_rejects_bad_descriptors():
    """The C entry point validates on its own (callers other than the Python wrapper)."""
    q, k, v = _inputs(1, 2, 3, 10, 128, torch.bfloat16)
    with pytest.raises(_native.KernelError, match="float16 or bfloat16"):
        kernels.prefix_shared_attention(q.float(), k.float(), v.float(), 0.1)
    with pytest.raises(_native.KernelError, match="different lengths"):
        kernels.prefix_shared_attention(q, k, v[:, :5], 0.1)
    with pytest.raises(_native.KernelError, match="64 or 128"):
        kernels.prefix_shared_attention(q[..., :32], k[..., :32], v[..., :32], 0.1)
    with pytest.raises(_native.KernelError, match="one dtype"):
        kernels.prefix_shared_attention(q, k.half(), v, 0.1)


def test_routing(monkeypatch):
    """Default: the reference (no launch); FLA_NPU_CPU_IMPL=sim: the kernel for fp16/bf16; fp32
    stays on the reference."""
    q, k, v = _inputs(1, 2, 3, 10, 64, torch.bfloat16)
    monkeypatch.delenv("FLA_NPU_CPU_IMPL", raising=False)
    _native.forget_launch(kernels.prefix_shared_attention.entry)
    ref = fla_npu.prefix_shared_attention(q, k, v)
    assert kernels.prefix_shared_attention.last_launch() is None
    assert torch.equal(ref, naive_prefix_shared_attention(q, k, v))
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    got = fla_npu.prefix_shared_attention(q, k, v)
    assert kernels.prefix_shared_attention.last_launch() is not None
    _check_close(got, q, k, v, None)
    _native.forget_launch(kernels.prefix_shared_attention.entry)
    fla_npu.prefix_shared_attention(q.float(), k.float(), v.float())
    assert kernels.prefix_shared_attention.last_launch() is None
    assert routing.cpu_impl() == "sim"


def test_empty_batch(sim):
    q, k, v = _inputs(0, 2, 3, 10, 128, torch.float16)
    out = fla_npu.prefix_shared_attention(q, k, v)
    assert out.shape == (0, 2, 3, 128) and out.dtype == torch.float16


def test_tiling_unit_tests(native_build):
    """The C++ unit tests of the host tiling (csrc/prefix_shared_attention/tests/), from the session's native build."""
    run_tiling_unit_test(native_build, "prefix_shared_attention")
