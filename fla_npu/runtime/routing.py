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
