"""Per-function verifiers: does the installed fla_npu serve this exact FLA call on these tensors?

A verifier receives the caller's ``*args, **kwargs`` exactly as FLA's dispatch got them, binds them
against FLA's own signature of the function (read from FLA at registration, so positional and
keyword call forms both work), and returns ``(True, None)`` or ``(False, reason)``. It reads only
attributes (device, dtype, shape, ``requires_grad``, the fields of a ``cp_context``): no computation,
no device synchronisation, nothing written, and it never raises.

Two kinds of reasons. A call fla_npu cannot serve although it is valid (a device or SoC no
installed flavour serves, a ``cp_context`` without FLA's fields, gradients on a forward-only
device) falls back to FLA's default path, the reason logged once at WARNING. A call that is invalid (:class:`Invalid`: it does
not bind, a misspelt keyword, an integer ``q``, a ``cu_seqlens`` that is not a 1-D integer
tensor, ...) is accepted whenever its first tensor is on a device fla_npu serves: fla_npu's own
validation then raises the error FLA raises for it (same type and message), instead of FLA's path
failing later with an unrelated error (on a machine without FLA's Triton backend: a driver error).
"""

from __future__ import annotations

import inspect
import keyword
import logging
from dataclasses import dataclass, field

import torch

from . import _state
from ._discovery import Claim, Target

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INDEX_DTYPES = (torch.int32, torch.int64)
_FLOAT_DTYPES = frozenset(FLOAT_DTYPES)
_Tensor, _Device = torch.Tensor, torch.device
# What the fla_npu implementation on each device type can do beyond the forward pass.
BACKWARD_DEVICES = frozenset({"cpu"})


class Invalid(str):
    """A reason that makes the call invalid whichever implementation runs it (see the module docstring)."""


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


@dataclass(frozen=True)
class GateRules:
    """What fla_npu accepts for one FLA gate function (``g`` first, then ``A_log``, ``dt_bias``).

    KDA (``per_key``): ``g`` ``[..., H, K]``, ``A_log`` ``H`` elements (``None`` only with
    ``lower_bound``), ``dt_bias`` ``H*K``. GDN: ``g`` ``[..., HV]``, ``A_log`` and ``dt_bias`` ``HV``.
    """

    per_key: bool
    piece: str  # "autograd": FLA's autograd wrapper; "fwd" / "bwd": the forward / backward piece it calls


GATE_RULES = {
    "kda.fused_kda_gate": GateRules(per_key=True, piece="autograd"),
    "kda.kda_gate_fwd": GateRules(per_key=True, piece="fwd"),
    "kda.kda_gate_bwd": GateRules(per_key=True, piece="bwd"),
    "gated_delta_rule.gdn_gate_fwd": GateRules(per_key=False, piece="fwd"),
    "gated_delta_rule.gdn_gate_bwd": GateRules(per_key=False, piece="bwd"),
}


