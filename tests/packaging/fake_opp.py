"""A fake CANN operator package in the real installed layout (reference/packaging.md §2.1), made with
the host C compiler: host libraries that need CANN's libraries (libopapi.so, libnnopbase.so,
libascendcl.so, libtiling_api.so: stubs linked against and kept out of the package, as on a machine
without CANN: :func:`stubs_dir`), a device kernel object whose ELF machine is not the host's (as
Bisheng's are), the ``liboptiling.so`` symbolic link, and a stray ``libopapi.so`` that must never be
shipped. Its ``op_api/lib/libcust_opapi.so`` is ``fake_aclnn.c``: the aclnn functions of fla-npu's ops,
recording what they receive, so that an installed NPU wheel's bridge can be run without CANN."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

VENDOR = "fla_npu"
FAKE_ACLNN = Path(__file__).resolve().parent / "fake_aclnn.c"


def _cc(args, cwd):
    subprocess.run(["cc", *map(str, args)], cwd=cwd, check=True, capture_output=True)


# Stands in for the licence text a real CANN or operator package carries (build_wheel ships it).
FAKE_CANN_LICENSE = "CANN Open Software License Agreement Version 2.0 (test stand-in)\n"


def stubs_dir(root: Path) -> Path:
    """The stand-ins of CANN's libraries the package's host libraries need (on LD_LIBRARY_PATH, they load)."""
    return root.parent / (root.name + "-cann-stubs")


def make_fake_opp(root: Path, unit: str = "ascend910b", vendor: str = VENDOR, version: str = "9.0.0") -> Path:
    """Write the package under ``root`` (an install root: ``root/vendors/<vendor>/...``); returns ``root``."""
    arch = platform.machine()
    stubs = stubs_dir(root)
    stubs.mkdir(parents=True, exist_ok=True)
    (stubs / "stub.c").write_text("int cann_stub(void) { return 0; }\n")
    for lib in ("opapi", "nnopbase", "ascendcl", "tiling_api"):
        _cc(["-shared", "-fPIC", "-o", f"lib{lib}.so", "stub.c"], stubs)
    v = root / "vendors" / vendor
    dirs = {
        "api": v / "op_api" / "lib", "inc": v / "op_api" / "include" / "aclnnop",
        "proto": v / "op_proto" / "lib" / "linux" / arch, "tiling": v / "op_impl" / "ai_core" / "tbe" / "op_tiling",
        "kernel": v / "op_impl" / "ai_core" / "tbe" / "kernel" / unit / "chunk_gated_delta_rule",
        "kcfg": v / "op_impl" / "ai_core" / "tbe" / "kernel" / "config" / unit,
        "cfg": v / "op_impl" / "ai_core" / "tbe" / "config" / unit, "bin": v / "bin",
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    (dirs["tiling"] / "lib" / "linux" / arch).mkdir(parents=True, exist_ok=True)
    src = stubs / "op.c"
    src.write_text("int cann_stub(void);\nint aclnnFakeGetWorkspaceSize(void) { return cann_stub(); }\n")
    link = ["-L", stubs, "-Wl,--no-as-needed", "-lopapi", "-lnnopbase", "-lascendcl", "-ltiling_api"]
    _cc(["-shared", "-fPIC", "-Wl,-Bsymbolic", "-o", dirs["api"] / "libcust_opapi.so", FAKE_ACLNN, *link], stubs)
    _cc(["-shared", "-fPIC", "-o", dirs["proto"] / "libcust_opsproto_rt2.0.so", src, *link], stubs)
    master = dirs["tiling"] / "lib" / "linux" / arch / "libcust_opmaster_rt2.0.so"
    _cc(["-shared", "-fPIC", "-o", master, src, *link], stubs)
    (dirs["tiling"] / "liboptiling.so").symlink_to(Path("lib") / "linux" / arch / "libcust_opmaster_rt2.0.so")
    # A device kernel: an ELF relocatable object for a machine that is not the host's.
    obj = dirs["kernel"] / "ChunkGatedDeltaRule_0.o"
    _cc(["-c", "-o", obj, src], stubs)
    data = bytearray(obj.read_bytes())
    data[18:20] = (0x1029).to_bytes(2, "little")  # e_machine: not a host architecture
    obj.write_bytes(bytes(data))
    (dirs["kernel"] / "ChunkGatedDeltaRule_0.json").write_text('{"kernelName": "ChunkGatedDeltaRule_0"}\n')
    (dirs["kcfg"] / "chunk_gated_delta_rule.json").write_text('{"binList": []}\n')
    (dirs["cfg"] / f"aic-{unit}-ops-info.json").write_text('{"ChunkGatedDeltaRule": {}}\n')
    (dirs["cfg"] / "binary_info_config.json").write_text("{}\n")
    (dirs["inc"] / "aclnn_chunk_gated_delta_rule.h").write_text("/* fake */\n")
    (dirs["bin"] / "set_env.bash").write_text(f"export ASCEND_CUSTOM_OPP_PATH=/somewhere/{vendor}:$ASCEND_CUSTOM_OPP_PATH\n")
    (dirs["api"] / "libopapi.so").write_bytes((stubs / "libopapi.so").read_bytes())  # must be dropped
    (root / "vendors" / "config.ini").write_text(f"load_priority={vendor}\n")
    (v / "version.info").write_text(f"Version={version}\n")
    (root / "LICENSE").write_text(FAKE_CANN_LICENSE)
    return root
