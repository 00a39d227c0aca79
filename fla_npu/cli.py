"""The ``fla-npu`` command.

``fla-npu verify``  checks every registered implementation against the float64 gold on the
                    production shapes scaled down for the CPU (see :mod:`fla_npu.verify`); exit code 0
                    iff every row passes.
``fla-npu info``    prints the versions and which implementation CPU tensors use.
``fla-npu bench``   times the ops on the production shapes: measured on an NPU, otherwise modelled
                    per SoC from the simulated kernels' instruction traces (see :mod:`fla_npu.perf.bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from . import __version__, verify_choices as choices

# torch (and so fla_npu.verify) is imported by the commands that need it, never to parse arguments:
# `fla-npu --help` and argument errors answer at once.


def _ops_arg(text: str) -> list[str]:
    ops = [o.strip() for o in text.split(",") if o.strip()]
    bad = [o for o in ops if o not in choices.OPS]
    if bad or not ops:
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(choices.OPS)}, got {text!r}")
    return ops


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fla-npu`` command (subcommands ``verify``, ``bench`` and ``info``)."""
    parser = argparse.ArgumentParser(prog="fla-npu", description="fla_npu: verification, benchmark and information.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "verify", help="check every implementation against the float64 gold on scaled production shapes",
        description="Run KDA and Gated DeltaNet on the production shapes (scaled down for the CPU: "
                    "T -> 64*max(1, floor(log2 T)-11) + 32, H -> max(1, H//16) keeping HV/H, B and K/V kept) "
                    "with every switch set, plus a varlen and a decode case per op, forward and backward, "
                    "and compare with the float64 naive recurrence. Exit code 0 iff every row passes.")
    p.add_argument("--dtype", choices=list(choices.DTYPE_NAMES), default="bf16",
                   help="dtype of q/k/v/g/beta (default bf16, as in production); sets the tolerance")
    p.add_argument("--json", default="verify-results.jsonl", metavar="PATH",
                   help="write one JSON object per row here (default: ./verify-results.jsonl)")
    p.add_argument("--quick", action="store_true",
                   help="only the first production shape per op (each switch set), the varlen and decode cases")
    p.add_argument("--ops", type=_ops_arg, default=list(choices.OPS), metavar="kda,gdn",
                   help="ops to verify (default: kda,gdn)")
    p.add_argument("--scale", choices=list(choices.SCALES), default="cpu",
                   help="cpu (default): K and V kept; small: K and V capped at 64 as well")
    p.add_argument("--impl", default=None, metavar="NAMES",
                   help="comma-separated implementations to check (default: every available one: "
                        + ", ".join(choices.BUILTIN_IMPLEMENTATIONS) + ")")

    p = sub.add_parser(
        "bench", help="time the ops on the production shapes (measured on an NPU, else modelled per SoC)",
        description="On an NPU (torch_npu): wall time with device events, median and spread of 5 runs after 2 "
                    "warm-ups, fla_npu and FLA's default path side by side, memory peak. Elsewhere: the stage kernels "
                    "run on the host simulation at scaled shapes and the timing model (fla_npu.perf) predicts the full "
                    "shapes per SoC, labelled `model`; stages without a kernel are reported as 'reference (no kernel)'. "
                    "Every row carries the whole-op roofline.")
    p.add_argument("--op", default=",".join(BENCH_OPS), metavar="OPS",
                   help=f"comma-separated subset of {','.join(BENCH_OPS)} (default: all)")
    p.add_argument("--shape", default=None, metavar="DIMS",
                   help="only this shape: B,T,H,K (B,T,H,HV,K with GVA) or bs,G,len_q,len_kv,D (default: every production shape)")
    p.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16", help="input dtype (default bf16)")
    p.add_argument("--mode", choices=("fwd",), default="fwd", help="fwd (the forward; backward and decode: not yet)")
    p.add_argument("--soc", default="a2,a3,a5", metavar="SOCS", help="SoCs to model without an NPU (default a2,a3,a5)")
    p.add_argument("--out", default="bench-results.jsonl", metavar="PATH",
                   help="one JSON object per row here (default: ./bench-results.jsonl)")
    p.add_argument("--plot", default=None, metavar="PNG", nargs="?", const="bench.png",
                   help="also draw a chart (default file bench.png; needs matplotlib)")
    p.add_argument("--model", action="store_true", help="model even when an NPU is present")

    p = sub.add_parser("info", help="print the installed flavour, its build, CANN, the operator package, the device",
                       description="Version, flavour and SoC, source revision, build options, CANN version found, "
                                   "embedded operator package and whether CANN sees it, device SoC, kernels "
                                   "available, routes, and (with FLA and fla-npu-adapter) FLA's backends.")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout (for machines)")
    return parser


