"""PyTorch device-backend autoload entry point of fla-npu (group ``torch.backends``, name ``fla_npu``).

``import torch`` calls :func:`autoload` near its end (unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``),
before any NPU is used. For a wheel that embeds an operator package (``fla_npu/opp/vendors/<vendor>``)
it prepends that vendor directory to ``ASCEND_CUSTOM_OPP_PATH``, which CANN reads once when it
initialises: set later, the kernels are never registered (``Cannot find bin of op``, aclnn 561103).

Rules: stdlib only, never imports torch, torch_npu or the ``fla_npu`` package (this runs inside
``import torch``), never raises (an exception here would break ``import torch``), costs a
``find_spec`` and a directory listing. ``FLA_NPU_AUTOLOAD=0`` turns it off. What it did is kept in
:data:`STATE` for ``fla_npu.runtime.bootstrap`` (first use) and ``fla-npu info``.
"""

import os
import sys

ENV = "ASCEND_CUSTOM_OPP_PATH"

# ran: autoload was called; vendor_dirs: what it put first in ASCEND_CUSTOM_OPP_PATH;
# cann_initialised_before: torch_npu had already initialised the device runtime when it ran;
# error: what went wrong (never raised).
STATE = {"ran": False, "vendor_dirs": [], "cann_initialised_before": None, "already_set": False, "error": None}


def embedded_vendor_dirs(package_dir):
    """The vendor directories of the operator package embedded in ``package_dir`` (``fla_npu/``), in
    ``opp/vendors/config.ini``'s ``load_priority`` order, then the rest sorted."""
    vendors = os.path.join(package_dir, "opp", "vendors")
    try:
        names = sorted(n for n in os.listdir(vendors) if os.path.isdir(os.path.join(vendors, n)))
    except OSError:
        return []
    order = []
    try:
        with open(os.path.join(vendors, "config.ini"), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition("=")
                if key.strip() == "load_priority":
                    order = [v.strip() for v in value.split(",") if v.strip()]
    except OSError:
        pass
    ranked = [n for n in order if n in names] + [n for n in names if n not in order]
    return [os.path.join(vendors, n) for n in ranked]


def cann_initialised():
    """Whether torch_npu has already initialised the NPU runtime (``None``: torch_npu not imported)."""
    mod = sys.modules.get("torch_npu")
    if mod is None:
        return None
    try:
        return bool(mod.npu.is_initialized())
    except Exception:  # noqa: BLE001 - an old torch_npu: unknown
        return None


def prepend_opp_path(vendor_dirs, environ=None):
    """Put ``vendor_dirs`` first in ``ASCEND_CUSTOM_OPP_PATH`` (each once). Returns whether all of
    them were already in it."""
    environ = os.environ if environ is None else environ
    current = [p for p in environ.get(ENV, "").split(":") if p]
    already = all(d in current for d in vendor_dirs)
    environ[ENV] = ":".join(list(vendor_dirs) + [p for p in current if p not in vendor_dirs])
    return already


def autoload():
    if os.environ.get("FLA_NPU_AUTOLOAD", "1") == "0":
        return
    STATE["ran"] = True
    try:
        import importlib.util

        spec = importlib.util.find_spec("fla_npu")
        if spec is None or not spec.submodule_search_locations:
            return
        package_dir = list(spec.submodule_search_locations)[0]
        vendor_dirs = embedded_vendor_dirs(package_dir)
        if not vendor_dirs:
            return  # the sim flavour, or an NPU flavour without an operator package
        STATE["cann_initialised_before"] = cann_initialised()
        STATE["already_set"] = prepend_opp_path(vendor_dirs)
        STATE["vendor_dirs"] = vendor_dirs
    except Exception as e:  # noqa: BLE001 - must never break `import torch`
        STATE["error"] = f"{type(e).__name__}: {e}"
