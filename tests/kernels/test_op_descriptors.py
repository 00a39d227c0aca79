"""The op descriptors (csrc/<op>/<stage>.op.py) and the generators CMake runs on them (csrc/tools/):
every kernel has a descriptor that loads, its tiling fields are read from its header, and a
malformed descriptor or tiling struct is refused with the file named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parents[2] / "csrc"
sys.path.insert(0, str(CSRC / "tools"))
import gen_op_entry  # noqa: E402
import gen_op_table  # noqa: E402
from op_descriptor import DescriptorError, load, tiling_fields  # noqa: E402

DESCRIPTORS = sorted(CSRC.glob("*/*.op.py"))


def test_every_kernel_has_a_descriptor():
    kernels = {p.name.removesuffix("_kernel.cpp") for p in CSRC.glob("*/*_kernel.cpp")}
    assert {p.name.removesuffix(".op.py") for p in DESCRIPTORS} == kernels


@pytest.mark.parametrize("path", DESCRIPTORS, ids=lambda p: p.parent.name)
def test_descriptor_loads_and_generates(path, tmp_path):
    op = load(path)
    assert op.tiling_fields and ("block_dim", "u32") in op.tiling_fields
    assert gen_op_entry.main([str(tmp_path), str(path)]) == 0
    stage = path.name.removesuffix(".op.py")
    assert f"int {op.entry}GetWorkspaceSize(" in (tmp_path / f"{stage}_entry.cpp").read_text()
    assert "int ValidateAndTile(" in (tmp_path / f"{stage}_entry.h").read_text()


def test_table_lists_float_fields():
    table = gen_op_table.table([str(p) for p in DESCRIPTORS])
    gate = table["flaNpuGateChunkCumsum"]
    assert gate["args"][5:9] == ["int32", "int32", "float", "float"]
    assert [f for f, kind in gate["tiling"] if kind == "f32"] == ["coef_scale", "out_scale"]


def test_malformed_descriptor_and_struct_are_refused(tmp_path):
    bad = tmp_path / "x.op.py"
    bad.write_text('OP = {"name": "X"}\n')
    with pytest.raises(DescriptorError, match="x.op.py: keys must be"):
        load(bad)
    header = tmp_path / "x_tiling.h"
    header.write_text("struct XTiling {\n    uint32_t a, b;  // words\n    uint64_t c;\n};\n")
    with pytest.raises(DescriptorError, match="member `uint64_t c` is not uint32_t or float"):
        tiling_fields(header, "XTiling")
