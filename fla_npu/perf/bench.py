"""``fla-npu bench``: times of the ops on the production shapes (fla_npu/data/production.json).

Two sources, never mixed in one figure:
  * ``measured`` (an NPU with torch_npu): wall time between device events, median and spread of 5 runs
    after 2 warm-ups, fla_npu and FLA's default path side by side in one process, and the memory peak.
  * ``model`` (anywhere else): each stage kernel runs on the host simulation at a scaled shape
    (:mod:`.stages`) with its instruction trace recorded; the timing model (:mod:`.model`) replays it
    per SoC with a full chip's share of GM bandwidth; the full shape's time is the modelled time per
    unit of work (sum of the blocks' times / units simulated) x ceil(units of the full shape / cores),
    at least its GM bytes (scaled likewise) over the achieved HBM bandwidth (its workspace's over the
    L2 bandwidth, :mod:`.model`), plus one launch overhead.
    Stages without a kernel are reported as "reference (no kernel)", with no number. The PyTorch
    operations the chunked ops run around their kernels (:mod:`.torch_traffic`, counted on the op's
    forward at the stages' scaled shape, the bytes scaled by tokens x value heads) add their bytes
    over the achieved HBM bandwidth plus one launch overhead each (``torch_ops`` of the row).
Every row carries the whole-op roofline (:mod:`.roofline`) and the ratio of its time to it."""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from . import roofline as R, soc_constants as SC
from .stages import Stage, fwd_stages

SCHEMA = "fla-npu-bench/1"
OPS = ("kda", "gdn", "prefix_shared_attention")
MODES = ("fwd",)
DTYPES = ("bf16", "fp16")
WARMUP, RUNS = 2, 5

# Published figures for the KDA forward at [B=1, T=8192, H=96, D=128] bf16 on a 910B3 (a2).
PUBLISHED = {
    ("kda", (1, 8192, 96, 128), "a2"): (
        {"name": "FLA Triton-Ascend (published)", "time_ms": 54.0,
         "source": "FLA Triton-Ascend KDA forward on a 910B3, as reported by the kda-ascendc benchmark"},
        {"name": "kda-ascendc (published)", "time_ms": 8.8,
         "source": "independent Ascend C KDA forward on a 910B3, e2e 8.79-8.81 ms (UsernameFull/kda-ascendc README)"},
    ),
}


def production_shapes() -> dict:
    """The production shapes (fla_npu/data/production.json)."""
    path = Path(__file__).resolve().parent.parent / "data" / "production.json"
    return json.loads(path.read_text())


@dataclass(frozen=True)
class Case:
    op: str
    shape: dict
    dtype: str
    mode: str
    group: str  # which list of production.json the shape comes from

    def key(self) -> tuple:
        s = self.shape
        if self.op == "prefix_shared_attention":
            return (s["bs"], s["G"], s["len_q"], s["len_kv"], s["D"])
        return (s["B"], s["T"], s["H"], s["K"]) if s["HV"] == s["H"] else (s["B"], s["T"], s["H"], s["HV"], s["K"])

    def label(self) -> str:
        return f"{self.op} {self.mode} [{','.join(map(str, self.key()))}] {self.dtype}"


def _delta_shape(s: dict) -> dict:
    if "D" in s:  # FLA's benchmark shapes: [B, T, H, D]
        return {"B": s["B"], "T": s["T"], "H": s["H"], "HV": s["H"], "K": s["D"], "V": s["D"]}
    return {k: s[k] for k in ("B", "T", "H", "HV", "K", "V")}


def parse_shape(text: str) -> tuple:
    try:
        return tuple(int(x) for x in text.strip("[]() ").split(","))
    except ValueError:
        raise ValueError(f"--shape takes comma-separated integers like 1,8192,96,128, got {text!r}") from None


