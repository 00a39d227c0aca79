"""fla-npu: Ascend C kernels for flash-linear-attention's delta-rule family, with a PyTorch reference.

The public functions have FLA's names, signatures, defaults, return values and error messages, so
FLA's calls can be forwarded to them unchanged. On CPU tensors they run the chunked PyTorch
reference (``fla_npu.ops.common``), which is also the stage-by-stage gold for the kernels.
"""

# Two flavours (fla-npu, fla-npu-a2, ...) installed over each other: refuse, naming both (flavour.py).
from .runtime.flavour import check_single_flavour as _check_single_flavour

_check_single_flavour()

__version__ = "0.1.0"

# The public functions, imported on first access (PEP 562): ``import fla_npu`` (and so the
# ``fla-npu`` command's ``--help``) does not import torch; ``from fla_npu import chunk_kda`` does.
_PUBLIC = {
    "chunk_kda": "kda", "fused_recurrent_kda": "kda", "fused_recurrent_kda_fwd": "kda", "fused_kda_gate": "kda",
    "kda_gate_chunk_cumsum": "kda",
    "chunk_gated_delta_rule": "gated_delta_rule", "chunk_gdn": "gated_delta_rule",
    "fused_recurrent_gated_delta_rule": "gated_delta_rule", "fused_recurrent_gdn": "gated_delta_rule",
    "fused_gdn_gate": "gated_delta_rule", "gdn_gate_chunk_cumsum": "gated_delta_rule",
    "prefix_shared_attention": "prefix_shared_attention",
}

__all__ = [*_PUBLIC, "profile"]


def profile():
    """Record every kernel launch of a ``with`` block: ``with fla_npu.profile() as prof: ...``, then
    ``prof.launches`` (one dict per launch: ``kernel``, ``block_dim``, and from the host simulation
    ``gm_read_bytes``, ``gm_write_bytes``, ``cube_macs``, ``vector_ops``). See :mod:`fla_npu.runtime.profile`."""
    from .runtime.profile import profile as _profile

    return _profile()


def __getattr__(name: str):
    op = _PUBLIC.get(name)
    if op is None:
        raise AttributeError(f"module 'fla_npu' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".ops.{op}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
