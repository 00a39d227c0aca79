"""The op descriptors (csrc/<op>/<stage>.op.py) and the generators CMake runs on them (csrc/tools/):
every kernel has a descriptor that loads, its tiling fields are read from its header, a malformed
descriptor or tiling struct is refused with the file named, and the format expresses what the next
kernels need (optional inputs, int32 tensors and attributes, several outputs whose dtype the caller
chooses among float32 and the input's 16-bit dtype), down to an operator package that compiles."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parents[2] / "csrc"
sys.path.insert(0, str(CSRC / "tools"))
import gen_op_entry  # noqa: E402
import gen_op_table  # noqa: E402
import gen_opp  # noqa: E402
from op_descriptor import DescriptorError, load, tiling_fields  # noqa: E402

DESCRIPTORS = sorted(CSRC.glob("*/*.op.py"))


def test_every_kernel_has_a_descriptor():
    kernels = {p.name.removesuffix("_kernel.h") for p in CSRC.glob("*/*_kernel.h")}
    assert {p.name.removesuffix(".op.py") for p in DESCRIPTORS} == kernels
    # A GM workspace: what the tiling header says (UserWorkspaceBytes); every kernel but the gate's takes one.
    assert {p.parent.name for p in DESCRIPTORS if not load(p).workspace} == {"gate"}


@pytest.mark.parametrize("path", DESCRIPTORS, ids=lambda p: p.parent.name)
def test_descriptor_loads_and_generates(path, tmp_path):
    op = load(path)
    assert op.tiling_fields and ("block_dim", "u32") in op.tiling_fields
    assert gen_op_entry.main([str(tmp_path), str(path)]) == 0
    stage = path.name.removesuffix(".op.py")
    assert f"int {op.entry}GetWorkspaceSize(" in (tmp_path / f"{stage}_entry.cpp").read_text()
    assert "int ValidateAndTile(" in (tmp_path / f"{stage}_entry.h").read_text()
    assert gen_opp.main([str(tmp_path / "opp"), str(path)]) == 0
    assert f"OP_ADD({op.op_type});" in (tmp_path / "opp" / "op_host" / f"{op.snake}.cpp").read_text()
    assert f"void {op.snake}(" in (tmp_path / "opp" / "op_kernel" / f"{op.snake}.cpp").read_text()


def test_table_lists_float_fields():
    table = gen_op_table.table([str(p) for p in DESCRIPTORS])
    gate = table["flaNpuGateChunkCumsum"]
    assert [a["kind"] for a in gate["args"][5:9]] == ["int32", "int32", "float", "float"]
    assert [f for f, kind in gate["tiling"] if kind == "f32"] == ["coef_scale", "out_scale"]


def test_table_states_the_python_call():
    """What the runtime's generic call reads (fla_npu/runtime/kernels.py): per argument its kind, dtype
    and shape rule, the type variables the caller picks by keyword, the routers' limits."""
    table = gen_op_table.table([str(p) for p in DESCRIPTORS])
    state = table["flaNpuChunkState"]
    assert state["name"] == "chunk_state" and state["dtypes"]["H"] == ["float32", "T"]
    assert state["dtype_args"] == {"H": ["h_dtype", "float32"], "V": ["v_new_dtype", "float32"], "T": ["cube_dtype", "bfloat16"]}
    final = next(a for a in state["args"] if a["name"] == "final")
    assert final == {"name": "final", "kind": "out", "dtype": "float32", "shape": ["chunk_offsets[0]-1", "w[1]", "w[3]", "u[3]"],
                     "swap_if": "state_v_first"}
    assert state["args"][5] == {"name": "h0", "kind": "in?", "dtype": "float32"}
    assert table["flaNpuWyFast"]["limits"] == {"chunk_sizes": [16, 32, 64], "head_dim": 256}
    assert table["flaNpuGateChunkCumsum"]["name"] == "gate_chunk_cumsum" and table["flaNpuGateChunkCumsum"]["limits"] == {}


def test_malformed_descriptor_and_struct_are_refused(tmp_path):
    bad = tmp_path / "x.op.py"
    bad.write_text('OP = {"name": "X"}\n')
    with pytest.raises(DescriptorError, match="x.op.py: keys must be"):
        load(bad)
    header = tmp_path / "x_tiling.h"
    header.write_text("struct XTiling {\n    uint32_t a, b;  // words\n    uint64_t c;\n};\n")
    with pytest.raises(DescriptorError, match="member `uint64_t c` is not uint32_t or float"):
        tiling_fields(header, "XTiling")


