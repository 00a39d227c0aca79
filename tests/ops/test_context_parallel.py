"""Context parallelism (``cp_context``) over torch.distributed with gloo, in real processes.

Every rank of a spawned group runs ``chunk_kda`` / ``chunk_gated_delta_rule`` on its slice of one
packed batch and back-propagates its slice of a random ``do``; rank 0 gathers the slices and
compares the output and every gradient (``A_log`` / ``dt_bias`` summed over ranks, as data-parallel
training reduces them) with the single-process call on the whole batch, at the float32 tolerance.
One spawn per group size runs all its cases (process start-up dominates the time).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import socket
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

import fla_npu
from fla_npu.ops.common.context_parallel import LOCAL, parts
from fla_npu.ops.cp import build_cp_context
from fla_npu.testing import check_close

HAVE_FLA = importlib.util.find_spec("fla") is not None
GRADS = ("q", "k", "v", "g", "beta", "A_log", "dt_bias")


@dataclass(frozen=True)
class Case:
    name: str
    op: str                      # "kda" or "gdn"
    lengths: tuple               # the packed sequences; their sum divides by the chain slots
    H: int = 2
    HV: int = 2
    K: int = 32
    V: int = 16
    layout: str = "contiguous"
    dtype: torch.dtype = torch.float32
    kw: dict = field(default_factory=dict)   # op switches
    fla_context: bool = False                # FLA's own FLACPContext (when FLA is installed)
    grads: tuple = GRADS                     # the inputs that require grad (none: forward only)


def _inputs(case: Case, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    T, H, HV, K, V = sum(case.lengths), case.H, case.HV, case.K, case.V

    def r(*shape):
        return torch.randn(*shape, generator=gen)

    kda = case.op == "kda"
    gshape = (1, T, HV, K) if kda else (1, T, HV)
    x = dict(q=r(1, T, H, K), k=r(1, T, H, K), v=r(1, T, HV, V), beta=torch.rand(1, T, HV, generator=gen) * 0.9 + 0.05)
    # weak decay (about 1% per step): a state crossing a rank boundary still matters at the end of
    # the next rank, so that every term of the exchange shows in the results
    if case.kw.get("use_gate_in_kernel"):
        x["g"] = r(*gshape)
        bounded = "lower_bound" in case.kw                 # lower_bound * sigmoid(exp(A_log) * (g + dt_bias))
        x["A_log"] = torch.rand(HV, generator=gen) - (0.5 if bounded else 4.0)
        x["dt_bias"] = r(HV * K if kda else HV) * 0.5 - (8.0 if bounded else 1.0)
    else:
        x["g"] = F.logsigmoid(r(*gshape) + 4.0) * 0.5
    if case.kw.get("use_beta_sigmoid_in_kernel"):
        x["beta"] = r(1, T, HV)
    if not case.kw.get("use_qk_l2norm_in_kernel"):
        x["q"], x["k"] = F.normalize(x["q"], dim=-1), F.normalize(x["k"], dim=-1)
    x = {n: t.to(case.dtype) if n in ("q", "k", "v") else t for n, t in x.items()}
    return x, r(1, T, HV, V).to(case.dtype)


def _call(case: Case, x: dict, **extra):
    fn = fla_npu.chunk_kda if case.op == "kda" else fla_npu.chunk_gated_delta_rule
    if case.kw.get("input_layout") == "BNSD":   # head-major in and out
        x = {n: t.transpose(1, 2) if n in ("q", "k", "v", "g", "beta") else t for n, t in x.items()}
    o, final = fn(**x, **case.kw, **extra)
    assert final is None
    return o.transpose(1, 2) if case.kw.get("input_layout") == "BNSD" else o


def _context(case: Case, cu: torch.Tensor, group):
    if not case.fla_context:
        return build_cp_context(cu, group=group, layout=case.layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "Triton is not supported on current platform, roll back to CPU."
        from fla.ops.cp import build_cp_context as fla_build_cp_context
    return fla_build_cp_context(cu, group=group, layout=case.layout)


def _gather(t: torch.Tensor, case: Case, world: int) -> torch.Tensor:
    parts = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(parts, t.contiguous())
    if case.layout == "contiguous":
        return torch.cat(parts, 1)
    half = t.shape[1] // 2
    return torch.cat([p[:, :half] for p in parts] + [p[:, half:] for p in reversed(parts)], 1)


def _local_slice(t: torch.Tensor, case: Case, rank: int, world: int) -> torch.Tensor:
    T = t.shape[1]
    if case.layout == "contiguous":
        n = T // world
        return t[:, rank * n:(rank + 1) * n]
    n = T // (2 * world)
    back = 2 * world - 1 - rank
    return torch.cat([t[:, rank * n:(rank + 1) * n], t[:, back * n:(back + 1) * n]], 1)


def _run_case(case: Case, rank: int, world: int, group) -> None:
    x, do = _inputs(case)
    cu = torch.tensor([0, *torch.tensor(case.lengths).cumsum(0).tolist()], dtype=torch.long)
    ctx = _context(case, cu, group)
    grads = [n for n in case.grads if n in x]
    local = {n: (_local_slice(t, case, rank, world) if n not in ("A_log", "dt_bias") else t).clone()
             .requires_grad_(n in grads) for n, t in x.items()}
    sent = _count_sends()
    o = _call(case, local, cp_context=ctx)
    if grads:
        o.backward(_local_slice(do, case, rank, world))
    else:
        assert o.grad_fn is None
    # the only traffic: one float32 state per crossing forward, its gradient backward
    state = case.HV * case.K * case.V * 4
    expected = sum((p.send not in (None, LOCAL)) + (p.recv not in (None, LOCAL)) * bool(grads)
                   for p in parts("test", ctx, ctx.cu_seqlens_cpu, local["q"].shape[1]))
    assert sent == [state] * expected, f"{case.name}: rank {rank} sent {sent}, expected {expected} x {state} bytes"
    dist.send = sent.original
    got = {"o": _gather(o.detach(), case, world)}
    for n in grads:
        grad = local[n].grad
        if n in ("A_log", "dt_bias"):
            dist.all_reduce(grad)
            got["d" + n] = grad
        else:
            got["d" + n] = _gather(grad, case, world)
    if rank != 0:
        return
    ref = {n: t.clone().requires_grad_(n in grads) for n, t in x.items()}
    o_ref = _call(case, ref, cu_seqlens=cu)
    if grads:
        o_ref.backward(do)
    want = {"o": o_ref.detach(), **{"d" + n: ref[n].grad for n in grads}}
    for name, value in want.items():
        check_close(f"{case.name}: {name}", got[name], value, case.dtype)


class _Sends(list):
    original = None


def _count_sends() -> _Sends:
    """Record the bytes of every ``dist.send`` of this process until ``dist.send`` is restored."""
    sent = _Sends()
    sent.original = dist.send

    def send(tensor, *args, **kwargs):
        sent.append(tensor.numel() * tensor.element_size())
        return sent.original(tensor, *args, **kwargs)

    dist.send = send
    return sent


def _worker(rank: int, world: int, rendezvous: str, cases: list) -> None:
    torch.set_num_threads(1)
    # A bounded timeout: a rank that dies leaves the others waiting minutes, not gloo's default 30. A
    # file store, not a TCP one: that one's server lives in rank 0.
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(minutes=5))
    try:
        failures = []
        for case in cases:
            try:
                _run_case(case, rank, world, dist.group.WORLD)
            except AssertionError as e:
                failures.append(str(e))
        dist.barrier()
        assert not failures, "\n".join(failures)
    except BaseException:
        dist.destroy_process_group()
        raise
    # Gloo aborts a rank whose peer closes its connections while the rank's last receive is still in
    # flight ("terminate called without an active exception"; after a final barrier and with a file
    # store it still happened, at teardown). So the ranks leave without tearing the group down: each
    # marks that it is past the barrier, waits for every mark (no gloo operation is in flight then)
    # and exits at once.
    _past_all_ranks(rendezvous, rank, world)
    os._exit(0)


def _past_all_ranks(rendezvous: str, rank: int, world: int, timeout_s: float = 300.0) -> None:
    """Every rank's mark file next to ``rendezvous`` exists (this rank's written first)."""
    open(f"{rendezvous}.past{rank}", "w").close()
    deadline = time.monotonic() + timeout_s
    while not all(os.path.exists(f"{rendezvous}.past{r}") for r in range(world)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank {rank}: not every rank passed the final barrier within {timeout_s:.0f} s")
        time.sleep(0.01)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(world: int, cases: list) -> None:
    """Run ``cases`` on a fresh gloo group of ``world`` processes; a failing assertion on any rank
    fails the caller with its message."""
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(_worker, args=(world, os.path.join(d, "rendezvous"), cases), nprocs=world, join=True)


KDA_GATE = dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True)
GDN_GATE = dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True)
SAFE = dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, safe_gate=True, lower_bound=-5.0)

TWO_RANKS = [
    # a sequence crossing the boundary between two others; K != V
    Case("kda varlen crossing", "kda", (40, 50, 38), kw=dict(KDA_GATE, chunk_size=32)),
    # boundary aligned with a sequence boundary: nothing crosses
    Case("kda aligned", "kda", (64, 64), kw=dict(SAFE, chunk_size=32, use_beta_sigmoid_in_kernel=True)),
    # one sequence over both ranks, GVA, the raw gate of GDN
    Case("gdn one sequence GVA", "gdn", (96,), H=1, HV=2, kw=dict(GDN_GATE, chunk_size=16)),
    Case("gdn varlen plain gate", "gdn", (20, 60, 16), kw=dict(chunk_size=16)),
    Case("kda disable_recompute state_v_first", "kda", (70, 26), kw=dict(chunk_size=32, disable_recompute=True,
                                                                          state_v_first=True)),
    Case("kda zigzag", "kda", (100, 28), layout="zigzag", kw=dict(SAFE, chunk_size=32)),
    Case("kda bf16", "kda", (50, 78), dtype=torch.bfloat16, kw=dict(SAFE, chunk_size=32)),
    # gradients for some inputs only (the final states then need none), and a forward-only call
    Case("gdn grads of q only", "gdn", (30, 98), kw=dict(chunk_size=16), grads=("q",)),
    Case("kda forward only", "kda", (30, 98), kw=dict(KDA_GATE, chunk_size=32), grads=()),
    *([Case("gdn FLA's context, head-major", "gdn", (40, 88), fla_context=True,
            kw=dict(GDN_GATE, chunk_size=32, input_layout="BNSD"))] if HAVE_FLA else []),
]

FOUR_RANKS = [
    # one sequence over every rank (the last rank holds only its tail), GVA
    Case("kda one sequence over 4 ranks GVA", "kda", (128,), H=1, HV=2, kw=dict(SAFE, chunk_size=32)),
    # a sequence from rank 0 to rank 3 between short ones; rank 3 starts with that sequence's tail
    Case("gdn spanning varlen", "gdn", (10, 90, 20, 8), kw=dict(GDN_GATE, chunk_size=16)),
    Case("gdn zigzag", "gdn", (50, 70, 8), layout="zigzag", kw=dict(chunk_size=16)),
]


@pytest.mark.parametrize("world, cases", [(2, TWO_RANKS), (4, FOUR_RANKS)], ids=["2 ranks", "4 ranks"])
def test_cp_matches_single_process(world, cases):
    spawn(world, cases)


# FLA's own CP test scenarios (tests/context_parallel/test_cp_kda.py / test_cp_gdn.py, which need
# 2-8 GPUs) at a tenth of their length and head count: bf16, qk l2norm and FLA's gate switches.
FLA_SCENARIOS = {
    2: [("sequence cut", (300, 400, 324), {}), ("boundary aligned", (512, 512), {}),
        ("many short sequences", (100, 150, 200, 250, 124, 100, 100), {}),
        ("state_v_first", (300, 400, 324), dict(state_v_first=True)),
        ("GQA sequence cut", (300, 400, 324), dict(H=1, HV=2))],
    4: [("complex", (700, 324), {}), ("single sequence", (1024,), {})],
}


def _fla_scenarios(world: int) -> list:
    cases = []
    for name, lengths, extra in FLA_SCENARIOS[world]:
        heads = {n: extra.get(n, 2) for n in ("H", "HV")}
        kw = {n: x for n, x in extra.items() if n not in heads}
        cases.append(Case(f"kda {name}", "kda", lengths, K=64, V=64, dtype=torch.bfloat16, **heads,
                          kw=dict(SAFE, **kw)))
        cases.append(Case(f"gdn {name}", "gdn", lengths, K=64, V=64, dtype=torch.bfloat16, **heads,
                          kw=dict(GDN_GATE, **kw)))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 4])
def test_cp_fla_scenarios(world):
    spawn(world, _fla_scenarios(world))


CONTEXT_FIELDS = {"contiguous": ("is_first_rank", "is_last_rank", "pre_num_ranks", "post_num_ranks"),
                  "zigzag": ("part_len", "front_num_seqs", "is_first_by_part", "is_last_by_part")}


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("lengths,world", [((40, 50, 38), 2), ((128,), 4), ((10, 90, 20, 8), 4), ((64, 0, 64), 2),
                                           ((1, 1, 5, 1), 4), ((3, 29), 8)])
def test_context_fields_match_fla(lengths, world, layout):
    """The partition of :func:`build_cp_context` is FLA's, field by field, on every rank."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "Triton is not supported on current platform, roll back to CPU."
        pytest.importorskip("fla")
        from fla.ops.cp.context import get_cp_cu_seqlens
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.long)
    for rank in range(world):
        ours = build_cp_context(cu, layout=layout, rank=rank, world_size=world)
        theirs = get_cp_cu_seqlens(cu, world_size=world, rank=rank, layout=layout)
        assert ours.cu_seqlens_cpu.tolist() == theirs.cu_seqlens_cpu.tolist(), rank
        assert ours.layout == theirs.layout
        for name in CONTEXT_FIELDS[layout]:
            assert getattr(ours, name) == getattr(theirs, name), (rank, name)


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("lengths,world", [((5, 2), 2), ((3,), 4), ((3,), 2)])
def test_context_refusals_match_fla(lengths, world, layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("fla")
        from fla.ops.cp.context import get_cp_cu_seqlens
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.long)
    with pytest.raises(ValueError) as theirs:
        get_cp_cu_seqlens(cu, world_size=world, rank=0, layout=layout)
    with pytest.raises(ValueError) as ours:
        build_cp_context(cu, layout=layout, rank=0, world_size=world)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("op", ["kda", "gdn"])
