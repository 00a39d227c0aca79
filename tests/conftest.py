"""Test-wide fixtures.

``native_build``: the native tests of csrc/ (the simulation's test kernels for a2 and a5, the tiling unit
tests, the operator-package tests for a2 and a5), configured once and built once per test session
(:func:`native_build_dir`); the pytest drivers run the executables from there.

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

_originals = {}


def native_build_dir(build: Path) -> Path:
    """Configure csrc/ into ``build`` with NATIVE_CONFIGURE (a second run on the same directory only
    re-applies the options) and build the native tests (target fla_npu_native_tests, the library itself
    left out); fails the caller with CMake's or the compiler's output. The executables are registered
    with ctest as well: ``ctest --test-dir <build>``."""
    r = subprocess.run(["cmake", "-S", str(ROOT / "csrc"), "-B", str(build), *NATIVE_CONFIGURE],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    r = subprocess.run(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2), "--target",
                        "fla_npu_native_tests"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return build


@pytest.fixture(scope="session")
def native_build(tmp_path_factory) -> Path:
    """The session's one build of the native tests (see the module docstring); skipped without cmake
    or a C++ compiler. ``FLA_NPU_NATIVE_BUILD_DIR`` names a build directory to reuse across sessions
    (only what changed is rebuilt)."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake not installed")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler")
    given = os.environ.get(NATIVE_BUILD_ENV)
    return native_build_dir(Path(given) if given else tmp_path_factory.mktemp("native-build"))


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

