"""PyTorch device-backend autoload entry point of fla-npu-adapter (group ``torch.backends``).

``import torch`` calls :func:`autoload` (unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). It must stay
cheap and must not import torch or FLA: it only installs the post-import hook that registers the
fla_npu backend when FLA's operation packages load. ``FLA_NPU_AUTOLOAD=0`` turns it off; the
backend still serves nothing until switched on (``FLA_ASCENDC=1`` or ``fla_npu_adapter.enable()``).
"""

import os


def autoload() -> None:
    if os.environ.get("FLA_NPU_AUTOLOAD", "1") == "0":
        return
    from fla_npu_adapter import _hook
    _hook.install()
