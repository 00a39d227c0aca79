"""The operator package (csrc/opp/) on the host simulation, against the sim library's direct entry points.

CI has no CANN, so the package itself is never built here; what can run, runs: per op, a native test
(the generic csrc/opp/tests/opp_test_generic.h on the op's calls, csrc/<op>/tests/<stage>_opp_test.cpp,
built by CMake from csrc/opp/tests/ in the session's one build, the ``native_build`` fixture of
tests/conftest.py) compiles the OPP kernel entry generated from the op's descriptor once per dtype
combination (DTYPE_<TENSOR> as the OPP build defines it) and the generated op_host file against a
stand-in of CANN's op_host API, runs the registered tiling function, puts its tiling bytes in a GM buffer and
launches the entry with them, the block count and the workspace it asked for. Every output must be
bit-identical to the direct entry point's (flaNpuGateChunkCumsum / flaNpuPrefixSharedAttention /
flaNpuChunkOutput / flaNpuWyFast / flaNpuSolveTril / flaNpuChunkState / flaNpuChunkIntra /
flaNpuChunkStateOutput), the
tiling identical word for word, and an invalid call refused by both with the same message. Each case
runs in its own process; both simulated SoC profiles (a2: 2201, a5: 3510).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")

CASES = {
    "gate_cumsum_opp_test": [
        "registration",
        "kda_softplus_f32", "kda_softplus_f16", "kda_softplus_bf16", "kda_sigmoid_bf16", "kda_sigmoid_no_a_log_f16",
        "none_with_a_log_f32", "gdn_softplus_f32", "gdn_softplus_bf16", "head_pieces_f16", "empty_f32",
        "varlen_f32", "varlen_f16", "varlen_bf16",
        "refuse_chunk_size", "refuse_softplus_without_a_log", "refuse_gate_form", "refuse_g_rank", "refuse_out_shape",
        "refuse_cu_alone", "refuse_varlen_batch",
    ],
    "prefix_shared_attention_opp_test": [
        "registration",
        "decode_f16", "decode_bf16", "m_tiles_d64_f16", "m_tiles_d64_bf16", "single_row_bf16", "empty_f16",
        "split_decode_f16", "split_units_over_cores_bf16", "split_on_chip_bf16", "schedule_mode_refused",
        "refuse_head_dim", "refuse_kv_batch", "refuse_out_shape", "refuse_zero_g",
    ],
    "chunk_output_opp_test": [
        "registration",
        "kda_f16", "kda_bf16", "gdn_bt32_bf16", "gdn_bt16_f16", "v_tiles_bf16", "many_units_f16", "empty_bf16",
        "refuse_chunk_size", "refuse_head_dim", "refuse_g_columns", "refuse_s_shape", "refuse_out_shape", "out_in_cube_type",
    ],
    "wy_fast_opp_test": [
        "registration",
        "kda_f16", "kda_bf16", "gdn_bt32_bf16", "gdn_bt16_f16", "wide_bf16", "many_units_f16", "empty_bf16",
        "refuse_chunk_size", "refuse_head_dim", "refuse_g_columns", "refuse_beta_shape", "refuse_u_shape",
    ],
    "solve_tril_opp_test": [
        "registration",
        "bt64_f32", "bt64_f16", "bt64_bf16", "bt32_bf16", "bt16_f32", "many_units_f16", "empty_f32",
        "refuse_chunk_size", "refuse_akk_shape", "refuse_l_rank",
    ],
    "chunk_state_opp_test": [
        "registration",
        "kda_h0_f16", "kda_v_first_bf16_out_bf16", "gdn_no_h0_bf16_h_f32_v_bf16", "gdn_bt16_f16_h_f16_v_f32",
        "wide_bf16", "many_units_f16", "empty_bf16",
        "refuse_chunk_size", "refuse_head_dim", "refuse_state_v_first", "refuse_final_shape",
    ],
    "chunk_intra_opp_test": [
        "registration",
        "kda_f16", "kda_bf16_out_bf16", "gdn_bt32_bf16", "gdn_bt16_f16_out_f16", "wide_bf16", "many_units_f16", "empty_bf16",
        "kda_l2norm_bf16", "gdn_l2norm_f16", "kda_akk_beta_bf16", "gdn_akk_beta_f16",
        "refuse_chunk_size", "refuse_head_dim", "refuse_g_shape", "refuse_scale_shape", "refuse_akk_shape",
    ],
    "chunk_state_output_opp_test": [
        "registration",
        "kda_h0_f16", "kda_v_first_bf16", "gdn_gva_no_h0_bf16", "kda_scaled_bf16", "gdn_gva_scaled_f16", "gdn_bt16_f16",
        "wide_bf16", "many_units_f16", "empty_bf16",
        "refuse_chunk_size", "refuse_k_heads", "refuse_o_shape",
    ],
    "chunk_gate_intra_opp_test": [
        "registration",
        "softplus_bf16", "sigmoid_f16_raw_f16", "none_bf16_raw_bf16", "empty_bf16",
        "refuse_softplus_without_a_log", "refuse_head_dim", "refuse_e_last_shape",
    ],
    "chunk_forward_opp_test": [
        "registration",
        "gva_h0_bf16", "v_first_f16", "bt32_no_h0_bf16", "bt16_f16", "many_units_f16", "empty_bf16",
        "kda_gva_h0_bf16", "kda_bt32_v_first_f16", "kda_bt16_bf16",
        "refuse_chunk_size", "refuse_k_heads", "refuse_o_shape", "refuse_kda_k256",
    ],
    "chunk_gate_forward_opp_test": [
        "registration",
        "sigmoid_gva_h0_bf16", "softplus_bt32_f16_raw_f16", "none_bt16_bf16_raw_bf16", "empty_bf16",
        "refuse_softplus_without_a_log", "refuse_head_dim", "refuse_o_shape",
    ],
}
SOCS = ["a2", "a5"]


@pytest.fixture(scope="module", params=SOCS)
def opp_build(request, native_build) -> tuple[str, Path]:
    soc = request.param
    return soc, native_build / "opp" / "tests" / soc


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("test,case", [(t, c) for t, cases in CASES.items() for c in cases])
def test_opp_path_equals_direct_entry(opp_build, test, case):
    _, tests = opp_build
    r = _run(tests / test, case)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"


@pytest.mark.parametrize("test", sorted(CASES))
def test_case_lists_are_complete(opp_build, test):
    _, tests = opp_build
    assert set(_run(tests / test, "--list").stdout.split()) == set(CASES[test])


def test_opp_project_without_cann_fails_clearly(tmp_path):
    """csrc/opp needs CANN; configured without it, CMake must stop and say what to install."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}
    r = subprocess.run(["cmake", "-S", str(CSRC / "opp"), "-B", str(tmp_path / "b1")], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "ASCEND_HOME_PATH is not set" in r.stderr and "source <cann>/set_env.sh" in r.stderr, r.stderr
    empty = tmp_path / "not-cann"
    empty.mkdir()
    env["ASCEND_HOME_PATH"] = str(empty)
    r = subprocess.run(["cmake", "-S", str(CSRC / "opp"), "-B", str(tmp_path / "b2"), f"-DASCEND_CANN_PACKAGE_PATH={empty}"],
                       env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "CANN's ASC package was not found" in r.stderr and "./build_wheel --soc sim" in r.stderr, r.stderr


def test_every_kernel_entry_initialises_the_core_state_first(native_build):
    """Each OPP kernel entry (generated from the op's descriptor) declares its kernel type and then
    calls AscendC::InitSocState() before anything else (the core's global state as the kernel expects
    it, whatever ran before on it)."""
    import re

    entries = sorted((native_build / "generated" / "opp" / "op_kernel").glob("fla_npu_*.cpp"))
    assert len(entries) == len(list(CSRC.glob("*/*.op.py")))
    for f in entries:
        body = f.read_text().split("__aicore__ void ", 1)[1].split("{", 1)[1]
        statements = [s.strip() for s in body.split(";") if s.strip()]
        assert re.fullmatch(r"KERNEL_TASK_TYPE_DEFAULT\(\w+\)", statements[0]), (f.name, statements[0])
        assert statements[1] == "AscendC::InitSocState()", (f.name, statements[1])
