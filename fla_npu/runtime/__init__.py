"""Runtime of the native kernels: find and load ``libfla_npu_kernels.so`` (ctypes; for an NPU flavour,
hand it the embedded operator package's aclnn library), describe torch tensors to its C entry points
(pointer, dtype, shape, strides), allocate workspaces with torch, launch, and read the host
simulation's counters of the last launch.

Routing (``routing``): CPU tensors go to the PyTorch reference unless ``FLA_NPU_CPU_IMPL=sim``,
which sends the ops that have a kernel to that kernel on the host simulation.

Kernels so far: ``gate.gate_chunk_cumsum`` (gate activation + chunk-local cumsum, stage 1 of
chunked KDA / GDN), behind ``kda_gate_chunk_cumsum`` and ``gdn_gate_chunk_cumsum``.
"""

from ._native import (
    AclnnKernelError,
    KernelError,
    NativeLibraryError,
    SimCounters,
    SimLaunch,
    last_sim_launch,
    library_available,
    library_path,
    load_library,
    target,
)
from .routing import cpu_impl

__all__ = ["AclnnKernelError", "KernelError", "NativeLibraryError", "SimCounters", "SimLaunch", "cpu_impl",
           "last_sim_launch", "library_available", "library_path", "load_library", "target"]