def build_cases(ops=OPS, dtype: str = "bf16", mode: str = "fwd", shape: tuple | None = None) -> list[Case]:
    """The bench's cases: every production shape of ``ops`` (KDA also runs FLA's benchmark shapes),
    or only those whose key (``[B,T,H,K]``, ``[B,T,H,HV,K]`` or ``[bs,G,len_q,len_kv,D]``) is ``shape``."""
    if mode not in MODES:
        raise ValueError(f"--mode {mode}: only {', '.join(MODES)} is benchmarked so far")
    data = production_shapes()
    cases = []
    for op in ops:
        if op == "prefix_shared_attention":
            groups = [("prefix_shared_attention", s) for s in data["prefix_shared_attention"]]
        else:
            groups = [(op, _delta_shape(s)) for s in data[op]]
            if op == "kda":
                groups += [("fla_benchmark", _delta_shape(s)) for s in data["fla_benchmark"]]
        seen = set()
        for group, s in groups:
            c = Case(op, s, dtype, mode, group)
            if c.key() in seen or (shape is not None and c.key() != tuple(shape)):
                continue
            seen.add(c.key())
            cases.append(c)
    return cases


def roofline(case: Case, soc: SC.SocPerf) -> R.Roofline:
    if case.op == "prefix_shared_attention":
        return R.prefix_shared_attention_fwd(case.shape, case.dtype, soc)
    return R.delta_rule_fwd(case.shape, case.dtype, soc, per_key_gate=case.op == "kda")


def _roof_json(r: R.Roofline) -> dict:
    return {"bytes": r.bytes, "macs": r.macs, "memory_ms": r.memory_s * 1e3, "compute_ms": r.compute_s * 1e3,
            "floor_ms": r.floor_s * 1e3, "bound": r.bound}


# ---- model mode -----------------------------------------------------------------------------------

class _StageRuns:
    """Simulated launches of stage kernels, cached by (op, stage, scaled shape, dtype): the full
    shapes of one op mostly share a scaled shape."""

    def __init__(self):
        self._cache = {}

    def trace(self, op: str, stage: Stage, scaled: dict, dtype: str):
        from . import trace as T
        key = (op, stage.name, tuple(sorted(scaled.items())), dtype)
        if key not in self._cache:
            with T.tracing():
                stage.launch(scaled, dtype)
            self._cache[key] = T.last_trace()
        return self._cache[key]

    def torch_ops(self, op: str, scaled: dict, dtype: str):
        """The :class:`~.torch_traffic.TorchTraffic` of the op's forward at ``scaled`` on the simulation."""
        import os

        from .stages import forward_call
        from .torch_traffic import torch_traffic
        key = (op, "torch_ops", tuple(sorted(scaled.items())), dtype)
        if key not in self._cache:
            before = os.environ.get("FLA_NPU_CPU_IMPL")
            os.environ["FLA_NPU_CPU_IMPL"] = "sim"
            try:
                run = forward_call(op, scaled, dtype)
                with torch_traffic() as t:
                    run()
            finally:
                if before is None:
                    os.environ.pop("FLA_NPU_CPU_IMPL")
                else:
                    os.environ["FLA_NPU_CPU_IMPL"] = before
            self._cache[key] = t
        return self._cache[key]


def model_stage(op: str, stage: Stage, full: dict, dtype: str, soc: SC.SocPerf, runs: _StageRuns) -> dict:
    """The modelled time of ``stage`` at the full shape ``full`` on ``soc`` (see the module docstring)."""
    from . import model as M, trace as T

    why = stage.available()
    if why is not None:
        return {"stage": stage.name, "title": stage.title, "status": why, "time_ms": None}
    scaled = stage.scale(full)
    try:
        tr = runs.trace(op, stage, scaled, dtype)
    except Exception as e:  # a kernel that fails here is reported on its row, the others still run
        return {"stage": stage.name, "title": stage.title, "status": f"kernel failed: {type(e).__name__}: {e}",
                "time_ms": None}
    mixed = any(c.core_type == T.AIC for c in tr.cores) and any(c.core_type == T.AIV for c in tr.cores)
    aic_only = all(c.core_type == T.AIC for c in tr.cores)
    slots = soc.ai_cores if (mixed or aic_only) else soc.aiv_cores
    u_sim, u_full = stage.units(scaled), stage.units(full)
    # at the full shape every core of a type that moves GM bytes does so at once
    types = M.gm_moving_types(tr)
    requesters = (soc.ai_cores if T.AIC in types else 0) + (soc.aiv_cores if T.AIV in types else 0)
    est = M.estimate(tr, soc, requesters=max(1, requesters))
    per_unit = sum(est.blocks_s) / u_sim
    waves = math.ceil(u_full / slots)
    gm_full, ws_full = est.gm_bytes * u_full / u_sim, est.ws_bytes * u_full / u_sim
    gm_bound = M.gm_bound(soc, gm_full, ws_full)
    compute = waves * per_unit
    t = max(compute, gm_bound) + soc.launch_overhead_s
    busy = {p: sum(c.busy_s[p] for c in est.cores) for p in T.PIPE_NAMES}
    return {"stage": stage.name, "title": stage.title, "status": "model", "time_ms": t * 1e3, "kernel": tr.kernel,
            "scaled_shape": scaled, "units_simulated": u_sim, "units": u_full, "cores": slots,
            "per_unit_us": per_unit * 1e6, "gm_bytes": int(gm_full), "ws_bytes": int(ws_full),
            "gm_bound_ms": gm_bound * 1e3,
            "cube_macs": int(sum(int(c.records["amount"][(c.records["kind"] == 0) & (c.records["pipe"] == T.M)].sum())
                                 for c in tr.cores) * u_full / u_sim),
            "busiest_pipe": max(busy, key=busy.get), "bound": "gm" if gm_bound >= compute else "cores"}


