"""FLA's dispatch overhead per call, without and with fla-npu-adapter (tiny CPU tensors).

Times FLA's own dispatch wrapper (``BackendRegistry.dispatch``) over the real registry of
``chunk_kda`` with a no-op default function, so that only the dispatch is measured:

- ``without``: the registry as FLA builds it (the fla_npu backend taken out);
- ``off``: adapter registered, switch off (the default);
- ``on, rejected``: switch on, the verifier rejects (``chunk_size=16``) -> default path;
- ``on, accepted``: switch on, the verifier accepts and fla_npu's implementation is a no-op stub;
- ``on by FLA_ASCENDC=1, accepted``: the same, switched on by the environment (read at every call).

Run: ``python adapter/benchmarks/dispatch_overhead.py [--cpu-time]`` (needs FLA, fla-npu and
fla-npu-adapter). Times are the best of 7 runs, wall clock; ``--cpu-time`` times with the process's CPU
clock instead, which a machine shared with other jobs disturbs less.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import timeit

import torch

import fla.backends as fb
import fla.ops.kda  # noqa: F401  (registers the adapter through its import hook)
import fla_npu_adapter
from fla.ops.kda.chunk import chunk_kda
from fla_npu_adapter import _backend


def main(number: int = 20000, repeat: int = 7, cpu_time: bool = False) -> None:
    registry = fb._function_registries[inspect.unwrap(chunk_kda)]
    ours = registry._backends["fla_npu"]

    def noop(*args, **kwargs):
        return None

    noop.__name__ = "chunk_kda"  # FLA dispatches by the decorated function's name
    dispatched = registry.dispatch(noop)
    stub = _backend._Implementation.__call__
    q = torch.zeros(1, 4, 1, 16)
    beta = torch.zeros(1, 4, 1)
    calls = {
        "accepted": lambda: dispatched(q, q, q, q, beta, scale=None, initial_state=None, output_final_state=True,
                                       use_qk_l2norm_in_kernel=True, chunk_size=64),
        "rejected": lambda: dispatched(q, q, q, q, beta, scale=None, initial_state=None, output_final_state=True,
                                       use_qk_l2norm_in_kernel=True, chunk_size=16),
    }

    def per_call(fn):
        timer = time.process_time if cpu_time else time.perf_counter
        return min(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number * 1e6

    results = {}
    del registry._backends["fla_npu"]
    results["without adapter"] = per_call(calls["accepted"])
    registry._backends["fla_npu"] = ours
    fla_npu_adapter.disable()
    results["adapter, switch off"] = per_call(calls["accepted"])
    fla_npu_adapter.enable()
    results["adapter on, call rejected"] = per_call(calls["rejected"])
    _backend._Implementation.__call__ = lambda self, *a, **k: None
    try:
        results["adapter on, call accepted (stub kernel)"] = per_call(calls["accepted"])
        fla_npu_adapter.reset()
        saved = os.environ.get("FLA_ASCENDC")
        os.environ["FLA_ASCENDC"] = "1"
        try:
            results["on by FLA_ASCENDC=1, call accepted (stub)"] = per_call(calls["accepted"])
        finally:
            if saved is None:
                del os.environ["FLA_ASCENDC"]
            else:
                os.environ["FLA_ASCENDC"] = saved
    finally:
        _backend._Implementation.__call__ = stub
        fla_npu_adapter.reset()
    base = results["without adapter"]
    print(f"{'case':42s} {'us/call':>8s} {'added':>8s}")
    for name, us in results.items():
        print(f"{name:42s} {us:8.2f} {us - base:+8.2f}")


if __name__ == "__main__":
    main(cpu_time="--cpu-time" in sys.argv[1:])
