"""The ``fla-npu`` command.

``fla-npu verify``  checks every registered implementation against the float64 gold on the
                    production shapes scaled down for the CPU (see :mod:`fla_npu.verify`); exit code 0
                    iff every row passes.
``fla-npu info``    prints the versions and which implementation CPU tensors use.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from . import __version__, verify as V


def _ops_arg(text: str) -> list[str]:
    ops = [o.strip() for o in text.split(",") if o.strip()]
    bad = [o for o in ops if o not in V.OPS]
    if bad or not ops:
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(V.OPS)}, got {text!r}")
    return ops


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fla-npu`` command (subcommands ``verify`` and ``info``)."""
    parser = argparse.ArgumentParser(prog="fla-npu", description="fla_npu: verification and information.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "verify", help="check every implementation against the float64 gold on scaled production shapes",
        description="Run KDA and Gated DeltaNet on the production shapes (scaled down for the CPU: "
                    "T -> 64*max(1, floor(log2 T)-11) + 32, H -> max(1, H//16) keeping HV/H, B and K/V kept) "
                    "with every switch set, plus a varlen and a decode case per op, forward and backward, "
                    "and compare with the float64 naive recurrence. Exit code 0 iff every row passes.")
    p.add_argument("--dtype", choices=list(V.DTYPES), default="bf16",
                   help="dtype of q/k/v/g/beta (default bf16, as in production); sets the tolerance")
    p.add_argument("--json", default="verify-results.jsonl", metavar="PATH",
                   help="write one JSON object per row here (default: ./verify-results.jsonl)")
    p.add_argument("--quick", action="store_true",
                   help="only the first production shape per op (each switch set), the varlen and decode cases")
    p.add_argument("--ops", type=_ops_arg, default=list(V.OPS), metavar="kda,gdn",
                   help="ops to verify (default: kda,gdn)")
    p.add_argument("--scale", choices=list(V.SCALES), default="cpu",
                   help="cpu (default): K and V kept; small: K and V capped at 64 as well")
    p.add_argument("--impl", default=None, metavar="NAMES",
                   help="comma-separated implementations to check (default: every available one: "
                        + ", ".join(i.name for i in V.implementations(include_unavailable=True)) + ")")

    sub.add_parser("info", help="print versions and the implementation CPU tensors use")
    return parser


def _select_impls(names: str | None) -> list[V.Implementation]:
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


def cmd_info(args: argparse.Namespace) -> int:
    """Run ``fla-npu info``: fla_npu and torch versions and the implementation CPU tensors use."""
    print(f"fla_npu {__version__}")
    print(f"torch {torch.__version__}")
    print("CPU tensors: the chunked PyTorch reference (fla_npu.ops.common.chunk; decode: fla_npu.ops.common.recurrent)")
    from . import runtime
    try:
        lib = f"{runtime.library_path()} ({runtime.target()})"
    except runtime.NativeLibraryError:
        lib = f"not installed ({runtime.library_path()})"
    print(f"native library: {lib}")
    try:
        impl = runtime.cpu_impl()
    except ValueError as e:
        impl = f"invalid: {e}"
    print(f"FLA_NPU_CPU_IMPL: {impl} (sim: kda_gate_chunk_cumsum, gdn_gate_chunk_cumsum run the simulated kernel)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fla-npu`` console command; returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "verify":
        return cmd_verify(args)
    return cmd_info(args)


if __name__ == "__main__":
    sys.exit(main())
