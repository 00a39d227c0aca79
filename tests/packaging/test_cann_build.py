"""./build_wheel's NPU build path against a fake CANN install (fake_cann.py: CANN 9.x's layout, its
set_env.sh, an ASC CMake package recording what csrc/opp/ asks for, a "kernel compiler" run as
python3 from PATH that imports what CANN's does, a .run installer that loads the host libraries):
CANN's environment captured from set_env.sh with the generator-changing variables cleared, the
compiler's Python packages checked before any work, the explicit generator and build type, the
kernels' auto-sync option, the two install methods, and the smoke build (./build_wheel --smoke).
Nothing here runs CANN; what the fake cannot show is listed in README.md."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_cann import make_fake_cann, python_stubs, record

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("make") is None,
                                reason="cmake and make are needed")


sys.path.insert(0, str(ROOT / "ci"))
from cibw_before_build import load_build_wheel  # noqa: E402  (build_wheel has no .py suffix: loaded by path)

bw = load_build_wheel()
ALL_OPS = list(bw.OPP_OPS)


def test_operator_package_ops_are_the_descriptors():
    """build_wheel's op types (the smoke build's choices) are those of the descriptor list, in its
    order, the vector-only gate kernel first (the smoke build's default), and the list holds every
    descriptor of the tree."""
    sys.path.insert(0, str(ROOT / "csrc" / "tools"))
    from op_descriptor import load

    listing = (ROOT / "csrc" / "cmake" / "op_descriptors.cmake").read_text()
    paths = listing.split("set(FLA_NPU_OP_DESCRIPTORS", 1)[1].split(")", 1)[0].split()
    assert ALL_OPS == [load(ROOT / "csrc" / p).op_type for p in paths]
    assert ALL_OPS[0] == "FlaNpuGateChunkCumsum"
    # every op of the tree is in the package
    assert sorted(ALL_OPS) == sorted(load(p).op_type for p in (ROOT / "csrc").glob("*/*.op.py"))


def test_soc_facts_of_cmake_and_python_agree():
    """One table of the NPU SoCs for the CMake projects (csrc/cmake/soc_facts.cmake: compute unit,
    --npu-arch, CANN floor); the Python copies of its facts (build_wheel, the descriptor tools, the
    runtime's CANN check) say the same."""
    import re

    sys.path.insert(0, str(ROOT / "csrc" / "tools"))
    from op_descriptor import SOC_UNITS

    from fla_npu.runtime.cann import CANN_FLOORS

    table = {}
    for soc, key, value in re.findall(r"(?m)^set\(FLA_NPU_SOC_(a\d)_([A-Z_]+) (\S+)\)$",
                                      (ROOT / "csrc" / "cmake" / "soc_facts.cmake").read_text()):
        table.setdefault(key, {})[soc] = value
    assert set(table) == {"UNIT", "NPU_ARCH", "CANN_FLOOR"}
    assert table["UNIT"] == SOC_UNITS == bw.COMPUTE_UNITS
    assert table["CANN_FLOOR"] == CANN_FLOORS
    for soc, arch in table["NPU_ARCH"].items():
        assert f"--npu-arch={arch}" in bw.soc_description(soc)


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "FLA_NPU_", "CIBW_", "OPS_"))}
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


@pytest.fixture
def cann(tmp_path) -> Path:
    return make_fake_cann(tmp_path / "cann-9.0.0")


@pytest.fixture
def stubs(tmp_path) -> Path:
    return python_stubs(tmp_path / "stubs")


