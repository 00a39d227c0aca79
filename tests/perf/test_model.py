"""The timing model (fla_npu/perf/) on synthetic kernels with known answers (csrc/sim/tests/perf_cases.cpp,
built by the session's native build): a pure copy at bytes / bandwidth, a Cube-only loop at MACs /
rate, a pipeline serialised by flags versus double buffered with queues, and a cross-core hand-off.

Constants are the a2 table's with round numbers where the answer is checked; tolerances (stated per
test) cover the fixed latencies the answer leaves out."""

from __future__ import annotations

import ctypes
import dataclasses

import pytest

from fla_npu.perf import model, soc_constants as SC, trace as T

A2 = SC.soc("a2")


@pytest.fixture(scope="module")
def cases(native_build):
    lib = ctypes.CDLL(str(native_build / "sim" / "tests" / "libsim_perf_cases.so"))
    lib.fla_perf_case.argtypes = [ctypes.c_char_p, ctypes.c_int32]
    lib.fla_perf_case.restype = ctypes.c_int
    lib.fla_sim_last_error.restype = ctypes.c_char_p
    assert T.declare(lib)

    def run(name: str, n: int) -> T.LaunchTrace:
        rc = lib.fla_perf_case(name.encode(), n)
        assert rc == 0, lib.fla_sim_last_error().decode()
        return T.last_trace(lib)

    return run


def _kernel_time(est: model.LaunchEstimate, soc: SC.SocPerf) -> float:
    return est.time_s - soc.launch_overhead_s