@dataclass
class Binder:
    """FLA's signature of one function, read at registration.

    ``extractor`` generates a small Python function with FLA's exact parameter list (names, kinds,
    default objects), so the interpreter itself binds a call (``inspect.Signature.bind`` costs
    ~10 us); ``bind`` is the slow, dict-based binding that words a call that does not bind the way
    the verifier reports it.
    """

    function: str
    names: tuple[str, ...]
    defaults: dict
    required: tuple[str, ...]
    var_keyword: bool
    index: dict = field(default_factory=dict)
    kwonly: tuple[str, ...] = ()

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
            kwonly=tuple(p.name for p in named if p.kind is p.KEYWORD_ONLY),
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

    def extractor(self, wanted: tuple, missing: dict | None = None, into=None):
        """A function with FLA's parameter list: ``into(extra keywords or None, *values of wanted)``.

        ``wanted`` holds parameter names, or tuples of names (passed as one tuple). A wanted name
        that is not one of FLA's parameters is read from the extra keywords (``missing.get(name)``
        if absent). Without ``into`` the values are returned as a tuple. Python binds the call, so a
        call that does not bind raises ``TypeError`` as FLA's own function would. FLA's default
        objects become the function's ``__defaults__``/``__kwdefaults__`` (never re-created from
        source text).
        """
        missing = missing or {}
        params = self.names + self.kwonly
        flat = [n for w in wanted for n in ((w,) if isinstance(w, str) else w)]
        for name in params + tuple(flat):
            if not name.isidentifier() or keyword.iskeyword(name):
                raise TypeError(f"unsupported parameter name {name!r} in {self.function}")
        taken = set(params) | {self.function}

        def fresh(base: str) -> str:
            while base in taken:
                base += "_"
            taken.add(base)
            return base

        extra, target = fresh("_kw"), fresh("_into")
        absent = {name: fresh(f"_missing_{name}") for name in dict.fromkeys(flat) if name not in params}

        def value(name: str) -> str:
            if name in params:
                return name
            return f"{extra}.get({name!r}, {absent[name]})" if self.var_keyword else absent[name]

        def item(w) -> str:
            return value(w) if isinstance(w, str) else "(" + "".join(value(n) + ", " for n in w) + ")"

        signature = list(self.names)
        if self.kwonly:
            signature += ["*", *self.kwonly]
        if self.var_keyword:
            signature.append(f"**{extra}")
        items = ", ".join([extra if self.var_keyword else "None"] + [item(w) for w in wanted])
        source = (f"def make({', '.join([target, *absent.values()])}):\n"
                  f"    def {self.function}({', '.join(signature)}):\n"
                  f"        return {target}({items})\n"
                  f"    return {self.function}\n")
        namespace: dict = {}
        exec(compile(source, f"<fla_npu_adapter: binder of {self.function}>", "exec"), namespace)
        fn = namespace["make"](into or (lambda *values: values), *(missing.get(name) for name in absent))
        fn.__qualname__ = self.function
        fn.__defaults__ = tuple(self.defaults[n] for n in self.names if n in self.defaults) or None
        fn.__kwdefaults__ = {n: self.defaults[n] for n in self.kwonly if n in self.defaults} or None
        return fn


def current_soc(device) -> str | None:
    """The SoC name of an NPU device (None elsewhere); asked only when a flavour declares a SoC."""
    try:
        return torch.npu.get_device_name(device)  # provided by torch_npu
    except Exception:
        return None


def soc_family(soc: str) -> str | None:
    """The family (``a2``, ``a3``, ``a5``) of an NPU's SoC name, as kernel flavours declare it
    (``npu:a2``): fla_npu's own mapping (``fla_npu.runtime.bootstrap.soc_family``)."""
    try:
        from fla_npu.runtime.bootstrap import soc_family as family
    except ImportError:
        return None
    return family(soc)


