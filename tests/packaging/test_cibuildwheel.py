"""cibuildwheel's configuration ([tool.cibuildwheel] in pyproject.toml, ci/cibuildwheel.sh): the build
identifiers, the image and CANN of each SoC, an environment without CANN's variables (their one source
is ./build_wheel's npu_env(), in before-build), the repair and test commands, and the before-build
steps (CANN checks; with a fake CANN: compiler packages installed, the package built). Nothing is
built and no container runs (there is no Docker engine here): what runs inside the CANN images is
untested (ci/WHEELS.md)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import platform
import subprocess
import sys

import pytest

from conftest import ROOT, make_venv, pip_install, read_wheel, venv_run, wheel_from_output
from fake_cann import make_fake_cann, python_stubs

ARCH = platform.machine()

# Tags of quay.io/ascend/manylinux seen in public sources (ci/WHEELS.md "Build images" has the list):
# Ascend/cann-container-image manylinux_publish_version.json (snapshot 2026-07-07) publishes
# 9.0.0-{910b,a3,950}-manylinux_2_28-py3.{9..12} and 9.0.1-{910b,a3,950}-manylinux_2_34-py3.{10..12};
# 9.1.0 (after that snapshot): vllm-ascend builds its wheels FROM 9.1.0-910b / 9.1.0-a3 (main,
# 2026-08-11) and 9.1.0-950 (releases/v0.23.0, 2026-08-08) -manylinux_2_34-py3.{10,11,12}.
SEEN_TAGS = (
    {f"9.0.0-{c}-manylinux_2_28-py3.{m}" for c in ("910b", "a3", "950") for m in (9, 10, 11, 12)}
    | {f"9.0.1-{c}-manylinux_2_34-py3.{m}" for c in ("910b", "a3", "950") for m in (10, 11, 12)}
    | {f"9.1.0-{c}-manylinux_2_34-py3.{m}" for c in ("910b", "a3", "950") for m in (10, 11, 12)}
)
DEFAULT_IMAGES = {  # the SoC's CANN floor: a2/a3 9.0.0, a5 9.1.0
    "sim": (f"quay.io/pypa/manylinux_2_28_{ARCH}", None),
    "a2": ("quay.io/ascend/manylinux:9.0.0-910b-manylinux_2_28-py3.11", "9.0.0"),
    "a3": ("quay.io/ascend/manylinux:9.0.0-a3-manylinux_2_28-py3.11", "9.0.0"),
    "a5": ("quay.io/ascend/manylinux:9.1.0-950-manylinux_2_34-py3.11", "9.1.0"),
}


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CIBW_", "FLA_NPU_", "ASCEND_"))}
    env.update(extra)
    return env


def need_cibuildwheel():
    if importlib.util.find_spec("cibuildwheel") is None:
        pytest.skip("cibuildwheel is not installed here (ci/test.sh installs it: pip install cibuildwheel)")


def cibw_sh(*args, **env):
    return subprocess.run(["bash", str(ROOT / "ci" / "cibuildwheel.sh"), *args], capture_output=True, text=True,
                          env=clean_env(FLA_NPU_CIBUILDWHEEL=f"{sys.executable} -m cibuildwheel", **env))


def test_print_build_identifiers():
    need_cibuildwheel()
    res = subprocess.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", "linux"],
                         capture_output=True, text=True, cwd=ROOT, env=clean_env())
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split() == ["cp311-manylinux_x86_64", "cp311-manylinux_aarch64"]


@pytest.mark.parametrize("soc", ["sim", "a2", "a3", "a5"])
def test_cibuildwheel_sh_image_and_cann_per_soc(soc):
    need_cibuildwheel()
    if ARCH not in ("x86_64", "aarch64"):
        pytest.skip(f"no images for {ARCH}")
    res = cibw_sh(soc, "--print-build-identifiers")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split() == [f"cp311-manylinux_{ARCH}"]  # the runner's own architecture only
    image, cann = DEFAULT_IMAGES[soc]
    assert f"image {image}" in res.stderr, res.stderr
    if cann:
        assert f"CANN {cann} at /usr/local/Ascend/cann-{cann}" in res.stderr
        assert image.split(":", 1)[1] in SEEN_TAGS


def test_cibuildwheel_sh_cann_override_and_floor():
    need_cibuildwheel()
    res = cibw_sh("a2", "--print-build-identifiers", FLA_NPU_CANN_VERSION="9.0.1")
    assert res.returncode == 0, res.stderr
    assert "image quay.io/ascend/manylinux:9.0.1-910b-manylinux_2_34-py3.11" in res.stderr  # 2_34 from 9.0.1 on
    res = cibw_sh("a5", "--print-build-identifiers", FLA_NPU_CANN_VERSION="9.0.1")
    assert res.returncode == 2 and "older than the floor of a5 (9.1.0)" in res.stderr
    res = cibw_sh("910b")
    assert res.returncode == 2 and "unknown SoC" in res.stderr


def cibw_build_env(soc: str, monkeypatch, **env) -> tuple:
    """The build options cibuildwheel computes (its own option reader) for a job of ci/cibuildwheel.sh."""
    from cibuildwheel.options import CommandLineArguments, compute_options

    monkeypatch.chdir(ROOT)
    args = dataclasses.replace(CommandLineArguments.defaults(), platform="linux")
    return compute_options("linux", args, clean_env(FLA_NPU_SOC=soc, **env)).build_options("cp311-manylinux_x86_64")


JOB = {"FLA_NPU_OPP_STAGE": "/tmp/fla-npu-opp-stage", "FLA_NPU_OPP_VENDOR": "fla_npu", "FLA_NPU_OPP_PREBUILT": "OFF"}


@pytest.mark.parametrize("soc,cann", [("a2", "9.0.0"), ("a5", "9.1.0")])
def test_cibuildwheel_environment_sets_no_cann_variable(soc, cann, monkeypatch):
    """The `environment` cibuildwheel computes for the build (its own option reader and evaluator)
    holds the build's own settings only: CANN's environment has one source, ./build_wheel's npu_env()
    (CANN's set_env.sh captured), used where it is needed, the operator package build in before-build
    (tests/packaging/test_cann_build.py)."""
    need_cibuildwheel()
    home = f"/usr/local/Ascend/cann-{cann}"
    job = dict(JOB, FLA_NPU_CANN_HOME=home, FLA_NPU_CANN_VERSION=cann)
    bo = cibw_build_env(soc, monkeypatch, **job)
    inside = {"PATH": "/usr/local/bin:/usr/bin", "LD_LIBRARY_PATH": "/image/lib", "FLA_NPU_SOC": soc, **job}
    got = bo.environment.as_dictionary(inside)
    assert {k: v for k, v in got.items() if k not in inside} == {"SKBUILD_CMAKE_DEFINE": got["SKBUILD_CMAKE_DEFINE"]}
    assert (got["PATH"], got["LD_LIBRARY_PATH"]) == (inside["PATH"], inside["LD_LIBRARY_PATH"])
    assert got["SKBUILD_CMAKE_DEFINE"] == (
        f"FLA_NPU_TARGET={soc};FLA_NPU_CANN_VERSION={cann};FLA_NPU_OPP_DIR=/tmp/fla-npu-opp-stage;"
        "FLA_NPU_OPP_VENDOR=fla_npu;FLA_NPU_OPP_PREBUILT=OFF;FLA_NPU_BUILD_DRIVER=cibuildwheel")
    # Repair: build_wheel's own finishing step (same auditwheel exclusions); test: the smoke script.
    assert bo.repair_command == "python {project}/build_wheel --finalize {wheel} --soc $FLA_NPU_SOC --out {dest_dir}"
    assert bo.test_command == "python {project}/ci/wheel_smoke.py"
    assert "ci/cibw_before_build.py" in bo.before_build
    assert "'scikit-build-core>=0.11'" in bo.before_build and " scikit-build-core>=" not in bo.before_build
    assert bo.manylinux_images["x86_64"].startswith("quay.io/pypa/manylinux_2_28")  # the job's image comes from the script


def before_build(soc, **env):
    return subprocess.run([sys.executable, str(ROOT / "ci" / "cibw_before_build.py")], capture_output=True, text=True,
                          env=clean_env(FLA_NPU_SOC=soc, **env))


def test_before_build_refuses_a_cann_it_cannot_use(tmp_path):
    """ci/cibw_before_build.py, before building the operator package: the CANN the environment
    names must exist, meet the SoC's floor, have Bisheng and a set_env.sh."""
    home = tmp_path / "cann-9.0.0"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "bisheng").write_text("#!/bin/sh\n")
    (home / "version.info").write_text("Version=9.0.0\n")
    job = dict(JOB, FLA_NPU_OPP_STAGE=str(tmp_path / "stage"), FLA_NPU_CANN_HOME=str(home))
    res = before_build("a5", **job)
    assert res.returncode != 0 and "older than the floor for a5 (9.1.0)" in res.stderr
    res = before_build("a2", **job)
    assert res.returncode != 0 and "has no set_env.sh" in res.stderr
    res = before_build("a3", **dict(job, FLA_NPU_CANN_HOME=str(tmp_path / "none")))
    assert res.returncode != 0 and "needs CANN >= 9.0.0" in res.stderr
    res = before_build("a2", **dict(job, FLA_NPU_OPP_STAGE=""))
    assert res.returncode != 0 and "needs FLA_NPU_OPP_STAGE" in res.stderr
    assert not (tmp_path / "stage").exists()
    res = before_build("sim")
    assert res.returncode == 0 and "no CANN and no operator package" in res.stdout


