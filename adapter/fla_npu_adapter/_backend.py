"""The fla_npu backend and its registration into FLA's existing dispatch registries.

Imported only once FLA's operation modules are loaded (never during ``import torch``). Uses FLA's
public ``fla.backends.register``; FLA's registry tables are only read, to find which registry FLA
dispatches a function through (per function in FLA 0.6 for ``chunk_kda``, per operation for
the others). No registry is ever created.

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

import torch

from . import _discovery, _state
from ._contract import CONTRACTS
from ._verify import Binder, _Verifier, verifier_for

logger = logging.getLogger("fla_npu.adapter")

BACKEND_TYPE = "fla_npu"
PRIORITY = -10  # FLA: lower runs first; its triton_ascend backends have 0, FlashKDA/FlashQLA 3

# FLA functions the adapter knows how to serve: key -> module defining FLA's dispatched function.
# FLA's fused_gdn_gate is not dispatched (FLA calls GDNGateFunction.apply directly); its forward and
# backward pieces gdn_gate_fwd / gdn_gate_bwd are.
FLA_FUNCTIONS = {
    "kda.chunk_kda": "fla.ops.kda.chunk",
    "kda.fused_recurrent_kda_fwd": "fla.ops.kda.fused_recurrent",
    "kda.fused_kda_gate": "fla.ops.kda.gate",
    "kda.kda_gate_fwd": "fla.ops.kda.gate",
    "kda.kda_gate_bwd": "fla.ops.kda.gate",
    "gated_delta_rule.chunk_gated_delta_rule": "fla.ops.gated_delta_rule.chunk",
    "gated_delta_rule.gdn_gate_fwd": "fla.ops.gated_delta_rule.gate",
    "gated_delta_rule.gdn_gate_bwd": "fla.ops.gated_delta_rule.gate",
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

    def __init__(self, verifier: _Verifier):
        self.verifier = verifier
        self.first = verifier.first
        self.loaded: dict[str, object] = {}

    def load(self, device):
        claim, reason = self.verifier.claim_for(device)
        if claim is None:
            raise RuntimeError(f"fla_npu_adapter: {reason}")
        function = self.loaded.get(claim.value)
        if function is None:
            module, _, attr = claim.value.partition(":")
            function = importlib.import_module(module)
            for part in attr.split("."):
                function = getattr(function, part)
            self.loaded[claim.value] = function
        return function

    def __call__(self, *args, **kwargs):
        return self.load((args[0] if args else kwargs[self.first]).device)(*args, **kwargs)


class _ContractImplementation(_Implementation):
    """The same, then FLA's return contract (``_contract``): for FLA functions whose fla_npu
    counterpart returns another dtype or shape, or records an autograd graph FLA's kernel does not."""

    def __init__(self, verifier: _Verifier, contract):
        super().__init__(verifier)
        self.convert, self.records_graph = contract.convert, contract.records_graph
        self.reads = verifier.binder.extractor(contract.reads)

    def __call__(self, *args, **kwargs):
        function = self.load((args[0] if args else kwargs[self.first]).device)
        if self.records_graph or not torch.is_grad_enabled():
            result = function(*args, **kwargs)
        else:
            with torch.no_grad():
                result = function(*args, **kwargs)
        return self.convert(result, *self.reads(*args, **kwargs)[1:])


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
            _state.log_fallback("dispatch-disabled", "fla_npu_adapter: FLA_DISABLE_BACKEND_DISPATCH=1, "
                            "FLA dispatches nothing -> fla_npu is not registered")
            return []
        installed = claims()
        if not installed:
            _state.log_fallback("no-claims", "fla_npu_adapter: no fla_npu kernels installed (entry-point group %s "
                            "is empty) -> FLA's default path", _discovery.GROUP)
            return []
        # One backend object per FLA registry, with the methods of the functions it serves.
        groups: dict[int, tuple[object, object, dict]] = {}
        for key, module_name in FLA_FUNCTIONS.items():
            op, _, function = key.partition(".")
            if op != operation or key not in installed:
                continue
            try:
                fla_function = getattr(importlib.import_module(module_name), function)
            except (ImportError, AttributeError):  # an FLA version without this function
                _state.log_fallback(f"no-function:{key}", "fla_npu_adapter: FLA has no %s.%s -> not served",
                                module_name, function)
                continue
            found = _registry_of(operation, fla_function)
            if found is None:
                _state.log_fallback(f"no-registry:{key}", "fla_npu_adapter: FLA does not dispatch %s -> not served", key)
                continue
            entry, registry = found
            verifier = verifier_for(key, installed[key], Binder.of(fla_function))
            contract = CONTRACTS.get(key)
            implementation = _Implementation(verifier) if contract is None else _ContractImplementation(verifier, contract)
            methods = groups.setdefault(id(registry), (entry, registry, {}))[2]
            # staticmethod: FLA's getattr(backend, name) returns the callable itself (one frame less per call)
            methods[function] = staticmethod(implementation)
            methods[f"{function}_verifier"] = staticmethod(verifier)
        served = []
        for entry, registry, methods in groups.values():
            names = sorted(m for m in methods if not m.endswith("_verifier"))
            cls = type(f"FlaNpuBackend_{operation}", (FlaNpuBackend,), dict(methods))
            replaced = type(getattr(registry, "_backends", {}).get(BACKEND_TYPE))
            for key in [key for key, served_by in registered.items() if served_by is replaced]:
                del registered[key]  # functions the replaced fla_npu backend of this registry served
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