def test_trace_records_sizes_and_sync(cases):
    tr = cases("double", 4)
    (core,) = tr.cores
    r = core.records
    instr = r[r["kind"] == T.INSTR]
    loads = instr[(instr["pipe"] == T.MTE2) & (instr["amount"] > 0)]
    assert len(loads) == 4 and set(loads["amount"]) == {4096 * 4} and set(loads["detail"]) == {T.MEM_GM}
    vec = instr[instr["pipe"] == T.V]
    assert len(vec) == 4 * 8 and set(vec["passes"]) == {4096 * 4 // 256} and set(vec["amount"]) == {4096}
    # each tile: EnQue/DeQue of both queues, FreeTensor of both; AllocTensor waits once a buffer was freed
    assert (r["kind"] == T.QUEUE_SET).sum() == 4 * 4
    assert (r["kind"] == T.QUEUE_WAIT).sum() == 4 * 2 + 2 * 2
    assert (r["kind"] == T.BARRIER).sum() == 4 * 7
    assert tr.gm_bytes() == 2 * 4 * 4096 * 4


def test_trace_off_unless_asked():
    """Normal launches record nothing; inside ``tracing()`` every core records its stream."""
    import torch

    from fla_npu.runtime import _native
    from fla_npu.runtime.kernels import gate_chunk_cumsum

    lib = _native.load_library()
    T.declare(lib)
    g = torch.randn(1, 64, 2, 16)
    gate_chunk_cumsum(g, 16)
    n = lib.fla_sim_last_core_count()
    assert n > 0 and all(lib.fla_sim_last_trace_length(i) == 0 for i in range(n))
    with pytest.raises(RuntimeError, match="not traced"):
        T.last_trace(lib)
    with T.tracing(lib):
        gate_chunk_cumsum(g, 16)
    tr = T.last_trace(lib)
    assert len(tr.cores) == n and all(len(c.records) > 0 for c in tr.cores)
    assert tr.gm_bytes() == 2 * g.numel() * 4  # fp32 in, fp32 out
    gate_chunk_cumsum(g, 16)  # the switch is restored after the block
    assert all(lib.fla_sim_last_trace_length(i) == 0 for i in range(n))


def test_copy_is_bytes_over_bandwidth(cases):
    """8 cores copy 8 x 32 x 64 KB: GM-bound, so the model's time is the bytes in and out over the
    achieved HBM bandwidth, within 3 % (the first load's latency and the flag hand-offs)."""
    tr = cases("copy", 32)
    est = model.estimate(tr, A2)
    total = 2 * 8 * 32 * 16384 * 4
    assert est.gm_bytes == total
    expect = total / (A2.hbm_bytes_per_s * A2.hbm_efficiency)
    assert expect <= _kernel_time(est, A2) <= 1.03 * expect
    assert est.label == "model"


def test_copy_on_one_core_is_port_bound(cases):
    """A single core cannot take the whole HBM: it moves at most its port's bytes per cycle."""
    soc = dataclasses.replace(A2, gm_port_bytes_per_cycle=64)
    tr = cases("copy", 8)
    est = model.estimate(tr, soc, requesters=1)
    per_core = 2 * 8 * 16384 * 4
    assert _kernel_time(est, soc) >= per_core / (64 * soc.clock_hz)


def test_cube_only_is_macs_over_rate(cases):
    """200 Mmads of 128^3 fp16 on one AIC: 200 x 512 Cube steps of 4096 MACs, within 5 % (the fill,
    the Fixpipe and the per-instruction latency)."""
    tr = cases("cube", 200)
    est = model.estimate(tr, A2)
    macs = 200 * 128 ** 3
    expect = macs / (A2.cube_macs_per_cycle * A2.clock_hz)
    assert expect <= _kernel_time(est, A2) <= 1.05 * expect
    # half the Cube rate doubles the time of the M pipe
    slow = model.estimate(tr, dataclasses.replace(A2, cube_macs_per_cycle=2048))
    assert slow.busy_s("M") == pytest.approx(2 * est.busy_s("M"), rel=0.02)


def test_double_buffering_shortens_and_serialised_does_not_overlap(cases):
    serial = model.estimate(cases("serial", 32), A2)
    double = model.estimate(cases("double", 32), A2)
    # the serialised pipeline: every instruction waits for the one before on another pipe, so its
    # time is at least the sum of its pipes' busy times (nothing modelled as overlapped)
    busy = sum(serial.busy_s(p) for p in T.PIPE_NAMES)
    assert _kernel_time(serial, A2) >= busy
    # double buffering: the loads and stores run under the vector work
    assert _kernel_time(double, A2) < 0.6 * _kernel_time(serial, A2)
    assert _kernel_time(double, A2) >= double.busy_s("V")  # cannot beat its busiest pipe


def test_cross_core_wait_holds_the_vector_cores(cases):
    tr = cases("cross", 100)
    est = model.estimate(tr, A2)
    aic = [c for c in est.cores if c.core_type == T.AIC]
    aivs = [c for c in est.cores if c.core_type == T.AIV]
    assert len(aic) == 1 and len(aivs) == 2
    for c in aivs:  # each AIV finishes after the AIC's Cube work and its flag
        assert c.time_s >= aic[0].busy_s["M"] + A2.cross_core_latency_s
    assert est.blocks_s[0] == pytest.approx(max(c.time_s for c in est.cores))


def test_blocks_beyond_the_cores_run_in_waves():
    assert model._schedule([1.0] * 4, 2) == 2.0
    assert model._schedule([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert model._schedule([1.0, 2.0], 4) == 2.0


def test_every_constant_has_a_source():
    for name in SC.SOCS:
        s = SC.soc(name)
        missing = [f for f, _, src in SC.describe(name) if not src and f not in ("name", "part")]
        assert not missing, (name, missing)
        assert s.cube_flops > 1e14
    with pytest.raises(ValueError, match="unknown SoC"):
        SC.soc("a9")


def _wy_trace():
    """The traced launch of the WY kernel (mixed AIC + 2 AIV, queues, flags, cross-core hand-offs
    through its GM workspace) and its counters."""
    import torch

    from fla_npu.runtime.kernels import wy_fast

    NC, HV, BT, K, V = 4, 2, 64, 64, 64
    k = torch.randn(NC, BT, HV, K).to(torch.bfloat16)   # token-major
    v = torch.randn(NC, BT, HV, V).to(torch.bfloat16)
    A = (torch.tril(torch.randn(NC, HV, BT, BT), -1) * 0.05 + torch.eye(BT)).to(torch.bfloat16)
    G = -torch.rand(NC, BT, HV, K).cumsum(1)   # the gate cumsum (natural log), KDA token-major
    with T.tracing():
        wy_fast(k, v, torch.rand(NC, HV, BT), A, G)
    return T.last_trace(), wy_fast.last_launch().totals


def test_a_real_mixed_kernel_replays_consistently():
    """The WY kernel: every core ends after its busiest pipe, and the launch after its GM bytes over
    the achieved bandwidth."""
    tr, _ = _wy_trace()
    kinds = {int(x) for c in tr.cores for x in set(c.records["kind"].tolist())}
    assert {T.INSTR, T.SET_FLAG, T.WAIT_FLAG, T.XSET, T.XWAIT} <= kinds
    est = model.estimate(tr, A2)
    for c in est.cores:
        assert c.time_s >= max(c.busy_s.values()) > 0
    assert est.time_s - A2.launch_overhead_s >= est.gm_bound_s
    assert est.busy_s("M") > 0 and est.busy_s("V") > 0 and est.busy_s("MTE1") > 0


def test_workspace_moves_are_charged_at_the_l2_bandwidth():
    """The moves to and from a launch's workspace are marked in the trace (their bytes the counters'
    workspace bytes) and cost their bytes over the L2 share, the rest over the HBM share: a slower L2
    slows only those, the GM bound adds the workspace bytes over the L2 bandwidth."""
    tr, tot = _wy_trace()
    ws = tr.gm_bytes((T.MEM_WS,))
    assert ws == tot.ws_to_local_bytes + tot.local_to_ws_bytes > 0
    assert tr.gm_bytes() == tot.gm_to_local_bytes + tot.local_to_gm_bytes == ws + tr.gm_bytes((T.MEM_GM,))
    est = model.estimate(tr, A2)
    assert est.ws_bytes == ws
    assert est.gm_bound_s == pytest.approx((est.gm_bytes - ws) / (A2.hbm_bytes_per_s * A2.hbm_efficiency)
                                           + ws / A2.l2_bytes_per_s)
    slow = model.estimate(tr, dataclasses.replace(A2, l2_bytes_per_s=A2.l2_bytes_per_s / 100))
    assert slow.time_s > est.time_s
    fast_hbm = dataclasses.replace(A2, hbm_bytes_per_s=A2.hbm_bytes_per_s * 100)
    assert model.estimate(tr, fast_hbm).gm_bound_s > ws / A2.l2_bytes_per_s


def test_one_record_per_vector_instruction():
    """A repeat-form vector instruction is one record (its wrapper begins it, the repeat body does not
    begin another): no empty vector record, which the replay would charge an instruction's latency."""
    tr, tot = _wy_trace()
    v = [c.records[(c.records["kind"] == T.INSTR) & (c.records["pipe"] == T.V)] for c in tr.cores]
    assert sum(len(x) for x in v) > 0
    assert all(((x["amount"] > 0) | (x["passes"] > 0)).all() for x in v)
    assert sum(int(x["amount"].sum()) for x in v) >= tot.vector_elem_ops
