"""Argument checks shared by the public ops, run before any computation.

Where FLA defines a check, its exception type and message are reproduced exactly (callers and
FLA's own tests match on them); the checks FLA lacks raise ``ValueError`` (``TypeError`` for
unknown keyword arguments) with a message that names the argument.
"""

from __future__ import annotations

import logging
import warnings

import torch

logger = logging.getLogger("fla_npu")

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
LAYOUTS = ("BSND", "BNSD")
_warned: set = set()


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


def pop_state_layout(state_v_first: bool, kwargs: dict) -> bool:
    """FLA's deprecated ``transpose_state_layout`` alias of ``state_v_first``."""
    if "transpose_state_layout" in kwargs:
        if state_v_first:
            raise ValueError("Cannot pass both `state_v_first` and the deprecated `transpose_state_layout`.")
        warnings.warn("`transpose_state_layout` is deprecated and renamed to `state_v_first`.",
                      DeprecationWarning, stacklevel=3)
        state_v_first = bool(kwargs.pop("transpose_state_layout"))
    return state_v_first


def reject_unknown_kwargs(fn: str, kwargs: dict, known: tuple) -> None:
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise TypeError(f"{fn}() got unexpected keyword argument(s) {unknown}; accepted extra keywords: {list(known)}")


def check_varlen(q: torch.Tensor, initial_state, cu_seqlens) -> None:
    """FLA's two varlen checks, verbatim."""
    if cu_seqlens is None:
        return
    if q.shape[0] != 1:
        raise ValueError(
            f"The batch size is expected to be 1 rather than {q.shape[0]} when using `cu_seqlens`."
            f"Please flatten variable-length inputs before processing.",
        )
    if initial_state is not None and initial_state.shape[0] != len(cu_seqlens) - 1:
        raise ValueError(
            f"The number of initial states is expected to be equal to the number of input sequences, "
            f"i.e., {len(cu_seqlens) - 1} rather than {initial_state.shape[0]}.",
        )


def check_neg_eigval(allow_neg_eigval: bool, use_beta_sigmoid_in_kernel: bool) -> None:
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise ValueError("`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`.")


def check_tensors(fn: str, device: torch.device, *, floating: bool = True, first: str = "q", **tensors) -> None:
    """Every given tensor is a tensor on ``device`` (the device of the argument ``first``) and, if
    ``floating``, of a supported float dtype (index tensors pass ``floating=False``; their dtypes
    and values are checked where they are used)."""
    for name, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{fn}: `{name}` must be a torch.Tensor, got {type(t).__name__}.")
        if t.device != device:
            raise ValueError(f"{fn}: `{name}` is on {t.device} but `{first}` is on {device}; all tensors must share one device.")
        if floating and t.dtype not in FLOAT_DTYPES:
            raise ValueError(f"{fn}: `{name}` has dtype {t.dtype}; supported: float16, bfloat16, float32, float64.")


def shown(value) -> str:
    """``value`` as an error message shows it: an int as FLA prints it, anything else with its type
    (a string ``'64'`` must not read as the number 64)."""
    return str(value) if type(value) is int else f"{value!r} (a {type(value).__name__}, not an int)"


def check_chunk_size(chunk_size, allowed: tuple, message: str) -> None:
    """``chunk_size`` is an int (not a bool, float or string) in ``allowed``; otherwise FLA's
    ``ValueError`` ``message`` with the value (and its type when it is not an int) appended."""
    if type(chunk_size) is not int or chunk_size not in allowed:
        raise ValueError(f"{message}, got {shown(chunk_size)}.")


def check_dims(fn: str, **dims: int) -> None:
    """Head counts and head dimensions (``H``, ``HV``, ``K``, ``V``, ...) are at least 1: an op has
    no meaning with zero heads or zero-width heads (FLA fails there with a division by zero). Zero
    batch rows or tokens are fine: the output is empty and the state passes through."""
    zero = [f"{name}=0" for name, n in dims.items() if n == 0]
    if zero:
        raise ValueError(f"{fn}: {', '.join(zero)}: every head count and head dimension must be at least 1 "
                         f"(B=0 or T=0 are allowed: an empty output).")


def check_gate(fn: str, g, A_log, dt_bias, per_key: bool, dyg=None, backward: bool = False) -> None:
    """The gate functions' arguments: tensors on ``g``'s device, float dtypes, ``g`` ``[..., H, K]``
    (``per_key``, KDA) or ``[..., HV]`` (GDN), ``A_log`` one value per head, ``dt_bias`` one per
    gate column (``H*K`` / ``HV``), and for a ``backward`` a ``dyg`` shaped like ``g``."""
    if not isinstance(g, torch.Tensor):
        raise ValueError(f"{fn}: `g` must be a torch.Tensor, got {type(g).__name__}.")
    check_tensors(fn, g.device, first="g", g=g, A_log=A_log, dt_bias=dt_bias, dyg=dyg)
    layout = "[..., H, K]" if per_key else "[..., HV]"
    if g.dim() < (2 if per_key else 1):
        raise ValueError(f"{fn}: `g` must be {layout}, got shape {list(g.shape)}.")
    heads = g.shape[-2] if per_key else g.shape[-1]
    width = heads * g.shape[-1] if per_key else heads
    if A_log is not None and A_log.numel() != heads:
        raise ValueError(f"{fn}: `A_log` must have one value per head ({heads}), got shape {list(A_log.shape)}.")
    if dt_bias is not None and dt_bias.numel() != width:
        raise ValueError(f"{fn}: `dt_bias` must have {'H*K' if per_key else 'HV'}={width} values, "
                         f"got shape {list(dt_bias.shape)}.")
    if backward and (dyg is None or dyg.shape != g.shape):
        got = "None" if dyg is None else f"shape {list(dyg.shape)}"
        raise ValueError(f"{fn}: `dyg` must have the shape of `g` {list(g.shape)}, got {got}.")


