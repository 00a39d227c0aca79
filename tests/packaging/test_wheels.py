"""The wheels ./build_wheel makes (issue 5): the sim flavour built, repaired and tagged, installed into
a fresh virtual environment and run; an a2 flavour around a fake operator package (its kernels
prebuilt, the aclnn bridge compiled): embedding, symbolic links, naming, metadata, auditwheel
exclusion, first use without an NPU, a SoC mismatch, the bridge loading the embedded package; two
flavours installed over each other refused; the sdist building the sim wheel alone. No NPU and no
CANN needed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, make_venv, pip_install, read_wheel, run_build_wheel, venv_run
from fake_opp import FAKE_CANN_LICENSE, stubs_dir

GIT_HEAD = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or None
TAG_RE = r"-py3-none-(manylinux_\d+_\d+_\w+|manylinux\w+\.manylinux_\d+_\d+_\w+)\.whl$"


def test_help():
    res = run_build_wheel("--help")
    for word in ("--soc", "--cann", "--out", "--debug", "--prebuilt-opp", "--sdist", "never run".upper()[:0]):
        assert word in res.stdout


def test_npu_soc_without_cann_stops_before_any_work(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ASCEND_")}
    out = tmp_path / "out"
    res = run_build_wheel("--soc", "a2", "--out", out, env=env, check=False)
    assert res.returncode != 0
    assert "needs CANN >= 9.0.0" in res.stderr and "Ascend-cann-910b-ops" in res.stderr
    assert "--prebuilt-opp" in res.stderr and "ASCEND_HOME_PATH" in res.stderr
    assert not out.exists(), "nothing may be built or written before the CANN check"
    res = run_build_wheel("--soc", "a5", "--cann", tmp_path / "nowhere", "--out", out, env=env, check=False)
    assert res.returncode != 0 and "needs CANN >= 9.1.0" in res.stderr and "--cann" in res.stderr


def test_sim_wheel_name_tag_and_contents(sim_wheel):
    wheel, stdout = sim_wheel
    assert re.match(r"fla_npu-0\.1\.0" + TAG_RE, wheel.name), wheel.name
    for step in ("[1/6] prerequisites", "[2/6] build", "[3/6] distribution name", "[4/6] auditwheel repair",
                 "[5/6] auditwheel show", "[6/6] done"):
        assert step in stdout
    assert "grafted by auditwheel: nothing" in stdout
    w = read_wheel(wheel)
    assert not [n for n in w["names"] if ".libs/" in n], "auditwheel grafted libraries"
    assert "fla_npu/lib/libfla_npu_kernels.so" in w["names"] and "fla_npu_autoload.py" in w["names"]
    assert "fla_npu/_flavours/sim.json" in w["names"] and not [n for n in w["names"] if "/opp/" in n]
    assert "\nName: fla-npu\n" in w["metadata"] and "Summary: [sim]" in w["metadata"]
    assert "fla_npu = fla_npu_autoload:autoload" in w["entry_points"]
    assert "Root-Is-Purelib: false" in w["files"][next(n for n in w["names"] if n.endswith("/WHEEL"))].decode()
    bi = w["build_info"]
    assert (bi["distribution"], bi["flavour"], bi["soc"], bi["version"]) == ("fla-npu", "sim", "sim-a2", "0.1.0")
    assert bi["compiler"] and bi["compiler"] != "none" and bi["build_date"] and "FLA_NPU_TARGET=sim" in bi["build_options"]
    assert bi["source_revision_from"] == "sdist"  # built from the unpacked sdist (the fixture)
    if GIT_HEAD:
        assert bi["source_revision"] == GIT_HEAD


def test_sim_wheel_in_fresh_venv(sim_wheel, torch_site, tmp_path):
    wheel, _ = sim_wheel
    py = make_venv(tmp_path / "venv", torch_site)
    pip_install(py, wheel)
    code = """
