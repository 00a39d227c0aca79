"""Which FLA functions the installed fla_npu flavours implement, read from entry-point metadata.

An fla_npu distribution (the CPU reference today, per-SoC kernel wheels later) declares in the
entry-point group ``fla_npu.kernels`` one entry per FLA function it implements::

    [project.entry-points."fla_npu.kernels"]
    "kda.chunk_kda@cpu" = "fla_npu:chunk_kda"
    "kda.chunk_kda@npu:Ascend910B2" = "fla_npu_ascend910b2:chunk_kda"

Name: ``<FLA operation>.<FLA function>@<device>[,<device>...]``; a device is a torch device type,
optionally followed by ``:<SoC>`` (the SoC a kernel flavour was built for). Value: the implementing
function, loaded on its first call. Only metadata is read here: nothing is imported.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass

if sys.version_info >= (3, 10):
    from importlib import metadata
else:  # pragma: no cover
    import importlib_metadata as metadata

GROUP = "fla_npu.kernels"
logger = logging.getLogger("fla_npu.adapter")


@dataclass(frozen=True)
class Target:
    """One device an implementation is valid for: a torch device type and optionally a SoC."""

    type: str
    soc: str | None = None

    def __str__(self) -> str:
        return self.type if self.soc is None else f"{self.type}:{self.soc}"


@dataclass(frozen=True)
class Claim:
    """An installed implementation of one FLA function."""

    operation: str
    function: str
    targets: tuple[Target, ...]
    value: str  # "module:attr"
    distribution: str | None

    @property
    def key(self) -> str:
        return f"{self.operation}.{self.function}"


def parse_name(name: str) -> tuple[str, str, tuple[Target, ...]]:
    """``"kda.chunk_kda@cpu,npu:Ascend910B2"`` -> ``("kda", "chunk_kda", (Target("cpu"), ...))``."""
    head, sep, devices = name.partition("@")
    operation, dot, function = head.strip().rpartition(".")
    if not sep or not dot or not operation or not function or not devices.strip():
        raise ValueError(f"entry point name {name!r} is not '<operation>.<function>@<device>[,<device>...]'")
    targets = []
    for item in devices.split(","):
        dev_type, _, soc = item.strip().partition(":")
        if not dev_type:
            raise ValueError(f"entry point name {name!r} has an empty device")
        targets.append(Target(dev_type, soc or None))
    return operation, function, tuple(targets)


def _entry_points():
    return metadata.entry_points(group=GROUP)


def read_claims() -> dict[str, list[Claim]]:
    """All declared implementations, keyed by ``"<operation>.<function>"`` (malformed entries are logged and skipped)."""
    claims: dict[str, list[Claim]] = {}
    for ep in _entry_points():
        try:
            operation, function, targets = parse_name(ep.name)
        except ValueError as error:
            logger.warning("fla_npu_adapter: ignoring entry point: %s", error)
            continue
        dist = getattr(getattr(ep, "dist", None), "name", None)
        claim = Claim(operation, function, targets, ep.value, dist)
        claims.setdefault(claim.key, []).append(claim)
    return claims