def model_torch_ops(case: Case, soc: SC.SocPerf, runs: _StageRuns) -> dict | None:
    """The modelled time of the PyTorch operations around a chunked op's kernels at the full shape
    (see the module docstring); ``None`` for an op without them."""
    from .stages import scale_delta_rule, units_tokens

    if case.op not in ("kda", "gdn"):
        return None
    scaled = scale_delta_rule(case.shape)
    t = runs.torch_ops(case.op, scaled, case.dtype)
    full_bytes = (t.read_bytes + t.write_bytes) * units_tokens(case.shape) / units_tokens(scaled)
    seconds = full_bytes / (soc.hbm_bytes_per_s * soc.hbm_efficiency) + t.launches * soc.launch_overhead_s
    return {"status": "model", "time_ms": seconds * 1e3, "bytes": int(full_bytes), "launches": t.launches,
            "scaled_shape": scaled}


def model_case(case: Case, socs, runs: _StageRuns) -> list[dict]:
    """One row per SoC: the modelled stages of ``case``, their sum (the chain of today's kernels),
    the roofline and the published figures where there are any."""
    rows = []
    for name in socs:
        soc = SC.soc(name)
        stages = [model_stage(case.op, s, case.shape, case.dtype, soc, runs) for s in fwd_stages(case.op, case.shape, case.dtype)]
        modelled = [s for s in stages if s["time_ms"] is not None]
        torch_ops = model_torch_ops(case, soc, runs) if len(modelled) == len(stages) else None
        total = sum(s["time_ms"] for s in modelled) + (torch_ops["time_ms"] if torch_ops else 0.0) if modelled else None
        roof = roofline(case, soc)
        row = {"schema": SCHEMA, "source": "model", "impl": "fla_npu", "op": case.op, "mode": case.mode,
               "group": case.group, "shape": case.shape, "key": list(case.key()), "dtype": case.dtype, "soc": name,
               "soc_part": soc.part, "time_ms": total, "stages": stages, "torch_ops": torch_ops,
               "complete": len(modelled) == len(stages),
               "stages_without_kernel": [s["stage"] for s in stages if s["status"] == "reference (no kernel)"],
               "stages_failed": [s["stage"] for s in stages if s["status"].startswith("kernel failed")],
               "roofline": _roof_json(roof),
               "ratio_to_roofline": None if total is None else total / (roof.floor_s * 1e3),
               "published": list(PUBLISHED.get((case.op, case.key(), name), ()))}
        rows.append(row)
    return rows


def simulation_target() -> str:
    from ..runtime import _native
    return _native.target()


# ---- measured mode (an NPU) -----------------------------------------------------------------------

def npu_available() -> bool:
    try:
        import torch
        import torch_npu  # noqa: F401
        return torch.npu.is_available()
    except Exception:
        return False


