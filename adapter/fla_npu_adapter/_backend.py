"""The fla_npu backend and its registration into FLA's existing dispatch registries.

Imported only once FLA's operation modules are loaded (never during ``import torch``). Uses FLA's
public ``fla.backends.register``; FLA's registry tables are only read, to find which registry FLA
dispatches a function through (per function in FLA 0.6 for ``chunk_kda``, per operation for
``fused_recurrent_kda_fwd`` and ``chunk_gated_delta_rule``). No registry is ever created.

FLA before 0.6 (its repository up to the 0.5.x line) dispatches through ``fla.ops.backends``: one
``BackendRegistry`` per operation, created by FLA's own ``fla.ops.<op>.backends`` module (loaded with
FLA's ``BackendRegistry.ensure_initialized``); the backend object is added with its ``register``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import threading

try:
    from fla import backends as fla_backends
    from fla.backends import BaseBackend, register
except ImportError:  # FLA < 0.6: per-operation registries in fla.ops.backends
    from fla.ops import backends as fla_backends
    from fla.ops.backends import BaseBackend
    register = None

from . import _discovery, _state
from ._verify import RULES, Binder, Verifier

logger = logging.getLogger("fla_npu.adapter")

BACKEND_TYPE = "fla_npu"
PRIORITY = -10  # FLA: lower runs first; its triton_ascend backends have 0, FlashKDA/FlashQLA 3

# FLA functions the adapter knows how to serve: key -> module defining FLA's dispatched function.
FLA_FUNCTIONS = {
    "kda.chunk_kda": "fla.ops.kda.chunk",
    "kda.fused_recurrent_kda_fwd": "fla.ops.kda.fused_recurrent",
    "gated_delta_rule.chunk_gated_delta_rule": "fla.ops.gated_delta_rule.chunk",
}

_lock = threading.Lock()
_claims: dict | None = None
registered: dict[str, object] = {}  # key -> the backend instance serving it


class FlaNpuBackend(BaseBackend):
    """Serves FLA calls with fla_npu when the switch is on and the verifier accepts the call."""

    backend_type = BACKEND_TYPE
    package_name = None
    env_var = _state.ENV_SWITCH
    default_enable = False
    priority = PRIORITY

    @classmethod
    def is_available(cls) -> bool:
        return True  # a backend class exists only for functions an installed flavour claims

    @classmethod  # a classmethod in FLA < 0.6 (its legacy ``can_use`` calls it on the class)
    def is_enabled(cls) -> bool:
        return _state.is_on()


class _Implementation:
    """Calls the fla_npu function claimed for the tensors' device (imported on first use) with the
    caller's arguments unchanged; the verifier has already accepted the call."""

    def __init__(self, verifier: Verifier):
        self.verifier = verifier
        self.loaded: dict[str, object] = {}

    def __call__(self, *args, **kwargs):
        q = args[0] if args else kwargs["q"]
        claim, reason = self.verifier.claim_for(q.device)
        if claim is None:
            raise RuntimeError(f"fla_npu_adapter: {reason}")
        function = self.loaded.get(claim.value)
        if function is None:
            module, _, attr = claim.value.partition(":")
            function = importlib.import_module(module)
            for part in attr.split("."):
                function = getattr(function, part)
            self.loaded[claim.value] = function
        return function(*args, **kwargs)


def claims() -> dict:
    global _claims
    if _claims is None:
        _claims = _discovery.read_claims()
    return _claims


def refresh() -> None:
    """Forget the discovered entry points (they are read again at the next registration)."""
    global _claims
    _claims = None


def dispatch_disabled() -> bool:
    return bool(getattr(fla_backends, "_DISPATCH_DISABLED", os.environ.get("FLA_DISABLE_BACKEND_DISPATCH") == "1"))


def _registry_of(operation: str, fla_function):
    """FLA's existing registry that dispatches ``fla_function``: ``(register() entry point, registry)`` or None."""
    raw = inspect.unwrap(fla_function)
    registry = getattr(fla_backends, "_function_registries", {}).get(raw)
    if registry is not None:
        return fla_function, registry
    registry = getattr(fla_backends, "_operation_registries", {}).get(operation)
    if registry is not None:
        return operation, registry
    legacy = getattr(fla_backends, "BackendRegistry", None) if register is None else None
    if legacy is not None:  # FLA < 0.6: FLA's own fla.ops.<operation>.backends creates the registry
        legacy.ensure_initialized(operation)
        registry = legacy._registries.get(operation)
        if registry is not None:
            return None, registry
    return None


def register_operation(operation: str) -> list[str]:
    """Register the fla_npu backend for every claimed function of ``operation``; returns the keys served."""
    with _lock:
        if dispatch_disabled():
            _state.log_once("dispatch-disabled", "fla_npu_adapter: FLA_DISABLE_BACKEND_DISPATCH=1, "
                            "FLA dispatches nothing -> fla_npu is not registered")
            return []
        installed = claims()
        if not installed:
            _state.log_once("no-claims", "fla_npu_adapter: no fla_npu kernels installed (entry-point group %s "
                            "is empty) -> FLA's default path", _discovery.GROUP)
            return []
        # One backend object per FLA registry, with the methods of the functions it serves.
        groups: dict[int, tuple[object, object, dict]] = {}
        for key, module_name in FLA_FUNCTIONS.items():
            op, _, function = key.partition(".")
            if op != operation or key not in installed:
                continue
            fla_function = getattr(importlib.import_module(module_name), function)
            found = _registry_of(operation, fla_function)
            if found is None:
                _state.log_once(f"no-registry:{key}", "fla_npu_adapter: FLA does not dispatch %s -> not served", key)
                continue
            entry, registry = found
            verifier = Verifier(key, installed[key], Binder.of(fla_function), RULES[key])
            methods = groups.setdefault(id(registry), (entry, registry, {}))[2]
            # staticmethod: FLA's getattr(backend, name) returns the callable itself (one frame less per call)
            methods[function] = staticmethod(_Implementation(verifier))
            methods[f"{function}_verifier"] = staticmethod(verifier)
        served = []
        for entry, registry, methods in groups.values():
            names = sorted(m for m in methods if not m.endswith("_verifier"))
            cls = type(f"FlaNpuBackend_{operation}", (FlaNpuBackend,), dict(methods))
            # FLA's own registration: replaces an earlier fla_npu backend, if any
            if register is not None:
                register(entry)(cls)
            else:
                registry.register(cls())
            for name in names:
                registered[f"{operation}.{name}"] = cls
            served += [f"{operation}.{name}" for name in names]
        if served:
            _state.log_once(f"registered:{operation}", "fla_npu_adapter: registered backend '%s' (priority %d) "
                            "for %s", BACKEND_TYPE, PRIORITY, ", ".join(served))
        return served