class _Verifier:
    """What every verifier shares: the claims installed for one FLA function, per device, and the
    placement of the call's tensors (the first one decides the device, the others must be on it)."""

    first = "q"  # the tensor argument that decides the device (also read by the backend)

    def __init__(self, key: str, claims: list[Claim], binder: Binder, others: tuple[str, ...]):
        self.key, self.binder, self.others = key, binder, others
        self.targets: dict[str, list[tuple[Target, Claim]]] = {}
        for claim in claims:
            for target in claim.targets:
                self.targets.setdefault(target.type, []).append((target, claim))
        self.declared = ", ".join(sorted({str(t) for c in claims for t in c.targets}))
        # device types served without a SoC condition: the fast path of claim_for
        self.plain = {t: next(c for tg, c in e if tg.soc is None) for t, e in self.targets.items()
                      if any(tg.soc is None for tg, _ in e)}
        # torch.device -> has a backward, for devices found served by a claim without SoC condition
        self.served: dict = {}
        # CPU tensors (``Tensor.is_cpu``), when served without SoC condition: has a backward
        self.cpu = ("cpu" in BACKWARD_DEVICES) if "cpu" in self.plain else None

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
            if target.soc.lower() in (soc.lower(), soc_family(soc)):
                return claim, None
        built = ", ".join(str(t) for t, _ in entries)
        return None, f"the fla_npu implementation of {self.key} is built for {built}, this device is {device.type}:{soc}"

    def reason(self, *args, **kwargs) -> str | None:
        """Why fla_npu cannot take this call (``None`` if it can); an :class:`Invalid` reason for input
        FLA itself refuses. Never raises: a check that raised is worded by :meth:`failed`."""
        try:
            return self.verify(*args, **kwargs)
        except Exception as error:  # a verifier never raises: FLA's default path decides
            return self.failed(args, kwargs, error)

    def __call__(self, *args, **kwargs) -> tuple[bool, str | None]:
        reason = self.reason(*args, **kwargs)
        if reason is None or (type(reason) is Invalid and self.routable(args, kwargs)):
            return True, None  # invalid: fla_npu's validation raises FLA's own error for it
        reason = str(reason)
        _state.log_once(("reject", self.key, reason), "fla_npu_adapter: %s rejected -> FLA's default path: %s",
                        self.key, reason, level=logging.WARNING)
        return False, reason

    def routable(self, args: tuple, kwargs: dict) -> bool:
        """Whether the call's first tensor argument is a tensor on a device fla_npu serves (so an
        invalid call can be handed to fla_npu's validation)."""
        try:
            first = args[0] if args else kwargs.get(self.first)
            return isinstance(first, _Tensor) and self.claim_for(first.device)[0] is not None
        except Exception:  # never raises: the call then takes FLA's default path
            return False

    def failed(self, args: tuple, kwargs: dict, error: Exception) -> str:
        """The reason for a call that raised: it does not bind to FLA's signature (worded by the
        dict-based binder; invalid), or the check itself failed."""
        if isinstance(error, TypeError):
            try:
                self.binder.bind(args, kwargs)
            except TypeError as unbound:
                return Invalid(f"call does not match FLA's signature: {unbound}")
        return f"verifier error: {type(error).__name__}: {error}"

    def placed(self, first, others):
        """Whether the implementation on ``first``'s device has a backward (a bool) when that device
        is served and every other tensor is on it; otherwise the reason (a str)."""
        if self.cpu is not None and type(first) is _Tensor and first.is_cpu:  # no torch.device object built
            for t in others:
                if t is not None and not (type(t) is _Tensor and t.is_cpu) and getattr(t, "device", None) != first.device:
                    return self.mismatch(first.device, others)
            return self.cpu
        device = first.device
        backward = self.served.get(device) if type(device) is _Device else None
        if backward is None:
            claim, reason = self.claim_for(device)
            if claim is None:
                return reason
            backward = device.type in BACKWARD_DEVICES
            if type(device) is _Device and device.type in self.plain:
                self.served[device] = backward
        for t in others:
            if t is not None and getattr(t, "device", None) != device:
                return self.mismatch(device, others)
        return backward

    def placed_float(self, first, others, label: str):
        """:meth:`placed`, then ``first``'s dtype, which must be a float one (``label`` starts the refusal):
        the bool of :meth:`placed`, or the reason."""
        backward = self.placed(first, others)
        if type(backward) is bool and first.dtype not in _FLOAT_DTYPES:
            return Invalid(f"{label}dtype {first.dtype} is not supported (float16, bfloat16, float32, float64)")
        return backward

    def mismatch(self, device, others) -> str:
        name, t = next((n, t) for n, t in zip(self.others, others)
                       if t is not None and getattr(t, "device", None) != device)
        where = f"is on {t.device}" if hasattr(t, "device") else f"is a {type(t).__name__}, not a tensor"
        return Invalid(f"`{name}` {where}, `{self.first}` on {device}")


_CP_FIELDS = {"contiguous": (("is_first_rank", bool), ("is_last_rank", bool)),
              "zigzag": (("part_len", int), ("front_num_seqs", int), ("is_first_by_part", tuple),
                         ("is_last_by_part", tuple))}