def bare_python(tmp_path) -> Path:
    """A directory holding a `python3` that sees the standard library and PYTHONPATH only (-S)."""
    d = tmp_path / "bare-python"
    d.mkdir()
    (d / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    (d / "python3").chmod(0o755)
    return d


# ---- item 2: CANN's environment ------------------------------------------------------------------

def test_environment_is_set_env_sh_captured_with_generator_variables_cleared(cann, tmp_path):
    env = bw.npu_env(str(cann), base_env(OPS_PROJECT_NAME="other_prefix", OPS_ACLNN_GEN="0",
                                         ASCEND_CUSTOM_OPP_PATH="/elsewhere/vendors/x", PATH="/usr/bin:/bin"))
    assert env["ASCEND_HOME_PATH"] == env["ASCEND_TOOLKIT_HOME"] == str(cann)
    assert env["ASCEND_OPP_PATH"] == f"{cann}/opp"
    # The stub libraries where set_env.sh says (9.x: devlib), not a path written by hand.
    assert any(e.endswith("-linux/devlib") for e in env["LD_LIBRARY_PATH"].split(":"))
    assert not any(e.endswith("runtime/lib64/stub") for e in env["LD_LIBRARY_PATH"].split(":"))
    assert f"{cann}/lib64/cmake" in env["CMAKE_PREFIX_PATH"].split(":")
    for key in bw.CANN_BUILD_VARS_CLEARED:
        assert key not in env, key
    # set_env.sh's empty trailing entries (the working directory) dropped; this interpreter's
    # directory first, so that the compiler's python3 is this build's Python.
    for key in ("PYTHONPATH", "LD_LIBRARY_PATH", "PATH"):
        assert "" not in env[key].split(":"), key
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert f"{cann}/bin" in env["PATH"].split(":")


def test_environment_refuses_a_set_env_sh_of_another_cann_or_none(tmp_path):
    other = make_fake_cann(tmp_path / "cann-a", set_env_home="/usr/local/Ascend/cann-elsewhere")
    with pytest.raises(SystemExit, match="set ASCEND_HOME_PATH='/usr/local/Ascend/cann-elsewhere', not the CANN"):
        bw.npu_env(str(other), base_env())
    bare = tmp_path / "cann-b"
    bare.mkdir()
    with pytest.raises(SystemExit, match="has no set_env.sh"):
        bw.npu_env(str(bare), base_env())
    broken = make_fake_cann(tmp_path / "cann-c")
    (broken / "set_env.sh").write_text("echo 'set_env: broken' >&2; return 3\n")
    with pytest.raises(SystemExit, match="failed .exit 97.: set_env: broken"):
        bw.npu_env(str(broken), base_env())


# ---- item 1: the Python CANN's kernel compiler runs ----------------------------------------------

def test_compiler_python_packages_are_checked_and_named(cann, tmp_path):
    env = bw.npu_env(str(cann), base_env(PYTHONPATH=str(python_stubs(tmp_path / "some", ("numpy", "attr")))))
    env["PATH"] = f"{bare_python(tmp_path)}:{env['PATH']}"
    with pytest.raises(SystemExit) as e:
        bw.check_cann_python(env)
    msg = str(e.value.code)
    assert "lacks the Python package(s) its op compiler imports: decorator, psutil" in msg
    assert f"{tmp_path}/bare-python/python3 -m pip install numpy decorator attrs psutil" in msg
    env["PYTHONPATH"] += ":" + str(python_stubs(tmp_path / "rest", ("decorator", "psutil")))
    assert bw.check_cann_python(env) == f"{tmp_path}/bare-python/python3"


def missing_here() -> list:
    """The compiler packages this interpreter lacks (the CLI tests check the message names them)."""
    return [d for d, m in bw.CANN_PYTHON_PACKAGES.items() if importlib.util.find_spec(m) is None]


def test_full_build_stops_on_missing_compiler_packages_before_any_work(cann, tmp_path):
    """./build_wheel --soc a2: this interpreter's python3 (first on the build's PATH) is the one
    checked, before anything is built."""
    if not missing_here():
        pytest.skip("this interpreter has all of CANN's compiler packages")
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, str(ROOT / "build_wheel"), "--soc", "a2", "--cann", str(cann), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, env=base_env(), cwd=ROOT)
    assert res.returncode != 0
    assert f"lacks the Python package(s) its op compiler imports: {', '.join(missing_here())}" in res.stderr, res.stderr
    assert f"{Path(sys.executable).parent}/python3 -m pip install numpy decorator attrs psutil" in res.stderr
    assert not (tmp_path / "out").exists() and time.perf_counter() - t0 < 30


# ---- items 2 and 3: configure, compile, install ----------------------------------------------------

@pytest.mark.parametrize("method", ["tree", "run"])
def test_operator_package_build_against_fake_cann(cann, stubs, tmp_path, method):
    env = bw.npu_env(str(cann), base_env(PYTHONPATH=str(stubs), OPS_PROJECT_NAME="x", OPS_ACLNN_GEN="0"))
    log = tmp_path / "log"
    log.write_text("")
    install = bw.build_opp("a2", str(cann), tmp_path, env, bw.check_cann_python(env), log, install=method)
    manifest = bw.stage_opp(install, tmp_path / "stage", "a2", install_method=method)
    assert manifest["install_method"] == method and [v["name"] for v in manifest["vendors"]] == ["fla_npu"]
    assert (install / ("packages/vendors" if method == "tree" else "vendors") / "fla_npu").is_dir()
    got = record(tmp_path / "opp-build")
    first = dict(reversed(got))
    assert (first["generator"], first["build_type"], first["compute_unit"]) == ("Unix Makefiles", "Release", "ascend910b")
    assert [v.split()[0] for k, v in got if k == "kernel"] == ALL_OPS
    assert ("kernel_options", "ALL --cce-auto-sync=off") in got
    compiled = json.loads((tmp_path / "opp-build" / "fake_out" / "compile.json").read_text())
    assert compiled["python"] == first["python"] == str(Path(sys.executable).parent / "python3")
    assert compiled["ops"] == ALL_OPS


