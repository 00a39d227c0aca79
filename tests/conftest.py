"""Test-wide fixtures.

``native_build``: the native tests of csrc/ (the simulation's test kernels for a2 and a5, the tiling unit
tests, the operator-package tests for a2 and a5), configured once and built once per test session
(:class:`_NativeBuild`); the pytest drivers run the executables from there. The build starts in the
background when the session is collected and the modules that need it run last, so it overlaps the
rest of the suite (its compiler runs at a lower priority than the tests).

Every float tensor that fla_npu allocates with ``torch.empty``/``torch.empty_like``/``Tensor.new_empty``
starts out filled with NaN during the tests (the same trap FLA's own conftest sets), so an output
element the implementation forgets to write shows up as NaN instead of as stale memory that
happens to look right.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
# The one configure of csrc/ for the test session: the sim flavour with every native test, the
# operator-package tests for both simulated profiles that differ (a2: 2201, a5: 3510), warnings as
# errors in the tiling unit tests, the tests compiled at -O0 (measured on 2 cores: 158 CPU-s to build
# them against 294 at -O3 and 197 at -O1, 17 against 9 and 11 CPU-s to run every case).
NATIVE_CONFIGURE = ["-DCMAKE_BUILD_TYPE=Release", "-DFLA_NPU_TARGET=sim", "-DFLA_NPU_SIM_SOC=a2",
                    "-DFLA_NPU_BUILD_TESTS=ON", "-DFLA_NPU_OPP_TEST_SOCS=a2;a5", "-DFLA_NPU_TESTS_WERROR=ON",
                    "-DFLA_NPU_TESTS_OPTIMIZATION=-O0"]
# Reuse (and bring up to date) this build directory instead of a fresh one per session; configured
# with NATIVE_CONFIGURE if it holds no build yet.
NATIVE_BUILD_ENV = "FLA_NPU_NATIVE_BUILD_DIR"
# What GCC prints when the system killed its compiler proper (typically out of memory).
_COMPILER_KILLED = "Killed signal terminated program"

_originals = {}


def _native_build_commands(build: Path) -> list:
    """Configure csrc/ into ``build`` with NATIVE_CONFIGURE (a second run on the same directory only
    re-applies the options), then build the native tests (target fla_npu_native_tests, the library itself
    left out: the tests use the installed one)."""
    return [["cmake", "-S", str(ROOT / "csrc"), "-B", str(build), *NATIVE_CONFIGURE],
            ["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2), "--target", "fla_npu_native_tests"]]


class _NativeBuild:
    """The session's build of the native tests, running in the background from collection on (at a
    lower CPU priority than the tests); ``result()`` waits for it and fails the caller with CMake's or
    the compiler's output."""

    def __init__(self, build: Path):
        self.build = build
        self.failure = None
        self.procs = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for cmd in _native_build_commands(self.build):
            code, out = self._command(cmd)
            if code != 0 and _COMPILER_KILLED in out and "-j" in cmd:
                # the host killed a compiler (out of memory while busy): once more, one job at a time
                cmd = cmd[:cmd.index("-j") + 1] + ["1"] + cmd[cmd.index("-j") + 2:]
                code, again = self._command(cmd)
                out = f"{out[-4000:]}\n(a compiler was killed: the build was retried with one job)\n{again}"
            if code != 0:
                self.failure = f"{' '.join(cmd)} failed:\n{out[-8000:]}"
                return

    def _command(self, cmd: list) -> tuple:
        """Run ``cmd`` at a lower CPU priority: its exit code and output."""
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=lambda: os.nice(10))
        self.procs.append(proc)
        out = proc.communicate()[0]
        return proc.returncode, out

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        self.thread.join()

    def result(self) -> Path:
        self.thread.join()
        assert self.failure is None, self.failure
        return self.build


_native: dict = {}


def _native_build_possible() -> bool:
    return shutil.which("cmake") is not None and (shutil.which("c++") is not None or shutil.which("g++") is not None)


def pytest_collection_modifyitems(session, config, items):
    """Start the native build if a collected test needs it, and run the modules of those tests last
    (whole modules, in their order, so module fixtures are set up once)."""
    native_modules = {item.module for item in items if "native_build" in getattr(item, "fixturenames", ())}
    if not native_modules:
        return
    items[:] = [i for i in items if i.module not in native_modules] + [i for i in items if i.module in native_modules]
    if _native_build_possible() and not config.option.collectonly:
        given = os.environ.get(NATIVE_BUILD_ENV)
        build = Path(given) if given else Path(tempfile.mkdtemp(prefix="fla-npu-native-")) / "build"
        _native["build"] = _NativeBuild(build)
        _native["owned"] = None if given else build.parent


def pytest_unconfigure(config):
    if "build" in _native:
        _native["build"].stop()
    if _native.get("owned"):
        shutil.rmtree(_native["owned"], ignore_errors=True)


@pytest.fixture(scope="session")
def native_build() -> Path:
    """The session's one build of the native tests (see the module docstring); skipped without cmake
    or a C++ compiler. ``FLA_NPU_NATIVE_BUILD_DIR`` names a build directory to reuse across sessions
    (only what changed is rebuilt)."""
    if not _native_build_possible():
        pytest.skip("cmake or a C++ compiler is not installed")
    if "build" not in _native:  # collected without the hook's knowledge (e.g. requested dynamically)
        _native["build"] = _NativeBuild(Path(tempfile.mkdtemp(prefix="fla-npu-native-")) / "build")
        _native["owned"] = _native["build"].build.parent
    return _native["build"].result()


def _poisoned(factory):
    def wrapper(*args, **kwargs):
        out = factory(*args, **kwargs)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("fla_npu") and out.is_floating_point():
            out.fill_(float("nan"))
        return out

    return wrapper


@pytest.fixture(autouse=True, scope="session")
def poison_empty_allocations():
    _originals.update(empty=torch.empty, empty_like=torch.empty_like, new_empty=torch.Tensor.new_empty)
    torch.empty = _poisoned(_originals["empty"])
    torch.empty_like = _poisoned(_originals["empty_like"])
    torch.Tensor.new_empty = _poisoned(_originals["new_empty"])
    yield
    torch.empty, torch.empty_like = _originals["empty"], _originals["empty_like"]
    torch.Tensor.new_empty = _originals["new_empty"]