BENCH_OPS = ("kda", "gdn", "prefix_shared_attention")


def cmd_bench(args: argparse.Namespace) -> int:
    """Run ``fla-npu bench``: progress on stderr, the table and the KDA headline on stdout, rows to
    ``--out``, the chart to ``--plot``. Returns 0, or 2 on a usage error or when nothing ran."""
    from .perf import bench as PB, soc_constants as SC

    try:
        ops = [o.strip() for o in args.op.split(",") if o.strip()]
        bad = [o for o in ops if o not in BENCH_OPS]
        if bad or not ops:
            raise ValueError(f"--op: expected a comma-separated subset of {','.join(BENCH_OPS)}, got {args.op!r}")
        socs = [s.strip() for s in args.soc.split(",") if s.strip()]
        for s in socs:
            SC.soc(s)
        shape = PB.parse_shape(args.shape) if args.shape else None
        cases = PB.build_cases(ops, args.dtype, args.mode, shape)
    except ValueError as e:
        print(f"fla-npu bench: {e}", file=sys.stderr)
        return 2
    if not cases:
        print(f"fla-npu bench: no production shape of {','.join(ops)} matches --shape {args.shape}", file=sys.stderr)
        return 2
    measured = not args.model and PB.npu_available()
    how = "measured on the NPU" if measured else f"model for {','.join(socs)} (no NPU: simulated kernels + timing model)"
    print(f"fla-npu bench: {len(cases)} cases, {args.dtype}, {args.mode}, {how}", file=sys.stderr, flush=True)
    start = time.perf_counter()

    def progress(i, n, case, rows, secs):
        times = ", ".join(f"{r['soc']} {r['impl']} " + ("-" if r["time_ms"] is None else f"{r['time_ms']:.3f}") + " ms"
                          for r in rows)
        source = rows[0]["source"] if rows else "-"
        print(f"[{i}/{n}] {case.label()}: {times} ({source}; {secs:.1f}s)", file=sys.stderr, flush=True)

    try:
        rows = PB.run(cases, socs, args.out, progress, force_model=args.model)
    except Exception as e:  # the library missing, a kernel failing: say which and stop
        print(f"fla-npu bench: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    print(PB.format_table(rows))
    head = PB.headline(rows)
    if head:
        print()
        print(head)
    if args.plot:
        try:
            PB.plot(rows, args.plot)
            print(f"chart written to {args.plot}", file=sys.stderr)
        except RuntimeError as e:
            print(f"fla-npu bench: {e}", file=sys.stderr)
            return 2
    print(f"{time.perf_counter() - start:.1f}s; rows written to {args.out}", file=sys.stderr)
    return 0


def _select_impls(names: str | None) -> list:
    from . import verify as V

    if names is None:
        return V.implementations()
    known = {i.name: i for i in V.implementations(include_unavailable=True)}
    chosen = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in known:
            raise ValueError(f"unknown implementation {name!r}; registered: {', '.join(known)}")
        reason = known[name].reason_unavailable()
        if reason is not None:
            raise ValueError(f"implementation {name!r} is unavailable here: {reason}")
        chosen.append(known[name])
    return chosen


def cmd_verify(args: argparse.Namespace) -> int:
    """Run ``fla-npu verify``: progress on stderr, rows to ``--json``, the table on stdout.
    Returns 0 iff every row passes, 1 if any fails, 2 on a usage error or if nothing ran."""
    from . import verify as V

    try:
        impls = _select_impls(args.impl)
    except ValueError as e:
        print(f"fla-npu verify: {e}", file=sys.stderr)
        return 2
    cases = V.build_cases(ops=args.ops, scale=args.scale, quick=args.quick)
    print(f"fla-npu verify: {len(cases)} cases x {len(impls)} implementation(s) "
          f"[{', '.join(i.name for i in impls)}], dtype {args.dtype}, scale {args.scale}"
          f"{', quick' if args.quick else ''}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    with open(args.json, "w", encoding="utf-8") as out:
        def on_row(n, total, case, row):
            print(f"[{n}/{total}] {V.describe_row(row)}", file=sys.stderr, flush=True)
            out.write(json.dumps(row, allow_nan=False) + "\n")
            out.flush()

        rows = V.verify(cases, impls, args.dtype, on_row)
    if not rows:
        print("fla-npu verify: nothing to run (no implementation provides the selected ops)", file=sys.stderr)
        return 2
    print(V.format_table(rows))
    print(f"{time.perf_counter() - start:.1f}s; rows written to {args.json}", file=sys.stderr)
    return 0 if all(r["passed"] for r in rows) else 1


def collect_info() -> dict:
    """What ``fla-npu info`` reports, as a dict (never raises: each failure is reported as a value)."""
    import torch

    from . import runtime
    from .runtime import bootstrap as B, cann as C, flavour as F

    bi = F.build_info()
    out = {"version": __version__, "torch": torch.__version__, "distribution": bi.get("distribution"),
           "flavour": bi.get("flavour"), "soc": bi.get("soc"), "source_revision": bi.get("source_revision"),
           "source_dirty": bi.get("source_dirty"), "build": bi,
           "installed_flavours": [f.get("distribution") or F.dist_name(f.get("flavour", "?"))
                                  for f in F.installed_flavours()]}
    version, where = C.runtime_version()
    out["cann"] = {"version": version, "where": where, "floor": bi.get("cann_floor"),
                   "meets_floor": C.version_at_least(version, bi.get("cann_floor")) if bi.get("cann_floor") else None}
    out["operator_package"] = B.opp_status()
    if bi.get("flavour") in F.NPU_FLAVOURS or "torch_npu" in sys.modules:
        soc, source = B.detect_device_soc()
        out["device"] = {"soc": soc, "family": B.soc_family(soc) if soc else None, "source": source}
    else:
        out["device"] = {"soc": None, "family": None, "source": "not queried (sim flavour: no NPU kernels)"}
    lib = {"path": str(runtime.library_path()), "loaded": False, "target": None, "error": None}
    if bi.get("flavour") in F.NPU_FLAVOURS:
        lib["error"] = "not loaded by `info` (NPU kernels load on first use on an NPU)"
    else:
        try:
            lib["target"] = runtime.target()
            lib["loaded"] = True
        except runtime.NativeLibraryError as e:
            lib["error"] = str(e)
    out["native_library"] = lib
    from .runtime import kernels as K
    try:
        kernels = list(K.all_kernels())  # the build's op table
    except runtime.NativeLibraryError:
        kernels = []
    out["kernels"] = kernels if lib["loaded"] or bi.get("flavour") in F.NPU_FLAVOURS else []
    try:
        out["cpu_impl"] = runtime.cpu_impl()
    except ValueError as e:
        out["cpu_impl"] = f"invalid: {e}"
    out["fla_backends"] = _fla_backends()
    return out


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _fla_backends() -> dict | None:
    """With fla-npu-adapter installed: which FLA functions fla_npu claims, per device, and whether
    the adapter is switched on (``None`` without the adapter)."""
    if not _has_module("fla_npu_adapter"):
        return None
    try:
        from fla_npu_adapter import _discovery, _state

        claims = _discovery.read_claims()
        enabled = _state.env_on()  # the adapter's own definition of "on"
        value = os.environ.get(_state.ENV_SWITCH)
        switch = f"{_state.ENV_SWITCH} unset" if value is None else f"{_state.ENV_SWITCH}={value!r}"
        return {"adapter_enabled": enabled, "switch": switch, "fla_installed": _has_module("fla"),
                "claims": {k: sorted({str(t) for c in v for t in c.targets}) for k, v in claims.items()},
                "route": "fla_npu for the claimed devices (calls its verifier accepts)" if enabled
                else f"FLA's default (adapter off: {_state.ENV_SWITCH} unset, empty or 0)"}
    except Exception as e:  # noqa: BLE001 - info never fails
        return {"error": f"{type(e).__name__}: {e}"}


def cmd_info(args: argparse.Namespace) -> int:
    """Run ``fla-npu info`` (``--json``: one JSON object)."""
    info = collect_info()
    if getattr(args, "json", False):
        print(json.dumps(info, indent=1, default=str))
        return 0
    b = info["build"]
    print(f"fla_npu {info['version']} ({info['distribution'] or 'source tree, not built'}), torch {info['torch']}")
    print(f"flavour: {info['flavour']} (SoC {info['soc']}); installed flavours: {info['installed_flavours'] or 'none'}")
    print(f"source revision: {info['source_revision']}" + (" (dirty)" if info["source_dirty"] else "")
          + f"; built {b.get('build_date')} by {b.get('build_driver')} with {b.get('compiler')}")
    print(f"build options: {b.get('build_options')}")
    c = info["cann"]
    print(f"CANN: {c['version'] or 'not found'} ({c['where']})" + (f"; wheel floor {c['floor']}" if c["floor"] else ""))
    o = info["operator_package"]
    if o.get("vendor_dirs"):
        print(f"operator package: {', '.join(o['vendor_dirs'])}; in ASCEND_CUSTOM_OPP_PATH: {o['in_env']}; "
              f"set by torch's autoload: {bool((o.get('autoload') or {}).get('vendor_dirs'))}")
    else:
        print("operator package: none embedded")
    d = info["device"]
    print(f"device: {d['soc'] or 'no NPU'} ({d['source']})")
    lib = info["native_library"]
    print(f"native library: {lib['path']} " + (f"({lib['target']})" if lib["loaded"] else f"- {lib['error']}"))
    print(f"kernels: {', '.join(info['kernels']) or 'none'}")
    print("CPU tensors: the chunked PyTorch reference (fla_npu.ops.common.chunk; decode: fla_npu.ops.common.recurrent)")
    print(f"FLA_NPU_CPU_IMPL: {info['cpu_impl']} (sim: kda_gate_chunk_cumsum, gdn_gate_chunk_cumsum, prefix_shared_attention "
          "(fp16/bf16) and the forward of chunk_kda / chunk_gated_delta_rule (fp16/bf16: all five stages; fp32: the "
          "gate cumsum) run the simulated kernels; the backward runs the reference)")
    _print_fla_backends(info["fla_backends"])
    return 0


def _print_fla_backends(fb: dict | None) -> None:
    """The FLA part of ``fla-npu info`` as lines of text."""
    if fb is None:
        print("FLA adapter: fla-npu-adapter not installed (FLA uses its default path)")
        return
    if "error" in fb:
        print(f"FLA adapter: could not be inspected ({fb['error']})")
        return
    print(f"FLA adapter: {'on' if fb['adapter_enabled'] else 'off'} ({fb['switch']}); "
          f"FLA {'installed' if fb['fla_installed'] else 'not installed'}")
    by_devices: dict = {}
    for key, devices in fb["claims"].items():
        by_devices.setdefault(", ".join(devices), []).append(key)
    for devices, keys in by_devices.items():
        print(f"  fla_npu serves on {devices}: {', '.join(keys)}")
    if not by_devices:
        print("  fla_npu serves nothing (no entry point in the group fla_npu.kernels)")
    print(f"  route: {fb['route']}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fla-npu`` console command; returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "verify":
        return cmd_verify(args)
    if args.command == "bench":
        return cmd_bench(args)
    return cmd_info(args)


if __name__ == "__main__":
    sys.exit(main())
