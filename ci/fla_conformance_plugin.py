"""pytest plugin for ci/fla_conformance.py: FLA's own tests on the CPU, recording fla_npu routing.

Loaded with ``-p fla_conformance_plugin`` (ci/ on PYTHONPATH) before FLA's ``tests/conftest.py`` and
test modules are imported. It

* redirects FLA's device to the CPU: ``fla.utils.device`` / ``device_name`` / ``device_platform``
  become ``'cpu'`` and ``device_torch_lib`` becomes ``torch.cpu`` (FLA forces ``'cuda'`` when Triton
  has no driver, see fla.md §6), so test modules' ``.to(device)`` / ``device=device`` land on the
  CPU and the conftest teardown ``device_torch_lib.synchronize()`` is ``torch.cpu.synchronize`` (a
  no-op) instead of ``torch.cuda.synchronize`` (raises without CUDA);
* spies on the fla_npu adapter's backend methods (verifier and implementation of every function the
  adapter registered) and records, per test, which calls were routed to fla_npu and the verifier's
  reason for each rejected call;
* records each test's outcome and, for failures, whether the failure is a Triton kernel launch (no
  Triton driver on the CPU) and from which FLA function;
* after a failed test, runs Python's cyclic garbage collector: the failed test's frames (its tensors
  and autograd graphs) stay alive in a reference cycle with the exception's traceback until that
  collector runs, which tensor allocations never trigger, so after an out-of-memory failure the
  following tests would fail on the leftover instead of on their own allocations.

It never edits, skips or weakens FLA's tests: no assertion, tolerance, shape, marker or fixture of
FLA's is touched, and NaN poisoning of ``torch.empty*`` by FLA's conftest stays active (it also
poisons fla_npu's allocations, since the conftest matches any module name containing "fla").

Raw per-test records are written as JSON lines to ``$FLA_CONFORMANCE_RECORDS``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback

import pytest
import torch

_records: dict[str, dict] = {}
_current: list[str | None] = [None]
_setup_info: dict = {}


# ---------------------------------------------------------------------------------------------
# Device redirection (runs at plugin import, before FLA's conftest and test modules import fla.utils)
# ---------------------------------------------------------------------------------------------

def _redirect_device_to_cpu() -> dict:
    autoloaded = "fla_npu_adapter" in sys.modules  # torch's device-backend autoload imported it
    import fla.utils as fu
    import fla.utils._device as fd

    before = {"device": fu.device, "device_platform": fu.device_platform, "IS_NPU": fu.IS_NPU,
              "IS_NVIDIA": fu.IS_NVIDIA}
    for module in (fu, fd):
        module.device = "cpu"
        module.device_name = "cpu"
        module.device_torch_lib = torch.cpu
    # FLA modules imported during `import fla` that copied these names by value
    for name, module in list(sys.modules.items()):
        if not name.startswith("fla.") or module is None or module in (fu, fd):
            continue
        if getattr(module, "device_torch_lib", None) is torch.cuda:
            module.device_torch_lib = torch.cpu
    return {"fla_file": fu.__file__, "fla_version": getattr(sys.modules["fla"], "__version__", None),
            "fla_utils_before_redirect": before, "adapter_imported_by_torch_autoload": autoloaded}


# ---------------------------------------------------------------------------------------------
# Spies on the adapter's backend
# ---------------------------------------------------------------------------------------------

def _record() -> dict | None:
    nodeid = _current[0]
    return None if nodeid is None else _records.setdefault(nodeid, _new_record(nodeid))


def _new_record(nodeid: str) -> dict:
    return {"nodeid": nodeid, "calls": {}, "rejections": {}, "impl_errors": [], "outcome": None,
            "phase_failed": None, "duration": 0.0, "longrepr": None, "triton_launch": None,
            "skip_reason": None}


def _install_spies() -> dict:
    # FLA's operation packages: importing them triggers the adapter's registration hook
    import fla.ops.gated_delta_rule  # noqa: F401
    import fla.ops.kda  # noqa: F401
    try:
        import fla_npu_adapter
        from fla_npu_adapter import _backend
    except ImportError as error:
        return {"adapter": f"not importable: {error}", "registered": []}

    spied = []
    for key, cls in sorted(_backend.registered.items()):
        function = key.partition(".")[2]
        verifier = cls.__dict__.get(f"{function}_verifier")
        impl = cls.__dict__.get(function)
        if verifier is None or impl is None or getattr(cls, "_conformance_spied_" + function, False):
            continue
        verifier, impl = verifier.__func__ if isinstance(verifier, staticmethod) else verifier, \
            impl.__func__ if isinstance(impl, staticmethod) else impl

        def spy_verifier(*args, _key=key, _verifier=verifier, **kwargs):
            ok, reason = _verifier(*args, **kwargs)
            rec = _record()
            if rec is not None and not ok:
                rec["rejections"].setdefault(f"{_key}: {reason}", 0)
                rec["rejections"][f"{_key}: {reason}"] += 1
            return ok, reason

        def spy_impl(*args, _key=key, _impl=impl, **kwargs):
            rec = _record()
            if rec is not None:
                rec["calls"][_key] = rec["calls"].get(_key, 0) + 1
            try:
                return _impl(*args, **kwargs)
            except Exception as error:
                if rec is not None:
                    rec["impl_errors"].append(f"{_key}: {type(error).__name__}: {str(error)[:300]}")
                raise

        setattr(cls, f"{function}_verifier", staticmethod(spy_verifier))
        setattr(cls, function, staticmethod(spy_impl))
        setattr(cls, "_conformance_spied_" + function, True)
        spied.append(key)
    return {"adapter": fla_npu_adapter.__file__, "adapter_status": fla_npu_adapter.status(), "registered": spied}


# ---------------------------------------------------------------------------------------------
# pytest hooks
# ---------------------------------------------------------------------------------------------

def _prepare() -> None:
    _setup_info.update(_redirect_device_to_cpu())
    _setup_info.update(_install_spies())
    import triton
    _setup_info["versions"] = {"python": sys.version.split()[0], "torch": torch.__version__,
                               "triton": triton.__version__}
    _setup_info["env"] = {k: os.environ.get(k) for k in (
        "FLA_ASCENDC", "FLA_CI_ENV", "FLA_DISABLE_BACKEND_DISPATCH", "TRITON_INTERPRET", "FLA_NPU_AUTOLOAD")}
    if not _setup_info.get("registered"):
        sys.stderr.write(f"fla_conformance_plugin: the fla_npu adapter registered nothing: {_setup_info}\n")


# At plugin import (``-p``), i.e. before pytest loads FLA's tests/conftest.py, which binds
# ``device_torch_lib`` at its import, and before any test module binds ``device``.
_prepare()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid
    _records.setdefault(item.nodeid, _new_record(item.nodeid))


def _triton_launch(excinfo) -> str | None:
    """``'<fla function> (<file>)'`` when the exception is a Triton launch without a driver."""
    if excinfo is None:
        return None
    error = excinfo.value
    frames = traceback.extract_tb(excinfo.tb)
    in_triton = any("/triton/" in f.filename for f in frames)
    if not in_triton or "driver" not in str(error).lower():
        return None
    # the FLA frame that launched the first Triton kernel (the caller of the first triton frame)
    for caller, callee in zip(frames, frames[1:]):
        if "/triton/" in callee.filename and "/fla/" in caller.filename and "/triton/" not in caller.filename:
            return f"{caller.name} (fla/{caller.filename.rsplit('/fla/', 1)[-1]}:{caller.lineno}: {caller.line})"
    return "a Triton kernel"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    rec = _records.setdefault(item.nodeid, _new_record(item.nodeid))
    rec["duration"] += report.duration
    if report.failed and call.excinfo is not None:
        launch = _triton_launch(call.excinfo)
        if launch and rec["triton_launch"] is None:
            rec["triton_launch"] = launch
        rec["exception"] = f"{call.excinfo.typename}: {str(call.excinfo.value)[:500]}"


def pytest_runtest_logreport(report):
    rec = _records.setdefault(report.nodeid, _new_record(report.nodeid))
    if report.skipped:
        rec["outcome"] = "skipped"
        if isinstance(report.longrepr, tuple):
            rec["skip_reason"] = report.longrepr[2]
    elif report.failed:
        if rec["outcome"] != "failed":
            rec["outcome"] = "failed"
            rec["phase_failed"] = report.when
            text = str(report.longrepr)
            rec["longrepr"] = text[-3000:]
            rec["timeout"] = "Failed: Timeout >" in text  # pytest-timeout's failure message
    elif report.when == "call" and rec["outcome"] is None:
        rec["outcome"] = "passed"


def pytest_runtest_logfinish(nodeid, location):
    _current[0] = None
    path = os.environ.get("FLA_CONFORMANCE_RECORDS")
    rec = _records.get(nodeid)
    if path and rec is not None:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
    if rec is not None and rec["outcome"] == "failed":
        gc.collect()  # frees the failed test's frames (see the module docstring)


def pytest_collection_finish(session):
    path = os.environ.get("FLA_CONFORMANCE_RECORDS")
    if path:
        with open(path + ".setup.json", "w") as f:
            json.dump({**_setup_info, "collected": [i.nodeid for i in session.items],
                       "start_time": time.time()}, f, indent=1, default=str)
