"""Runtime of the native kernels: find and load ``libfla_npu_kernels.so`` (ctypes; for an NPU flavour,
hand it the embedded operator package's aclnn library), describe torch tensors to its C entry points
(pointer, dtype, shape, strides), allocate workspaces with torch, launch, and read the host
simulation's counters of the last launch.

Routing (``routing``): CPU tensors go to the PyTorch reference unless ``FLA_NPU_CPU_IMPL=sim``,
which sends the ops that have a kernel to that kernel on the host simulation.

Kernels so far: ``gate.gate_chunk_cumsum`` (gate activation + chunk-local cumsum, stage 1 of
chunked KDA / GDN), behind ``kda_gate_chunk_cumsum`` and ``gdn_gate_chunk_cumsum``.
"""

# Imported on first access (PEP 562), so that ``fla_npu.runtime.flavour`` (checked when fla_npu is
# imported) does not import torch.
_LAZY = {name: "._native" for name in ("AclnnKernelError", "KernelError", "NativeLibraryError", "SimCounters",
                                       "SimLaunch", "last_sim_launch", "library_available", "library_path",
                                       "load_library", "target")}
_LAZY["cpu_impl"] = ".routing"

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fla_npu.runtime' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
