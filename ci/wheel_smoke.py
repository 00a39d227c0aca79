"""cibuildwheel's test command: the installed wheel imports without CANN, is the flavour the job
built (FLA_NPU_SOC), runs an op on CPU, and (NPU flavours) carries its operator package and, on a
runner without an NPU, refuses its kernels with the clear no-NPU error."""

import os
import sys

import torch

import fla_npu
from fla_npu.runtime import bootstrap, flavour, load_library

soc = os.environ.get("FLA_NPU_SOC", "sim")
info = flavour.build_info()
assert info["flavour"] == soc, (info, soc)
if soc != "sim":  # the kernels: the embedded operator package (ci/cibw_before_build.py staged it)
    vendors = flavour.PACKAGE_DIR / "opp" / "vendors"
    libs = sorted(vendors.glob("*/op_api/lib/libcust_opapi.so"))
    assert libs, f"{soc} wheel without an operator package (nothing in {vendors}): its kernels are missing"
g = torch.randn(1, 8, 2, 4)
fla_npu.kda_gate_chunk_cumsum(g, torch.zeros(2), chunk_size=16)
if soc == "sim":
    load_library()
else:
    try:
        load_library()
        print("an NPU is present: kernels loaded")
    except bootstrap.NpuUnavailableError as e:
        print(f"no NPU on this runner, as expected: {e}")
print(f"ok: {info['distribution']} {info['version']} ({info['soc']}), {sys.version.split()[0]}")
