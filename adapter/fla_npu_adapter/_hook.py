"""Register with FLA as soon as FLA's operation packages finish importing (a post-import hook).

Installed by the torch autoload entry point (during ``import torch``, when FLA cannot be imported
yet) or by ``import fla_npu_adapter``. Stdlib only; FLA and torch are touched only after FLA's
``fla.ops.kda`` / ``fla.ops.gated_delta_rule`` packages have executed.
"""

from __future__ import annotations

import importlib.abc
import logging
import sys
import threading

logger = logging.getLogger("fla_npu.adapter")

# FLA package -> operation whose registries the adapter joins once that package is loaded.
WATCHED = {"fla.ops.kda": "kda", "fla.ops.gated_delta_rule": "gated_delta_rule"}
_lock = threading.Lock()
_done: set[str] = set()  # FLA packages already handled (registration is once per process)


def _on_loaded(module_name: str) -> None:
    if module_name in _done:
        return
    _done.add(module_name)
    try:
        from . import _backend
        _backend.register_operation(WATCHED[module_name])
    except Exception:  # never break FLA's import: FLA's default path keeps serving
        logger.exception("fla_npu_adapter: registration for %s failed -> FLA's default path", module_name)


class _LoaderProxy:
    """Delegates to the real loader and registers after the module has executed."""

    def __init__(self, loader, name: str):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # Put the real loader back first so that FLA's modules keep their own loader.
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _on_loaded(self._name)

    def __getattr__(self, attr):
        return getattr(self._loader, attr)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _LoaderProxy(spec.loader, fullname)
                return spec
        return None


_finder = _PostImportFinder()


def install() -> None:
    """Idempotent: watch FLA's operation packages; those already imported are registered now."""
    with _lock:
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
    for name in WATCHED:
        if name in sys.modules:
            _on_loaded(name)
