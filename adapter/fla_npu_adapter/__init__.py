"""fla-npu-adapter: serve flash-linear-attention (FLA) calls with fla_npu, opt-in, with fallback.

Registers a backend (``backend_type="fla_npu"``, priority -10, ahead of FLA's built-in
``triton_ascend`` backends) into FLA's existing dispatch registries for ``kda`` (``chunk_kda``,
``fused_recurrent_kda_fwd``, ``fused_kda_gate``, ``kda_gate_fwd``, ``kda_gate_bwd``) and
``gated_delta_rule`` (``chunk_gated_delta_rule``, ``gdn_gate_fwd``, ``gdn_gate_bwd``), for each
function an installed fla_npu flavour declares in the entry-point group ``fla_npu.kernels``.

Off by default. On with ``FLA_ASCENDC=1`` or :func:`enable`. Every call then goes through a
verifier; a rejected call (or a device no installed flavour serves) runs FLA's default path. Logs go
to ``logging.getLogger("fla_npu.adapter")``; FLA logs the backend that served each function on
``logging.getLogger("fla.backends")`` (INFO).

Importing this package installs the registration hook (as the torch autoload does); it imports
neither torch nor FLA itself.
"""

from __future__ import annotations

from . import _hook, _state

__version__ = "0.1.0"
__all__ = ["enable", "disable", "is_enabled", "status"]


def enable() -> None:
    """Turn the adapter on for this process (overrides ``FLA_ASCENDC``)."""
    _state.set_override(True)
    _hook.install()


def disable() -> None:
    """Turn the adapter off for this process (overrides ``FLA_ASCENDC``): FLA's default path serves."""
    _state.set_override(False)


def reset() -> None:
    """Forget :func:`enable`/:func:`disable`: ``FLA_ASCENDC`` decides again."""
    _state.set_override(None)


def is_enabled() -> bool:
    return _state.is_on()


def status() -> dict:
    """Switch state, discovered implementations and the FLA functions the backend is registered for."""
    import sys

    from . import _discovery
    backend = sys.modules.get(__name__ + "._backend")
    claims = backend.claims() if backend is not None else _discovery.read_claims()
    return {
        "enabled": _state.is_on(),
        "claims": {key: [f"{c.value} @ {', '.join(map(str, c.targets))}" for c in cs] for key, cs in claims.items()},
        "registered": sorted(backend.registered) if backend is not None else [],
    }


_hook.install()
