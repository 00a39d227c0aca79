"""The kernels as PyTorch custom ops, ``torch.ops.fla_npu.<kernel>``, with fake (meta) implementations
so that ``torch.compile`` and graph capture trace a call without running it. One registration serves
every op of the build's op table and every device: the op is its :class:`~.kernels.Kernel`'s call
(which launches on the NPU or the host simulation), its schema that call's signature (defaults
left out), its fake the outputs the same call allocates by the descriptor's shape rules.

Registered once, on import; a kernel this build lacks is not registered.
"""

from __future__ import annotations

import inspect

import torch

from . import kernels

LIB = "fla_npu"


def _schema(kernel: kernels.Kernel) -> str:
    sig = kernel.signature
    bare = sig.replace(parameters=[p.replace(default=inspect.Parameter.empty) for p in sig.parameters.values()])

    def prototype():
        pass

    prototype.__signature__ = bare
    return torch.library.infer_schema(prototype, mutates_args=())


def _register(kernel: kernels.Kernel):
    def run(*args):
        return getattr(kernels, kernel.name)(*args)  # looked up per call: tests may wrap it

    op = torch.library.custom_op(f"{LIB}::{kernel.name}", run, mutates_args=(), schema=_schema(kernel))
    op.register_fake(kernel.fake)
    return op


OPS = {name: _register(kernel) for name, kernel in kernels.all_kernels().items()}
globals().update(OPS)
