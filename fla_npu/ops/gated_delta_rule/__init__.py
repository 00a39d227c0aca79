from .chunk import chunk_gated_delta_rule
from .fused_recurrent import fused_recurrent_gated_delta_rule
from .gate import fused_gdn_gate, gdn_gate_bwd, gdn_gate_chunk_cumsum, gdn_gate_fwd
from .naive import naive_gdn_gate, naive_recurrent_gated_delta_rule

chunk_gdn = chunk_gated_delta_rule
fused_recurrent_gdn = fused_recurrent_gated_delta_rule

__all__ = ["chunk_gated_delta_rule", "chunk_gdn", "fused_recurrent_gated_delta_rule", "fused_recurrent_gdn",
           "fused_gdn_gate", "gdn_gate_fwd", "gdn_gate_bwd", "gdn_gate_chunk_cumsum", "naive_recurrent_gated_delta_rule",
           "naive_gdn_gate"]
