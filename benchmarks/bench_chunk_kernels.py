"""The chunked KDA / GDN forward on the Ascend C kernels, measured by the host simulation's counters.

For ``[1, T, H, 128, 128]`` bf16 with the production switches (KDA: gate, beta sigmoid and q/k
l2norm in the kernel, safe gate, lower bound -5; GDN: gate, beta sigmoid, q/k l2norm in the
kernel), at a scaled ``T`` and ``H`` (default 512, 2), ``FLA_NPU_CPU_IMPL=sim`` and
``fla_npu.profile()``, it prints per op:

- the kernels launched, in order (every stage should be: two launches, stage 1, then stages 2-5 in
  one);
- the Cube's share of the multiply-adds: ``cube_macs / (cube_macs + vector_ops)``, counting every
  vector element operation as a multiply-add (casts, exponentials and copies included, so the share is
  a lower bound). It depends on the gate for KDA: a 16 x 16 diagonal block of the intra-chunk
  matrices whose decay spans more than the Cube's factoring allows is computed per pair on the vector
  unit. The gate here is the raw projection ~ N(0, 1) with ``A_log = log U(1, 16)`` (as models
  initialise it): per-step log decays around -2.5 (every diagonal block on the Cube since it factors
  through the block's middle row; on the vector unit before: 87.3 % then); a second KDA inference
  line, ``mild gates``, shifts the raw gate by -10 (decays near 1); a GDN line with GVA (q and k
  with half the heads, as GDN's production shapes have them);
- the GM bytes of the whole op (the sum over its launches of bytes read and written) against the
  compulsory minimum: read q, k, v, g, beta once, write o and the final state once. ``inference``
  is the no-grad call; ``training`` keeps what the backward needs (today the same kernel chain: the
  backward is the PyTorch reference). Of them, the bytes through the kernels' own GM workspaces (the
  AIV <-> AIC hand-offs, which a2/a3 make through GM; on the device they mostly stay in L2) are
  printed apart, with the ratio of the rest (the op's tensors and intermediates);
- the bytes of the PyTorch operations around the kernels (pre-processing, chunk layout, head
  expansion, dtype casts, decay factors: each its own launch on an NPU), a ``model`` counting every
  operation's inputs read and results written once (:mod:`fla_npu.perf.torch_traffic`), and the
  op's whole traffic, kernels plus those, against the compulsory minimum; with ``--per-kernel``, the
  operations that move the most;
- with ``--per-kernel``, each launch's GM bytes read and written (workspace part in brackets), Cube
  multiply-adds and vector element operations;
- the float32 state error: the final state against the float64 token-by-token gold, at ``--state-T``
  (default 8192, one head), with the bf16 tolerance of ``fla_npu/testing.py``.

The simulated machine is scaled with the heads (``--heads-per-core``, default 4: the production shape's
96 heads on 20-24 AI cores have at least that many each), so the state kernel splits V no more than
it would there (each V block re-reads the unit's per-chunk inputs); ``FLA_NPU_SIM_CORES`` in the
environment takes precedence.

Not a test: nothing here gates CI. Needs the sim flavour's native library (``pip install .``).

    python benchmarks/bench_chunk_kernels.py [--T 512] [--H 2] [--heads-per-core 4] [--state-T 8192] [--ops kda,gdn]
                                             [--per-kernel]
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F

import fla_npu
from fla_npu.perf.stages import production_forward, production_inputs
from fla_npu.perf.torch_traffic import torch_traffic
from fla_npu.testing import TOLERANCES, rel_rms

K = V = 128


def inputs(op: str, T: int, H: int, seed=0, gate_shift=0.0, groups=1):
    """``[1, T, H, 128, 128]`` bf16 inputs (:func:`~fla_npu.perf.stages.production_inputs`); with
    ``groups`` > 1, GVA: q and k have ``H // groups`` heads."""
    shape = {"B": 1, "T": T, "H": H // groups, "HV": H, "K": K, "V": V}
    return production_inputs(op, shape, "bf16", seed=seed, gate_shift=gate_shift)


def compulsory_bytes(x) -> int:
    q, k, v, gate, beta, A_log, dt_bias = x
    reads = sum(t.numel() * t.element_size() for t in x)
    N, HV = q.shape[0], v.shape[2]
    writes = v.numel() * v.element_size() + N * HV * K * V * 4   # o, final state (fp32)
    return reads + writes


def profile_op(op: str, T: int, H: int, grad: bool, gate_shift=0.0, groups=1) -> dict:
    x = inputs(op, T, H, gate_shift=gate_shift, groups=groups)
    if grad:
        x = tuple(t.requires_grad_() for t in x)
    with torch.set_grad_enabled(grad), fla_npu.profile() as prof, torch_traffic() as torch_ops:
        production_forward(op, x)
    cube, vec = prof.total("cube_macs"), prof.total("vector_ops")
    gm = prof.total("gm_read_bytes") + prof.total("gm_write_bytes")
    ws = prof.total("ws_read_bytes") + prof.total("ws_write_bytes")
    need = compulsory_bytes(x)
    return {"kernels": prof.kernels(), "cube_share": cube / max(1, cube + vec), "gm_bytes": gm,
            "gm_ratio": gm / need, "ws_bytes": ws, "tensor_ratio": (gm - ws) / need, "launches": prof.launches,
            "torch_bytes": torch_ops.read_bytes + torch_ops.write_bytes,
            "whole_ratio": (gm + torch_ops.read_bytes + torch_ops.write_bytes) / need, "torch_ops": torch_ops.by_op(6)}


def per_kernel_lines(launches: list) -> list:
    """One line per launch: GM MiB read and written (workspace part), Cube MACs, vector ops."""
    mib = 2.0 ** -20
    return [f"    {x['kernel'][6:]:16s} read {x['gm_read_bytes'] * mib:6.2f} ({x['ws_read_bytes'] * mib:5.2f}) MiB, "
            f"write {x['gm_write_bytes'] * mib:6.2f} ({x['ws_write_bytes'] * mib:5.2f}) MiB, "
            f"Cube {x['cube_macs'] / 1e6:7.1f} M MACs, vector {x['vector_ops'] / 1e6:6.1f} M ops" for x in launches]


def state_error(op: str, T: int) -> float:
    from fla_npu.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
    from fla_npu.ops.kda.naive import naive_recurrent_kda

    x = inputs(op, T, 1, seed=1)
    _, final = production_forward(op, x)
    # The gold on the same activated inputs, in float64.
    q, k, v, gate, beta, A_log, dt_bias = (t.double() for t in x)
    qn, kn = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    if op == "kda":
        a = (gate + dt_bias.view(1, 1, 1, K))
        glog = -5.0 * torch.sigmoid(A_log.exp().view(1, 1, 1, 1) * a)
        _, gold = naive_recurrent_kda(qn, kn, v, glog, torch.sigmoid(beta), scale=K ** -0.5, output_final_state=True)
    else:
        glog = -A_log.exp().view(1, 1, 1) * F.softplus(gate + dt_bias.view(1, 1, 1))
        _, gold = naive_recurrent_gated_delta_rule(qn, kn, v, beta, glog, scale=K ** -0.5, output_final_state=True)
    return rel_rms(final, gold)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--H", type=int, default=2)
    ap.add_argument("--state-T", type=int, default=8192)
    ap.add_argument("--ops", default="kda,gdn")
    ap.add_argument("--heads-per-core", type=int, default=4, help="value heads per simulated AI core")
    ap.add_argument("--per-kernel", action="store_true", help="each launch's counters too")
    args = ap.parse_args()
    os.environ["FLA_NPU_CPU_IMPL"] = "sim"
    if "FLA_NPU_SIM_CORES" not in os.environ:  # vector cores: two per AI core
        os.environ["FLA_NPU_SIM_CORES"] = str(2 * max(1, args.H // max(1, args.heads_per_core)))
    print(f"simulated AI cores: {int(os.environ['FLA_NPU_SIM_CORES']) // 2} ({args.H} value heads)", flush=True)
    tol = TOLERANCES[torch.bfloat16]
    for op in args.ops.split(","):
        runs = [("inference", False, 0.0, 1), ("training", True, 0.0, 1)] + (
            [("inference, mild gates", False, -10.0, 1)] if op == "kda" else
            [("inference, GVA (q, k with H / 2 heads, as GDN's production shapes)", False, 0.0, 2)] if args.H % 2 == 0 else [])
        for mode, grad, shift, groups in runs:
            t0 = time.time()
            r = profile_op(op, args.T, args.H, grad, shift, groups)
            print(f"{op} [1,{args.T},{args.H},{K},{V}] bf16 {mode}: kernels {' '.join(k[6:] for k in r['kernels'])}; "
                  f"Cube share {100 * r['cube_share']:.1f}%; GM {r['gm_bytes'] / 2**20:.2f} MiB = "
                  f"{r['gm_ratio']:.2f}x compulsory, of which workspace hand-offs {r['ws_bytes'] / 2**20:.2f} MiB "
                  f"(without them {r['tensor_ratio']:.2f}x); torch ops around them {r['torch_bytes'] / 2**20:.2f} MiB "
                  f"(model), whole op {r['whole_ratio']:.2f}x ({time.time() - t0:.0f} s)", flush=True)
            if args.per_kernel:
                print("\n".join(per_kernel_lines(r["launches"])), flush=True)
                print("    torch ops (model): " + ", ".join(f"{name} {b / 2**20:.2f} MiB" for name, b in r["torch_ops"]),
                      flush=True)
        t0 = time.time()
        err = state_error(op, args.state_T)
        print(f"{op} final-state error at T={args.state_T} (H=1): {err:.2e} (bf16 tolerance {tol:.1e}; "
              f"{time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
