"""Per-function verifiers: does the installed fla_npu serve this exact FLA call on these tensors?

A verifier receives the caller's ``*args, **kwargs`` exactly as FLA's dispatch got them, binds them
against FLA's own signature of the function (read from FLA at registration, so positional and
keyword call forms both work), and returns ``(True, None)`` or ``(False, reason)``. It reads only
attributes (device, dtype, shape, ``requires_grad``): no computation, no device synchronisation,
nothing written. Each distinct reason is logged once.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import torch

from . import _state
from ._discovery import Claim, Target

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INDEX_DTYPES = (torch.int32, torch.int64)
# What the fla_npu implementation on each device type can do beyond the forward pass.
BACKWARD_DEVICES = frozenset({"cpu"})


@dataclass(frozen=True)
class Rules:
    """What fla_npu accepts for one FLA function (mirrors fla_npu's own argument handling)."""

    tensors: tuple[str, ...]            # tensor arguments that must share q's device
    extra_kwargs: tuple[str, ...]       # keywords fla_npu accepts beyond FLA's named parameters
    chunk_sizes: tuple[int, ...] | None  # allowed ``chunk_size`` keyword values (None: no such keyword)
    default_chunk_size: int = 64
    max_head_dim: int = 256
    has_cp: bool = True                 # FLA's signature has ``cp_context``


RULES = {
    "kda.chunk_kda": Rules(
        tensors=("q", "k", "v", "g", "beta", "initial_state", "A_log", "dt_bias"),
        extra_kwargs=("A_log", "dt_bias", "chunk_size", "transpose_state_layout", "input_layout"),
        chunk_sizes=(32, 64)),
    "gated_delta_rule.chunk_gated_delta_rule": Rules(
        tensors=("q", "k", "v", "g", "beta", "initial_state", "A_log", "dt_bias"),
        extra_kwargs=("use_gate_in_kernel", "A_log", "dt_bias", "chunk_size", "transpose_state_layout",
                      "head_first", "input_layout"),
        chunk_sizes=(16, 32, 64)),
    "kda.fused_recurrent_kda_fwd": Rules(
        tensors=("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state", "out"),
        extra_kwargs=(),
        chunk_sizes=None,
        has_cp=False),
}


@dataclass
class Binder:
    """FLA's signature of one function, precomputed for a fast bind (``inspect.Signature.bind`` costs ~10 us)."""

    function: str
    names: tuple[str, ...]
    defaults: dict
    required: tuple[str, ...]
    var_keyword: bool
    index: dict = field(default_factory=dict)

    @classmethod
    def of(cls, fn) -> "Binder":
        params = inspect.signature(fn).parameters.values()
        named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if any(p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL) for p in params):
            raise TypeError(f"unsupported signature for {fn.__name__}")
        binder = cls(
            function=fn.__name__,
            names=tuple(p.name for p in named if p.kind is p.POSITIONAL_OR_KEYWORD),
            defaults={p.name: p.default for p in named if p.default is not p.empty},
            required=tuple(p.name for p in named if p.default is p.empty),
            var_keyword=any(p.kind is p.VAR_KEYWORD for p in params),
        )
        binder.index = {name: i for i, name in enumerate(p.name for p in named)}
        return binder

    def bind(self, args: tuple, kwargs: dict) -> tuple[dict, list]:
        """``(bound named parameters, names of extra keywords)``, or ``TypeError`` like Python's own binding."""
        if len(args) > len(self.names):
            raise TypeError(f"{self.function}() takes {len(self.names)} positional arguments but {len(args)} were given")
        bound = dict(zip(self.names, args))
        extra = []
        for key in kwargs:
            i = self.index.get(key)
            if i is None:
                if not self.var_keyword:
                    raise TypeError(f"{self.function}() got an unexpected keyword argument '{key}'")
                extra.append(key)
            elif i < len(args):
                raise TypeError(f"{self.function}() got multiple values for argument '{key}'")
        bound.update(kwargs)
        for name in self.required:
            if name not in bound:
                raise TypeError(f"{self.function}() missing required argument: '{name}'")
        return bound, extra


def current_soc(device) -> str | None:
    """The SoC name of an NPU device (None elsewhere); asked only when a flavour declares a SoC."""
    try:
        return torch.npu.get_device_name(device)  # provided by torch_npu
    except Exception:
        return None


