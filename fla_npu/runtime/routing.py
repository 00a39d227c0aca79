"""Which implementation serves CPU tensors: the PyTorch reference (default) or the kernels run on the
host simulation of Ascend C (``FLA_NPU_CPU_IMPL=sim``). The variable is read at every call; each
distinct choice (op, route, reason) is logged once through ``logging.getLogger("fla_npu")``."""

from __future__ import annotations

import logging
import os
import threading

import torch

ENV = "FLA_NPU_CPU_IMPL"
CPU_IMPLS = ("reference", "sim")

logger = logging.getLogger("fla_npu")
_logged: set = set()
_lock = threading.Lock()


def cpu_impl() -> str:
    """``"reference"`` or ``"sim"`` from ``FLA_NPU_CPU_IMPL`` (unset or empty: reference)."""
    value = os.environ.get(ENV, "").strip().lower() or "reference"
    if value not in CPU_IMPLS:
        raise ValueError(f"{ENV}={os.environ.get(ENV)!r}: expected one of {', '.join(CPU_IMPLS)}")
    return value


def log_once(op: str, route: str, reason: str | None = None, level: int = logging.INFO) -> None:
    key = (op, route, reason)
    with _lock:
        if key in _logged:
            return
        _logged.add(key)
    logger.log(level, "fla_npu: %s on CPU tensors runs %s%s", op, route, f" ({reason})" if reason else "")


def use_sim(op: str, x: torch.Tensor, supported_dtypes=(torch.float32, torch.float16, torch.bfloat16)) -> bool:
    """Whether the CPU call of ``op`` on ``x`` goes to the simulated kernel (and log the choice once).
    Calls the kernel cannot take (another dtype) stay on the reference, logged as a warning."""
    if x.device.type != "cpu":
        return False
    if cpu_impl() != "sim":
        log_once(op, "the PyTorch reference")
        return False
    if x.dtype not in supported_dtypes:
        log_once(op, "the PyTorch reference", f"{ENV}=sim, but the kernel takes no {x.dtype} input",
                 logging.WARNING)
        return False
    from ._native import load_library  # a missing library is an error, not a silent fallback
    load_library()
    log_once(op, "the Ascend C kernel on the host simulation", f"{ENV}=sim")
    return True


class KernelRouteError(NotImplementedError):
    """A call on NPU tensors that the kernels cannot take (the adapter's verifier refuses such calls,
    so through FLA they run FLA's own path; called directly, fla_npu says why instead of running the
    PyTorch reference on the NPU)."""


def chunk_route(op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk_size: int) -> dict | None:
    """Where the forward of a chunked delta-rule call (``chunk_kda``, ``chunk_gated_delta_rule``) runs:
    ``None`` for the PyTorch reference, else the kernel chain (:mod:`.chunk_pipeline`) with the dict
    of the stages that run their reference instead (``{stage: reason}``; always empty on an NPU).

    NPU tensors: every stage on the kernels, or :class:`KernelRouteError` naming what the kernels
    cannot take. CPU tensors: the reference unless ``FLA_NPU_CPU_IMPL=sim``; with it, the stages
    whose kernels take the call run on the host simulation, the others on the reference (each
    reason logged once as a warning)."""
    from .chunk_pipeline import stage_reasons

    if q.device.type == "cpu" and cpu_impl() != "sim":
        log_once(op, "the PyTorch reference")
        return None
    reasons = stage_reasons(q.dtype, chunk_size, q.shape[-1], v.shape[-1])
    if q.device.type != "cpu":
        if reasons:
            raise KernelRouteError(f"{op}: on {q.device.type} tensors the call runs on the Ascend C kernels, which cannot "
                                   "take it: " + "; ".join(f"{s}: {why}" for s, why in reasons.items()))
        return {}
    for stage, why in reasons.items():
        log_once(f"{op} ({stage})", "the PyTorch reference", f"{ENV}=sim, but {why}", logging.WARNING)
    if len(reasons) == 4:  # no stage of 2-5 can run on a kernel
        return None
    from ._native import load_library  # a missing library is an error, not a silent fallback
    load_library()
    log_once(op, "the Ascend C kernels on the host simulation", f"{ENV}=sim")
    return reasons
