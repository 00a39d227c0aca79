"""``fla-npu bench`` end to end on one production shape (model mode: the simulated kernels and the
timing model), the JSON schema of its rows, the whole-op roofline, the stage table and the
calibration entry point."""

from __future__ import annotations

import json

import pytest

from fla_npu import cli
from fla_npu.perf import bench as B, calibrate as C, roofline as R, soc_constants as SC, stages as S

HEADLINE = "1,8192,96,128"

MODEL_ROW = {"schema": str, "source": str, "impl": str, "op": str, "mode": str, "group": str, "shape": dict, "key": list,
             "dtype": str, "soc": str, "soc_part": str, "time_ms": float, "stages": list, "complete": bool,
             "stages_without_kernel": list, "stages_failed": list, "roofline": dict, "ratio_to_roofline": float,
             "published": list, "trace_from": str, "trace_arch_matches": bool, "torch_ops": dict}
MODEL_STAGE = {"stage": str, "title": str, "status": str, "time_ms": float, "kernel": str, "scaled_shape": dict,
               "units_simulated": int, "units": int, "cores": int, "per_unit_us": float, "gm_bytes": int,
               "ws_bytes": int, "gm_bound_ms": float, "cube_macs": int, "busiest_pipe": str, "bound": str}
TORCH_OPS = {"status": str, "time_ms": float, "bytes": int, "launches": int, "scaled_shape": dict}
ROOF = {"bytes": int, "macs": int, "memory_ms": float, "compute_ms": float, "floor_ms": float, "bound": str}


def _check(obj: dict, schema: dict):
    assert set(obj) == set(schema), set(obj) ^ set(schema)
    for k, t in schema.items():
        assert isinstance(obj[k], t), (k, obj[k])


@pytest.fixture(scope="module")
def headline_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "rows.jsonl"
    return out, cli.main(["bench", "--op", "kda", "--shape", HEADLINE, "--soc", "a2,a5", "--out", str(out), "--model"])


def test_bench_rows_follow_the_schema(headline_run):
    out, code = headline_run
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["soc"] for r in rows] == ["a2", "a5"]
    for r in rows:
        _check(r, MODEL_ROW)
        assert r["schema"] == B.SCHEMA and r["source"] == "model" and r["trace_from"].startswith("sim-")
        assert r["trace_arch_matches"] == (SC.ARCH[r["trace_from"][4:]] == SC.ARCH[r["soc"]])
        _check(r["roofline"], ROOF)
        names = [s["stage"] for s in r["stages"]]
        assert names == [s.name for s in S.FWD_STAGES["kda"]]
        for s in r["stages"]:
            if s["time_ms"] is None:  # a stage without a kernel: no number, said so
                assert s["status"] == "reference (no kernel)" and set(s) == {"stage", "title", "status", "time_ms"}
                assert s["stage"] in r["stages_without_kernel"]
            else:
                _check(s, MODEL_STAGE)
                assert s["status"] == "model" and s["time_ms"] > 0 and s["units"] == 128 * 96  # (chunk, head) units
        modelled = [s["time_ms"] for s in r["stages"] if s["time_ms"] is not None]
        # the PyTorch operations around the kernels: modelled from their bytes and launches, part of the total
        t = r["torch_ops"]
        _check(t, TORCH_OPS)
        assert t["status"] == "model" and t["bytes"] > 0 and t["launches"] > 0
        soc = SC.soc(r["soc"])
        assert t["time_ms"] == pytest.approx(1e3 * (t["bytes"] / (soc.hbm_bytes_per_s * soc.hbm_efficiency) +
                                                     t["launches"] * soc.launch_overhead_s))
        assert r["time_ms"] == pytest.approx(sum(modelled) + t["time_ms"])
        assert r["complete"] == (not r["stages_without_kernel"]) and r["stages_failed"] == []
        assert r["ratio_to_roofline"] == pytest.approx(r["time_ms"] / r["roofline"]["floor_ms"])
    a2 = rows[0]
    assert [p["time_ms"] for p in a2["published"]] == [54.0, 8.8] and rows[1]["published"] == []
    # the modelled chain cannot beat the whole op's floor, and each stage moves at least its bytes
    assert a2["time_ms"] > a2["roofline"]["floor_ms"]
    for s in a2["stages"]:
        if s["time_ms"] is not None:
            assert s["time_ms"] >= s["gm_bound_ms"]


