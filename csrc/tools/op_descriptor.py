"""Reading an op descriptor (``csrc/<op>/<stage>.op.py``) and the tiling struct it names.

A descriptor is a Python file holding one assignment ``OP = {...}`` of literals only; it is read with
``ast.literal_eval``, never executed. From it CMake generates, at configure time, into the build
directory (never committed): the C entry points (gen_op_entry.py), their prototypes and the
runtime's op table (gen_op_table.py), and the operator package's registration, tiling, inference
and kernel entry with the OPP-vs-direct test glue (gen_opp.py). Keys (CONTRIBUTING.md, "Adding a
kernel"):

``name``         the op's C name: entry points ``flaNpu<name>GetWorkspaceSize`` / ``flaNpu<name>`` /
                 ``flaNpu<name>LastTiling``; the operator package's op type ``FlaNpu<name>`` (aclnn pair
                 ``aclnnFlaNpu<name>``, kernel entry ``fla_npu_<name in snake case>``)
``doc``          what the op computes, its arguments (shapes, dtypes, limits) and workspace: the
                 comment of its entry points in the generated header (include/fla_npu/kernels.h);
                 the first line is its title
``args``         the entry point's arguments in order. Tensors: ``(name, kind, dtype)`` for inputs,
                 kind ``"in"`` or ``"in?"`` (optional: NULL when absent), and
                 ``(name, "out", dtype, shape)`` for outputs, or ``(name, "out", dtype, shape, attr)``:
                 an output whose last two dimensions are swapped when the int32 attribute ``attr`` is
                 non-zero (a layout flag; the operator package's shape inference gives ``shape``).
                 Attributes: ``(name, "int32")`` or ``(name, "float")`` (the operator package's Int /
                 Float attributes).
                 ``dtype`` is a dtype (``float32``, ``float16``, ``bfloat16``, ``int32``) or the name of a
                 type variable of ``dtypes``. ``shape`` (for the operator package's shape inference)
                 is an input's name (its shape) or a list of dimensions, each ``"<input>[<i>]"``,
                 ``"<input>[<i>]-<n>"`` (``n`` less: a count from an offsets tensor ``[N + 1]``) or an
                 int.
``dtypes``       optional, the type variables: ``{var: [choice, ...]}``; a choice is a dtype or an
                 earlier variable (``"O": ["float32", "T"]``: float32, or whatever T is). The
                 operator package supports every combination of the choices (one kernel binary
                 each); a variable used by no input is chosen by the caller through the output's
                 dtype.
``tiling``       optional, ``(header, struct)``: the op's host tiling header (beside the descriptor)
                 and the struct passed by value to the kernel (qualified C++ name; default
                 ``("<stage>_tiling.h", "fla_npu::<stage>::<name>Tiling")``); its fields are read from
                 the header, so they are written once. The header also declares the operator
                 package's tiling hook in the struct's namespace:
                 ``const char* TilingFromShapes(const ShapeArg* t, <attributes>, const DeviceFacts& dev,
                 <Struct>* tiling)`` (common/shape_args.h: ``t`` the tensors in ``args`` order, int32
                 attributes as ``int64_t``, float ones as ``float``): nullptr, or the message of the
                 first defect (the C entry point's message for the same call). A kernel that takes a
                 GM workspace is one whose tiling header declares ``UserWorkspaceBytes(tiling)`` (its
                 bytes): the header says it, once.
``body``         optional, ``(header, function)``: the kernel body (beside the descriptor; default
                 ``("<stage>_kernel.h", "fla_npu::<stage>::Run<name>")``), a template over the
                 type variables in ``dtypes`` order, called with the tensors' GM addresses in ``args``
                 order, then (with a workspace) the user workspace, then the tiling struct
``kernels``      optional, ``{dtype: kernel entry}`` (default ``fla_<stage>_<f32|f16|bf16>`` for each dtype
                 of the first tensor): the names of the direct kernel entries (generated, launched
                 by the sim flavour's entry points) by the dtype of the first tensor (``float32``,
                 ``float16``, ``bfloat16``; one per dtype the combinations give it); a name gets
                 ``_<f32|f16|bf16>`` per further type variable (its dtype in the combination). A call
                 of dtypes outside the combinations launches the last one (its checks refuse it first)
``kernel_type``  ``"mix"`` (AIC + 2 AIV) or ``"vector"`` (AIV only)
``batch_mode``   optional: a function ``bool(const <Struct>&)`` of the tiling header saying when the
                 launch must be scheduled in batch mode (all its blocks resident: a kernel that
                 waits on SyncAll)
``socs``         optional: the SoCs the operator package registers the op for (default
                 ``["a2", "a3", "a5"]``)
``dtype_args``   optional, for the runtime's Python call (fla_npu/runtime/kernels.py):
                 ``{var: (keyword, default)}``, the type variables the caller picks by keyword (a
                 variable used by no input; or one of inputs, which the call then casts to it)
``limits``       optional, the facts a router checks before building any input (the C entry point
                 checks them too): ``{"chunk_sizes": [..], "head_dim": n}`` (BT one of them; K and V
                 multiples of 16 in [16, n])

A mixed op with an optional input, an int32 tensor, int32 and float attributes and two outputs whose
dtype the caller picks (float32 or the input's 16-bit dtype): ``NEXT_KERNEL`` in
tests/kernels/test_op_descriptors.py, whose generated operator package is compile-checked there.

Stdlib only: run by CMake at configure time.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

TENSOR_KINDS = ("in", "in?", "out")
ATTR_KINDS = ("int32", "float")
KERNEL_TYPES = ("mix", "vector")
DTYPES = ("float32", "float16", "bfloat16")  # of the first tensor: keys of `kernels`
TENSOR_DTYPES = DTYPES + ("int32",)
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32"}  # in entry names
ASCENDC_TYPES = {"float32": "float", "float16": "half", "bfloat16": "bfloat16_t", "int32": "int32_t"}
# The operator package's compute units (AddConfig) by SoC.
SOC_UNITS = {"a2": "ascend910b", "a3": "ascend910_93", "a5": "ascend950"}
# C types of tiling fields -> their kind in the runtime's table (every field is one 32-bit word)
_FIELD_TYPES = {"uint32_t": "u32", "float": "f32"}
_KEYS = {"name", "doc", "args", "kernel_type"}
_OPTIONAL_KEYS = {"tiling", "body", "kernels", "dtypes", "batch_mode", "socs", "dtype_args", "limits"}
_LIMITS = {"chunk_sizes", "head_dim"}


class DescriptorError(ValueError):
    """A descriptor or the tiling struct it names is malformed (the message names the file)."""


@dataclass(frozen=True)
class Tensor:
    """A tensor argument: ``kind`` "in" / "in?" / "out", ``dtype`` a dtype or a type variable,
    ``shape`` (outputs) an input's name or a tuple of ``"<input>[<i>]"`` / int dimensions."""
    name: str
    kind: str
    dtype: str
    shape: object = None
    index: int = 0  # among the inputs, or among the outputs
    swap_if: str | None = None  # outputs: the int32 attribute that swaps the last two dimensions

    @property
    def optional(self) -> bool:
        return self.kind == "in?"