def test_context_without_group_is_a_local_call(op):
    """FLA's CP without a process group (``is_cp_enabled`` false): the context's ``cu_seqlens`` replace
    the caller's and nothing is exchanged."""
    case = Case("local", op, (20, 30, 14), kw=dict(chunk_size=32))
    x, _ = _inputs(case)
    cu = torch.tensor([0, 20, 50, 64])
    ctx = build_cp_context(cu, layout="contiguous", rank=0, world_size=1)
    ctx.group = None
    o = _call(case, x, cp_context=ctx, cu_seqlens=torch.tensor([0, 64]))
    torch.testing.assert_close(o, _call(case, x, cu_seqlens=cu), rtol=0, atol=0)


@pytest.fixture
def group_of_one():
    """A gloo group of this process alone (destroyed afterwards)."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


def _zigzag(**fields):
    return {**dict(layout="zigzag", part_len=32, front_num_seqs=1, is_first_by_part=(True, True),
                   is_last_by_part=(True, True)), **fields}


@pytest.mark.parametrize("fields,match", [
    (dict(), "`cp_context.is_first_rank` is not set"),
    (dict(is_first_rank=True, is_last_rank=False), "crossing the end of the chain"),
    (dict(is_first_rank=False, is_last_rank=True), "crossing the end of the chain"),
    (dict(layout="ring"), "`cp_context.layout` must be 'contiguous' or 'zigzag'"),
    (_zigzag(part_len=16), "zigzag `cp_context` describes 2 x 16 local tokens"),
    (_zigzag(is_last_by_part=(True, False)), "zigzag `cp_context` of rank 0 has a sequence crossing"),
])
def test_context_checked_against_the_group(group_of_one, fields, match):
    """A context whose chain metadata does not fit the group or the inputs is refused before any
    communication."""
    case = Case("bad context", "kda", (20, 44), kw=dict(chunk_size=32))
    x, _ = _inputs(case)
    cu = torch.tensor([0, 32, 64], dtype=torch.int32)
    ctx = SimpleNamespace(group=group_of_one, cu_seqlens=cu, cu_seqlens_cpu=cu, **fields)
    with pytest.raises(ValueError, match=match):
        _call(case, x, cp_context=ctx)