def test_bench_prints_the_headline(headline_run, capsys):
    out, _ = headline_run
    code = cli.main(["bench", "--op", "kda", "--shape", HEADLINE, "--soc", "a2", "--out", str(out.with_suffix(".2")), "--model"])
    text = capsys.readouterr().out
    assert code == 0
    assert "KDA forward [1,8192,96,128] bf16 on a2" in text and "(model)" in text
    assert "roofline floor: 0.630 ms" in text
    assert "54.0 ms (published figure, 910B3)" in text and "8.800 ms (published figure, 910B3)" in text
    # Every stage of the chunked forward has a kernel: the modelled chain is its one launch (1-5).
    assert "for 1 of 1 stages (no kernel yet: none)" in text
    for stage in ("1-5: gate + intra-chunk + WY + state + output", "PyTorch ops around them"):
        assert stage in text, stage


def test_bench_usage_errors(tmp_path, capsys):
    assert cli.main(["bench", "--op", "mamba", "--out", str(tmp_path / "x")]) == 2
    assert cli.main(["bench", "--soc", "a9", "--out", str(tmp_path / "x")]) == 2
    assert cli.main(["bench", "--op", "kda", "--shape", "1,2,3,4", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--op" in err and "unknown SoC 'a9'" in err and "no production shape" in err


def test_plot_without_matplotlib_says_so(tmp_path):
    pytest.importorskip("numpy")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="pip install matplotlib"):
            B.plot([], str(tmp_path / "x.png"))
    else:
        B.plot([], str(tmp_path / "x.png"))


def test_cases_cover_the_production_shapes():
    data = B.production_shapes()
    cases = B.build_cases()
    assert len([c for c in cases if c.op == "gdn"]) == len(data["gdn"])
    assert len([c for c in cases if c.op == "prefix_shared_attention"]) == len(data["prefix_shared_attention"])
    kda = [c for c in cases if c.op == "kda"]
    assert {c.group for c in kda} == {"kda", "fla_benchmark"}
    assert [c.key() for c in B.build_cases(("kda",), shape=(1, 8192, 96, 128))] == [(1, 8192, 96, 128)]
    with pytest.raises(ValueError, match="only fwd"):
        B.build_cases(mode="decode")


def test_roofline_of_the_kda_headline():
    """About 1 GB of compulsory HBM traffic and 144 GFLOP (the chunked algorithm's Cube work)."""
    a2 = SC.soc("a2")
    r = R.delta_rule_fwd({"B": 1, "T": 8192, "H": 96, "HV": 96, "K": 128, "V": 128}, "bf16", a2, per_key_gate=True)
    assert r.bytes == 2 * 8192 * 96 * (5 * 128 + 1)
    assert 2 * r.macs / 1e9 == pytest.approx(143.9, abs=0.1)
    assert r.memory_s == pytest.approx(r.bytes / 1.6e12) and r.bound == "memory"
    g = R.delta_rule_fwd({"B": 1, "T": 8192, "H": 96, "HV": 96, "K": 128, "V": 128}, "bf16", a2, per_key_gate=False)
    assert g.bytes < r.bytes and g.macs == r.macs
    p = R.prefix_shared_attention_fwd({"bs": 1, "G": 64, "len_q": 1, "len_kv": 8192, "D": 128}, "bf16", a2)
    assert p.macs == 2 * 64 * 8192 * 128 and p.bytes == 2 * (2 * 64 * 128 + 2 * 8192 * 128)


def test_stage_without_module_is_reported_without_a_number():
    st = S.Stage("x", "x", "fla_npu.runtime.no_such_kernel", lambda s, d: None, S.units_chunks, S.scale_delta_rule)
    assert st.available() == "reference (no kernel)"
    assert S.FWD_STAGES["kda"][0].available() == "reference (no kernel)" or S.FWD_STAGES["kda"][0].launch is not None
    row = B.model_stage("kda", st, {"B": 1, "T": 64, "H": 1, "HV": 1, "K": 16, "V": 16}, "bf16", SC.soc("a2"), B._StageRuns())
    assert row == {"stage": "x", "title": "x", "status": "reference (no kernel)", "time_ms": None}


def test_kda_stages_follow_the_route_of_the_call():
    """KDA's stages 1-5 in one launch up to K 128 (chunk_pipeline.gate_in_launch), in three above; every
    stage has its kernel either way."""
    shape = {"B": 1, "T": 8192, "H": 8, "HV": 8, "V": 128}
    two, three = S.fwd_stages("kda", {**shape, "K": 128}, "bf16"), S.fwd_stages("kda", {**shape, "K": 256}, "bf16")
    assert [s.name for s in two] == ["chunk_gate_forward"]
    assert [s.name for s in three] == ["gate_cumsum", "chunk_intra", "chunk_state_output"]
    assert all(s.available() is None for s in two + three)
    assert S.fwd_stages("gdn", {**shape, "K": 128}, "bf16") == S.FWD_STAGES["gdn"]


def test_scaled_shapes_keep_what_the_kernels_see():
    s = S.scale_delta_rule({"B": 1, "T": 8192, "H": 16, "HV": 32, "K": 128, "V": 128})
    assert s["HV"] // s["H"] == 2 and s["K"] == 128 and s["T"] == 512
    p = S.scale_psa({"bs": 1, "G": 64, "len_q": 512, "len_kv": 16384, "D": 128})
    assert p["G"] == 64 and p["G"] * p["len_q"] == 256 and p["len_kv"] == 1024
    assert S.units_psa({"bs": 2, "G": 8, "len_q": 64, "len_kv": 2048, "D": 128}) == 2 * 4 * 16


def test_calibration_reports_the_error_per_kernel(tmp_path):
    key = {"op": "kda", "mode": "fwd", "key": [1, 8192, 96, 128], "dtype": "bf16", "soc": "a2"}
    measured = [{**key, "source": "measured", "impl": "fla_npu", "time_ms": 10.0,
                 "stages": [{"stage": "wy_fast", "time_ms": 2.0}]},
                {**key, "source": "measured", "impl": "fla_default", "time_ms": 54.0}]
    model = [{**key, "source": "model", "complete": True, "time_ms": 12.0,
              "stages": [{"stage": "wy_fast", "time_ms": 3.0}, {"stage": "chunk_state_output", "time_ms": None}]}]
    entries = C.compare(measured, model)
    assert [(e["what"], round(e["error"], 3)) for e in entries] == [("op", 0.2), ("wy_fast", 0.5)]
    assert C.summary(entries)["wy_fast"]["worst_abs_error"] == pytest.approx(0.5)
    m, p = tmp_path / "m.jsonl", tmp_path / "p.jsonl"
    m.write_text("\n".join(json.dumps(r) for r in measured))
    p.write_text("\n".join(json.dumps(r) for r in model))
    assert C.main([str(m), str(p)]) == 0
    assert C.main([str(m), str(tmp_path / "m.jsonl")]) == 1  # no model rows: nothing to compare


def test_kda_and_gdn_stages_are_modelled_apart():
    """KDA's gate is per key, GDN's per head: one shape key, two different gate kernels' traces."""
    runs = B._StageRuns()
    a2 = SC.soc("a2")
    shape = {"B": 1, "T": 8192, "H": 32, "HV": 32, "K": 128, "V": 128}
    kda = B.model_stage("kda", S.FWD_STAGES["kda"][0], shape, "bf16", a2, runs)
    gdn = B.model_stage("gdn", S.FWD_STAGES["gdn"][0], shape, "bf16", a2, runs)
    assert gdn["gm_bytes"] * 50 < kda["gm_bytes"]