import json, torch, fla_npu
assert fla_npu.__file__.startswith(%r), fla_npu.__file__
from fla_npu.runtime import target, library_path
torch.manual_seed(0)
g = torch.randn(1, 70, 2, 16)
A_log = torch.randn(2).clamp(-1, 1)
import os
os.environ["FLA_NPU_CPU_IMPL"] = "sim"
out = fla_npu.kda_gate_chunk_cumsum(g, A_log, chunk_size=64)
os.environ["FLA_NPU_CPU_IMPL"] = "reference"
ref = fla_npu.kda_gate_chunk_cumsum(g, A_log, chunk_size=64)
print(json.dumps({"target": target(), "err": float((out - ref).abs().max()), "lib": str(library_path())}))
""" % str(tmp_path / "venv")
    res = venv_run(py, code)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout.strip().splitlines()[-1])
    assert r["target"] == "sim-a2" and r["err"] < 1e-5 and r["lib"].startswith(str(tmp_path / "venv"))
    res = subprocess.run([str(py.parent / "fla-npu"), "info", "--json"], capture_output=True, text=True,
                         env={"PATH": str(py.parent) + ":/usr/bin:/bin", "HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert (info["distribution"], info["flavour"], info["soc"], info["version"]) == ("fla-npu", "sim", "sim-a2", "0.1.0")
    assert info["installed_flavours"] == ["fla-npu"]
    assert info["native_library"]["loaded"] and info["native_library"]["target"] == "sim-a2"
    assert "gate_chunk_cumsum" in info["kernels"]
    assert info["cann"]["version"] is None and info["operator_package"]["vendor_dirs"] == []
    for key in ("source_revision", "build", "device", "cpu_impl", "fla_backends"):
        assert key in info
    assert info["build"]["compiler"] and info["build"]["build_date"] and info["build"]["build_options"]
    if GIT_HEAD:
        assert info["source_revision"] == GIT_HEAD


def test_fake_a2_wheel_embedding_naming_metadata(a2_wheel, fake_opp):
    wheel, stdout = a2_wheel
    assert re.match(r"fla_npu_a2-0\.1\.0" + TAG_RE, wheel.name), wheel.name
    assert "prebuilt: kernels not compiled" in stdout and "aclnn bridge" in stdout and "[7/7] done" in stdout
    w = read_wheel(wheel)
    assert "\nName: fla-npu-a2\n" in w["metadata"] and "Summary: [a2] Atlas A2" in w["metadata"]
    assert "soc-a2" in w["metadata"]
    v = "fla_npu/opp/vendors/fla_npu/"
    for f in ("op_api/lib/libcust_opapi.so", "op_impl/ai_core/tbe/op_tiling/liboptiling.so",
              "op_impl/ai_core/tbe/op_tiling/lib/linux/x86_64/libcust_opmaster_rt2.0.so".replace(
                  "x86_64", __import__("platform").machine()),
              "op_impl/ai_core/tbe/kernel/ascend910b/chunk_gated_delta_rule/ChunkGatedDeltaRule_0.o",
              "op_impl/ai_core/tbe/config/ascend910b/binary_info_config.json", "bin/set_env.bash"):
        assert v + f in w["names"], f
    # The symbolic link travels as a copy of its target, and is recorded.
    tiling = v + "op_impl/ai_core/tbe/op_tiling/"
    master = next(n for n in w["names"] if n.endswith("libcust_opmaster_rt2.0.so"))
    assert w["files"][tiling + "liboptiling.so"] == w["files"][master]
    manifest = json.loads(w["files"]["fla_npu/opp/opp_manifest.json"])
    assert [s["path"] for s in manifest["symlinks"]] == ["vendors/fla_npu/op_impl/ai_core/tbe/op_tiling/liboptiling.so"]
    # CANN's libopapi.so is never shipped; config.ini and set_env.bash are rewritten.
    assert not [n for n in w["names"] if n.endswith("libopapi.so")]
    assert manifest["removed"] == ["vendors/fla_npu/op_api/lib/libopapi.so"]
    assert w["files"]["fla_npu/opp/vendors/config.ini"].decode().strip() == "load_priority=fla_npu"
    assert "/somewhere" not in w["files"][v + "bin/set_env.bash"].decode()
    # auditwheel: the CANN libraries the host libraries need are excluded, nothing grafted.
    assert not [n for n in w["names"] if ".libs/" in n]
    assert "libascendcl.so" in stdout and "libopapi.so" in stdout and "grafted by auditwheel: nothing" in stdout
    assert "fla_npu/lib/libfla_npu_kernels.so" in w["names"]  # the aclnn bridge (g++, no CANN)
    bi = w["build_info"]
    assert (bi["distribution"], bi["flavour"], bi["soc"], bi["cann_floor"]) == ("fla-npu-a2", "a2", "a2", "9.0.0")
    assert bi["opp_vendor"] == "fla_npu" and bi["cann_version"] == "9.0.0" and "prebuilt" in bi["compiler"]
    assert "aclnn bridge" in bi["compiler"] and bi["npu_arch"] == "dav-2201"
    assert "fla_npu/_flavours/a2.json" in w["names"]
    # The forward of the chunked ops is claimed for a2 NPUs too (fla-npu-adapter reads the entry points).
    claims = [ln for ln in w["entry_points"].splitlines() if "@" in ln]
    assert "kda.chunk_kda@cpu,npu:a2 = fla_npu:chunk_kda" in claims
    assert "gated_delta_rule.chunk_gated_delta_rule@cpu,npu:a2 = fla_npu:chunk_gated_delta_rule" in claims
    assert sum(",npu:" in ln.partition(" = ")[0] for ln in claims) == 2
    # The device code is compiled from CANN's headers: CANN's licence travels beside it, with a notice.
    assert w["files"]["fla_npu/opp/LICENSE.CANN"].decode() == FAKE_CANN_LICENSE
    assert "Huawei AI processors only" in w["files"]["fla_npu/opp/NOTICE.CANN"].decode()


def test_npu_wheel_without_the_cann_license_is_refused_before_any_work(fake_opp, tmp_path):
    opp = tmp_path / "opp"
    shutil.copytree(fake_opp, opp, symlinks=True)
    (opp / "LICENSE").unlink()
    res = run_build_wheel("--soc", "a2", "--prebuilt-opp", opp, "--out", tmp_path / "out", check=False)
    assert res.returncode != 0 and "naming the CANN Open Software License was found" in res.stderr
    assert "--cann-license FILE" in res.stderr and "[2/" not in res.stdout and not (tmp_path / "out").exists()


def test_prebuilt_opp_for_another_soc_is_refused(fake_opp, tmp_path):
    res = run_build_wheel("--soc", "a3", "--prebuilt-opp", fake_opp, "--out", tmp_path, check=False)
    assert res.returncode != 0 and "no kernels for a3" in res.stderr and "ascend910b" in res.stderr


def test_fake_a2_installed_first_use_and_soc_mismatch(a2_wheel, torch_site, tmp_path):
    wheel, _ = a2_wheel
    py = make_venv(tmp_path / "venv", torch_site)
    pip_install(py, wheel)
    code = r"""
