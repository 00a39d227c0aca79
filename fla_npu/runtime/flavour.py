"""Which flavour of fla-npu is installed, read from the files every build writes (stdlib only).

``fla_npu/_build_info.json``      distribution, version, flavour (``sim``, ``a2``, ``a3``, ``a5``), SoC,
                                  source revision, CANN version and floor, compiler, options, date
                                  (``cmake/build_info.cmake``).
``fla_npu/_flavours/<flavour>.json``  one marker per installed flavour. The flavours are separate
                                  distributions (``fla-npu``, ``fla-npu-a2``, ...) sharing the import
                                  package ``fla_npu``, so pip installs a second one over the first
                                  without complaint; their markers have different names and both
                                  stay, which is how :func:`check_single_flavour` sees it at import.

A source tree that was never built has neither file: flavour ``source`` (the reference on CPU; the
native library only through ``FLA_NPU_KERNEL_LIB``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent

# Family of each NPU flavour: what a user recognises, and the distribution to install.
SOC_FAMILIES = {
    "a2": "Atlas A2 (Ascend910B1-B4)",
    "a3": "Atlas A3 (Ascend910_93xx)",
    "a5": "Ascend 950 (Ascend950PR/DT)",
}
NPU_FLAVOURS = tuple(SOC_FAMILIES)


class FlavourConflictError(ImportError):
    """Two flavours of fla-npu are installed over each other in the same ``fla_npu`` directory."""


def dist_name(flavour: str) -> str:
    """The distribution that carries ``flavour``: ``fla-npu`` (sim) or ``fla-npu-<soc>``."""
    return "fla-npu" if flavour == "sim" else f"fla-npu-{flavour}"


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


_cache: dict | None = None


def build_info(package_dir: Path | None = None) -> dict:
    """The build information of the installed package (a source tree: flavour ``source``)."""
    global _cache
    if package_dir is None and _cache is not None:
        return _cache
    info = _read((package_dir or PACKAGE_DIR) / "_build_info.json")
    if info is None:
        info = {"distribution": None, "version": None, "flavour": "source", "soc": None,
                "source_revision": None, "cann_version": None, "cann_floor": None, "compiler": None,
                "build_options": None, "build_date": None, "opp_vendor": None}
    if package_dir is None:
        _cache = info
    return info


def installed_flavours(package_dir: Path | None = None) -> list[dict]:
    """The build info of every flavour whose marker is in ``fla_npu/_flavours/`` (sorted by flavour)."""
    d = (package_dir or PACKAGE_DIR) / "_flavours"
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    except OSError:
        return []
    out = []
    for n in names:
        info = _read(d / n) or {}
        info.setdefault("flavour", n[:-5])
        out.append(info)
    return out


def _describe(info: dict) -> str:
    return (f"{info.get('distribution') or dist_name(info.get('flavour', '?'))} {info.get('version') or ''}".strip()
            + f" (flavour {info.get('flavour')}, built {info.get('build_date') or '?'})")


def check_single_flavour(package_dir: Path | None = None) -> None:
    """Raise :class:`FlavourConflictError` naming both distributions if more than one flavour is
    installed in the same ``fla_npu`` directory (their files overwrote each other)."""
    flavours = installed_flavours(package_dir)
    if len(flavours) <= 1:
        return
    where = package_dir or PACKAGE_DIR
    names = [f.get("distribution") or dist_name(f.get("flavour", "?")) for f in flavours]
    raise FlavourConflictError(
        f"fla_npu: {len(flavours)} flavours are installed over each other in {where}: "
        + " and ".join(_describe(f) for f in flavours)
        + ". They share the import package fla_npu, so the files of the last one installed replaced "
        "those of the other and neither is intact. Remove both and install the one for this machine: "
        f"`pip uninstall -y {' '.join(names)}`, then `pip install <one of them>` (fla-npu-a2 / -a3 / -a5 "
        "for an Atlas A2 / A3 / Ascend 950 NPU, fla-npu for CPU only).")
