"""FLA's context-parallel calls (``cp_context`` from FLA's ``build_cp_context``) reach fla_npu through
FLA's dispatch: in one process (a context without a group), and in a 2-rank gloo group where FLA's
own path cannot run on a CPU (its CP requires CUDA or Ascend), so only a routed call can succeed and
match fla_npu's single-process result."""

from __future__ import annotations

import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

import fla_npu
from fla.ops.cp import build_cp_context
from fla.ops.cp.context import get_cp_cu_seqlens
from fla.ops.kda import chunk_kda
from fla_npu.testing import check_close

LENGTHS = (24, 50, 22)


def _inputs(seed=0):
    gen = torch.Generator().manual_seed(seed)
    T, H, K = sum(LENGTHS), 2, 16
    q, k, v = (torch.randn(1, T, H, K, generator=gen) for _ in range(3))
    g = F.logsigmoid(torch.randn(1, T, H, K, generator=gen) + 4)
    beta = torch.rand(1, T, H, generator=gen)
    return dict(q=q, k=k, v=v, g=g, beta=beta), torch.randn(1, T, H, K, generator=gen)


def _cu():
    return torch.tensor([0, *torch.tensor(LENGTHS).cumsum(0).tolist()], dtype=torch.long)


def test_cp_context_without_group_routed(adapter_switch, spy):
    adapter_switch.enable()
    x, _ = _inputs()
    ctx = get_cp_cu_seqlens(_cu(), world_size=1, rank=0)          # FLA's context, no process group
    o, _ = chunk_kda(**x, cp_context=ctx, use_qk_l2norm_in_kernel=True, chunk_size=32)
    assert spy == {"kda.chunk_kda": 1}
    ref, _ = fla_npu.chunk_kda(**x, cu_seqlens=_cu(), use_qk_l2norm_in_kernel=True, chunk_size=32)
    check_close("o", o, ref, torch.float32)


def _worker(rank, world, port):
    import fla_npu_adapter

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        fla_npu_adapter.enable()
        x, do = _inputs()
        n = do.shape[1] // world
        local = {name: t[:, rank * n:(rank + 1) * n].clone().requires_grad_() for name, t in x.items()}
        ctx = build_cp_context(_cu(), group=dist.group.WORLD)
        o, _ = chunk_kda(**local, cp_context=ctx, use_qk_l2norm_in_kernel=True, chunk_size=32)
        o.backward(do[:, rank * n:(rank + 1) * n])
        got = {"o": o.detach(), **{"d" + name: t.grad for name, t in local.items()}}
        ref = {name: t.clone().requires_grad_() for name, t in x.items()}
        o_ref, _ = fla_npu.chunk_kda(**ref, cu_seqlens=_cu(), use_qk_l2norm_in_kernel=True, chunk_size=32)
        o_ref.backward(do)
        want = {"o": o_ref.detach(), **{"d" + name: t.grad for name, t in ref.items()}}
        for name, value in got.items():
            check_close(f"rank {rank}: {name}", value, want[name][:, rank * n:(rank + 1) * n], torch.float32)
    finally:
        dist.destroy_process_group()


def test_cp_two_ranks_through_fla():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_worker, args=(2, port), nprocs=2, join=True)