def _npu_inputs(case: Case):  # pragma: no cover - needs an NPU
    import torch
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[case.dtype]
    dev = "npu"
    g = torch.Generator(device="cpu").manual_seed(0)
    if case.op == "prefix_shared_attention":
        s = case.shape
        q = torch.randn(s["bs"], s["G"], s["len_q"], s["D"], generator=g).to(dev, dt)
        k = torch.randn(s["bs"], s["len_kv"], s["D"], generator=g).to(dev, dt)
        v = torch.randn(s["bs"], s["len_kv"], s["D"], generator=g).to(dev, dt)
        return (q, k, v), {"scale": s["D"] ** -0.5}
    s = case.shape
    B, T, H, HV, K, V = (s[k] for k in ("B", "T", "H", "HV", "K", "V"))
    q = torch.randn(B, T, H, K, generator=g).to(dev, dt)
    k = torch.randn(B, T, H, K, generator=g).to(dev, dt)
    v = torch.randn(B, T, HV, V, generator=g).to(dev, dt)
    beta = torch.randn(B, T, HV, generator=g).to(dev, dt)
    if case.op == "kda":
        gate = torch.randn(B, T, HV, K, generator=g).to(dev, dt)
        A_log = torch.rand(HV, generator=g).to(dev, torch.float32)
        dt_bias = torch.randn(HV * K, generator=g).to(dev, torch.float32)
        sw = production_shapes()["kda_switches_production"]
        return (q, k, v, gate, beta), {"A_log": A_log, "dt_bias": dt_bias, **sw}
    gate = torch.nn.functional.logsigmoid(torch.randn(B, T, HV, generator=g)).to(dev, dt)
    return (q, k, v, gate, beta.sigmoid()), {"use_qk_l2norm_in_kernel": True}


def _implementations(op: str) -> dict:  # pragma: no cover - needs an NPU
    """name -> callable for the op: fla_npu's public function and, if FLA is installed, FLA's
    default path (its dispatch as FLA users call it)."""
    import fla_npu
    names = {"kda": ("chunk_kda", "fla.ops.kda"), "gdn": ("chunk_gated_delta_rule", "fla.ops.gated_delta_rule"),
             "prefix_shared_attention": ("prefix_shared_attention", None)}[op]
    impls = {"fla_npu": getattr(fla_npu, names[0])}
    if names[1]:
        try:
            import importlib
            fla_fn = getattr(importlib.import_module(names[1]), names[0])
        except Exception:
            return impls
        impls["fla_default"] = _adapter_off(fla_fn)
    return impls


def _adapter_off(fn):  # pragma: no cover - needs an NPU
    """``fn`` (an FLA function) called with fla-npu-adapter switched off, so that FLA's dispatch takes
    its default path (Triton-Ascend) even when FLA_ASCENDC is set; the adapter's state is restored."""
    try:
        import fla_npu_adapter as A
        from fla_npu_adapter import _state
    except ImportError:
        return fn

    def call(*args, **kwargs):
        saved = _state._override
        A.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            _state.set_override(saved)
    return call


def measure_case(case: Case, soc_name: str) -> list[dict]:  # pragma: no cover - needs an NPU
    """Measured rows of ``case`` on the current NPU: per implementation, the median and spread (min,
    max) of RUNS timed calls after WARMUP untimed ones, timed with device events, and the memory peak
    of one call; the ratio of each to fla_npu, and each output's relative RMS distance to fla_npu's
    (the full-shape agreement check: the float64 gold of ``fla-npu verify`` does not fit these shapes)."""
    import torch
    args, kwargs = _npu_inputs(case)
    roof = roofline(case, SC.soc(soc_name))
    rows, outputs = [], {}
    for name, fn in _implementations(case.op).items():
        try:
            first = fn(*args, **kwargs)
            outputs[name] = (first[0] if isinstance(first, tuple) else first).float().cpu()
            for _ in range(WARMUP - 1):
                fn(*args, **kwargs)
            torch.npu.synchronize()
            times = []
            for _ in range(RUNS):
                start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
                start.record()
                fn(*args, **kwargs)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            torch.npu.reset_peak_memory_stats()
            base = torch.npu.memory_allocated()
            fn(*args, **kwargs)
            torch.npu.synchronize()
            peak = torch.npu.max_memory_allocated() - base
            med = statistics.median(times)
            rows.append({"schema": SCHEMA, "source": "measured", "impl": name, "op": case.op, "mode": case.mode,
                         "group": case.group, "shape": case.shape, "key": list(case.key()), "dtype": case.dtype,
                         "soc": soc_name, "device": torch.npu.get_device_name(), "time_ms": med,
                         "spread_ms": [min(times), max(times)], "runs_ms": times, "peak_memory_bytes": int(peak),
                         "roofline": _roof_json(roof), "ratio_to_roofline": med / (roof.floor_s * 1e3),
                         "published": list(PUBLISHED.get((case.op, case.key(), soc_name), ()))})
        except Exception as e:  # one implementation failing must not hide the others
            rows.append({"schema": SCHEMA, "source": "measured", "impl": name, "op": case.op, "mode": case.mode,
                         "group": case.group, "shape": case.shape, "key": list(case.key()), "dtype": case.dtype,
                         "soc": soc_name, "time_ms": None, "error": f"{type(e).__name__}: {e}"})
    ref = next((r["time_ms"] for r in rows if r["impl"] == "fla_npu" and r.get("time_ms")), None)
    from ..testing import rel_rms
    for r in rows:
        r["ratio_to_fla_npu"] = None if not (ref and r.get("time_ms")) else r["time_ms"] / ref
        # the full-shape cross-check: this implementation's output against fla_npu's (relative RMS)
        ok = r["impl"] in outputs and "fla_npu" in outputs and outputs[r["impl"]].shape == outputs["fla_npu"].shape
        r["output_rel_rms_vs_fla_npu"] = float(rel_rms(outputs[r["impl"]], outputs["fla_npu"])) if ok else None
    return rows