@dataclass(frozen=True)
class Op:
    """One op descriptor, checked, with the fields of its tiling struct."""
    name: str
    doc: str
    op_dir: Path
    stage: str           # the descriptor's file name without .op.py: <stage>_host.cpp, <stage>_entry.cpp
    args: tuple          # ((name, kind), ...)
    tensor_args: tuple   # (Tensor, ...) in argument order
    dtype_vars: tuple    # ((var, (choice, ...)), ...)
    tiling_header: str
    tiling_struct: str   # qualified C++ name
    tiling_fields: tuple  # ((name, "u32" | "f32"), ...)
    body_header: str
    body: str            # qualified C++ name of the kernel body template
    kernels: tuple       # ((dtype, entry), ...)
    kernel_type: str
    workspace: bool      # the tiling header declares UserWorkspaceBytes
    batch_mode: str | None
    socs: tuple
    dtype_args: tuple = ()  # ((var, keyword, default), ...)
    limits: tuple = ()      # ((fact, value), ...)

    @property
    def py_name(self) -> str:
        """The op's name in Python (snake case): the runtime's call and ``torch.ops.fla_npu.<py_name>``."""
        return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", self.name).lower()

    @property
    def entry(self) -> str:
        """Base name of the op's C entry points."""
        return "flaNpu" + self.name

    @property
    def op_type(self) -> str:
        """The operator package's op type."""
        return "FlaNpu" + self.name

    @property
    def snake(self) -> str:
        """The op type in snake case: the operator package's kernel entry and file names."""
        return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", self.op_type).lower()

    @property
    def namespace(self) -> str:
        """The C++ namespace of the tiling struct (and of the op's host code)."""
        return self.tiling_struct.rsplit("::", 1)[0]

    @property
    def tensors(self) -> tuple:
        """The tensor arguments ``(name, kind)``, in the entry point's order."""
        return tuple(a for a in self.args if a[1] in TENSOR_KINDS)

    @property
    def inputs(self) -> tuple:
        return tuple(t for t in self.tensor_args if t.kind != "out")

    @property
    def outputs(self) -> tuple:
        return tuple(t for t in self.tensor_args if t.kind == "out")

    @property
    def attrs(self) -> tuple:
        """The attributes ``(name, kind)``, in order."""
        return tuple(a for a in self.args if a[1] in ATTR_KINDS)

    def combinations(self) -> tuple:
        """The supported dtype combinations: ``({var: dtype}, ...)``, one kernel binary each."""
        combos = []
        for picks in itertools.product(*(choices for _, choices in self.dtype_vars)):
            env: dict = {}
            for (var, _), pick in zip(self.dtype_vars, picks):
                env[var] = env.get(pick, pick)
            if env not in combos:
                combos.append(env)
        return tuple(combos)

    def dtype_of(self, tensor: Tensor, combo: dict) -> str:
        """The dtype of ``tensor`` in one combination."""
        return combo.get(tensor.dtype, tensor.dtype)

    def direct_kernels(self) -> tuple:
        """The direct kernel entries: ``((combination, entry name), ...)`` in ``kernels`` order."""
        first = self.tensor_args[0].dtype
        out = []
        for dtype, entry in self.kernels:
            for combo in self.combinations():
                if combo.get(first, first) == dtype:
                    rest = "".join("_" + SHORT[combo[var]] for var, _ in self.dtype_vars if var != first)
                    out.append((combo, entry + rest))
        return tuple(out)

    def macro_tensor(self, var: str) -> Tensor:
        """The tensor whose ``DTYPE_<NAME>`` (defined by CANN's build per binary) gives type variable
        ``var``: its first required input, else its first output."""
        users = [t for t in self.tensor_args if t.dtype == var and not t.optional]
        inputs = [t for t in users if t.kind == "in"]
        return (inputs or users)[0]