class Verifier:
    """The verifier of one FLA function, for the claims installed for it."""

    def __init__(self, key: str, claims: list[Claim], binder: Binder, rules: Rules):
        self.key, self.binder, self.rules = key, binder, rules
        self.targets: dict[str, list[tuple[Target, Claim]]] = {}
        for claim in claims:
            for target in claim.targets:
                self.targets.setdefault(target.type, []).append((target, claim))
        self.declared = ", ".join(sorted({str(t) for c in claims for t in c.targets}))
        self.served: set = set()  # devices already found served by a claim without SoC condition
        # device types served without a SoC condition: the fast path of claim_for
        self.plain = {t: next(c for tg, c in e if tg.soc is None) for t, e in self.targets.items()
                      if any(tg.soc is None for tg, _ in e)}

    def claim_for(self, device) -> tuple[Claim | None, str | None]:
        """The installed implementation valid on ``device``, else the reason there is none."""
        claim = self.plain.get(device.type)
        if claim is not None:
            return claim, None
        entries = self.targets.get(device.type)
        if not entries:
            return None, (f"no fla_npu implementation of {self.key} for device type '{device.type}' "
                          f"(installed: {self.declared})")
        soc = None
        for target, claim in entries:
            if target.soc is None:
                return claim, None
            if soc is None:
                soc = current_soc(device) or "unknown"
            if target.soc.lower() == soc.lower():
                return claim, None
        built = ", ".join(str(t) for t, _ in entries)
        return None, f"the fla_npu implementation of {self.key} is built for {built}, this device is {device.type}:{soc}"

    def __call__(self, *args, **kwargs) -> tuple[bool, str | None]:
        try:
            reason = self.check(args, kwargs)
        except Exception as error:  # a verifier never raises: FLA's default path decides
            reason = f"verifier error: {type(error).__name__}: {error}"
        if reason is None:
            return True, None
        _state.log_once(f"reject:{self.key}:{reason}",
                        "fla_npu_adapter: %s rejected -> FLA's default path: %s", self.key, reason)
        return False, reason

    def check(self, args: tuple, kwargs: dict) -> str | None:
        """The first reason fla_npu cannot serve this call, or None."""
        rules = self.rules
        try:
            bound, extra = self.binder.bind(args, kwargs)
        except TypeError as error:
            return f"call does not match FLA's signature: {error}"
        unsupported = [k for k in extra if k not in rules.extra_kwargs]
        if unsupported:
            return f"unsupported keyword argument(s): {', '.join(sorted(unsupported))}"

        q = bound["q"]
        device = q.device
        if type(device) is not torch.device or device not in self.served:  # .type would build a string
            claim, reason = self.claim_for(device)
            if claim is None:
                return reason
            if type(device) is torch.device and device.type in self.plain:
                self.served.add(device)
        for name in rules.tensors:
            t = bound.get(name)
            if t is not None and name != "q" and t.device != device:
                return f"`{name}` is on {t.device}, `q` on {device}"
        if q.dtype not in FLOAT_DTYPES:
            return f"dtype {q.dtype} is not supported (float16, bfloat16, float32, float64)"
        if q.ndim != 4:
            return f"`q` must be 4-D, got {q.ndim}-D"
        if q.shape[-1] > rules.max_head_dim:
            return f"head dim K={q.shape[-1]} is not supported (K <= {rules.max_head_dim})"
        if rules.has_cp and bound.get("cp_context") is not None:
            return "context parallelism (`cp_context`) is not supported by fla_npu"
        if rules.chunk_sizes is not None:
            chunk_size = bound.get("chunk_size", rules.default_chunk_size)
            if chunk_size not in rules.chunk_sizes:
                allowed = ", ".join(map(str, rules.chunk_sizes))
                return f"chunk_size={chunk_size} is not supported (supported: {allowed})"
        cu_seqlens = bound.get("cu_seqlens")
        if cu_seqlens is not None and (cu_seqlens.dtype not in INDEX_DTYPES or cu_seqlens.ndim != 1):
            return f"`cu_seqlens` must be a 1-D int32/int64 tensor, got {cu_seqlens.ndim}-D {cu_seqlens.dtype}"
        if device.type not in BACKWARD_DEVICES and torch.is_grad_enabled() and any(
                getattr(bound.get(name), "requires_grad", False) for name in rules.tensors):
            return f"fla_npu on {device.type} is forward-only and gradients are required"
        return None