def test_installer_that_loads_host_libraries_fails_without_driver_the_tree_install_does_not(cann, stubs, tmp_path):
    env = bw.npu_env(str(cann), base_env(PYTHONPATH=str(stubs), FAKE_CANN_NO_DRIVER="1"))
    for method, ok in (("run", False), ("tree", True)):
        tmp = tmp_path / method
        tmp.mkdir()
        log = tmp / "log"
        log.write_text("")
        if ok:
            assert bw.build_opp("a2", str(cann), tmp, env, bw.check_cann_python(env), log, install=method).is_dir()
        else:
            with pytest.raises(SystemExit, match="validate_so_dlopen"):
                bw.build_opp("a2", str(cann), tmp, env, bw.check_cann_python(env), log, install=method)


# ---- item 5: the smoke build -------------------------------------------------------------------------

def smoke(*args, env):
    return subprocess.run([sys.executable, str(ROOT / "build_wheel"), "--smoke", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=ROOT)


def test_smoke_without_cann_fails_fast_and_says_what_to_do(tmp_path):
    t0 = time.perf_counter()
    res = smoke("--soc", "a2", "--cann", tmp_path / "no-cann", "--out", tmp_path / "out", env=base_env())
    assert res.returncode != 0 and time.perf_counter() - t0 < 10
    assert "needs CANN >= 9.0.0, which was not found" in res.stderr and "set_env.sh" in res.stderr
    assert not (tmp_path / "out").exists()
    res = smoke("--soc", "sim", env=base_env())
    assert res.returncode == 2 and "give an NPU SoC" in res.stderr


def test_smoke_compiles_one_kernel_with_the_fake_compiler(cann, stubs, tmp_path):
    env = base_env(PYTHONPATH=str(stubs))
    res = smoke("--soc", "a5", "--cann", make_fake_cann(tmp_path / "cann-9.1.0", "9.1.0"), "--op", "FlaNpuWyFast",
                "--out", tmp_path / "out", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "smoke passed: FlaNpuWyFast compiled for ascend950 with CANN 9.1.0" in res.stdout
    got = record(tmp_path / "out" / "smoke-a5")
    assert [v.split()[0] for k, v in got if k == "kernel"] == ["FlaNpuWyFast"]
    assert [v.rsplit("/", 1)[1] for k, v in got if k == "code_gen_src" and "op_host" in v] == ["fla_npu_wy_fast.cpp"]
    assert ("kernel_options", "ALL --cce-auto-sync=off") in got
    assert not list((tmp_path / "out").glob("*.whl")) and not list((tmp_path / "out").rglob("*.run"))
    # Default op: the gate kernel.
    res = smoke("--soc", "a2", "--cann", cann, "--out", tmp_path / "out2", env=env)
    assert res.returncode == 0 and "FlaNpuGateChunkCumsum compiled for ascend910b" in res.stdout, res.stderr


def test_smoke_reports_a_failing_kernel_compile_as_such(cann, stubs, tmp_path):
    res = smoke("--soc", "a2", "--cann", cann, "--out", tmp_path / "out",
                env=base_env(PYTHONPATH=str(stubs), FAKE_CANN_KERNEL_ERROR="FlaNpuGateChunkCumsum"))
    assert res.returncode != 0
    assert "smoke: the kernel FlaNpuGateChunkCumsum did not compile for ascend910b with CANN 9.0.0" in res.stderr
    assert "fake kernel compile error in FlaNpuGateChunkCumsum" in res.stderr  # the log's tail


def test_smoke_checks_the_compiler_python_before_configuring(cann, tmp_path):
    if not missing_here():
        pytest.skip("this interpreter has all of CANN's compiler packages")
    res = smoke("--soc", "a2", "--cann", cann, "--out", tmp_path / "out", env=base_env())
    assert res.returncode != 0 and f"imports: {', '.join(missing_here())}" in res.stderr, res.stderr
    assert not (tmp_path / "out" / "smoke-a2").exists()