def test_before_build_installs_the_compiler_packages_and_builds_with_set_env(tmp_path):
    """With a (fake) CANN: before-build pip-installs CANN's compiler packages into its own interpreter
    (FLA_NPU_PIP records the command instead), builds csrc/opp/ in CANN's captured environment and
    stages it, saying how the package was installed."""
    home = make_fake_cann(tmp_path / "cann-9.0.0")
    pip_log = tmp_path / "pip-args.txt"
    fake_pip = tmp_path / "pip"
    fake_pip.write_text(f'#!/bin/sh\necho "$@" > "{pip_log}"\n')
    fake_pip.chmod(0o755)
    stage = tmp_path / "stage"
    job = dict(JOB, FLA_NPU_OPP_STAGE=str(stage), FLA_NPU_CANN_HOME=str(home), FLA_NPU_CANN_VERSION="9.0.0",
               FLA_NPU_PIP=str(fake_pip), PYTHONPATH=str(python_stubs(tmp_path / "stubs")), OPS_PROJECT_NAME="x")
    res = before_build("a2", **job)
    assert res.returncode == 0, res.stdout + res.stderr
    assert pip_log.read_text().split() == ["install", "--disable-pip-version-check", "numpy", "decorator", "attrs",
                                           "psutil"]
    assert "operator package install: tree" in res.stdout and "staged at" in res.stdout
    manifest = json.loads((stage / "opp_manifest.json").read_text())
    assert manifest["install_method"] == "tree" and manifest["vendors"][0]["kernel_units"] == ["ascend910b"]


