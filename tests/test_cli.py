"""``fla-npu verify`` and ``fla-npu info``: the command runs, writes its table and JSON lines, and can
fail (an implementation with a wrong output or a wrong gradient makes it exit 1)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import fla_npu
from fla_npu import verify as V
from fla_npu.cli import main
from fla_npu.testing import TOLERANCES

FIELDS = ("op", "implementation", "shape", "switches", "dtype", "fwd_err", "grad_err", "tol", "passed", "seconds")
TABLE_HEADER = ("op", "impl", "shape", "switches", "fwd err", "grad err", "pass")


def _rows(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    assert lines, f"{path} is empty"
    return [json.loads(line) for line in lines]


def _check_rows(rows, expect_pass=True):
    for r in rows:
        missing = [f for f in FIELDS if f not in r]
        assert not missing, f"row {r.get('case')} lacks {missing}"
        assert r["dtype"] == "bf16" and r["tol"] == TOLERANCES[torch.bfloat16]
        assert {"B", "T", "H", "HV", "K", "V"} <= set(r["shape"])
        assert isinstance(r["switches"], dict)
        assert r["seconds"] >= 0
        if expect_pass:
            assert r["passed"] is True, r
            assert math.isfinite(r["fwd_err"]) and 0 <= r["fwd_err"] <= r["tol"]
            if r["kind"] == "decode":
                assert r["grad_err"] is None
            else:
                assert math.isfinite(r["grad_err"]) and 0 <= r["grad_err"] <= r["tol"]


def test_verify_quick_in_process(tmp_path, capsys):
    """`verify --quick` in process: exit 0, the table, one progress line and one JSON row per case."""
    out = tmp_path / "rows.jsonl"
    assert main(["verify", "--quick", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    rows = _rows(out)
    cases = V.build_cases(quick=True)
    assert len(rows) == sum(c.function in impl.ops for impl in V.implementations() for c in cases)
    _check_rows(rows)
    assert {r["op"] for r in rows} == {"chunk_kda", "chunk_gated_delta_rule", "fused_recurrent_kda",
                                      "fused_recurrent_gated_delta_rule"}
    assert {r["kind"] for r in rows} == {"chunk", "varlen", "decode"}

    table = captured.out.splitlines()
    assert all(h in table[0] for h in TABLE_HEADER)
    assert sum(line.startswith(("chunk_", "fused_recurrent_")) for line in table) == len(rows)
    assert f"{len(rows)}/{len(rows)} rows pass" in captured.out
    progress = [line for line in captured.err.splitlines() if line.startswith("[")]
    assert len(progress) == len(rows)
    assert progress[0].startswith(f"[1/{len(rows)}] chunk_kda B=1 T=160 H=6 ")


def test_verify_module_subprocess(tmp_path):
    """`python -m fla_npu.cli verify --quick` in a fresh process writes ./verify-results.jsonl and exits 0."""
    env = dict(os.environ)
    root = str(Path(fla_npu.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "fla_npu.cli", "verify", "--quick"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fwd err" in proc.stdout and "grad err" in proc.stdout
    rows = _rows(tmp_path / "verify-results.jsonl")  # the default --json path, in the working directory
    _check_rows(rows)


class _ScaleGrad(torch.autograd.Function):
    """Identity forward, gradient times 1.1: a kernel whose backward is wrong."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, dy):
        return dy * 1.1


def _wrong_output(*args, **kwargs):
    o, final = fla_npu.chunk_kda(*args, **kwargs)[:2]
    return o * 1.05, final


def _wrong_decode(*args, **kwargs):
    o, final = fla_npu.fused_recurrent_kda(*args, **kwargs)
    return o, final * 0.9


def _wrong_gradient(q, k, v, g, beta, **kwargs):
    return fla_npu.chunk_kda(_ScaleGrad.apply(q), k, v, g, beta, **kwargs)


def _raises(*args, **kwargs):
    raise RuntimeError("kernel launch failed")


BROKEN = {
    "wrong-output": {"chunk_kda": _wrong_output, "fused_recurrent_kda": _wrong_decode},
    "wrong-gradient": {"chunk_kda": _wrong_gradient},
    "raises": {"chunk_kda": _raises},
}


@pytest.fixture
def broken_impl(request):
    """Register the broken implementation named by the parameter for one test."""
    name = f"broken-{request.param}"
    V.register_implementation(V.Implementation(name, "deliberately broken (test)", BROKEN[request.param]))
    yield request.param, name
    V.unregister_implementation(name)


