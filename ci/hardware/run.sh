#!/usr/bin/env bash
# The hardware job, by hand or from the workflow (ci/hardware/ascend.yml), on a host with an Ascend NPU,
# CANN, and a Python whose site-packages hold torch and torch_npu matching that CANN (the Ascend
# images have them; Triton-Ascend for FLA's default path too).
#
#   ci/hardware/run.sh a2|a3|a5 [FLA_CHECKOUT]
#
# Steps (each announced; outputs under hw-out/<soc>/):
#   1. ./build_wheel --soc <soc>: the NPU wheel (needs CANN)
#   2. a fresh venv (--system-site-packages: torch, torch_npu, triton-ascend from the host), the wheel,
#      fla-npu-adapter (./adapter), FLA (the checkout, else PyPI) and pytest
#   3. the test suite against the installed wheel (pytest tests)
#   4. fla-npu verify --impl npu: every production shape (scaled as on the CPU; the float64 gold of the
#      full shapes does not fit in memory), every switch, varlen and decode, on the device
#   5. FLA's own KDA and GDN tests: through the conformance runner (ci/fla_conformance.py, FLA's
#      tests redirected to the CPU), and natively on the NPU with the adapter on (FLA_ASCENDC=1)
#   6. fla-npu bench: measured (device events; fla_npu and FLA's default path side by side, their
#      outputs compared at the full shapes) -> bench-measured.jsonl + bench-measured.png
#   7. the timing model's rows for the same cases from the sim flavour (./build_wheel --soc sim
#      --sim-soc <soc>, second venv) and the calibration report (python -m fla_npu.perf.calibrate)
set -euo pipefail
soc="${1:?usage: ci/hardware/run.sh a2|a3|a5 [FLA_CHECKOUT]}"
fla="${2:-}"
cd "$(dirname "$0")/../.."
root="$PWD"
out="$root/hw-out/$soc"
mkdir -p "$out"
started=$SECONDS
step() { printf '[hardware %s %4ds] %s\n' "$soc" "$((SECONDS - started))" "$*"; }
status=0
run() { "$@" || { step "FAILED ($?): $*"; status=1; }; }  # later steps still run: every report is uploaded

step "1. building the $soc wheel"
rm -rf "$out/wheelhouse"
./build_wheel --soc "$soc" --out "$out/wheelhouse"
wheel="$(ls "$out"/wheelhouse/*.whl | head -1)"

step "2. fresh venv with $wheel, fla-npu-adapter, FLA and pytest"
venv="$out/venv"
rm -rf "$venv"
python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q "$wheel" ./adapter pytest hypothesis matplotlib
if [ -n "$fla" ]; then "$venv/bin/pip" install -q --no-deps "$fla"; else "$venv/bin/pip" install -q flash-linear-attention; fi
"$venv/bin/fla-npu" info | tee "$out/info.txt"

step "3. the test suite against the installed wheel"
run "$venv/bin/pytest" -q tests --junitxml "$out/tests.xml"

step "4. fla-npu verify on the NPU (every production shape, scaled; every switch, varlen, decode)"
run "$venv/bin/fla-npu" verify --impl npu --json "$out/verify-npu.jsonl"

step "5. FLA's own tests: conformance runner (CPU) and natively on the NPU through the adapter"
if [ -n "$fla" ]; then
    run "$venv/bin/python" ci/fla_conformance.py --fla "$fla" --venv "$out/venv-conformance" --json "$out/fla-conformance.json"
    run env FLA_ASCENDC=1 "$venv/bin/pytest" -q "$fla/tests/ops/test_kda.py" "$fla/tests/ops/test_gdn.py" \
        --junitxml "$out/fla-tests-npu.xml"
else
    step "   skipped: FLA's tests are not in its PyPI package; pass a checkout of fla-org/flash-linear-attention"
fi

step "6. fla-npu bench, measured"
run "$venv/bin/fla-npu" bench --out "$out/bench-measured.jsonl" --plot "$out/bench-measured.png"

step "7. the timing model for the same cases (sim flavour, $soc profile) and its calibration"
simvenv="$out/venv-sim"
rm -rf "$simvenv" "$out/wheelhouse-sim"
./build_wheel --soc sim --sim-soc "$soc" --out "$out/wheelhouse-sim"
python3 -m venv --system-site-packages "$simvenv"
"$simvenv/bin/pip" install -q "$(ls "$out"/wheelhouse-sim/*.whl | head -1)" matplotlib
run "$simvenv/bin/fla-npu" bench --model --soc "$soc" --out "$out/bench-model.jsonl" --plot "$out/bench-model.png"
run "$simvenv/bin/python" -m fla_npu.perf.calibrate "$out/bench-measured.jsonl" "$out/bench-model.jsonl" \
    > "$out/calibration.txt"
cat "$out/calibration.txt"

step "done (status $status); reports in $out"
exit "$status"