def check_ndim(fn: str, name: str, t: torch.Tensor, ndims: tuple, layout: str) -> None:
    if t is not None and t.dim() not in ndims:
        raise ValueError(f"{fn}: `{name}` must have {' or '.join(map(str, ndims))} dimensions ({layout}), "
                         f"got shape {list(t.shape)}.")


def check_cu_seqlens(fn: str, cu_seqlens, T: int, device: torch.device, cu_seqlens_cpu=None,
                     host_copy: bool = True) -> torch.Tensor | None:
    """Validate ``cu_seqlens`` (integer, 1-D, starts at 0, non-decreasing, ends at T) and return a
    CPU copy (``cu_seqlens_cpu`` when given, saving the device-to-host copy). With ``host_copy=False``
    and neither a CPU copy nor CPU tensors, nothing is read on the host: only the type and shape
    are checked and ``None`` is returned (the caller builds its tables on the device)."""
    if cu_seqlens is None:
        if cu_seqlens_cpu is not None:
            raise ValueError(f"{fn}: `cu_seqlens_cpu` was given without `cu_seqlens`.")
        return None
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{fn}: `cu_seqlens` must be a 1-D int32/int64 tensor.")
    if cu_seqlens.device != device:
        raise ValueError(f"{fn}: `cu_seqlens` is on {cu_seqlens.device} but `q` is on {device}.")
    if not host_copy and cu_seqlens_cpu is None and cu_seqlens.device.type != "cpu":
        if cu_seqlens.numel() < 2:
            raise ValueError(f"{fn}: `cu_seqlens` needs at least 2 entries, got {cu_seqlens.numel()}.")
        return None
    cpu = cu_seqlens.cpu() if cu_seqlens_cpu is None else cu_seqlens_cpu
    if cpu.shape != cu_seqlens.shape:
        raise ValueError(f"{fn}: `cu_seqlens_cpu` has shape {list(cpu.shape)}, `cu_seqlens` {list(cu_seqlens.shape)}.")
    if cpu.numel() < 2:
        raise ValueError(f"{fn}: `cu_seqlens` needs at least 2 entries, got {cpu.numel()}.")
    if int(cpu[0]) != 0:
        raise ValueError(f"{fn}: `cu_seqlens` must start at 0, got {int(cpu[0])}.")
    if bool((cpu[1:] < cpu[:-1]).any()):
        raise ValueError(f"{fn}: `cu_seqlens` must be non-decreasing, got {cpu.tolist()}.")
    if int(cpu[-1]) != T:
        raise ValueError(f"{fn}: `cu_seqlens` must end at the number of tokens T={T}, got {int(cpu[-1])}.")
    return cpu


def check_log_decay(fn: str, g: torch.Tensor) -> None:
    """A log decay ``g`` (the gate after activation) of ``+inf`` would multiply the state by
    ``exp(+inf)``: the float64 gold's output is then inf/NaN from that step on. Refuse it, naming
    the fix; ``-inf`` (a full state reset) is valid. One reduction over ``g``, on CPU tensors only:
    on a device its answer would cost a device-to-host synchronisation per call, so there a ``+inf``
    gives the non-finite output the gold gives."""
    if g.device.type == "cpu" and bool(torch.isposinf(g).any()):
        raise ValueError(f"{fn}: `g` contains +inf; `g` is the log decay (<= 0 in practice): a step of +inf "
                         f"would make the state infinite. Use -inf for a full state reset, or pass the raw "
                         f"gate with `use_gate_in_kernel=True`.")


def check_state(fn: str, name: str, s, N: int, HV: int, K: int, V: int, state_v_first: bool) -> None:
    if s is None:
        return
    expected = (N, HV, V, K) if state_v_first else (N, HV, K, V)
    if tuple(s.shape) != expected:
        layout = "[N, HV, V, K]" if state_v_first else "[N, HV, K, V]"
        raise ValueError(f"{fn}: `{name}` must have shape {layout}={list(expected)}, got {list(s.shape)}.")


def to_bsnd(layout: str, fn: str, *tensors):
    """Accept FLA's time-major ``BSND`` (``[B, T, H, D]``, the default) or head-major ``BNSD``
    (``[B, H, T, D]``); returns the tensors in ``BSND``."""
    if layout not in LAYOUTS:
        raise ValueError(f"{fn}: `input_layout` must be one of {LAYOUTS}, got {layout!r}.")
    if layout == "BSND":
        return tensors
    return tuple(None if t is None else t.transpose(1, 2) for t in tensors)
