"""Reading an op descriptor (``csrc/<op>/<op>.op.py``) and the tiling struct it names.

A descriptor is a Python file holding one assignment ``OP = {...}`` of literals only; it is read with
``ast.literal_eval``, never executed. Its keys (CONTRIBUTING.md, "Adding a kernel"):

``name``         the op's C name: entry points ``flaNpu<name>GetWorkspaceSize`` / ``flaNpu<name>`` /
                 ``flaNpu<name>LastTiling``, the operator package's pair ``aclnnFlaNpu<name>``
``args``         the entry point's arguments in order, ``(name, kind)``: tensors ``"in"``, ``"in?"``
                 (optional: NULL when absent) and ``"out"``; attributes ``"int32"`` and ``"float"``
``tiling``       ``(header, struct)``: the op's host tiling header (beside the descriptor) and the
                 struct passed by value to the kernel (qualified C++ name); its fields are read from
                 the header, so they are written once
``kernels``      ``{dtype: kernel entry}`` for the dtype of the first tensor (``float32``,
                 ``float16``, ``bfloat16``); the last one is taken for any other dtype
``kernel_type``  ``"mix"`` (AIC + 2 AIV) or ``"vector"`` (AIV only)
``workspace``    whether the kernel takes a GM workspace (``UserWorkspaceBytes(tiling)`` bytes)

Stdlib only: run by CMake at configure time.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

TENSOR_KINDS = ("in", "in?", "out")
ATTR_KINDS = ("int32", "float")
KERNEL_TYPES = ("mix", "vector")
DTYPES = ("float32", "float16", "bfloat16")
# C types of tiling fields -> their kind in the runtime's table (every field is one 32-bit word)
_FIELD_TYPES = {"uint32_t": "u32", "float": "f32"}


class DescriptorError(ValueError):
    """A descriptor or the tiling struct it names is malformed (the message names the file)."""


@dataclass(frozen=True)
class Op:
    """One op descriptor, checked, with the fields of its tiling struct."""
    name: str
    op_dir: Path
    stage: str           # the descriptor's file name without .op.py: <stage>_host.cpp, <stage>_entry.cpp
    args: tuple          # ((name, kind), ...)
    tiling_header: str
    tiling_struct: str   # qualified C++ name
    tiling_fields: tuple  # ((name, "u32" | "f32"), ...)
    kernels: tuple       # ((dtype, entry), ...)
    kernel_type: str
    workspace: bool

    @property
    def entry(self) -> str:
        """Base name of the op's C entry points."""
        return "flaNpu" + self.name

    @property
    def tensors(self) -> tuple:
        """The tensor arguments ``(name, kind)``, in the entry point's order."""
        return tuple(a for a in self.args if a[1] in TENSOR_KINDS)


def _literal(path: Path) -> dict:
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["OP"]:
            return ast.literal_eval(node.value)
    raise DescriptorError(f"{path}: no `OP = {{...}}` assignment")


def tiling_fields(header: Path, struct: str) -> tuple:
    """The fields of ``struct`` (unqualified name) in ``header``, in order: ``((name, kind), ...)``.
    Only ``uint32_t`` and ``float`` members are accepted (the tiling is read back as 32-bit words)."""
    text = re.sub(r"//[^\n]*", "", header.read_text())
    m = re.search(r"\bstruct\s+" + re.escape(struct) + r"\s*\{(.*?)\};", text, re.S)
    if m is None:
        raise DescriptorError(f"{header}: no `struct {struct} {{...}};`")
    fields = []
    for decl in filter(None, (d.strip() for d in m.group(1).split(";"))):
        ctype, _, names = decl.partition(" ")
        if ctype not in _FIELD_TYPES:
            raise DescriptorError(f"{header}: {struct}: member `{decl}` is not uint32_t or float")
        fields += [(n.strip(), _FIELD_TYPES[ctype]) for n in names.split(",")]
    return tuple(fields)


def load(path: Path) -> Op:
    """The descriptor at ``path``, checked. Raises :class:`DescriptorError`."""
    path = Path(path)
    d = _literal(path)
    need = {"name", "args", "tiling", "kernels", "kernel_type", "workspace"}
    if set(d) != need:
        raise DescriptorError(f"{path}: keys must be {sorted(need)}, got {sorted(d)}")
    for name, kind in d["args"]:
        if kind not in TENSOR_KINDS + ATTR_KINDS:
            raise DescriptorError(f"{path}: argument `{name}` has kind {kind!r}, not one of {TENSOR_KINDS + ATTR_KINDS}")
    if d["kernel_type"] not in KERNEL_TYPES:
        raise DescriptorError(f"{path}: kernel_type {d['kernel_type']!r}, not one of {KERNEL_TYPES}")
    if not d["kernels"] or any(t not in DTYPES for t in d["kernels"]):
        raise DescriptorError(f"{path}: kernels must map some of {DTYPES} to entries")
    header, struct = d["tiling"]
    fields = tiling_fields(path.parent / header, struct.rsplit("::", 1)[-1])
    return Op(name=d["name"], op_dir=path.parent, stage=path.name.removesuffix(".op.py"), args=tuple(map(tuple, d["args"])),
              tiling_header=header, tiling_struct=struct, tiling_fields=fields,
              kernels=tuple(d["kernels"].items()), kernel_type=d["kernel_type"], workspace=bool(d["workspace"]))