def _literal(path: Path) -> dict:
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["OP"]:
            return ast.literal_eval(node.value)
    raise DescriptorError(f"{path}: no `OP = {{...}}` assignment")


def declares_workspace(header: Path) -> bool:
    """Whether ``header`` declares ``UserWorkspaceBytes(...)``: the kernel's GM workspace, in bytes."""
    # a definition ``UserWorkspaceBytes(const Tiling& t)`` or a shared one taken in: ``using ...::UserWorkspaceBytes;``
    return re.search(r"\bUserWorkspaceBytes\s*[(;]", re.sub(r"//[^\n]*", "", header.read_text())) is not None


def tiling_fields(header: Path, struct: str) -> tuple:
    """The fields of ``struct`` (unqualified name) in ``header``, in order: ``((name, kind), ...)``.
    Only ``uint32_t`` and ``float`` members are accepted (the tiling is read back as 32-bit words).
    A header that takes the struct of another op of its directory in (``using ns::Struct;``) is read
    through its local includes (``#include "x_tiling.h"`` beside it): two ops sharing one tiling."""
    text = re.sub(r"//[^\n]*", "", header.read_text())
    m = re.search(r"\bstruct\s+" + re.escape(struct) + r"\s*\{(.*?)\};", text, re.S)
    if m is None and re.search(r"\busing\s+[\w:]*::" + re.escape(struct) + r"\s*;", text):
        for inc in re.findall(r'#include\s+"([\w.]+)"', text):
            if (header.parent / inc).is_file():
                try:
                    return tiling_fields(header.parent / inc, struct)
                except DescriptorError:
                    continue
    if m is None:
        raise DescriptorError(f"{header}: no `struct {struct} {{...}};`")
    fields = []
    for decl in filter(None, (d.strip() for d in m.group(1).split(";"))):
        ctype, _, names = decl.partition(" ")
        if ctype not in _FIELD_TYPES:
            raise DescriptorError(f"{header}: {struct}: member `{decl}` is not uint32_t or float")
        fields += [(n.strip(), _FIELD_TYPES[ctype]) for n in names.split(",")]
    return tuple(fields)


