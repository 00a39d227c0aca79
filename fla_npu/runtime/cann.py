"""Finding CANN and reading its version (stdlib only: also loaded by ``./build_wheel`` by file path,
without importing fla_npu or torch).

CANN's install layouts: 9.x ``/usr/local/Ascend/cann[-<ver>]`` (``set_env.sh`` at its top), 8.x
``/usr/local/Ascend/ascend-toolkit/latest``; the version is in ``version.info`` (``Version=9.0.0``)
or ``<arch>-linux/ascend_toolkit_install.info`` (``version=9.0.0``, ``innerversion=...``)
(``reference/packaging.md`` §2.4, §4.3).
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

# Lowest CANN for each NPU flavour: Bisheng's CMake language support (find_package(ASC)) and
# --npu-arch dav-2201 need 9.0 (A2/A3), dav-3510 needs 9.1 (Ascend 950).
CANN_FLOORS = {"a2": "9.0.0", "a3": "9.0.0", "a5": "9.1.0"}

# What to install when CANN is missing or too old, per flavour (the ops package is per SoC family).
CANN_PACKAGES = {
    "a2": "Ascend-cann-toolkit and Ascend-cann-910b-ops",
    "a3": "Ascend-cann-toolkit and Ascend-cann-A3-ops",
    "a5": "Ascend-cann-toolkit and Ascend-cann-950-ops",
}

USUAL_HOMES = ("/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/latest",
               "~/Ascend/cann", "~/Ascend/ascend-toolkit/latest", "/opt/Ascend/cann", "/opt/Ascend/ascend-toolkit/latest")

_VERSION_RE = re.compile(r"^\s*(?:version|Version)\s*=\s*(\S+)\s*$")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """``"9.1.0"``, ``"9.1.0-beta.1"``, ``"8.5.RC1"``, ``"8.0.RC2.alpha003"`` -> ``(major, minor, patch)``
    (a release candidate counts as patch 0). ``None`` if unreadable."""
    if not text:
        return None
    m = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def version_at_least(version: str | None, floor: str | None) -> bool | None:
    """Whether ``version >= floor`` on (major, minor, patch); ``None`` when either is unknown."""
    v, f = parse_version(version), parse_version(floor)
    if v is None or f is None:
        return None
    return v >= f


def version_of_home(home: str | os.PathLike) -> str | None:
    """The CANN version installed at ``home`` (``None`` if no version file is found)."""
    home = Path(home)
    arch = platform.machine()
    candidates = [home / "version.info", home / f"{arch}-linux" / "ascend_toolkit_install.info",
                  home / "compiler" / "version.info", home / "runtime" / "version.info",
                  home / f"{arch}-linux" / "version.info"]
    for path in candidates:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            m = _VERSION_RE.match(line)
            if m:
                return m.group(1)
    return None


def looks_like_cann(home: str | os.PathLike) -> bool:
    home = Path(home)
    return home.is_dir() and (version_of_home(home) is not None or (home / "set_env.sh").is_file()
                              or any((home / p / "bisheng").is_file() for p in (
                                  "bin", "compiler/ccec_compiler/bin", "tools/ccec_compiler/bin")))


def candidate_homes(explicit: str | None = None, environ=None) -> list[tuple[str, str]]:
    """``(path, where it came from)`` in search order: ``explicit`` (``--cann``), ``ASCEND_HOME_PATH``,
    ``ASCEND_TOOLKIT_HOME``, then the usual install locations."""
    environ = os.environ if environ is None else environ
    out = []
    if explicit:
        out.append((explicit, "--cann"))
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if environ.get(var):
            out.append((environ[var], var))
    out += [(os.path.expanduser(p), "usual location") for p in USUAL_HOMES]
    return out


def find_cann(explicit: str | None = None, environ=None) -> tuple[str | None, str | None, list[str]]:
    """``(home, version, tried)``: the first CANN install found (``explicit`` is taken or refused,
    never skipped), its version, and every place looked at."""
    tried = []
    for path, source in candidate_homes(explicit, environ):
        tried.append(f"{path} ({source})")
        if looks_like_cann(path):
            return str(Path(path).resolve()), version_of_home(path), tried
        if source == "--cann":
            return None, None, tried
    return None, None, tried


def runtime_version(environ=None) -> tuple[str | None, str]:
    """The CANN version this process would use, and where it was read: torch_npu's record if
    torch_npu is imported, else the install ``ASCEND_HOME_PATH`` (or a usual location) points at."""
    import sys

    mod = sys.modules.get("torch_npu")
    if mod is not None:
        for getter in (lambda: mod.version.cann, lambda: sys.modules["torch"].version.cann):
            try:
                v = getter()
                if v:
                    return str(v), "torch_npu"
            except Exception:  # noqa: BLE001 - attribute absent in this torch_npu
                pass
    home, version, _ = find_cann(None, environ)
    if home is None:
        return None, "no CANN install found (ASCEND_HOME_PATH unset, none in the usual locations)"
    return version, home
