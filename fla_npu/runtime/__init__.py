"""Runtime of the native kernels: find and load ``libfla_npu_kernels.so`` (ctypes; for an NPU flavour,
hand it the embedded operator package's aclnn library), describe torch tensors to its C entry points
(pointer, dtype, shape, strides), allocate workspaces with torch, launch, and read the host
simulation's counters of the last launch.

Routing (``routing``): NPU tensors go to the kernels; CPU tensors to the PyTorch reference unless
``FLA_NPU_CPU_IMPL=sim``, which sends the ops that have kernels to them on the host simulation.

Kernels (``kernels``: one generic call per op of the build's op table, generated from the op
descriptors; ``op_calls``: what some ops' calls add to it): ``gate_chunk_cumsum`` (stage 1 of
chunked KDA / GDN: gate activation + chunk-local cumsum), ``chunk_intra`` (stage 2, the
triangular inverse in its launch; ``solve_tril`` the inverse alone), ``wy_fast`` (3),
``chunk_state`` (4), ``chunk_output`` (5), chained by ``chunk_pipeline`` and exposed as
``torch.ops.fla_npu`` custom ops (``torch_ops``); ``prefix_shared_attention``.
``fla_npu.profile()`` (``profile``) records launches.
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