def test_npu_job_steps_without_a_container(fake_opp, torch_site, tmp_path, monkeypatch):
    """An a2 job's steps in the order cibuildwheel runs them, here instead of in the image (no Docker,
    no CANN: a prebuilt operator package, as FLA_NPU_PREBUILT_OPP gives it): before-build stages the
    package, the pip build with the SKBUILD_CMAKE_DEFINE cibuildwheel computes embeds it, the repair
    command names and repairs, the test command passes on the installed wheel."""
    need_cibuildwheel()
    stage = tmp_path / "stage"
    job = dict(JOB, FLA_NPU_OPP_STAGE=str(stage), FLA_NPU_OPP_PREBUILT="ON", FLA_NPU_PREBUILT_OPP=str(fake_opp),
               FLA_NPU_CANN_VERSION="9.0.0", FLA_NPU_CANN_HOME="/usr/local/Ascend/cann-9.0.0")
    res = before_build("a2", **job)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "staged at" in res.stdout and (stage / ".fla_npu_staged").exists()
    define = cibw_build_env("a2", monkeypatch, **job).environment.as_dictionary(
        {"PATH": os.environ["PATH"], "FLA_NPU_SOC": "a2", **job})["SKBUILD_CMAKE_DEFINE"]
    env = {k: v for k, v in clean_env(SKBUILD_CMAKE_DEFINE=define).items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                          "--disable-pip-version-check", "-q", "-w", str(tmp_path / "raw"), str(ROOT)],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    raw = next((tmp_path / "raw").glob("fla_npu-*.whl"))
    res = subprocess.run([sys.executable, str(ROOT / "build_wheel"), "--finalize", str(raw), "--soc", "a2",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, env=clean_env(FLA_NPU_SOC="a2"))
    assert res.returncode == 0, res.stdout + res.stderr
    wheel = wheel_from_output(res.stdout)
    w = read_wheel(wheel)
    assert "fla_npu/opp/vendors/fla_npu/op_api/lib/libcust_opapi.so" in w["names"]
    assert "fla_npu/lib/libfla_npu_kernels.so" in w["names"]
    bi = w["build_info"]
    assert (bi["distribution"], bi["flavour"], bi["build_driver"], bi["opp_vendor"]) == (
        "fla-npu-a2", "a2", "cibuildwheel", "fla_npu")
    py = make_venv(tmp_path / "venv", torch_site)
    pip_install(py, wheel)
    res = venv_run(py, (ROOT / "ci" / "wheel_smoke.py").read_text(), env_extra={"FLA_NPU_SOC": "a2"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no NPU on this runner, as expected" in res.stdout and "ok: fla-npu-a2 0.1.0 (a2)" in res.stdout
