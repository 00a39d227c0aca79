"""Calibration of the timing model against the hardware job: pairs the ``measured`` rows of
``fla-npu bench`` on an NPU with the ``model`` rows of the same cases and SoC, and reports the
model's error per case and per stage kernel.

    python -m fla_npu.perf.calibrate measured.jsonl model.jsonl

Per-stage errors need measured per-stage times: rows with ``"source": "measured"`` may carry a
``stages`` list of ``{"stage": name, "time_ms": t}`` (a profiler's kernel times); without it the
error is reported for the whole op only, and only where the model covers every stage."""

from __future__ import annotations

import argparse
import json
import statistics
import sys


def read_rows(path: str) -> list[dict]:
    """The JSON lines of ``path`` (blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _key(r: dict) -> tuple:
    return (r["op"], r["mode"], tuple(r["key"]), r["dtype"], r["soc"])


def compare(measured: list[dict], modelled: list[dict]) -> list[dict]:
    """One entry per matched (case, SoC) and per stage: ``{"case", "soc", "what", "measured_ms",
    "model_ms", "error"}`` with ``error = model / measured - 1``."""
    model_by = {_key(r): r for r in modelled if r.get("source") == "model"}
    out = []
    for m in measured:
        if m.get("source") != "measured" or m.get("impl") != "fla_npu" or not m.get("time_ms"):
            continue
        p = model_by.get(_key(m))
        if p is None:
            continue
        case = f"{m['op']} {m['mode']} [{','.join(map(str, m['key']))}] {m['dtype']}"
        if p.get("complete") and p.get("time_ms"):
            out.append({"case": case, "soc": m["soc"], "what": "op", "measured_ms": m["time_ms"],
                        "model_ms": p["time_ms"], "error": p["time_ms"] / m["time_ms"] - 1})
        ms = {s["stage"]: s.get("time_ms") for s in m.get("stages", ())}
        for s in p.get("stages", ()):
            if s.get("time_ms") and ms.get(s["stage"]):
                out.append({"case": case, "soc": m["soc"], "what": s["stage"], "measured_ms": ms[s["stage"]],
                            "model_ms": s["time_ms"], "error": s["time_ms"] / ms[s["stage"]] - 1})
    return out


def summary(entries: list[dict]) -> dict:
    """Per kernel (``what``): the number of cases, the median and the worst absolute error."""
    by: dict = {}
    for e in entries:
        by.setdefault(e["what"], []).append(e["error"])
    return {k: {"cases": len(v), "median_error": statistics.median(v), "worst_abs_error": max(abs(x) for x in v)}
            for k, v in by.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fla_npu.perf.calibrate",
                                description="The timing model's error against measured times, per kernel.")
    p.add_argument("measured", help="JSON lines of `fla-npu bench` on an NPU")
    p.add_argument("model", help="JSON lines of `fla-npu bench --model` (same cases)")
    p.add_argument("--json", action="store_true", help="print the entries and summary as JSON")
    args = p.parse_args(argv)
    entries = compare(read_rows(args.measured), read_rows(args.model))
    if args.json:
        print(json.dumps({"entries": entries, "summary": summary(entries)}, indent=1))
        return 0 if entries else 1
    if not entries:
        print("no measured fla_npu row matches a complete model row (same op, mode, shape, dtype, SoC)", file=sys.stderr)
        return 1
    for e in entries:
        print(f"{e['case']:<40} {e['soc']}  {e['what']:<24} measured {e['measured_ms']:9.3f} ms  "
              f"model {e['model_ms']:9.3f} ms  error {100 * e['error']:+6.1f} %")
    for k, s in summary(entries).items():
        print(f"{k:<24} {s['cases']} case(s): median error {100 * s['median_error']:+.1f} %, "
              f"worst {100 * s['worst_abs_error']:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
