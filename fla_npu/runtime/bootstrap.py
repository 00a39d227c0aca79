"""First use of an NPU flavour's kernels: is there an NPU, is it the SoC the wheel was built for, is
CANN recent enough, and does CANN see the embedded operator package. Runs once, from
``_native.load_library`` (kernels load lazily; ``import fla_npu`` never needs CANN or an NPU).

Each failure is one exception (a :class:`~fla_npu.runtime.NativeLibraryError`) whose message names
what is installed, what the machine has, and what to install instead. The sim flavour and a source
tree skip all of it.

The device's SoC comes from torch_npu (``torch.npu.get_device_name``, e.g. ``Ascend910B3``), else
from the driver (``libdrvdsmi_host.so``'s ``dsmi_get_chip_info``, which does not initialise CANN).
UNTESTED ON HARDWARE: written from ``reference/packaging.md`` §3; tested here with simulated names.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading

from . import cann as C, flavour as F
from ._native import NativeLibraryError


class NpuUnavailableError(NativeLibraryError):
    """An NPU flavour's kernels were asked for on a machine where no NPU can be used."""


class SocMismatchError(NativeLibraryError):
    """The device is not the SoC the installed wheel was built for."""


class CannVersionError(NativeLibraryError):
    """CANN is older than the installed wheel's floor."""


class OppRegistrationError(NativeLibraryError):
    """CANN initialised before ``ASCEND_CUSTOM_OPP_PATH`` held the embedded operator package."""


# torch_npu's numeric SoC versions (c10_npu::SocVersion), by family.
_SOC_IDS = {**{i: "a2" for i in range(220, 226)}, **{i: "a3" for i in range(250, 256)}, 260: "a5"}


def soc_family(name) -> str | None:
    """``"Ascend910B3"`` -> ``"a2"``, ``"Ascend910_9391"`` -> ``"a3"``, ``"Ascend950PR_9599"`` -> ``"a5"``,
    an ``int`` from ``get_soc_version()`` likewise; ``None`` for anything else (310P, 910A, ...)."""
    if isinstance(name, int):
        return _SOC_IDS.get(name)
    n = str(name).strip().lower().replace("ascend", "")
    if re.match(r"^910b\d?(c|-1)?$", n) or n in ("910b", "a2"):
        return "a2"
    if re.match(r"^910_93\d\d$", n) or n == "a3":
        return "a3"
    if n.startswith("950") or re.match(r"^910_95\d\d$", n) or n == "a5":
        return "a5"
    return None


def _from_torch_npu():
    """``(name, note)``: the current device's name from torch_npu, or ``(None, why not)``."""
    try:
        import torch
        import torch_npu  # noqa: F401 - registers torch.npu
    except Exception as e:  # noqa: BLE001 - ImportError, or a torch_npu/CANN mismatch at import
        return None, f"torch_npu not usable ({type(e).__name__}: {e})"
    try:
        if not torch.npu.is_available():
            return None, "torch_npu sees no NPU (torch.npu.is_available() is False)"
        return str(torch.npu.get_device_name(torch.npu.current_device())), "torch_npu"
    except Exception as e:  # noqa: BLE001
        return None, f"torch_npu could not query the device ({type(e).__name__}: {e})"


class _DsmiChipInfo(ctypes.Structure):
    _fields_ = [("chip_type", ctypes.c_char * 32), ("chip_name", ctypes.c_char * 32), ("chip_ver", ctypes.c_char * 32)]


def _from_driver():
    """``(name, note)`` from the driver's DSMI library (no CANN initialisation). UNTESTED here."""
    names = ["libdrvdsmi_host.so", "/usr/local/Ascend/driver/lib64/driver/libdrvdsmi_host.so",
             "/usr/local/Ascend/driver/lib64/libdrvdsmi_host.so"]
    for lib_name in names:
        try:
            lib = ctypes.CDLL(lib_name)
        except OSError:
            continue
        info = _DsmiChipInfo()
        try:
            rc = lib.dsmi_get_chip_info(0, ctypes.byref(info))
        except Exception as e:  # noqa: BLE001
            return None, f"driver query failed ({e})"
        if rc != 0:
            return None, f"dsmi_get_chip_info returned {rc}"
        return (info.chip_type.decode(errors="replace") + info.chip_name.decode(errors="replace")), "driver (DSMI)"
    return None, "no Ascend driver (libdrvdsmi_host.so not found)"


def detect_device_soc() -> tuple[str | None, str]:
    """The device's SoC name and where it came from; ``(None, reasons)`` when there is no NPU."""
    name, note = _from_torch_npu()
    if name:
        return name, note
    name2, note2 = _from_driver()
    if name2:
        return name2, note2 + f"; {note}"
    return None, f"{note}; {note2}"


def _wheel(info: dict) -> str:
    return f"{info.get('distribution') or F.dist_name(info['flavour'])} {info.get('version') or ''}".strip()


