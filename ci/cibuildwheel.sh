#!/usr/bin/env bash
# One cell of the wheel matrix (SoC x CPU architecture) with cibuildwheel, on the runner's own
# architecture (no emulation: a wheel built under QEMU for another arch is slow and was mislabelled
# in a public project). Configuration: [tool.cibuildwheel] in pyproject.toml; ci/WHEELS.md.
#   ci/cibuildwheel.sh sim|a2|a3|a5 [cibuildwheel args...]
# Images (placeholders until the CANN release is chosen; the tags exist per CANN version x chip):
#   sim: quay.io/pypa/manylinux_2_28_<arch>
#   a2:  quay.io/ascend/manylinux:9.1.0-910b-manylinux_2_28-py3.11
#   a3:  quay.io/ascend/manylinux:9.1.0-a3-manylinux_2_28-py3.11
#   a5:  quay.io/ascend/manylinux:9.1.0-950-manylinux_2_28-py3.11
set -euo pipefail
soc="${1:?usage: ci/cibuildwheel.sh sim|a2|a3|a5 [cibuildwheel args]}"; shift
cann="${FLA_NPU_CANN_VERSION:-9.1.0}"
arch="$(uname -m)"
case "$soc" in
  sim) image="quay.io/pypa/manylinux_2_28_${arch}"; home="" ;;
  a2)  image="quay.io/ascend/manylinux:${cann}-910b-manylinux_2_28-py3.11"; home=/usr/local/Ascend/cann ;;
  a3)  image="quay.io/ascend/manylinux:${cann}-a3-manylinux_2_28-py3.11"; home=/usr/local/Ascend/cann ;;
  a5)  image="quay.io/ascend/manylinux:${cann}-950-manylinux_2_28-py3.11"; home=/usr/local/Ascend/cann ;;
  *) echo "ci/cibuildwheel.sh: unknown SoC $soc (sim, a2, a3, a5)" >&2; exit 2 ;;
esac
export FLA_NPU_SOC="$soc" FLA_NPU_CANN_HOME="${FLA_NPU_CANN_HOME:-$home}" CIBW_ARCHS="$arch"
export "CIBW_MANYLINUX_$(echo "$arch" | tr a-z A-Z)_IMAGE=${FLA_NPU_IMAGE:-$image}"
exec cibuildwheel --platform linux --output-dir "wheelhouse/$soc-$arch" "$@"