def _dtype_vars(path: Path, d: dict) -> tuple:
    out: list = []
    for var, choices in d.get("dtypes", {}).items():
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", var) or var in TENSOR_DTYPES:
            raise DescriptorError(f"{path}: type variable {var!r}: a capitalised name")
        known = set(TENSOR_DTYPES) | {v for v, _ in out}
        if not choices or any(c not in known for c in choices):
            raise DescriptorError(f"{path}: type variable {var}: choices {choices!r} must be dtypes or earlier variables")
        out.append((var, tuple(choices)))
    return tuple(out)


def _shape(path: Path, name: str, shape, inputs: dict):
    def bad():
        return DescriptorError(f"{path}: output `{name}`: shape {shape!r} must be an input's name or a list of "
                               "\"<input>[<i>]\" / \"<input>[<i>]-<n>\" / int dimensions")
    if isinstance(shape, str):
        if shape not in inputs or inputs[shape].optional:
            raise bad()
        return shape
    if not isinstance(shape, (list, tuple)) or not shape:
        raise bad()
    for dim in shape:
        if isinstance(dim, int):
            continue
        m = re.fullmatch(r"(\w+)\[(\d+)\](?:-\d+)?", str(dim))
        if m is None or m.group(1) not in inputs or inputs[m.group(1)].optional:
            raise bad()
    return tuple(shape)


def _tensor_args(path: Path, args: list, dtype_vars: tuple) -> tuple:
    known = set(TENSOR_DTYPES) | {v for v, _ in dtype_vars}
    tensors: list = []
    inputs: dict = {}
    n_in = n_out = 0
    for arg in args:
        name, kind = arg[0], arg[1]
        if kind not in TENSOR_KINDS + ATTR_KINDS:
            raise DescriptorError(f"{path}: argument `{name}` has kind {kind!r}, not one of {TENSOR_KINDS + ATTR_KINDS}")
        if kind in ATTR_KINDS:
            if len(arg) != 2:
                raise DescriptorError(f"{path}: attribute `{name}`: (name, kind)")
            continue
        if len(arg) not in ((4, 5) if kind == "out" else (3,)):
            form = "(name, \"out\", dtype, shape[, attr])" if kind == "out" else "(name, kind, dtype)"
            raise DescriptorError(f"{path}: tensor `{name}`: {form}")
        if arg[2] not in known:
            raise DescriptorError(f"{path}: tensor `{name}`: dtype {arg[2]!r} is neither a dtype nor a type variable")
        if kind == "out":
            swap = arg[4] if len(arg) == 5 else None
            if swap is not None and (swap, "int32") not in [(a[0], a[1]) for a in args]:
                raise DescriptorError(f"{path}: output `{name}`: {swap!r} is not an int32 attribute")
            tensors.append(Tensor(name, kind, arg[2], _shape(path, name, arg[3], inputs), n_out, swap))
            n_out += 1
        else:
            if n_out:
                raise DescriptorError(f"{path}: input `{name}` after an output: inputs come first")
            tensors.append(Tensor(name, kind, arg[2], None, n_in))
            inputs[name] = tensors[-1]
            n_in += 1
    if not n_in or not n_out:
        raise DescriptorError(f"{path}: an op has at least one input and one output")
    if tensors[0].optional:
        raise DescriptorError(f"{path}: the first tensor `{tensors[0].name}` must be required (it selects the kernel)")
    return tuple(tensors)