def device_soc() -> str:  # pragma: no cover - needs an NPU
    from ..runtime import flavour
    return flavour.build_info().get("soc") or "a2"


# ---- output ---------------------------------------------------------------------------------------

def _ms(x) -> str:
    return "-" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def format_table(rows: list[dict]) -> str:
    """The terminal table: one line per row; model rows say which stages have no kernel."""
    head = ("case", "soc", "source", "impl", "time ms", "roofline ms", "x roofline", "note")
    lines = []
    for r in rows:
        note = ""
        if r["source"] == "model" and not r["complete"]:
            modelled = sum(1 for s in r["stages"] if s["time_ms"] is not None)
            note = f"kernels: {modelled}/{len(r['stages'])} stages" + \
                   "".join(f"; {what}: {', '.join(r[k])}" for k, what in
                           (("stages_without_kernel", "reference (no kernel)"), ("stages_failed", "kernel failed"))
                           if r[k])
        if r["source"] == "model" and r.get("trace_arch_matches") is False:
            note += f"{'; ' if note else ''}traces of {r['trace_from']} (another architecture: run with that SoC's sim build)"
        if r.get("error"):
            note = r["error"]
        if r.get("spread_ms"):
            note = f"spread {_ms(r['spread_ms'][0])}..{_ms(r['spread_ms'][1])}, peak {r['peak_memory_bytes'] / 2**20:.0f} MiB" + \
                   (f", x{r['ratio_to_fla_npu']:.2f} of fla_npu" if r.get("ratio_to_fla_npu") else "")
        ratio = r.get("ratio_to_roofline")
        lines.append((f"{r['op']} {r['mode']} [{','.join(map(str, r['key']))}] {r['dtype']}", r["soc"], r["source"], r["impl"],
                      _ms(r["time_ms"]), _ms(r.get("roofline", {}).get("floor_ms")), "-" if ratio is None else f"{ratio:.1f}",
                      note))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths))] + [fmt.format(*x) for x in lines])


def headline(rows: list[dict]) -> str | None:
    """KDA forward [1,8192,96,128] on a2: the modelled chain, the roofline floor and the published
    figures, side by side (``None`` if that row is not among ``rows``)."""
    for r in rows:
        if r["op"] == "kda" and tuple(r["key"]) == (1, 8192, 96, 128) and r["soc"] == "a2" and r["source"] == "model":
            modelled = sum(1 for s in r["stages"] if s["time_ms"] is not None)
            out = [f"KDA forward [1,8192,96,128] {r['dtype']} on a2 ({r['soc_part']}):",
                   f"  fla_npu today (model; its kernels and the PyTorch ops around them): {_ms(r['time_ms'])} ms for "
                   f"{modelled} of {len(r['stages'])} stages "
                   f"(no kernel yet: {', '.join(r['stages_without_kernel']) or 'none'})"]
            for s in r["stages"]:
                out.append(f"    {s['title']:<32} {s['status'] if s['time_ms'] is None else _ms(s['time_ms']) + ' ms (model)'}")
            if r.get("torch_ops"):
                t = r["torch_ops"]
                out.append(f"    {'PyTorch ops around them':<32} {_ms(t['time_ms'])} ms (model: {t['launches']} launches, "
                           f"{t['bytes'] / 1e9:.2f} GB)")
            roof = r["roofline"]
            out.append(f"  roofline floor: {_ms(roof['floor_ms'])} ms ({roof['bound']}-bound: {roof['bytes'] / 1e9:.2f} GB "
                       f"-> {_ms(roof['memory_ms'])} ms, {2 * roof['macs'] / 1e9:.0f} GFLOP -> {_ms(roof['compute_ms'])} ms)")
            for p in r["published"]:
                out.append(f"  {p['name']}: {_ms(p['time_ms'])} ms (published figure, 910B3)")
            return "\n".join(out)
    return None


