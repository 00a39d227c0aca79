"""CPU benchmark of the chunked PyTorch reference against the token-by-token recurrence.

Measured side by side in one run, fp32, ``[B=1, T=4096, H=16, K=V=128]`` by default:
- forward: ``fla_npu.chunk_kda`` vs FLA's ``naive_recurrent_kda`` (fla_npu's own naive recurrence
  when FLA is not installed);
- forward + backward: ``fla_npu.chunk_kda`` vs autograd through that naive recurrence;
- the same for Gated DeltaNet (``--ops kda,gdn``);
- peak memory (resident set growth) of ``chunk_kda`` forward + backward at ``T=8192``.

The peak memory and the autograd-through-naive baseline run in fresh subprocesses (the latter
keeps every step's state for backward: several GB at T=4096).

Times are medians over ``--repeats`` runs after one warm-up (the slow autograd-through-naive
baseline runs once). Not a test: nothing here gates CI.

    python benchmarks/bench_reference.py [--T 4096] [--H 16] [--D 128] [--repeats 3] [--mem-T 8192]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings

import torch
import torch.nn.functional as F

import fla_npu


def naive_baselines():
    """FLA's naive recurrences when FLA is installed, else fla_npu's own (same math)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
            from fla.ops.kda.naive import naive_recurrent_kda
        return "FLA", naive_recurrent_kda, naive_recurrent_gated_delta_rule
    except ImportError:
        from fla_npu.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
        from fla_npu.ops.kda.naive import naive_recurrent_kda
        return "fla_npu", naive_recurrent_kda, naive_recurrent_gated_delta_rule


def make_inputs(op: str, B: int, T: int, H: int, D: int, requires_grad: bool):
    torch.manual_seed(0)
    q = torch.randn(B, T, H, D)
    k = F.normalize(torch.randn(B, T, H, D), dim=-1)
    v = torch.randn(B, T, H, D)
    g = F.logsigmoid(torch.randn(B, T, H, D) if op == "kda" else torch.randn(B, T, H))
    beta = torch.rand(B, T, H)
    ts = [q, k, v, g, beta]
    return [t.requires_grad_(requires_grad) for t in ts]


def timed(fn, repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_op(op: str, args, naive_kda, naive_gdn, t_naive_fb: float) -> dict:
    B, T, H, D = 1, args.T, args.H, args.D
    chunk = fla_npu.chunk_kda if op == "kda" else fla_npu.chunk_gated_delta_rule

    def naive(q, k, v, g, beta):
        return naive_kda(q, k, v, g, beta) if op == "kda" else naive_gdn(q, k, v, beta, g)

    def fwd(fn):
        ins = make_inputs(op, B, T, H, D, False)
        return lambda: fn(*ins)

    def fwdbwd(fn):
        ins = make_inputs(op, B, T, H, D, True)

        def run():
            o = fn(*ins)[0]
            o.backward(torch.ones_like(o))
        return run

    print(f"[{op}] forward ...", file=sys.stderr, flush=True)
    t_fwd = timed(fwd(chunk), args.repeats)
    t_naive_fwd = timed(fwd(naive), args.repeats)
    print(f"[{op}] forward+backward ...", file=sys.stderr, flush=True)
    t_fb = timed(fwdbwd(chunk), args.repeats)
    return {"op": op, "B": B, "T": T, "H": H, "D": D,
            "chunk_fwd_s": t_fwd, "naive_fwd_s": t_naive_fwd, "fwd_speedup": t_naive_fwd / t_fwd,
            "chunk_fwdbwd_s": t_fb, "naive_fwdbwd_s": t_naive_fb, "fwdbwd_speedup": t_naive_fb / t_fb}


def run_child(what: str, op: str, T: int, H: int, D: int) -> None:
    """Measurements that must not share a process with the others (their memory would stay)."""
    if what == "peak-memory":
        ins = make_inputs(op, 1, T, H, D, True)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        chunk = fla_npu.chunk_kda if op == "kda" else fla_npu.chunk_gated_delta_rule
        o = chunk(*ins)[0]
        o.backward(torch.ones_like(o))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"peak_growth_gb": (peak - base) / 2**20}))
    else:
        _, naive_kda, naive_gdn = naive_baselines()
        ins = make_inputs(op, 1, T, H, D, True)
        t0 = time.perf_counter()
        o = naive_kda(*ins)[0] if op == "kda" else naive_gdn(ins[0], ins[1], ins[2], ins[4], ins[3])[0]
        o.backward(torch.ones_like(o))
        print(json.dumps({"seconds": time.perf_counter() - t0}))


def child(what: str, op: str, T: int, H: int, D: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", what, op, str(T), str(H), str(D)],
                         check=True, capture_output=True, text=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=int, default=4096)
    ap.add_argument("--H", type=int, default=16)
    ap.add_argument("--D", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mem-T", type=int, default=8192)
    ap.add_argument("--ops", default="kda,gdn")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        what, op, *dims = args.child
        run_child(what, op, *map(int, dims))
        return

    source, naive_kda, naive_gdn = naive_baselines()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; baseline: {source} naive recurrence",
          file=sys.stderr)
    print(f"[kda] peak memory of forward+backward at T={args.mem_T} (in a subprocess) ...", file=sys.stderr, flush=True)
    mem = child("peak-memory", "kda", args.mem_T, args.H, args.D)["peak_growth_gb"]
    ops = args.ops.split(",")
    naive_fb = {}
    for op in ops:  # first, while this process is small: the baseline needs most of the memory
        print(f"[{op}] autograd through the naive recurrence (slow; in a subprocess) ...", file=sys.stderr, flush=True)
        naive_fb[op] = child("naive-fwdbwd", op, args.T, args.H, args.D)["seconds"]
    rows = [bench_op(op, args, naive_kda, naive_gdn, naive_fb[op]) for op in ops]

    print(f"\nfp32, B=1 T={args.T} H={args.H} K=V={args.D}; baseline = {source} naive recurrence")
    print(f"{'op':5} {'chunk fwd':>10} {'naive fwd':>10} {'ratio':>7} {'chunk f+b':>10} {'naive f+b':>10} {'ratio':>7}")
    for r in rows:
        print(f"{r['op']:5} {r['chunk_fwd_s']:9.3f}s {r['naive_fwd_s']:9.3f}s {r['fwd_speedup']:6.1f}x "
              f"{r['chunk_fwdbwd_s']:9.3f}s {r['naive_fwdbwd_s']:9.3f}s {r['fwdbwd_speedup']:6.1f}x")
    print(f"chunk_kda forward+backward peak memory growth at [1, {args.mem_T}, {args.H}, {args.D}]: {mem:.2f} GB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "peak_memory_gb": mem, "baseline": source}, f, indent=1)


if __name__ == "__main__":
    main()
