"""Writes the runtime's op table (``fla_npu/runtime/_ops.json``, installed with the library) from the
op descriptors: per C entry point, the kinds of its arguments (for the ctypes declarations) and the
fields of its tiling struct (for ``<op>LastTiling``).

    python3 gen_op_table.py OUT.json csrc/<op>/<op>.op.py ...

Stdlib only: run by CMake at configure time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from op_descriptor import TENSOR_KINDS, load


def table(descriptors: list) -> dict:
    """``{entry: {"args": ["tensor" | "int32" | "float", ...], "tiling": [[field, "u32" | "f32"], ...]}}``."""
    ops = [load(Path(p)) for p in descriptors]
    return {op.entry: {"args": ["tensor" if kind in TENSOR_KINDS else kind for _, kind in op.args],
                       "tiling": [list(f) for f in op.tiling_fields]} for op in ops}


def main(argv: list) -> int:
    out, *descriptors = argv
    text = json.dumps(table(descriptors), indent=1) + "\n"
    path = Path(out)
    if not path.is_file() or path.read_text() != text:  # unchanged: keep the timestamp
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
