"""The opt-in switch: ``FLA_ASCENDC`` (environment) unless a Python call decided otherwise."""

from __future__ import annotations

import logging
import os

ENV_SWITCH = "FLA_ASCENDC"
logger = logging.getLogger("fla_npu.adapter")

_override: bool | None = None  # set by enable()/disable(); None: follow the environment
_logged: set = set()  # keys (strings or tuples) of the lines already logged

def env_on() -> bool:
    """``FLA_ASCENDC`` is set to a value other than ``0`` (or empty); read at every call. The one
    definition of the switch being on: ``fla-npu info`` reports it with this function too."""
    return os.environ.get(ENV_SWITCH, "0") not in ("0", "")


def set_override(value: bool | None) -> None:
    global _override
    _override = value
    _logged.discard("off")


def is_on() -> bool:
    """Called by FLA's dispatch on every call of a function fla_npu claims: keep it cheap."""
    on = _override
    if on is None:
        on = env_on()
    if not on and "off" not in _logged:
        _logged.add("off")
        how = "fla_npu_adapter.disable()" if _override is False else f"{ENV_SWITCH} unset or 0"
        logger.info("fla_npu_adapter: off (%s) -> FLA's default path", how)
    return on


def log_once(key, message: str, *args, level: int = logging.INFO) -> None:
    """One log line per distinct key for the life of the process."""
    if key not in _logged:
        _logged.add(key)
        logger.log(level, message, *args)


def log_fallback(key, message: str, *args) -> None:
    """A reason fla_npu does not serve something, once per key: at WARNING while the switch is on
    (the user asked for fla_npu and must learn why it is not used), else at INFO."""
    log_once(key, message, *args, level=logging.WARNING if is_on() else logging.INFO)