def plot(rows: list[dict], path: str) -> None:
    """A PNG chart: time per case (one bar per SoC, source and implementation; hatched when stages
    without a kernel are left out), the roofline floor as a dotted segment, the published figures
    as dashed segments over their case. Needs matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install matplotlib") from None

    def label(r):
        return f"{r['op'].replace('prefix_shared_attention', 'psa')} [{','.join(map(str, r['key']))}]"

    timed = [r for r in rows if r.get("time_ms")]
    labels = list(dict.fromkeys(label(r) for r in timed))
    series = list(dict.fromkeys((r["soc"], r["source"], r["impl"]) for r in timed))
    fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(labels) + 3), 5.5))
    width = 0.8 / max(1, len(series))
    for i, ser in enumerate(series):
        for j, lab in enumerate(labels):
            r = next((r for r in timed if (r["soc"], r["source"], r["impl"]) == ser and label(r) == lab), None)
            if r:
                ax.bar(j + i * width, r["time_ms"], width, color=f"C{i}", hatch=None if r.get("complete", True) else "//",
                       edgecolor="white", label=f"{ser[2]} {ser[0]} ({ser[1]})" if j == labels.index(label(r)) else None)
    for j, lab in enumerate(labels):
        mine = [r for r in timed if label(r) == lab]
        floors = [r["roofline"]["floor_ms"] for r in mine if r.get("roofline")]
        if floors:
            ax.plot([j - width / 2, j + 0.8 - width / 2], [min(floors)] * 2, "k:", linewidth=1.2)
        published = {p["name"]: p["time_ms"] for r in mine for p in r.get("published", ())}
        for name, t in published.items():
            ax.plot([j - width / 2, j + 0.8 - width / 2], [t, t], "--", color="grey", linewidth=1)
            ax.text(j + 0.8, t, f" {name}: {t:g} ms", fontsize=7, va="center")
    handles, names = ax.get_legend_handles_labels()
    by_name = dict(zip(names, handles))
    ax.set_yscale("log")
    ax.set_ylabel("ms (log scale)")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))])
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_title("fla-npu bench. dotted: roofline floor; dashed: published figures; hatched (model): stages without "
                 "a kernel left out. model = timing model of the simulated kernels, not a measurement", fontsize=8)
    ax.legend(by_name.values(), by_name.keys(), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(cases: list[Case], socs, out_path: str | None, progress, force_model: bool = False) -> list[dict]:
    """Run the cases (measured on an NPU unless ``force_model``, else modelled for ``socs``), calling
    ``progress(i, n, case, rows, seconds)`` after each; JSON lines to ``out_path``. Returns the rows."""
    measured = not force_model and npu_available()
    runs = _StageRuns()
    rows = []
    out = open(out_path, "w", encoding="utf-8") if out_path else None
    try:
        for i, case in enumerate(cases, 1):
            t0 = time.perf_counter()
            got = measure_case(case, device_soc()) if measured else model_case(case, socs, runs)
            if not measured:
                target = simulation_target()
                for r in got:
                    r["trace_from"] = target
                    r["trace_arch_matches"] = SC.ARCH.get(target.removeprefix("sim-")) == SC.ARCH[r["soc"]]
            rows += got
            if out:
                for r in got:
                    out.write(json.dumps(r, allow_nan=False) + "\n")
                out.flush()
            progress(i, len(cases), case, got, time.perf_counter() - t0)
    finally:
        if out:
            out.close()
    return rows
