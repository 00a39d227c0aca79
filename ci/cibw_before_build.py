"""cibuildwheel's before-build step (pyproject.toml [tool.cibuildwheel]), inside the build image.

An NPU wheel's kernels are in its operator package, which the pip build cibuildwheel runs does not
make (it builds the aclnn bridge and embeds FLA_NPU_OPP_DIR). So, for an NPU SoC, this step puts a
staged operator package where FLA_NPU_OPP_STAGE says (the `environment` passes that directory to
CMake as FLA_NPU_OPP_DIR), with ./build_wheel's own functions:
  - FLA_NPU_PREBUILT_OPP=DIR: stage that prebuilt package (as ./build_wheel --prebuilt-opp DIR);
  - otherwise: check the CANN that FLA_NPU_CANN_HOME names exists, is at least the SoC's floor and
    has Bisheng; take its environment from its set_env.sh (./build_wheel's npu_env: the one source
    of CANN's environment, cibuildwheel's `environment` sets none of it); install the Python
    packages CANN's kernel compiler imports into this interpreter, whose directory npu_env puts
    first on PATH so that the compiler's python3 is this one, and check them; then build the operator
    package project csrc/opp/ and stage the result (never run with a real CANN: no CANN here).
    FLA_NPU_OPP_INSTALL=tree (default) | run: how the built package is installed (build_wheel --opp-install).
For sim there is nothing to do. Stdlib only."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fail(msg: str) -> None:
    sys.exit(f"ci/cibw_before_build.py: {msg}")


def load_build_wheel():
    loader = importlib.machinery.SourceFileLoader("fla_npu_build_wheel", str(ROOT / "build_wheel"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def install_cann_python_packages(bw) -> None:
    """pip-install build_wheel's CANN_PYTHON_PACKAGES into this interpreter (cibuildwheel's build venv).
    FLA_NPU_PIP overrides the command (tests)."""
    pip = os.environ.get("FLA_NPU_PIP", "").split() or [sys.executable, "-m", "pip"]
    cmd = [*pip, "install", "--disable-pip-version-check", *bw.CANN_PYTHON_PACKAGES]
    print(f"ci/cibw_before_build.py: the Python packages CANN's kernel compiler imports: {' '.join(cmd)}", flush=True)
    if subprocess.call(cmd) != 0:
        fail(f"`{' '.join(cmd)}` failed: CANN's kernel compiler needs {', '.join(bw.CANN_PYTHON_PACKAGES)}")


def main() -> None:
    soc = os.environ.get("FLA_NPU_SOC", "")
    if soc not in ("sim", "a2", "a3", "a5"):
        fail(f"FLA_NPU_SOC={soc!r}; ci/cibuildwheel.sh sets it (sim, a2, a3, a5)")
    if soc == "sim":
        print("ci/cibw_before_build.py: sim, no CANN and no operator package")
        return
    stage = os.environ.get("FLA_NPU_OPP_STAGE", "")
    vendor = os.environ.get("FLA_NPU_OPP_VENDOR", "")
    if not stage or not vendor:
        fail(f"FLA_NPU_SOC={soc} needs FLA_NPU_OPP_STAGE and FLA_NPU_OPP_VENDOR (ci/cibuildwheel.sh sets them)")
    bw = load_build_wheel()
    prebuilt = os.environ.get("FLA_NPU_PREBUILT_OPP", "")
    if prebuilt:
        src = Path(prebuilt)
        if not src.exists() and Path("/host" + prebuilt).exists():  # a host path, inside cibuildwheel's container
            src = Path("/host" + prebuilt)
        manifest = bw.stage_opp(src, Path(stage), soc)
        what = f"prebuilt operator package {src}"
    else:
        home = os.environ.get("FLA_NPU_CANN_HOME", "")
        if not home:
            fail(f"FLA_NPU_SOC={soc} but FLA_NPU_CANN_HOME is empty (ci/cibuildwheel.sh sets it)")
        found, version = bw.find_cann_or_stop(soc, home)  # exits with what to do if not usable
        env = bw.npu_env(found)
        install_cann_python_packages(bw)
        python = bw.check_cann_python(env)  # the compiler's python3 (this interpreter) has them now
        method = os.environ.get("FLA_NPU_OPP_INSTALL", "") or "tree"
        print(f"ci/cibw_before_build.py: {soc}: CANN {version} at {found}; operator package install: {method}", flush=True)
        tmp = Path(tempfile.mkdtemp(prefix="fla-npu-opp-"))
        log = tmp / "opp-build.log"
        log.write_text("")
        install = bw.build_opp(soc, found, tmp, env, python, log, install=method)
        if install is None:
            fail("no operator package project (csrc/opp/CMakeLists.txt): an NPU wheel's kernels are in it")
        manifest = bw.stage_opp(Path(install), Path(stage), soc, install_method=method)
        what = f"operator package built with CANN {version} (log {log})"
    names = [v["name"] for v in manifest["vendors"]]
    if names != [vendor]:
        fail(f"the operator package has vendors {names}; FLA_NPU_OPP_VENDOR (recorded in the build info) is {vendor}")
    print(f"ci/cibw_before_build.py: {soc}: {what} staged at {stage} (vendor {vendor}, kernels for "
          f"{manifest['compute_unit']})")


if __name__ == "__main__":
    main()