def cp_context_reason(ctx, device) -> str | None:
    """Whether fla_npu can run a context-parallel call with FLA's context ``ctx`` (read duck-typed on
    FLA's field names; the process group itself is not inspected): its rank-local ``cu_seqlens`` and,
    with a group, the chain metadata of its layout. A missing ``cu_seqlens`` is FLA's own error."""
    if not hasattr(ctx, "group") or not hasattr(ctx, "cu_seqlens"):
        return f"`cp_context` ({type(ctx).__name__}) has no `group` / `cu_seqlens` fields of FLA's context"
    cu = ctx.cu_seqlens
    if cu is None:
        return Invalid("`cp_context.cu_seqlens` is None")
    if type(cu) is not _Tensor or cu.dtype not in INDEX_DTYPES or cu.ndim != 1 or cu.device != device:
        return Invalid("`cp_context.cu_seqlens` must be a 1-D int32/int64 tensor on q's device")
    if ctx.group is None:
        return None                                       # FLA: CP disabled, a plain local varlen call
    layout = getattr(ctx, "layout", "contiguous")
    if layout not in _CP_FIELDS:
        return f"`cp_context.layout` {layout!r} is not supported (contiguous, zigzag)"
    for name, kind in _CP_FIELDS[layout]:
        value = getattr(ctx, name, None)
        if not isinstance(value, kind) or (kind is tuple and len(value) != 2):
            return f"`cp_context.{name}` is not set ({layout} layout)"
    return None


class Verifier(_Verifier):
    """The verifier of one of FLA's attention functions (``q`` first), for the claims installed for it."""

    def __init__(self, key: str, claims: list[Claim], binder: Binder, rules: Rules):
        super().__init__(key, claims, binder, tuple(name for name in rules.tensors if name != "q"))
        self.rules = rules
        self.extra_ok = frozenset(rules.extra_kwargs)
        self.max_head_dim, self.has_cp, self.chunk_sizes = rules.max_head_dim, rules.has_cp, rules.chunk_sizes
        self.allowed = ", ".join(map(str, rules.chunk_sizes or ()))
        # FLA's signature bound by the interpreter, straight into check()
        self.verify = binder.extractor(("q", "cu_seqlens", "cp_context", "chunk_size", self.others),
                                       missing={"chunk_size": rules.default_chunk_size}, into=self.check)

    def check(self, extra, q, cu_seqlens, cp_context, chunk_size, others) -> str | None:
        """The first reason fla_npu cannot serve this call (bound to FLA's signature), or None."""
        if extra and not self.extra_ok.issuperset(extra):
            unsupported = sorted(k for k in extra if k not in self.extra_ok)
            return Invalid(f"unsupported keyword argument(s): {', '.join(unsupported)}")
        backward = self.placed_float(q, others, "")
        if type(backward) is not bool:
            return backward
        if q.ndim != 4:
            return Invalid(f"`q` must be 4-D, got {q.ndim}-D")
        if q.shape[-1] > self.max_head_dim:
            return Invalid(f"head dim K={q.shape[-1]} is not supported (K <= {self.max_head_dim})")
        if cp_context is not None and self.has_cp:
            reason = cp_context_reason(cp_context, q.device)
            if reason is not None:
                return reason
        if self.chunk_sizes is not None and (type(chunk_size) is not int or chunk_size not in self.chunk_sizes):
            return Invalid(f"chunk_size={chunk_size!r} is not supported (supported: {self.allowed})")
        if cu_seqlens is not None and (type(cu_seqlens) is not _Tensor or cu_seqlens.dtype not in INDEX_DTYPES
                                       or cu_seqlens.ndim != 1):
            got = (f"{cu_seqlens.ndim}-D {cu_seqlens.dtype}" if isinstance(cu_seqlens, _Tensor)
                   else f"a {type(cu_seqlens).__name__}")
            return Invalid(f"`cu_seqlens` must be a 1-D int32/int64 tensor, got {got}")
        if not backward and torch.is_grad_enabled() and (
                getattr(q, "requires_grad", False) or any(getattr(t, "requires_grad", False) for t in others)):
            return f"fla_npu on {q.device.type} is forward-only and gradients are required"
        if not backward and self.chunk_sizes is not None:
            return self.kernel_limits(q, others, chunk_size)
        return None

    def kernel_limits(self, q, others, chunk_size) -> str | None:
        """On a kernel device: why the chunk kernels cannot take the call (fla_npu's own list of the
        stage kernels' limits), or None."""
        try:
            from fla_npu.runtime.chunk_pipeline import stage_reasons
        except ImportError as error:
            return f"fla_npu's kernel chain cannot be imported: {error}"
        v = others[self.rules.tensors.index("v") - 1]
        reasons = stage_reasons(q.dtype, chunk_size, q.shape[-1], v.shape[-1])
        if reasons:
            return f"the Ascend C kernels cannot take this call ({'; '.join(f'{s}: {w}' for s, w in reasons.items())})"
        return None