import json, os, sys
import torch   # torch.backends autoload: fla_npu_autoload puts the embedded vendor first in ASCEND_CUSTOM_OPP_PATH
import fla_npu_autoload as A
opp_env = os.environ.get("ASCEND_CUSTOM_OPP_PATH", "")
import fla_npu   # importing never needs CANN or an NPU
from fla_npu.runtime import NativeLibraryError, load_library, library_available
from fla_npu.runtime import bootstrap as B
out = {"autoload": A.STATE, "opp_env": opp_env, "cpu_op_ok": True, "available": library_available()}
g = torch.randn(1, 8, 2, 4)
fla_npu.kda_gate_chunk_cumsum(g, torch.zeros(2), chunk_size=16)   # CPU tensors: the reference, no kernel
try:
    load_library()
except B.NpuUnavailableError as e:
    out["no_npu"] = str(e)
B.detect_device_soc = lambda: ("Ascend910_9391", "torch_npu (simulated)")
try:
    load_library()
except B.SocMismatchError as e:
    out["mismatch"] = str(e)
B.detect_device_soc = lambda: ("Ascend910B3", "torch_npu (simulated)")
B.C.runtime_version = lambda environ=None: ("8.5.1", "simulated")
try:
    load_library()
except B.CannVersionError as e:
    out["old_cann"] = str(e)
B.C.runtime_version = lambda environ=None: ("9.0.0", "simulated")
try:   # every check passes: the bridge loads the embedded libcust_opapi.so, whose CANN libraries are missing here
    load_library()
except NativeLibraryError as e:
    out["no_cann_libs"] = str(e)
print(json.dumps(out))
"""
    res = venv_run(py, code)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout.strip().splitlines()[-1])
    vendor = str(tmp_path / "venv")
    assert r["autoload"]["ran"] and r["autoload"]["vendor_dirs"][0].startswith(vendor)
    assert r["autoload"]["vendor_dirs"][0].endswith("fla_npu/opp/vendors/fla_npu")
    assert r["opp_env"].split(":")[0] == r["autoload"]["vendor_dirs"][0]
    assert r["available"] is False
    assert "fla-npu-a2 0.1.0" in r["no_npu"] and "no usable NPU" in r["no_npu"] and "pip install fla-npu" in r["no_npu"]
    m = r["mismatch"]
    assert "fla-npu-a2" in m and "Ascend910_9391" in m and "pip install fla-npu-a3" in m and "Atlas A2" in m
    assert "needs CANN >= 9.0.0" in r["old_cann"] and "8.5.1" in r["old_cann"]
    opapi = r["autoload"]["vendor_dirs"][0] + "/op_api/lib/libcust_opapi.so"
    assert f"operator package could not be loaded: flaNpuSetOperatorPackage: cannot load {opapi}" in r["no_cann_libs"]
    assert "libopapi.so: cannot open shared object file" in r["no_cann_libs"] and "set_env.sh" in r["no_cann_libs"]
    res = subprocess.run([str(py.parent / "fla-npu"), "info", "--json"], capture_output=True, text=True,
                         env={"PATH": str(py.parent) + ":/usr/bin:/bin", "HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert (info["distribution"], info["flavour"], info["soc"]) == ("fla-npu-a2", "a2", "a2")
    assert info["operator_package"]["in_env"] is True and info["operator_package"]["libopapi_shipped"] is False
    assert info["device"]["soc"] is None and info["cann"]["floor"] == "9.0.0"


def test_fake_a2_installed_bridge_calls_the_embedded_operator_package(a2_wheel, fake_opp, torch_site, tmp_path):
    """First use of the installed a2 wheel with its checks passed (simulated device and CANN) and
    CANN's libraries findable (the fake package's stubs): the bridge is handed the embedded
    libcust_opapi.so and an op goes through its aclnn pair."""
    py = make_venv(tmp_path / "venv", torch_site)
    pip_install(py, a2_wheel[0])
    code = r"""