def _first_dtypes(first: Tensor, dtype_vars: tuple) -> list:
    """The dtypes the first tensor (the one that selects the kernel) can have, in DTYPES order."""
    choices = dict(dtype_vars)

    def resolve(t: str) -> set:
        return set().union(*(resolve(c) for c in choices[t])) if t in choices else {t}
    found = resolve(first.dtype)
    return [t for t in DTYPES if t in found]


def load(path: Path) -> Op:
    """The descriptor at ``path``, checked. Raises :class:`DescriptorError`."""
    path = Path(path)
    d = _literal(path)
    if not _KEYS <= set(d) <= _KEYS | _OPTIONAL_KEYS:
        raise DescriptorError(f"{path}: keys must be {sorted(_KEYS)} and optionally {sorted(_OPTIONAL_KEYS)}, "
                              f"got {sorted(d)}")
    dtype_vars = _dtype_vars(path, d)
    tensor_args = _tensor_args(path, d["args"], dtype_vars)
    if d["kernel_type"] not in KERNEL_TYPES:
        raise DescriptorError(f"{path}: kernel_type {d['kernel_type']!r}, not one of {KERNEL_TYPES}")
    # The defaults of the files and names that follow the op's stage and name.
    stage, name = path.name.removesuffix(".op.py"), d["name"]
    d.setdefault("tiling", (f"{stage}_tiling.h", f"fla_npu::{stage}::{name}Tiling"))
    d.setdefault("body", (f"{stage}_kernel.h", f"fla_npu::{stage}::Run{name}"))
    d.setdefault("kernels", {t: f"fla_{stage}_{SHORT[t]}" for t in _first_dtypes(tensor_args[0], dtype_vars)})
    if not d["kernels"] or any(t not in DTYPES for t in d["kernels"]):
        raise DescriptorError(f"{path}: kernels must map some of {DTYPES} to entries")
    socs = tuple(d.get("socs", ("a2", "a3", "a5")))
    if not socs or any(s not in SOC_UNITS for s in socs):
        raise DescriptorError(f"{path}: socs {socs!r} must be some of {sorted(SOC_UNITS)}")
    header, struct = d["tiling"]
    body_header, body = d["body"]
    fields = tiling_fields(path.parent / header, struct.rsplit("::", 1)[-1])
    known = {v for v, _ in dtype_vars}
    dtype_args = tuple((var, *spec) for var, spec in d.get("dtype_args", {}).items())
    for var, *spec in dtype_args:
        if var not in known or len(spec) != 2 or not str(spec[0]).isidentifier() or spec[1] not in TENSOR_DTYPES:
            raise DescriptorError(f"{path}: dtype_args {var!r}: a type variable -> (keyword, default dtype)")
    limits = d.get("limits", {})
    if not set(limits) <= _LIMITS:
        raise DescriptorError(f"{path}: limits {sorted(limits)} must be some of {sorted(_LIMITS)}")
    op = Op(name=name, doc=d["doc"], op_dir=path.parent, stage=stage,
            args=tuple((a[0], a[1]) for a in d["args"]), tensor_args=tensor_args, dtype_vars=dtype_vars,
            tiling_header=header, tiling_struct=struct, tiling_fields=fields, body_header=body_header, body=body,
            kernels=tuple(d["kernels"].items()), kernel_type=d["kernel_type"], workspace=declares_workspace(path.parent / header),
            batch_mode=d.get("batch_mode"), socs=socs, dtype_args=dtype_args,
            limits=tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in limits.items()))
    for var, _ in dtype_vars:
        if not any(t.dtype == var and not t.optional for t in tensor_args):
            raise DescriptorError(f"{path}: type variable {var} is used by no required tensor")
    first = {op.dtype_of(tensor_args[0], c) for c in op.combinations()}
    if set(d["kernels"]) != first:
        raise DescriptorError(f"{path}: kernels must name one entry per dtype of `{tensor_args[0].name}`: {sorted(first)}")
    return op
