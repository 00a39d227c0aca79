"""The kernels as PyTorch custom ops, ``torch.ops.fla_npu.<kernel>``, with fake (meta) implementations
so that ``torch.compile`` and graph capture trace a call without running it. One implementation serves
every device: it calls the kernel's runtime module, which launches on the NPU or the host simulation.

Registered once, on import; a kernel whose runtime module this build lacks is not registered.
"""

from __future__ import annotations

import importlib

import torch
from torch import Tensor

LIB = "fla_npu"


def _runtime(name: str):
    try:
        return importlib.import_module(f".{name}", __package__)
    except ImportError:
        return None


def _empty(like: Tensor, shape, dtype: torch.dtype) -> Tensor:
    return like.new_empty(tuple(shape), dtype=dtype)


# ---- stage 1: gate activation + chunk-local cumsum (token layout) --------------------------------
@torch.library.custom_op(f"{LIB}::gate_chunk_cumsum", mutates_args=())
def gate_chunk_cumsum(g: Tensor, chunk_size: int, activation: str, A_log: Tensor | None, dt_bias: Tensor | None,
                      lower_bound: float | None, scale: float | None, cu_seqlens_cpu: Tensor | None) -> Tensor:
    from .gate import gate_chunk_cumsum as run

    return run(g, chunk_size, activation, A_log, dt_bias, lower_bound, scale, cu_seqlens_cpu)


@gate_chunk_cumsum.register_fake
def _(g, chunk_size, activation, A_log, dt_bias, lower_bound, scale, cu_seqlens_cpu):
    return _empty(g, g.shape, torch.float32)


# ---- stage 3: WY factors --------------------------------------------------------------------------
@torch.library.custom_op(f"{LIB}::wy_fast", mutates_args=())
def wy_fast(k: Tensor, v: Tensor, beta: Tensor, Akk: Tensor, e_row: Tensor, e_tail: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    from .wy_fast import wy_fast as run

    return run(k, v, beta, Akk, e_row, e_tail)


@wy_fast.register_fake
def _(k, v, beta, Akk, e_row, e_tail):
    f = torch.float32
    return _empty(k, k.shape, f), _empty(v, v.shape, f), _empty(k, k.shape, f)


# ---- stage 5: output ------------------------------------------------------------------------------
@torch.library.custom_op(f"{LIB}::chunk_output", mutates_args=())
def chunk_output(q: Tensor, e_row: Tensor, h: Tensor, Aqk: Tensor, v_new: Tensor) -> Tensor:
    from .chunk_output import chunk_output as run

    return run(q, e_row, h, Aqk, v_new)


@chunk_output.register_fake
def _(q, e_row, h, Aqk, v_new):
    return _empty(v_new, v_new.shape, torch.float32)


# ---- stage 2: intra-chunk matrices and the triangular inverse -------------------------------------
if _runtime("chunk_intra") is not None:
    @torch.library.custom_op(f"{LIB}::chunk_intra", mutates_args=())
    def chunk_intra(q: Tensor, k: Tensor, beta: Tensor, G: Tensor, out_dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        from .chunk_intra import chunk_intra as run

        return run(q, k, beta, G, out_dtype)

    @chunk_intra.register_fake
    def _(q, k, beta, G, out_dtype):
        shape = (*q.shape[:-1], q.shape[-2])
        return _empty(q, shape, out_dtype), _empty(q, shape, out_dtype)

if _runtime("solve_tril") is not None:
    @torch.library.custom_op(f"{LIB}::solve_tril", mutates_args=())
    def solve_tril(L: Tensor, out_dtype: torch.dtype) -> Tensor:
        from .solve_tril import solve_tril as run

        return run(L, out_dtype)

    @solve_tril.register_fake
    def _(L, out_dtype):
        return _empty(L, L.shape, out_dtype)


# ---- stage 4: the state recurrence ----------------------------------------------------------------
if _runtime("chunk_state") is not None:
    @torch.library.custom_op(f"{LIB}::chunk_state", mutates_args=())
    def chunk_state(w: Tensor, u: Tensor, kg: Tensor, e_last: Tensor, chunk_offsets: Tensor, h0: Tensor | None,
                    state_v_first: bool, h_dtype: torch.dtype, v_new_dtype: torch.dtype,
                    cube_dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
        from .chunk_state import chunk_state as run

        return run(w, u, kg, e_last, chunk_offsets, h0, state_v_first, h_dtype=h_dtype, v_new_dtype=v_new_dtype,
                   cube_dtype=cube_dtype)

    @chunk_state.register_fake
    def _(w, u, kg, e_last, chunk_offsets, h0, state_v_first, h_dtype, v_new_dtype, cube_dtype):
        NC, HV, _, K = w.shape
        V = u.shape[-1]
        N = chunk_offsets.shape[0] - 1
        final = (N, HV, V, K) if state_v_first else (N, HV, K, V)
        return _empty(w, (NC, HV, K, V), h_dtype), _empty(u, u.shape, v_new_dtype), _empty(w, final, torch.float32)
