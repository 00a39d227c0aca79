"""The memory traffic of the PyTorch operations around the kernels: what the Python side of an op moves
between kernel launches (chunk layout gathers, head expansion, dtype casts, decay factors, the
kernels' argument casts). On an NPU each of them is a device launch of its own, reading and writing
GM; the simulation's counters (:func:`fla_npu.profile`) see only the kernels.

::

    with torch_traffic() as traffic:
        fla_npu.chunk_kda(...)
    traffic.read_bytes, traffic.write_bytes, traffic.by_op()

Counted per ATen operation: every tensor argument read whole and every tensor result written whole
(a ``model`` of the traffic, an upper bound for gathers that read part of their input). Operations
that move nothing are not counted: views and other results that alias an input (a ``.to`` or
``.contiguous`` with nothing to do), allocations (``empty``), metadata. The fla_npu custom ops
themselves are skipped (their kernels' bytes are the profile's), but the ATen operations their
Python calls run (casts of the arguments) are counted.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

# In-place ATen operations that overwrite their target without reading it.
_OVERWRITES = {"copy_", "fill_", "zero_"}

# ATen operations that allocate or describe tensors without moving their data.
_NO_TRAFFIC = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "detach",
               "alias", "_unsafe_view", "_local_scalar_dense", "set_", "resize_", "is_same_size", "sym_size",
               "sym_stride", "sym_numel", "sym_storage_offset", "_has_compatible_shallow_copy_type"}


def _tensors(values) -> list:
    flat, _ = tree_flatten(values)
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class TorchTraffic:
    """Bytes read and written by the ATen operations of one :func:`torch_traffic` block."""
    read_bytes: int = 0
    write_bytes: int = 0
    launches: int = 0                               # operations that moved bytes (each a launch on an NPU)
    ops: Counter = field(default_factory=Counter)   # op name -> bytes read + written

    def by_op(self, top: int = 8) -> list:
        """The ``top`` operations by bytes moved: ``[(name, bytes), ...]``."""
        return self.ops.most_common(top)


class _Recorder(TorchDispatchMode):
    def __init__(self, traffic: TorchTraffic):
        super().__init__()
        self.traffic = traffic

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "fla_npu":   # a kernel: the operations of its Python call are counted, not it
            from ..runtime import kernels

            with _Recorder(self.traffic):   # the call itself, under this count (not the dispatcher again)
                return getattr(kernels, func.overloadpacket.__name__)(*args, **kwargs)
        out = func(*args, **kwargs)
        name, namespace = func.overloadpacket.__name__, func.namespace
        if name in _NO_TRAFFIC:
            return out
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        held = {t.untyped_storage().data_ptr() for t in inputs}
        if func._schema.is_mutable:   # in place: the mutated tensors written, and read unless overwritten whole
            written = [t for t in outputs if t.untyped_storage().data_ptr() in held]
            mutated = {t.untyped_storage().data_ptr() for t in written}
            overwrites = name in _OVERWRITES or "out" in kwargs   # an out= result is written, not read
            read = [t for t in inputs if not overwrites or t.untyped_storage().data_ptr() not in mutated]
        elif all(t.untyped_storage().data_ptr() in held for t in outputs):
            return out                # an alias of an input (a no-op .to, .contiguous, reshape of a view)
        else:
            read, written = inputs, outputs
        self.traffic.read_bytes += _nbytes(read)
        self.traffic.write_bytes += _nbytes(written)
        self.traffic.launches += 1
        self.traffic.ops[f"{namespace}.{name}"] += _nbytes(read) + _nbytes(written)
        return out


@contextmanager
def torch_traffic():
    """Count the ATen operations' bytes in the block (module docstring); yields a :class:`TorchTraffic`."""
    traffic = TorchTraffic()
    with _Recorder(traffic):
        yield traffic
