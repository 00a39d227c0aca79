"""fla-npu: Ascend C kernels for flash-linear-attention's delta-rule family, with a PyTorch reference.

The public functions have FLA's names, signatures, defaults, return values and error messages, so
FLA's calls can be forwarded to them unchanged. On CPU tensors they run the chunked PyTorch
reference (``fla_npu.ops.common``), which is also the stage-by-stage gold for the kernels.
"""

# Two flavours (fla-npu, fla-npu-a2, ...) installed over each other: refuse, naming both (flavour.py).
from .runtime.flavour import check_single_flavour as _check_single_flavour

_check_single_flavour()

from .ops.gated_delta_rule import (  # noqa: E402
    chunk_gated_delta_rule,
    chunk_gdn,
    fused_gdn_gate,
    fused_recurrent_gated_delta_rule,
    fused_recurrent_gdn,
    gdn_gate_chunk_cumsum,
)
from .ops.kda import chunk_kda, fused_kda_gate, fused_recurrent_kda, fused_recurrent_kda_fwd, kda_gate_chunk_cumsum
from .ops.prefix_shared_attention import prefix_shared_attention  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "chunk_kda", "fused_recurrent_kda", "fused_recurrent_kda_fwd", "fused_kda_gate", "kda_gate_chunk_cumsum",
    "chunk_gated_delta_rule", "chunk_gdn", "fused_recurrent_gated_delta_rule", "fused_recurrent_gdn",
    "fused_gdn_gate", "gdn_gate_chunk_cumsum", "prefix_shared_attention",
]