def check_device(info: dict, device_soc: str | None, source: str) -> None:
    """Raise if ``device_soc`` cannot run the wheel described by ``info``."""
    flavour = info["flavour"]
    family = F.SOC_FAMILIES.get(flavour, flavour)
    if device_soc is None:
        raise NpuUnavailableError(
            f"fla_npu: the installed wheel {_wheel(info)} holds kernels for {family} NPUs, and this machine "
            f"has no usable NPU ({source}). On a machine without an NPU install the CPU flavour instead: "
            f"`pip uninstall -y {F.dist_name(flavour)} && pip install fla-npu` (PyTorch reference and host "
            "simulation). CPU tensors run the PyTorch reference with any flavour, without kernels.")
    dev_family = soc_family(device_soc)
    if dev_family != flavour:
        if dev_family is None:
            fix = ("fla-npu has no kernels for this SoC (supported: Atlas A2, Atlas A3, Ascend 950); "
                   "use FLA's default path on this device")
        else:
            fix = (f"install the wheel for it: `pip uninstall -y {F.dist_name(flavour)} && "
                   f"pip install {F.dist_name(dev_family)}`")
        raise SocMismatchError(
            f"fla_npu: the installed wheel {_wheel(info)} was built for {family} (SoC {info.get('soc')}), but "
            f"this device is {device_soc} (from {source}"
            + (f", {F.SOC_FAMILIES[dev_family]}" if dev_family else "") + f"); {fix}.")


def check_cann(info: dict, version: str | None, source: str) -> None:
    floor = info.get("cann_floor") or C.CANN_FLOORS.get(info["flavour"])
    ok = C.version_at_least(version, floor)
    if ok is False:
        raise CannVersionError(
            f"fla_npu: the installed wheel {_wheel(info)} needs CANN >= {floor} (it was built with "
            f"{info.get('cann_version') or 'an unrecorded version'}), but CANN {version} is in use ({source}). "
            f"Install CANN >= {floor} ({C.CANN_PACKAGES.get(info['flavour'], 'Ascend-cann-toolkit')}) and "
            "source its set_env.sh, or install an fla-npu wheel built for this CANN.")


def check_opp_registration(vendor_dirs: list[str], state: dict, cann_initialised_now: bool | None,
                           environ=None) -> None:
    """Make sure CANN reads ``vendor_dirs`` from ``ASCEND_CUSTOM_OPP_PATH`` when it initialises: fine
    if the process started with them there, or if the torch.backends autoload put them there before
    CANN initialised; otherwise set them now if CANN has not initialised yet, else raise."""
    import fla_npu_autoload as A

    environ = os.environ if environ is None else environ
    if not vendor_dirs:
        return
    present = [p for p in environ.get(A.ENV, "").split(":") if p]
    if all(d in present for d in vendor_dirs) and (state.get("already_set") or not state.get("ran")):
        return  # the process environment had them from the start (exported by the user)
    if state.get("ran") and state.get("vendor_dirs"):
        if not state.get("cann_initialised_before"):
            return  # set at `import torch`, before the NPU runtime started
        late, how = True, "torch_npu had already initialised the NPU when torch's backend autoload ran"
    else:
        late = bool(cann_initialised_now)
        how = ("torch's backend autoload did not run: TORCH_DEVICE_BACKEND_AUTOLOAD=0 or FLA_NPU_AUTOLOAD=0"
               if not state.get("ran") else f"the autoload could not set it: {state.get('error')}")
    if late:
        raise OppRegistrationError(
            "fla_npu: CANN initialised before ASCEND_CUSTOM_OPP_PATH held fla_npu's operator package "
            f"({how}), so CANN will not find its kernels (aclnn status 561103, `Cannot find bin of op`). "
            f"Start the process with `export ASCEND_CUSTOM_OPP_PATH={':'.join(vendor_dirs)}"
            "${ASCEND_CUSTOM_OPP_PATH:+:$ASCEND_CUSTOM_OPP_PATH}`, or leave torch's backend autoload on and "
            "use no NPU before `import torch` returns.")
    A.prepend_opp_path(vendor_dirs, environ)  # CANN has not initialised yet: still in time


_lock = threading.Lock()
_ready: bool = False


def ensure_ready() -> None:
    """The checks of an NPU flavour's first use (once per process; a failure is raised again on the
    next call). Nothing to do for the sim flavour or a source tree."""
    global _ready
    if _ready:
        return
    with _lock:
        if _ready:
            return
        info = F.build_info()
        if info.get("flavour") not in F.NPU_FLAVOURS:
            _ready = True
            return
        soc, source = detect_device_soc()
        check_device(info, soc, source)
        version, vsource = C.runtime_version()
        check_cann(info, version, vsource)
        try:
            import fla_npu_autoload as A
        except ImportError:  # a source tree without the top-level module on sys.path
            A = None
        if A is not None:
            vendor_dirs = A.embedded_vendor_dirs(str(F.PACKAGE_DIR))
            check_opp_registration(vendor_dirs, A.STATE, A.cann_initialised())
        _ready = True


def opp_status() -> dict:
    """For ``fla-npu info``: the embedded operator package, and whether CANN will see it."""
    try:
        import fla_npu_autoload as A
    except ImportError:
        return {"vendor_dirs": [], "in_env": None, "autoload": None}
    dirs = A.embedded_vendor_dirs(str(F.PACKAGE_DIR))
    present = [p for p in os.environ.get(A.ENV, "").split(":") if p]
    return {"vendor_dirs": dirs, "in_env": all(d in present for d in dirs) if dirs else None,
            "autoload": dict(A.STATE), "cann_initialised": A.cann_initialised(),
            "libopapi_shipped": any(os.path.exists(os.path.join(d, "op_api", "lib", "libopapi.so")) for d in dirs)}


__all__ = ["CannVersionError", "NpuUnavailableError", "OppRegistrationError", "SocMismatchError", "check_cann",
           "check_device", "check_opp_registration", "detect_device_soc", "ensure_ready", "opp_status",
           "soc_family"]
