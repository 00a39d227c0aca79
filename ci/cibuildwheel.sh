#!/usr/bin/env bash
# One cell of the wheel matrix (SoC x CPU architecture) with cibuildwheel, on the runner's own
# architecture (no emulation: a wheel built under QEMU for another arch is slow and was mislabelled
# in a public project). Configuration: [tool.cibuildwheel] in pyproject.toml; ci/WHEELS.md.
#   ci/cibuildwheel.sh sim|a2|a3|a5 [cibuildwheel args...]
# Images: sim on quay.io/pypa/manylinux_2_28_<arch>; an NPU SoC on Ascend's public CANN image
#   quay.io/ascend/manylinux:<cann>-<910b|a3|950>-manylinux_<2_28|2_34>-py3.11
# (Ascend/cann-container-image: one tag per CANN version x chip x Python; manylinux_2_28 up to CANN
# 9.0.0, manylinux_2_34 from 9.0.1 on; CANN installed at /usr/local/Ascend/cann-<cann>). The default
# CANN is the SoC's floor, so the wheel runs on every CANN the runtime accepts:
#   a2: quay.io/ascend/manylinux:9.0.0-910b-manylinux_2_28-py3.11
#   a3: quay.io/ascend/manylinux:9.0.0-a3-manylinux_2_28-py3.11
#   a5: quay.io/ascend/manylinux:9.1.0-950-manylinux_2_34-py3.11
# Overrides: FLA_NPU_CANN_VERSION (>= the floor), FLA_NPU_MANYLINUX (2_28 | 2_34), FLA_NPU_IMAGE_PY
# (3.11), FLA_NPU_IMAGE (the whole image), FLA_NPU_CANN_HOME (CANN's directory in the image),
# FLA_NPU_CIBUILDWHEEL (the command, default cibuildwheel), FLA_NPU_PREBUILT_OPP (an operator package
# built elsewhere, embedded instead of building csrc/opp/ in the image: ./build_wheel --prebuilt-opp).
# The before-build step (ci/cibw_before_build.py) stages the operator package in the container at
# FLA_NPU_OPP_STAGE, which the build embeds. FLA_NPU_VARIANT=1: afterwards, the
# WheelNext variant wheel of each NPU wheel (./build_wheel --make-variant) into wheelhouse/variants.
set -euo pipefail
cd "$(dirname "$0")/.."
soc="${1:?usage: ci/cibuildwheel.sh sim|a2|a3|a5 [cibuildwheel args]}"; shift
arch="$(uname -m)"
case "$soc" in
  sim) chip=""; floor="" ;;
  a2)  chip=910b; floor=9.0.0 ;;
  a3)  chip=a3;   floor=9.0.0 ;;
  a5)  chip=950;  floor=9.1.0 ;;
  *) echo "ci/cibuildwheel.sh: unknown SoC $soc (sim, a2, a3, a5)" >&2; exit 2 ;;
esac
stage=""; vendor=""; prebuilt=OFF
if [ "$soc" = sim ]; then
  image="quay.io/pypa/manylinux_2_28_${arch}"; cann=""; home=""
else
  stage=/tmp/fla-npu-opp-stage; vendor=fla_npu
  if [ -n "${FLA_NPU_PREBUILT_OPP:-}" ]; then prebuilt=ON; fi
  cann="${FLA_NPU_CANN_VERSION:-$floor}"
  base="${cann%%-*}"  # 9.1.0-beta.3 -> 9.1.0 (the floor compares major.minor.patch, as the runtime does)
  if [ "$(printf '%s\n%s\n' "$floor" "$base" | sort -V | head -n1)" != "$floor" ]; then
    echo "ci/cibuildwheel.sh: CANN $cann is older than the floor of $soc ($floor)" >&2; exit 2
  fi
  if [ "$(printf '%s\n%s\n' 9.0.1 "$base" | sort -V | head -n1)" = 9.0.1 ]; then ml=2_34; else ml=2_28; fi
  image="quay.io/ascend/manylinux:${cann}-${chip}-manylinux_${FLA_NPU_MANYLINUX:-$ml}-py${FLA_NPU_IMAGE_PY:-3.11}"
  home="/usr/local/Ascend/cann-${cann}"
fi
image="${FLA_NPU_IMAGE:-$image}"
export FLA_NPU_SOC="$soc" FLA_NPU_CANN_VERSION="$cann" FLA_NPU_CANN_HOME="${FLA_NPU_CANN_HOME:-$home}" CIBW_ARCHS="$arch"
export FLA_NPU_OPP_STAGE="$stage" FLA_NPU_OPP_VENDOR="$vendor" FLA_NPU_OPP_PREBUILT="$prebuilt"
export "CIBW_MANYLINUX_$(echo "$arch" | tr a-z A-Z)_IMAGE=$image"
echo "ci/cibuildwheel.sh: $soc on $arch: image $image${cann:+, CANN $cann at $FLA_NPU_CANN_HOME}" >&2
out="wheelhouse/$soc-$arch"
read -r -a cibw <<< "${FLA_NPU_CIBUILDWHEEL:-cibuildwheel}"
"${cibw[@]}" --platform linux --output-dir "$out" "$@"
if [ "${FLA_NPU_VARIANT:-0}" = 1 ] && [ "$soc" != sim ]; then
  for wheel in "$out"/fla_npu_"$soc"-*.whl; do
    [ -e "$wheel" ] || continue
    python3 build_wheel --make-variant "$wheel" --soc "$soc" --out wheelhouse/variants
  done
fi
