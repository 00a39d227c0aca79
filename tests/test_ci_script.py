"""ci/test.sh says what it is doing (steps with elapsed time, the install log named, the log shown
when an install fails), and the README gives the times of its commands and what FLA needs on a CPU.
ci/test.sh runs here against stub ``python3`` and venv ``python``/``pip``/``pytest``/``ruff``/``clang-format``
executables that record their calls (a call starting with ``FAIL_ON`` fails)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STUB_PYTHON = """#!/bin/sh
# python3 -m venv DIR: a venv whose tools record their arguments
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    for tool in python pip pytest ruff clang-format; do
        printf '#!/bin/sh\\necho "%s $*" >> "%s"\\n' "$tool" "$CALLS" > "$3/bin/$tool"
        printf 'case "%s $*" in "${FAIL_ON:-//}"*) exit 1;; esac\\n' "$tool" >> "$3/bin/$tool"
        chmod +x "$3/bin/$tool"
    done
    exit 0
fi
exit 2
"""


def _run(tmp_path, fail_on=""):
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "python3").write_text(STUB_PYTHON)
    (stubs / "python3").chmod(0o755)
    calls = tmp_path / "calls.txt"
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "FLA_NPU_TEST_VENV": str(tmp_path / "venv"),
           "CALLS": str(calls), "FAIL_ON": fail_on}
    res = subprocess.run(["bash", str(ROOT / "ci" / "test.sh"), "-k", "x"], capture_output=True, text=True, env=env,
                         timeout=60)
    return res, calls.read_text().splitlines() if calls.exists() else []


def test_ci_script_announces_each_step_and_names_the_log(tmp_path):
    res, calls = _run(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    steps = re.findall(r"^\[ci/test\.sh +\d+s\] (.*)$", res.stdout, re.M)
    assert [s.split()[0] for s in steps] == ["creating", "installing", "installing", "building", "installing", "checking",
                                             "checking", "running"], steps
    assert f"install log: {tmp_path / 'venv'}.install.log" in steps[0]
    assert "pytest -q tests -k x" in steps[-1]
    assert calls[-3] == "ruff check --quiet ."           # the linter, before the suite
    fmt = calls[-2].split()                              # the C/C++ format check of every source under csrc/
    assert fmt[:3] == ["clang-format", "--dry-run", "--Werror"] and "csrc/wy_fast/wy_fast_kernel.h" in fmt
    assert calls[-1] == "pytest -q tests -k x"           # the suite itself, with the arguments passed on
    # The suite's fla-npu is the sim wheel built from the sdist (the packaging tests check those files).
    wheelhouse = f"{tmp_path / 'venv'}.wheelhouse"
    assert calls[2] == f"python build_wheel --soc sim --from-sdist --out {wheelhouse}"
    assert calls[3] == f"pip install {wheelhouse}/fla_npu-*.whl[test] ./adapter"


def test_ci_script_shows_the_log_when_an_install_fails(tmp_path):
    res, _ = _run(tmp_path, fail_on="pip install torch==2.13.0")
    assert res.returncode == 1
    assert "FAILED:" in res.stdout and "pip install torch==2.13.0" in res.stdout


def test_ci_script_stops_before_the_suite_when_ruff_fails(tmp_path):
    res, calls = _run(tmp_path, fail_on="ruff check --quiet .")
    assert res.returncode != 0
    assert calls[-1] == "ruff check --quiet ." and not any(c.startswith("pytest") for c in calls)


def test_ci_script_stops_before_the_suite_when_the_format_check_fails(tmp_path):
    res, calls = _run(tmp_path, fail_on="clang-format --dry-run")
    assert res.returncode != 0
    assert calls[-1].startswith("clang-format --dry-run") and not any(c.startswith("pytest") for c in calls)


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}")
    return text[start:text.index("\n## ", start + 1)]


def test_readme_gives_the_time_of_its_commands():
    two = _readme_section("Two commands")
    assert re.search(r"fla-npu verify.*?\d+(\.\d+)? ?(s|min)", two, re.S), two
    assert re.search(r"ci/test\.sh.*?\d+(\.\d+)? ?min", two, re.S), two
    assert "-m slow" in two


@pytest.mark.parametrize("readme", ["README.md", "adapter/README.md"])
def test_readme_fla_install_lines_name_triton(readme):
    """FLA imports Triton; on a CPU machine it is not pulled in by FLA: the install lines say so."""
    for line in (ROOT / readme).read_text().splitlines():
        if "pip install" in line and "./adapter" in line:
            assert "triton" in line or "[fla]" in line, line
