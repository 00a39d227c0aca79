"""Host simulation of Ascend C (csrc/sim/): run every case of the test kernels (built once per session
by the ``native_build`` fixture, tests/conftest.py).

Each case of csrc/sim/tests/sim_cases.cpp runs in its own process: a correct kernel must exit 0;
a deliberately broken one must fail its launch (exit 1) with a message naming the kernel, the core
and the broken rule. The per-SoC dtype rules are compile-time errors, checked by compiling a tiny
source against the simulation headers.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
SIM = CSRC / "sim"

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")


@pytest.fixture(scope="session")
def sim_build(native_build) -> Path:
    return native_build


def _run(build: Path, soc: str, case: str) -> subprocess.CompletedProcess:
    exe = build / "sim" / "tests" / f"sim_cases_{soc}"
    return subprocess.run([str(exe), case], capture_output=True, text=True, timeout=120)


# Correct kernels: run on every SoC profile and compute the right values and counters.
PASSING = [
    "vec_add", "vec_ops", "vec_repeat", "vec_fma", "f16_numerics", "reduce", "copies", "mixed_ids",
    "sync_all", "scalar_ok", "poison", "hazard_raw_fixed", "hazard_raw_barrier", "hazard_war_fixed",
    "cross_fifteen",
    # Cube path: tiled matmuls (fp16, bf16, fp32; B as [K,N] or B^T; M, N, K tails padded in the
    # kernel) against a double-precision product within the fp32-accumulation + output-rounding
    # bound, with exact MAC and GM byte counters; the SoC's L0A layout trait; K padding; GM -> L1
    # ND and ND -> NZ layouts; a mixed 1:2 AIC -> AIV handshake through GM with cross-core flags.
    "cube_matmul_f16", "cube_matmul_bf16", "cube_matmul_bf16_bt", "cube_matmul_f16_bt", "cube_matmul_f32",
    "cube_layout_trait", "cube_l1_copies", "cube_mixed",
    # Mmad with m = 1 is GEMV (A read as ND): a fractal-loaded 1-row tile computes wrong values.
    "cube_gemv_mode",
    # Compare/CompareScalar (every CMPMODE, NaN, float and half; count and mask/repeat forms) and
    # Select (all three SELMODEs), checked bit for bit; ReLU by Select; a masked row max; Fixpipe
    # L0C -> L1 (NZ, feeding a second Mmad after FIX_MTE1; ND) and NZ to GM, exact.
    "vec_compare_select", "vec_select_repeat", "vec_relu_select", "vec_masked_max", "cube_fixpipe_l1",
    # Operator-package entries: the tiling struct read from GM (GET_TILING_DATA, _WITH_STRUCT), the
    # user workspace after the system one, which stays untouched.
    "opp_entry",
]


@pytest.mark.parametrize("soc", ["a2", "a5"])
@pytest.mark.parametrize("case", PASSING)
def test_correct_kernel_runs(sim_build, soc, case):
    r = _run(sim_build, soc, case)
    assert r.returncode == 0, r.stderr


# Broken kernels: (case, kernel name in the message, core, substrings of the message).
FAILING = [
    ("hazard_raw", "missing_waitflag", "AIV0",
     ["hazard RAW", "V op", "'Add' reads UB", "TBuf<VECCALC>#0", "MTE2 op", "'DataCopy(GM->local)' wrote",
      "SetFlag/WaitFlag<HardEvent::MTE2_V>"]),
    ("hazard_war", "missing_war_flag", "AIV0",
     ["hazard WAR", "MTE2 op", "writes UB", "'Muls' read", "HardEvent::V_MTE2"]),
    ("hazard_scalar", "scalar_hazard", "AIV0",
     ["hazard RAW", "S op", "GetValue", "HardEvent::MTE2_S"]),
    ("hazard_queue_skipped", "queue_skipped", "AIV",
     ["hazard RAW", "'Exp' reads UB", "TQue<VECIN>#0 buffer 0", "EnQue/DeQue"]),
    ("copy_unaligned_count", "copy_unaligned_count", "AIV0",
     ["DataCopy 32-byte rule", "10 elements x 4 bytes = 40 bytes", "only 32 bytes", "DataCopyPad"]),
    ("misaligned_operand", "misaligned_operand", "AIV0",
     ["misaligned operand", "dst of Add", "UB byte 12", "32-byte aligned"]),
    ("misaligned_copy", "misaligned_copy", "AIV0", ["misaligned operand", "dst of DataCopy", "UB byte 16"]),
    ("ub_overflow", "ub_overflow", "AIV0", ["UB overflow", "TQue<VECIN>#0 buffer 1", "UB holds"]),
    ("double_free", "double_free", "AIV0", ["double free", "TQue<VECOUT>#0 buffer 0"]),
    ("use_after_free", "use_after_free", "AIV0", ["use after free", "released by FreeTensor"]),
    ("deque_empty", "deque_empty", "AIV0", ["DeQue of an empty queue", "TQue<VECIN>#0"]),
    ("alloc_exhausted", "alloc_exhausted", "AIV0", ["AllocTensor with no free buffer", "2 buffer(s)"]),
    ("wait_without_set", "wait_without_set", "AIV0", ["WaitFlag without SetFlag", "HardEvent::V_MTE3>(2)"]),
    ("unbalanced_set", "unbalanced_set", "AIV0", ["unbalanced SetFlag", "HardEvent::MTE3_MTE2>(1)"]),
    ("cross_deadlock", "cross_deadlock", None,
     ["deadlock", "AIC0 (block 0) finished", "AIV0 (block 0, sub 0) waits in CrossCoreWaitFlag(3)",
      "AIV3 (block 1, sub 1) waits in CrossCoreWaitFlag(3)"]),
    ("cross_overflow", "cross_overflow", "AIC0 (block 0)",
     ["cross-core flag overflow", "CrossCoreSetFlag<2>(5)", "more than 15 pending sets"]),
    ("cross_reserved_id", "cross_reserved_id", None,  # the AIC's set or an AIV's wait, whichever runs first
     ["reserved cross-core flag id", "(12): ids 11..14 are used by SyncAll"]),
    ("cross_in_aiv_only", "cross_in_aiv_only", "AIV",
     ["cross-core flag outside a mixed kernel", "KERNEL_TYPE_AIV_ONLY", "scheduler is off"]),
    ("syncall_deadlock", "syncall_deadlock", None,
     ["deadlock", "AIV0 waits in SyncAll<true>() [1 of 3 cores arrived]", "AIV1 finished"]),
    ("kernel_type_mismatch", "type_mismatch", "AIV0",
     ["kernel type mismatch", "declares KERNEL_TYPE_MIX_AIC_1_2", "launched as KERNEL_TYPE_AIV_ONLY"]),
    ("gm_out_of_range", "gm_out_of_range", "AIV0", ["GM access out of range", "GM buffer of 32 elements"]),
    ("bad_cast_mode", "bad_cast_mode", "AIV0", ["bad Cast round mode", "float -> bfloat16_t"]),
    ("ub_on_aic", "ub_on_aic", "AIC0", ["buffer position not on this core", "UB", "AIC core"]),
    ("bad_mask", "bad_mask", "AIV0", ["bad vector mask", "mask 65", "1..64 lanes"]),
    # Cube path
    ("cube_missing_mte1_m", "cube_matmul", "AIC0",
     ["hazard RAW", "M op", "'Mmad' reads L0A", "TBuf<A2>", "MTE1 op", "'LoadData' wrote",
      "SetFlag/WaitFlag<HardEvent::MTE1_M>"]),
    ("cube_missing_m_fix", "cube_matmul", "AIC0",
     ["hazard RAW", "FIX op", "'Fixpipe' reads L0C", "TBuf<CO1>", "M op", "'Mmad' wrote",
      "SetFlag/WaitFlag<HardEvent::M_FIX>"]),
    ("cube_missing_m_mte1", "cube_matmul", "AIC0",
     ["hazard WAR", "MTE1 op", "'LoadData' writes L0A", "M op", "'Mmad' read", "HardEvent::M_MTE1"]),
    ("cube_l0a_overflow", "cube_l0a_overflow", "AIC0",
     ["L0A overflow", "TQue<A2>#0 buffer 1", "L0A holds 65536 bytes"]),
    ("cube_nd2nz_unaligned", "cube_nd2nz_unaligned", "AIC0",
     ["Nd2NzParams fractal alignment", "dstNzC0Stride 20 rows is not a multiple of 16"]),
    ("cube_nd2nz_range", "cube_nd2nz_range", "AIC0",
     ["Nd2NzParams range", "dstNzMatrixStride 16400 (each <= 16384)"]),
    ("cube_loaddata_misaligned", "cube_loaddata_misaligned", "AIC0",
     ["misaligned operand", "dst of LoadData", "L0A byte 256", "512-byte aligned"]),
    ("cube_fixpipe_quant", "cube_matmul", "AIC0",
     ["Fixpipe quantisation mode", "quantPre NoQuant with a half destination"]),
    ("cube_f32_transpose", "cube_matmul", "AIC0",
     ["LoadData transpose", "ifTranspose with 4-byte elements"]),
    ("cube_missing_fix_mte1", "cube_fixpipe_l1", "AIC0",
     ["hazard RAW", "MTE1 op", "'LoadData' reads L1", "TBuf<A1>#1", "FIX op", "'Fixpipe(L0C->L1)' wrote",
      "SetFlag/WaitFlag<HardEvent::FIX_MTE1>"]),
    ("cube_k_pad_missing", "cube_matmul", "AIC0", ["Mmad NaN input", "filter (B, L0B) holds NaN", "padding included"]),
    ("cube_missing_m_barrier", "cube_matmul", "AIC0",
     ["Mmad accumulation barrier", "(m/16)*(n/16) = 4 < 10", "no PipeBarrier<PIPE_M>()"]),
    # Compare / Select
    ("compare_count_unaligned", "compare_count_unaligned", "AIV0",
     ["Compare count alignment", "count 100 x 4 bytes = 400 bytes is not a multiple of 256 bytes"]),
    ("select_mode_mismatch", "select_mode_mismatch", "AIV0",
     ["Select mode", "selMode VSEL_TENSOR_TENSOR_MODE with a scalar src1"]),
    # Operator-package entry launched without its tiling data
    ("opp_tiling_null", "opp_entry", "AIV0", ["tiling data", "GET_TILING_DATA: the tiling address is null"]),
]


@pytest.mark.parametrize("soc", ["a2", "a5"])
@pytest.mark.parametrize("case,kernel,core,parts", FAILING, ids=[f[0] for f in FAILING])
def test_broken_kernel_fails_with_message(sim_build, soc, case, kernel, core, parts):
    r = _run(sim_build, soc, case)
    assert r.returncode == 1, f"exit {r.returncode}: {r.stderr}"
    msg = r.stderr.strip()
    assert msg.startswith(f"fla-npu sim: kernel '{kernel}'"), msg
    if core is not None:
        assert f"' core {core}" in msg, msg
    for part in parts:
        assert part in msg, f"{part!r} not in {msg!r}"


def test_ub_size_per_soc(sim_build):
    # 200 KB of UB: over a2/a3's usable 192 KB - 256 B - 8 KB (NPU架构版本2201.md), within a5's 248 KB.
    r = _run(sim_build, "a2", "big_ub")
    assert r.returncode == 1 and "UB overflow" in r.stderr and "UB holds 188160 bytes on a2" in r.stderr, r.stderr
    r = _run(sim_build, "a5", "big_ub")
    assert r.returncode == 0, r.stderr


def test_l0_fill_per_soc(sim_build):
    # 2201 fills L1, L0A and L0B; 3510 removed the L0A/L0B fill (Fill.md).
    assert _run(sim_build, "a2", "fill_l0a").returncode == 0
    r = _run(sim_build, "a5", "fill_l0a")
    assert r.returncode == 1 and "InitConstValue on a5" in r.stderr and "writes L1 only" in r.stderr, r.stderr


def test_fixpipe_nz_stride_units_per_soc(sim_build):
    # An NZ output's dstStride counts 32-byte rows on 2201 and elements on 3510 (Fixpipe（L0C到L1数据搬运）.md).
    assert _run(sim_build, "a2", "fixpipe_nz_stride_units").returncode == 0
    r = _run(sim_build, "a5", "fixpipe_nz_stride_units")
    assert r.returncode == 1 and "elements on a5" in r.stderr and "the blocks overlap" in r.stderr, r.stderr


def test_vector_pipe_order_per_soc(sim_build):
    # 2201 needs PipeBarrier<PIPE_V> between dependent vector instructions; 3510 orders them in hardware.
    r = _run(sim_build, "a2", "vector_order_missing")
    assert r.returncode == 1, r.stderr
    for part in ["vector pipe order", "'Exp' reads UB", "'Duplicate' wrote", "no PipeBarrier<PIPE_V>()", "on a2"]:
        assert part in r.stderr, r.stderr
    r = _run(sim_build, "a5", "vector_order_missing")
    assert r.returncode == 0, r.stderr


def test_bf16_vector_arithmetic_runs_on_a5(sim_build):
    r = _run(sim_build, "a5", "bf16_add")
    assert r.returncode == 0, r.stderr


def test_case_lists_are_complete(sim_build):
    listed = set(_run(sim_build, "a2", "--list").stdout.split())
    covered = set(PASSING) | {f[0] for f in FAILING} | {"big_ub", "vector_order_missing", "fill_l0a", "fixpipe_nz_stride_units"}
    assert listed == covered


# ---- compile-time dtype rules -------------------------------------------------------------------

def _compiler(build: Path) -> str:
    cache = (build / "CMakeCache.txt").read_text()
    m = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", cache, re.M)
    assert m, "no CMAKE_CXX_COMPILER in the CMake cache"
    return m.group(1).strip()


def _compile(build: Path, soc: str, op: int, name: str = "bf16_vector_arith.cpp") -> subprocess.CompletedProcess:
    src = SIM / "tests" / "compile_fail" / name
    cmd = [_compiler(build), "-std=c++17", "-fsyntax-only", f"-I{SIM}",
           f"-DFLA_SIM_SOC=FLA_SIM_SOC_{soc.upper()}", f"-DOP={op}", str(src)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


OPS = {1: "Add", 2: "Exp", 3: "Muls", 4: "Mul"}


@pytest.mark.parametrize("soc", ["a2", "a3"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_bf16_vector_arithmetic_is_a_compile_error_on_a2_a3(sim_build, soc, op):
    r = _compile(sim_build, soc, op)
    assert r.returncode != 0
    assert (f"fla-npu sim: {OPS[op]}: bf16 vector arithmetic is not supported on a2/a3" in r.stderr), r.stderr[-3000:]


@pytest.mark.parametrize("op", sorted(OPS))
def test_bf16_vector_arithmetic_compiles_on_a5(sim_build, op):
    r = _compile(sim_build, "a5", op)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("soc", ["a2", "a5"])
def test_mmad_dtype_rules(sim_build, soc):
    r = _compile(sim_build, soc, 0, "mmad_types.cpp")
    assert r.returncode == 0, r.stderr[-3000:]
    for op in (1, 2, 3):  # mixed input types, int8 (not simulated), a non-float L0C
        r = _compile(sim_build, soc, op, "mmad_types.cpp")
        assert r.returncode != 0
        assert "fla-npu sim: Mmad: supported are" in r.stderr, r.stderr[-3000:]


# Compare/Select dtypes per SoC and the Fixpipe NZ output type (compare_select_types.cpp).
CMP_MSG = {
    1: "fla-npu sim: Compare: source type not supported on this SoC",
    2: "fla-npu sim: Select: element type not supported on this SoC",
    3: "fla-npu sim: Compare: the destination bit mask must be a uint8_t tensor",
    4: "fla-npu sim: Fixpipe: NZ output is simulated for half/bfloat16_t",
}


@pytest.mark.parametrize("soc", ["a2", "a3", "a5"])
def test_compare_select_dtype_rules(sim_build, soc):
    r = _compile(sim_build, soc, 0, "compare_select_types.cpp")
    assert r.returncode == 0, r.stderr[-3000:]
    for op, msg in CMP_MSG.items():
        r = _compile(sim_build, soc, op, "compare_select_types.cpp")
        if soc == "a5" and op in (1, 2):  # int32 Compare and bf16 Select exist on a5
            assert r.returncode == 0, r.stderr[-3000:]
        else:
            assert r.returncode != 0 and msg in r.stderr, (op, r.stderr[-3000:])
