"""The kernels' Python calls, all from the op table the build generates from the op descriptors
(``csrc/<op>/<stage>.op.py`` -> ``_ops.json``, csrc/tools/gen_op_table.py): one :class:`Kernel` per
op, named as its descriptor's ``name`` in snake case (``kernels.wy_fast``, ``kernels.chunk_state``,
...; ``torch.ops.fla_npu.<name>`` is the same call as a custom op, :mod:`.torch_ops`).

A call takes the op's inputs, then its attributes, then (by keyword, with their defaults) the type
variables the descriptor's ``dtype_args`` lets the caller pick, in the descriptor's order; makes its
tensors contiguous, allocates the outputs by the descriptor's shape rules and dtypes, runs the C
entry pair (:func:`~._native.run_two_phase`) and returns the outputs (one tensor, or a tuple). What
an op's Python call does beyond that is in :mod:`.op_calls`, the one place for it.

    from fla_npu.runtime import kernels
    w, u, kg = kernels.wy_fast(k, v, beta, Akk, G)
    kernels.wy_fast.last_tiling()      # the tiling of the last call on this thread, as a dict
    kernels.wy_fast.last_launch()      # simulation counters of the last launch, or None
    kernels.wy_fast.unsupported(torch.bfloat16, 64, 128, 128)   # why a router must not call it, or None
"""

from __future__ import annotations

import inspect
import re
import typing

import torch
from torch import Tensor

from . import _native as N

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int32": torch.int32}
_TENSOR_KINDS = ("in", "in?", "out")
_DIM = re.compile(r"(\w+)\[(\d+)\](?:-(\d+))?")


def _dim(rule, values: dict):
    """One output dimension: an int, ``"<input>[<i>]"`` or ``"<input>[<i>]-<n>"``."""
    if isinstance(rule, int):
        return rule
    name, i, minus = _DIM.fullmatch(rule).groups()
    return values[name].shape[int(i)] - int(minus or 0)