@pytest.mark.parametrize("old,new,message", [
    ('"kernel_type": "mix",', '"kernel_type": "mix", "dtype_args": {"X": ("x_dtype", "float32")},', "dtype_args 'X'"),
    ('"kernel_type": "mix",', '"kernel_type": "mix", "dtype_args": {"A": ("a_dtype",)},', "dtype_args 'A'"),
    ('"kernel_type": "mix",', '"kernel_type": "mix", "limits": {"chunk": [64]},', "limits"),
    ('("a", "out", "A", "k")', '("a", "out", "A", "k", "scale")', "'scale' is not an int32 attribute"),
], ids=["unknown-variable", "no-default", "unknown-limit", "swap-by-a-float"])
def test_malformed_python_facts_are_refused(tmp_path, old, new, message):
    op_dir = tmp_path / "thing"
    op_dir.mkdir()
    assert old in NEXT_KERNEL
    (op_dir / "thing.op.py").write_text(NEXT_KERNEL.replace(old, new))
    (op_dir / "thing_tiling.h").write_text(THING_TILING)
    with pytest.raises(DescriptorError, match=message):
        load(op_dir / "thing.op.py")


# A mixed op of the shape the next kernels take: a 16-bit input T, an optional float32 input, an int32
# tensor, an int32 and a float attribute, and two outputs whose dtype the caller picks (float32 or T).
NEXT_KERNEL = """OP = {
    "name": "ChunkThing",
    "doc": "chunk thing (test)\\n\\n  k  [B, T, H, K]",
    "args": [("k", "in", "T"), ("g", "in?", "float32"), ("cu_seqlens", "in?", "int32"), ("idx", "in", "int32"),
             ("chunk_size", "int32"), ("scale", "float"),
             ("a", "out", "A", "k"), ("h", "out", "H", ["k[0]", "k[2]", 64, "k[3]"])],
    "dtypes": {"T": ["float16", "bfloat16"], "A": ["float32", "T"], "H": ["float32", "T"]},
    "tiling": ("thing_tiling.h", "fla_npu::thing::ThingTiling"),
    "body": ("thing_kernel.h", "fla_npu::thing::RunThing"),
    "kernels": {"float16": "fla_thing_f16", "bfloat16": "fla_thing_bf16"},
    "kernel_type": "mix",
}
"""
THING_TILING = """#include <cstdint>
namespace fla_npu {
struct ShapeArg;
struct DeviceFacts;
namespace thing {
struct ThingTiling {
    uint32_t block_dim, units;
    float scale;
};
inline uint64_t UserWorkspaceBytes(const ThingTiling& t) { return uint64_t(t.block_dim) * 1024; }
const char* TilingFromShapes(const ShapeArg* t, int64_t chunk_size, float scale, const DeviceFacts& dev, ThingTiling* tiling);
}  // namespace thing
}  // namespace fla_npu
"""


def _next_kernel(tmp_path):
    op_dir = tmp_path / "thing"
    op_dir.mkdir()
    (op_dir / "thing.op.py").write_text(NEXT_KERNEL)
    (op_dir / "thing_tiling.h").write_text(THING_TILING)
    return load(op_dir / "thing.op.py")


def test_format_expresses_the_next_kernels(tmp_path):
    op = _next_kernel(tmp_path)
    # T x A x H, A and H each float32 or T: 2 * 2 * 2 binaries.
    combos = op.combinations()
    assert len(combos) == 8 and {"T": "bfloat16", "A": "bfloat16", "H": "float32"} in combos
    assert [op.macro_tensor(v).name for v, _ in op.dtype_vars] == ["k", "a", "h"]
    host, kernel = gen_opp.op_host(op), gen_opp.op_kernel(op)
    assert 'this->Input("g").ParamType(OPTIONAL).DataType({' + ", ".join(["ge::DT_FLOAT"] * 8) + "})" in host
    assert 'this->Input("idx").ParamType(REQUIRED).DataType({' + ", ".join(["ge::DT_INT32"] * 8) + "})" in host
    assert 'this->Output("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_FLOAT16,' in host
    assert 'this->Attr("chunk_size").AttrType(REQUIRED).Int();' in host and 'Attr("scale").AttrType(REQUIRED).Float();' in host
    assert "constexpr bool kOptional[4] = {false, true, true, false};" in host
    assert "fla_npu::thing::TilingFromShapes(tensors, *chunk_size, *scale, opp::FactsOf(platform), &t)" in host
    assert "h_shape->SetDim(2, 64);" in host and "h_shape->SetDim(3, k->GetDim(3));" in host
    assert "aclnnFlaNpuChunkThingGetWorkspaceSize(const aclTensor *k, const aclTensor *gOptional," in host
    assert "fla_npu::thing::RunThing<DTYPE_K, DTYPE_A, DTYPE_H>(k, g, cu_seqlens, idx, a, h, " \
           "AscendC::GetUserWorkspace(workspace), t);" in kernel
    # The direct kernels: one per combination, selected by the dtypes of k, a and h.
    names = [name for _, name in op.direct_kernels()]
    assert len(names) == 8 and names[0] == "fla_thing_f16_f32_f32" and "fla_thing_bf16_bf16_f32" in names
    assert "fla_npu::thing::RunThing<bfloat16_t, bfloat16_t, float>(k, g, cu_seqlens, idx, a, h, workspace, tiling);" \
        in gen_op_entry.kernels(op)
    source = gen_op_entry.source(op)
    assert "c.dtype[1] = call.t[4] != nullptr ? call.t[4]->dtype : -1;" in source
    assert ("else if (c.dtype[0] == FLA_NPU_BFLOAT16 && c.dtype[1] == FLA_NPU_BFLOAT16 && c.dtype[2] == FLA_NPU_FLOAT32)\n"
            '                AscendC::sim::Launch("fla_thing_bf16_bf16_f32"') in source
    cmake = gen_opp.test_cmake(op)
    assert "bf16_bf16_f32|DTYPE_K=bfloat16_t,DTYPE_G=float,DTYPE_CU_SEQLENS=int32_t,DTYPE_IDX=int32_t," \
           "DTYPE_A=bfloat16_t,DTYPE_H=float" in cmake