import ctypes, json, torch
from fla_npu.runtime import _native as N, bootstrap as B, kernels
B.detect_device_soc = lambda: ("Ascend910B3", "torch_npu (simulated)")
B.C.runtime_version = lambda environ=None: ("9.0.0", "simulated")
lib = N.load_library()
fake = ctypes.CDLL(str(N.operator_package_library()))
fake.fake_reset()
fake.fake_set_vector_cores(ctypes.c_int64(5))
kernels.gate_chunk_cumsum(torch.randn(1, 40, 2, 16), 32, "softplus", torch.randn(2))
print(json.dumps({"target": N.target(), "opapi": str(N.operator_package_library()), "calls": fake.fake_call_count(),
                  "created": fake.fake_tensors_created(), "destroyed": fake.fake_tensors_destroyed(),
                  "cores": lib.flaNpuVectorCoreNum()}))
"""
    res = venv_run(py, code, env_extra={"LD_LIBRARY_PATH": str(stubs_dir(fake_opp))})
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout.strip().splitlines()[-1])
    assert r["target"] == "a2" and r["cores"] == 5
    assert r["opapi"].startswith(str(tmp_path / "venv") + "/")
    assert r["opapi"].endswith("fla_npu/opp/vendors/fla_npu/op_api/lib/libcust_opapi.so")
    assert r["calls"] == 2 and r["created"] == r["destroyed"] == 3  # g, a_log, out


def test_two_flavours_installed_over_each_other_are_refused(sim_wheel, a2_wheel, torch_site, tmp_path):
    py = make_venv(tmp_path / "venv", torch_site)
    pip_install(py, sim_wheel[0])
    pip_install(py, a2_wheel[0])  # pip sees two distributions and lets the second overwrite fla_npu/
    res = venv_run(py, "import fla_npu")
    assert res.returncode != 0
    err = res.stderr.strip().splitlines()[-1]
    assert "FlavourConflictError" in err and "fla-npu 0.1.0" in err and "fla-npu-a2 0.1.0" in err
    assert "pip uninstall -y fla-npu-a2 fla-npu`" in err


def test_sdist_holds_the_source_and_builds_the_sim_wheel_by_itself(sdist_tree, sim_wheel):
    """The sdist holds the complete source; the sim wheel (the fixture: ./build_wheel --soc sim in the
    unpacked sdist, the slowest packaging step, kept in the default run) is built from it alone and
    records the commit the sdist was made from."""
    _, names, src = sdist_tree
    assert not (ROOT / "SOURCE_REVISION").exists() or not (ROOT / ".git").exists()
    for f in ("LICENSE", "NOTICE", "README.md", "pyproject.toml", "CMakeLists.txt", "build_wheel", "fla_npu_autoload.py",
              "cmake/build_info.cmake", "csrc/CMakeLists.txt", "fla_npu/__init__.py", "fla_npu/runtime/bootstrap.py",
              "SOURCE_REVISION", "tests/packaging/test_wheels.py"):
        assert f in names, f
    assert any(n.startswith("csrc/sim/") for n in names) and any(n.startswith("csrc/gate/") for n in names)
    assert not (src / ".git").exists()
    w = read_wheel(sim_wheel[0])
    assert "fla_npu/lib/libfla_npu_kernels.so" in w["names"]
    bi = w["build_info"]
    assert bi["flavour"] == "sim" and bi["source_revision_from"] == "sdist"
    if GIT_HEAD:
        assert bi["source_revision"] == GIT_HEAD


@pytest.mark.skipif(GIT_HEAD is None, reason="not a git checkout")
def test_a_checkouts_build_records_its_git_commit(tmp_path):
    """A build of a git checkout (not an sdist) records the checkout's commit: the build information
    is written when CMake configures, so a configure of the top-level project shows it."""
    res = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    bi = json.loads((tmp_path / "b" / "_build_info.json").read_text())
    assert (bi["source_revision"], bi["source_revision_from"], bi["flavour"]) == (GIT_HEAD, "git", "sim")