class GateVerifier(_Verifier):
    """The verifier of one of FLA's gate functions (``g`` first): the autograd wrapper
    (``fused_kda_gate``) or a forward / backward piece (``kda_gate_fwd``, ``gdn_gate_bwd``, ...)."""

    first = "g"

    def __init__(self, key: str, claims: list[Claim], binder: Binder, rules: GateRules):
        bwd = rules.piece == "bwd"
        super().__init__(key, claims, binder, ("A_log", "dt_bias", "dyg") if bwd else ("A_log", "dt_bias"))
        self.rules, self.per_key, self.bwd, self.grads = rules, rules.per_key, bwd, rules.piece == "autograd"
        # names FLA's signature lacks (``lower_bound`` for GDN, ``dyg`` in a forward) are passed as None
        self.verify = binder.extractor(("g", "A_log", "dt_bias", "lower_bound", self.others), into=self.check)

    def check(self, extra, g, A_log, dt_bias, lower_bound, others) -> str | None:
        """The first reason fla_npu cannot serve this call (bound to FLA's signature), or None."""
        if extra:
            return Invalid(f"unsupported keyword argument(s): {', '.join(sorted(extra))}")
        backward = self.placed_float(g, others, "`g` ")
        if type(backward) is not bool:
            return backward
        if self.per_key:
            if g.ndim < 2:
                return Invalid(f"`g` must be [..., H, K], got {g.ndim}-D")
            heads, per_head = g.shape[-2], g.shape[-1]
            if A_log is None and lower_bound is None:  # FLA's kernel then computes as if A_log = 0
                return "`A_log` is None without `lower_bound`: the softplus gate needs `A_log`"
            bias, bias_name = heads * per_head, "H*K"
        else:
            if g.ndim < 1:
                return Invalid("`g` must be [..., HV], got 0-D")
            heads = g.shape[-1]
            if A_log is None:  # left to FLA's kernel, as for KDA
                return "`A_log` is None: the GDN gate needs `A_log`"
            bias, bias_name = heads, "HV"
        if A_log is not None and A_log.numel() != heads:
            return Invalid(f"`A_log` has {A_log.numel()} elements, `g` has {'H' if self.per_key else 'HV'}={heads} heads")
        if dt_bias is not None and dt_bias.numel() != bias:
            return Invalid(f"`dt_bias` has {dt_bias.numel()} elements, expected {bias_name}={bias}")
        if self.bwd:
            dyg = others[2]
            if dyg is None:
                return Invalid("`dyg` is None")
            if dyg.shape != g.shape:
                return Invalid(f"`dyg` has shape {list(dyg.shape)}, `g` {list(g.shape)}")
        if self.grads and not backward and torch.is_grad_enabled() and (
                getattr(g, "requires_grad", False) or any(getattr(t, "requires_grad", False) for t in others)):
            return f"fla_npu on {g.device.type} is forward-only and gradients are required"
        return None


def verifier_for(key: str, claims: list[Claim], binder: Binder) -> _Verifier:
    """The verifier of FLA function ``key`` (a key of :data:`RULES` or :data:`GATE_RULES`)."""
    if key in GATE_RULES:
        return GateVerifier(key, claims, binder, GATE_RULES[key])
    return Verifier(key, claims, binder, RULES[key])
