"""Shared fixtures of the packaging tests: the wheels built once per session with ./build_wheel, and
fresh virtual environments that see this environment's torch (and nothing of fla_npu)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_opp import make_fake_opp  # noqa: E402

TIMINGS: dict = {}


def run_build_wheel(*args, env=None, check=True, root=ROOT):
    """``<root>/build_wheel args...`` (``root``: this checkout, or an unpacked sdist)."""
    res = subprocess.run([sys.executable, str(root / "build_wheel"), *map(str, args)], capture_output=True,
                         text=True, env=env, cwd=root)
    if check and res.returncode != 0:
        raise AssertionError(f"build_wheel {' '.join(map(str, args))} failed:\n{res.stdout}\n{res.stderr}")
    return res


def wheel_from_output(stdout: str) -> Path:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("wheel: "))
    return Path(line[len("wheel: "):].strip())


@pytest.fixture(scope="session")
def wheel_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("wheelhouse")


@pytest.fixture(scope="session")
def sim_release(tmp_path_factory):
    """The sdist and the sim wheel built from it alone, as a release builds them (``./build_wheel --soc
    sim --from-sdist``): ``(sdist, wheel, build_wheel's output)``. ci/test.sh builds them before the
    suite (its venv runs that wheel) and names their directory in FLA_NPU_TEST_WHEELHOUSE, with the
    output in build_wheel.log there; without it they are built here."""
    given = os.environ.get("FLA_NPU_TEST_WHEELHOUSE")
    if given:
        out = Path(given)
        stdout = (out / "build_wheel.log").read_text()
    else:
        out = tmp_path_factory.mktemp("release")
        t0 = time.perf_counter()
        stdout = run_build_wheel("--soc", "sim", "--from-sdist", "--out", out).stdout
        TIMINGS["build_wheel --soc sim --from-sdist"] = time.perf_counter() - t0
    sdist = Path(next(ln for ln in stdout.splitlines() if ln.startswith("sdist: ")).split()[1])
    return sdist, wheel_from_output(stdout), stdout


@pytest.fixture(scope="session")
def sdist_tree(sim_release, tmp_path_factory):
    """The sdist of this checkout: ``(sdist, the paths it holds, its unpacked tree)``."""
    sdist = sim_release[0]
    out = tmp_path_factory.mktemp("sdist")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
        t.extractall(out, filter="data")
    return sdist, names, next(out.iterdir())


@pytest.fixture(scope="session")
def sim_wheel(sim_release):
    """The sim wheel built from the sdist: ``(wheel, build_wheel's output)``."""
    return sim_release[1], sim_release[2]


@pytest.fixture(scope="session")
def fake_opp(tmp_path_factory):
    return make_fake_opp(tmp_path_factory.mktemp("fake-opp") / "opp")


@pytest.fixture(scope="session")
def a2_wheel(wheel_dir, fake_opp):
    res = run_build_wheel("--soc", "a2", "--prebuilt-opp", fake_opp, "--out", wheel_dir / "a2")
    return wheel_from_output(res.stdout), res.stdout


def read_wheel(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        eps = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
        info = json.loads(z.read("fla_npu/_build_info.json"))
        files = {n: z.read(n) for n in names if not n.endswith("/")}
    return {"names": names, "metadata": meta, "entry_points": eps, "build_info": info, "files": files}


@pytest.fixture(scope="session")
def torch_site(tmp_path_factory):
    """A directory with links to everything in this environment's site-packages except fla_npu and
    the adapter: a fresh venv gets torch through a .pth file without seeing the fla_npu under test."""
    site = Path(sysconfig.get_paths()["purelib"])
    d = tmp_path_factory.mktemp("torch-site")
    for entry in site.iterdir():
        n = entry.name.lower()
        if n.startswith(("fla_npu", "fla-npu", "__editable__", "_fla_npu")) or n.endswith(".pth"):
            continue
        (d / entry.name).symlink_to(entry)
    return d


def make_venv(path: Path, torch_site: Path) -> Path:
    """A fresh venv (no pip of its own; this environment's pip installs into it) seeing torch."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    py = path / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "zz_torch_from_ci_venv.pth").write_text(str(torch_site) + "\n")
    return py


def pip_install(py: Path, *wheels) -> None:
    # Without PYTHONPATH: an fla-npu on it (a test run against `pip install --target DIR`) would look
    # installed to the venv's pip, which would then skip the wheel.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                          "--disable-pip-version-check", "-q", *map(str, wheels)], capture_output=True, text=True,
                         env=env)
    assert res.returncode == 0, res.stdout + res.stderr


def venv_run(py: Path, code: str, env_extra=None, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLA_NPU_", "ASCEND_"))}
    env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    return subprocess.run([str(py), "-c", code], capture_output=True, text=True, env=env, cwd=cwd or py.parent)


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.write_line(
            "packaging timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in TIMINGS.items()))