@pytest.mark.parametrize("broken_impl", list(BROKEN), indirect=True)
def test_verify_fails_for_a_broken_implementation(broken_impl, tmp_path, capsys):
    """A registered implementation with a wrong output, a wrong gradient or an exception fails its rows
    and makes verify exit 1, while the reference rows of the same run still pass."""
    kind, name = broken_impl
    out = tmp_path / "rows.jsonl"
    assert name in [i.name for i in V.implementations()]
    assert main(["verify", "--quick", "--ops", "kda", "--json", str(out)]) == 1
    rows = _rows(out)
    ours = [r for r in rows if r["implementation"] == name]
    _check_rows([r for r in rows if r["implementation"] == "reference"])  # the reference still passes
    _check_rows(ours, expect_pass=False)
    assert ours and all(r["passed"] is False for r in ours)
    assert {r["op"] for r in ours} == set(BROKEN[kind])
    for r in ours:
        tol = r["tol"]
        if kind == "wrong-output":
            assert r["fwd_err"] > tol
        elif kind == "wrong-gradient":
            assert r["fwd_err"] <= tol < r["grad_err"]
            assert r["errors"]["dq"] > tol and r["errors"]["dk"] <= tol
        else:
            assert r["fwd_err"] is None and r["grad_err"] is None
            assert "kernel launch failed" in r["error"]
    table = capsys.readouterr().out
    assert f"{sum(r['passed'] for r in rows)}/{len(rows)} rows pass" in table
    assert any(name in line and line.rstrip().endswith("NO") for line in table.splitlines())


def test_scaling_rule():
    """The documented CPU scaling of the production shapes and the case list built from them."""
    assert [V.scaled_length(T) for T in (8192, 32768, 65536)] == [160, 288, 352]
    assert V.scale_shape({"B": 1, "T": 8192, "H": 16, "HV": 32, "K": 128, "V": 128}) == \
        {"B": 1, "T": 160, "H": 1, "HV": 2, "K": 128, "V": 128}
    assert V.scale_shape({"B": 1, "T": 8192, "H": 96, "HV": 96, "K": 128, "V": 128}, "small") == \
        {"B": 1, "T": 160, "H": 6, "HV": 6, "K": 64, "V": 64}
    spec = V.load_production_shapes()
    cases = V.build_cases(spec)
    assert len(cases) == 2 * len(spec["kda"]) + 2 * len(spec["gdn"]) + 4
    for c in cases:
        p = c.production
        assert c.HV // c.H == p["HV"] // p["H"]
        if c.kind == "chunk":
            assert c.T > 2 * V.CHUNK_SIZE and c.T % V.CHUNK_SIZE, c  # several chunks and a tail
    prod = [c for c in cases if c.switch_set == "production" and c.kind == "chunk"]
    assert len(prod) == len(spec["kda"]) and all(c.switches == spec["kda_switches_production"] for c in prod)
    assert len({c.seed for c in cases}) == len(cases)


def test_ops_option_and_info(capsys):
    """`--ops`/`--impl` reject unknown names; `info` prints the versions and the CPU implementation."""
    with pytest.raises(SystemExit):
        main(["verify", "--ops", "kda,nope"])
    assert main(["verify", "--impl", "nope"]) == 2
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"fla_npu {fla_npu.__version__}" in out and f"torch {torch.__version__}" in out
    assert "chunked PyTorch reference" in out


def _run_cli(*args, env=None):
    code = ("import sys, time; t = time.perf_counter(); from fla_npu.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('TORCH', 'torch' in sys.modules, time.perf_counter() - t)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["info", "--help"], ["verify", "--ops", "nope"],
                                  ["nope"], []])
def test_help_and_argument_errors_do_not_import_torch(args):
    """`fla-npu --help` and argument errors answer without importing torch (well under a second)."""
    res = _run_cli(*args)
    last = res.stdout.strip().splitlines()[-1].split()
    assert last[:2] == ["TORCH", "False"], res.stdout + res.stderr
    assert float(last[2]) < 1.0
    assert "usage: fla-npu" in res.stdout + res.stderr


@pytest.mark.parametrize("value,on", [("1", True), ("yes", True), ("2", True), ("0", False), ("", False), (None, False)])
def test_info_reports_the_adapter_switch_as_the_adapter_reads_it(value, on, monkeypatch, capsys):
    """`fla-npu info` and the adapter share one definition of FLA_ASCENDC being on."""
    pytest.importorskip("fla_npu_adapter")
    from fla_npu_adapter import _state

    if value is None:
        monkeypatch.delenv("FLA_ASCENDC", raising=False)
    else:
        monkeypatch.setenv("FLA_ASCENDC", value)
    assert _state.env_on() is on
    assert main(["info"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("FLA adapter:"))
    assert line.startswith(f"FLA adapter: {'on' if on else 'off'} ("), line


def test_info_prints_text_not_a_dict(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "{'" not in out and '{"' not in out, out


def test_verify_choices_are_the_verifiers_names():
    """The torch-free choices of the command's parser are those fla_npu.verify uses."""
    from fla_npu import verify_choices as C

    assert tuple(V.DTYPES) == C.DTYPE_NAMES and V.OPS == C.OPS and V.SCALES == C.SCALES
    assert tuple(i.name for i in V.implementations(include_unavailable=True)) == C.BUILTIN_IMPLEMENTATIONS


def test_numpy_is_a_dependency_so_torch_imports_without_a_numpy_warning():
    from importlib.metadata import requires

    assert any(r.split(";")[0].strip().startswith("numpy") for r in requires("fla-npu") or []), requires("fla-npu")
    res = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True, timeout=120)
    assert "Failed to initialize NumPy" not in res.stderr, res.stderr