def test_names_that_follow_the_stage_are_defaults(tmp_path):
    """Without ``tiling``, ``body`` and ``kernels`` a descriptor gets the conventional files and names of
    its stage and name: <stage>_tiling.h / fla_npu::<stage>::<name>Tiling, <stage>_kernel.h /
    fla_npu::<stage>::Run<name>, fla_<stage>_<dtype> per dtype of the first tensor."""
    text = NEXT_KERNEL.replace('"ChunkThing"', '"Thing"')
    for key in ('    "tiling": ("thing_tiling.h", "fla_npu::thing::ThingTiling"),\n',
                '    "body": ("thing_kernel.h", "fla_npu::thing::RunThing"),\n',
                '    "kernels": {"float16": "fla_thing_f16", "bfloat16": "fla_thing_bf16"},\n'):
        assert key in text
        text = text.replace(key, "")
    op_dir = tmp_path / "thing"
    op_dir.mkdir()
    (op_dir / "thing.op.py").write_text(text)
    (op_dir / "thing_tiling.h").write_text(THING_TILING)
    op = load(op_dir / "thing.op.py")
    assert (op.tiling_header, op.tiling_struct) == ("thing_tiling.h", "fla_npu::thing::ThingTiling")
    assert (op.body_header, op.body) == ("thing_kernel.h", "fla_npu::thing::RunThing")
    assert op.kernels == (("float16", "fla_thing_f16"), ("bfloat16", "fla_thing_bf16"))
    assert [f for f, _ in op.tiling_fields] == ["block_dim", "units", "scale"]
    # The chunk kernels take the defaults (their entry names as before).
    assert load(CSRC / "chunk_output" / "chunk_output.op.py").kernels == (
        ("float16", "fla_chunk_output_f16"), ("bfloat16", "fla_chunk_output_bf16"))


def test_output_dimension_from_an_offsets_tensor():
    """``"<input>[<i>]-<n>"``: a count from an offsets tensor [N + 1] (the state kernel's final states)."""
    op = load(CSRC / "chunk_state" / "chunk_state.op.py")
    host = gen_opp.op_host(op)
    assert "final_shape->SetDim(0, chunk_offsets->GetDim(0) - 1);" in host
    assert '{"final", false, false, {' + ", ".join(["FLA_NPU_FLOAT32"] * 8) + "}, {{4, 0, 1}, {0, 1}, {0, 3}, {1, 3}}}," \
        in gen_opp.test_glue(op)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_generated_op_host_of_the_next_kernels_compiles(tmp_path):
    """The generated registration, inference and tiling compile against the stand-in of CANN's op_host API."""
    op = _next_kernel(tmp_path)
    assert gen_opp.main([str(tmp_path / "gen"), str(op.op_dir / "thing.op.py")]) == 0
    stub = CSRC / "opp" / "tests" / "host_api_stub"
    r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{stub}",
                        "-DFLA_NPU_OPP_SOC=2", str(tmp_path / "gen" / "op_host" / f"{op.snake}.cpp")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args,match", [
    ('[("k", "in"), ("o", "out", "float32", "k")]', "tensor `k`: .name, kind, dtype."),
    ('[("k", "in", "T"), ("o", "out", "float32", "x")]', "output `o`: shape 'x'"),
    ('[("k", "in", "T"), ("o", "out", "float64", "k")]', "tensor `o`: dtype 'float64'"),
    ('[("k", "in?", "T"), ("j", "in", "T"), ("o", "out", "float32", "j")]', "the first tensor `k` must be required"),
    ('[("k", "in", "float32"), ("j", "in", "T"), ("a", "out", "A", "k"), ("h", "out", "H", "k")]',
     "kernels must name one entry per dtype of `k`"),
])
def test_malformed_tensors_are_refused(tmp_path, args, match):
    _next_kernel(tmp_path)
    path = tmp_path / "thing" / "thing.op.py"
    text = path.read_text()
    start = text.index('    "args"')
    end = text.index('    "dtypes"')
    path.write_text(text[:start] + f'    "args": {args},\n' + text[end:])
    with pytest.raises(DescriptorError, match=match):
        load(path)