class Kernel:
    """One op's C entry points (``<entry>GetWorkspaceSize`` / ``<entry>`` / ``<entry>LastTiling``)
    and its Python call, from its entry ``spec`` in the op table."""

    def __init__(self, entry: str, spec: dict):
        from .op_calls import OP_CALLS

        self.entry, self.name = entry, spec["name"]
        self.args = spec["args"]
        self.inputs = [a for a in self.args if a["kind"] in ("in", "in?")]
        self.attrs = [a for a in self.args if a["kind"] not in _TENSOR_KINDS]
        self.outputs = [a for a in self.args if a["kind"] == "out"]
        self.type_vars = spec["dtypes"]
        self.dtype_args = spec["dtype_args"]
        self.limits = spec["limits"]
        self.python = OP_CALLS.get(self.name)
        custom = self.python and self.python.call  # an op-specific Python call (op_calls.py) states its own signature
        self.signature = inspect.signature(self.python.call, eval_str=True) if custom else self._signature()

    def __repr__(self) -> str:
        return f"<kernel {self.name} ({self.entry})>"

    # ---- the Python call --------------------------------------------------------------------------
    def _signature(self) -> inspect.Signature:
        """Inputs (optional ones default to None), attributes, then the caller's type variables."""
        P = inspect.Parameter
        params = [P(a["name"], P.POSITIONAL_OR_KEYWORD, annotation=Tensor if a["kind"] == "in" else typing.Optional[Tensor],
                    **({"default": None} if a["kind"] == "in?" else {})) for a in self.inputs]
        if any(p.default is None for p in params):  # what follows an optional input would need defaults
            raise TypeError(f"{self.name}: an op with an optional input needs its Python call in op_calls")
        params += [P(a["name"], P.POSITIONAL_OR_KEYWORD, annotation=int if a["kind"] == "int32" else float)
                   for a in self.attrs]
        params += [P(kw, P.POSITIONAL_OR_KEYWORD, default=TORCH_DTYPES[default], annotation=torch.dtype)
                   for kw, default in self.dtype_args.values()]
        outs = [Tensor] * len(self.outputs)
        return inspect.Signature(params, return_annotation=outs[0] if len(outs) == 1 else tuple[tuple(outs)])

    def bind(self, *args, **kwargs) -> tuple[dict, dict]:
        """The call in the descriptor's terms: ``({argument: value}, {type variable: torch dtype})``,
        its tensors contiguous. Reads no tensor's data (fake tensors too: the custom op's fake)."""
        if self.python and self.python.call:
            values, dtypes = self.python.call(*args, **kwargs)
        else:
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            dtypes = {var: values.pop(kw) for var, (kw, _) in self.dtype_args.items()}
        for a in self.inputs:
            values[a["name"]] = None if values.get(a["name"]) is None else values[a["name"]].contiguous()
        return values, dtypes

    def dtype_env(self, values: dict, dtypes: dict) -> dict:
        """Every type variable's torch dtype: the caller's, else the dtype of its first given input."""
        env = dict(dtypes)
        for a in self.inputs:
            if a["dtype"] in self.type_vars and values[a["name"]] is not None:
                env.setdefault(a["dtype"], values[a["name"]].dtype)
        return env

    def output_shape(self, out: dict, values: dict) -> tuple:
        """``out``'s shape by its rule (an input's shape, or dimensions; the last two swapped by its
        layout attribute); ``(0,)`` when an input is not of the rank the rule reads: the C entry point
        then refuses the call with its message."""
        rule = out["shape"]
        try:
            shape = list(values[rule].shape) if isinstance(rule, str) else [_dim(d, values) for d in rule]
        except IndexError:
            return (0,)
        if out.get("swap_if") and values[out["swap_if"]]:
            shape[-2:] = shape[-1], shape[-2]
        return tuple(shape)

    def allocate(self, values: dict, dtypes: dict) -> list:
        """The outputs, uninitialised (the kernel writes every element)."""
        env = self.dtype_env(values, dtypes)
        device = values[self.inputs[0]["name"]].device
        return [torch.empty(self.output_shape(o, values), dtype=env.get(o["dtype"]) or TORCH_DTYPES[o["dtype"]],
                            device=device) for o in self.outputs]

    def __call__(self, *args, **kwargs):
        values, dtypes = self.bind(*args, **kwargs)
        if self.python and self.python.host:
            self.python.host(values)
        lib = self.library()
        outs = self.allocate(values, dtypes)
        values.update(zip((o["name"] for o in self.outputs), outs))
        descs = {a["name"]: N.tensor_desc(values[a["name"]]) for a in self.args if a["kind"] in _TENSOR_KINDS}
        call = tuple(N.ref(descs[a["name"]]) if a["kind"] in _TENSOR_KINDS else
                     (int(values[a["name"]]) if a["kind"] == "int32" else float(values[a["name"]])) for a in self.args)
        N.run_two_phase(lib, self.entry, call, values[self.inputs[0]["name"]].device)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake(self, *args, **kwargs):
        """The outputs a call would return, allocated only (the custom op's fake implementation)."""
        outs = self.allocate(*self.bind(*args, **kwargs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ---- the entry points ------------------------------------------------------------------------
    def library(self):
        """The native library; :class:`~._native.NativeLibraryError` if it has no such kernel."""
        lib = N.load_library()
        if not hasattr(lib, self.entry + "GetWorkspaceSize"):
            raise N.NativeLibraryError(f"{N.library_path()} has no {self.entry}: rebuild fla-npu")
        return lib

    def last_tiling(self) -> dict:
        """The tiling of the kernel's last call on this thread, as a dict (:func:`~._native.read_last_tiling`)."""
        return N.read_last_tiling(self.entry)

    def last_launch(self):
        """Simulation counters of the kernel's last launch (``None`` if its last call launched nothing:
        no work, or no call yet)."""
        return N.last_launch(self.entry)

    def forget_launch(self) -> None:
        """Record that the last call launched nothing (a call answered without the kernel)."""
        N.forget_launch(self.entry)

    # ---- what a router checks before building any input ------------------------------------------
    def choices(self, dtype: str, env: dict | None = None) -> tuple:
        """The torch dtypes a descriptor dtype (or type variable) may be, given ``env``'s variables."""
        env = env or {}
        if dtype in env:
            return (env[dtype],)
        if dtype not in self.type_vars:
            return (TORCH_DTYPES[dtype],)
        return tuple(dict.fromkeys(t for c in self.type_vars[dtype] for t in self.choices(c, env)))

    @property
    def dtypes(self) -> tuple:
        """The dtypes the kernel takes for its first input (for the chunk kernels: the Cube type)."""
        return self.choices(self.inputs[0]["dtype"])

    def unsupported(self, dtype: torch.dtype, BT: int, K: int | None = None, V: int | None = None,
                    **dtype_args) -> str | None:
        """Why the kernel cannot take a call whose first input has ``dtype``, with chunk size ``BT``,
        head dims ``K`` / ``V`` and the given ``dtype_args`` (``None`` if it can): the limits its C
        entry point checks, stated here so that a router can fall back before building any input."""
        first = self.inputs[0]
        if dtype not in self.dtypes:
            return f"the kernel takes {' / '.join(_name(t) for t in self.dtypes)} `{first['name']}`, not {dtype}"
        env = {first["dtype"]: dtype} if first["dtype"] in self.type_vars else {}
        for var, (kw, _) in self.dtype_args.items():
            allowed = self.choices(var, {v: t for v, t in env.items() if v != var})
            if kw in dtype_args and dtype_args[kw] not in allowed:
                out = next(o["name"] for o in self.outputs if o["dtype"] == var)
                return f"the kernel writes `{out}` as {', '.join(_name(t) for t in allowed)}, not {dtype_args[kw]}"
        sizes = self.limits.get("chunk_sizes")
        if sizes and BT not in sizes:
            return f"chunk_size {BT} (the kernel takes {', '.join(map(str, sizes))})"
        top = self.limits.get("head_dim")
        dims = {n: d for n, d in (("K", K), ("V", V)) if d is not None}
        if top and any(d % 16 or not 16 <= d <= top for d in dims.values()):
            shown = ", ".join(f"{n}={d}" for n, d in dims.items())
            return f"head dims {shown} (the kernel takes multiples of 16 up to {top})"
        return None


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


_kernels: dict | None = None


def all_kernels() -> dict:
    """``{name: Kernel}`` for every op of this build's op table (raises
    :class:`~._native.NativeLibraryError` when the installation has none)."""
    global _kernels
    if _kernels is None:
        _kernels = {k.name: k for k in (Kernel(entry, spec) for entry, spec in N.op_table().items())}
    return _kernels


def get(name: str) -> Kernel | None:
    """The kernel ``name`` (e.g. ``"wy_fast"``), or ``None`` when this build has none (or no op table)."""
    try:
        return all_kernels().get(name)
    except N.NativeLibraryError:
        return None


def __getattr__(name: str) -> Kernel:
    kernel = None if name.startswith("_") else all_kernels().get(name)
    if kernel is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (no such kernel in this build)")
    return kernel
