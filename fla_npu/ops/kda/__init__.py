from .chunk import chunk_kda
from .fused_recurrent import fused_recurrent_kda, fused_recurrent_kda_fwd
from .gate import fused_kda_gate, kda_gate_bwd, kda_gate_chunk_cumsum, kda_gate_fwd
from .naive import naive_kda_gate, naive_kda_lowerbound_gate, naive_recurrent_kda

__all__ = ["chunk_kda", "fused_recurrent_kda", "fused_recurrent_kda_fwd", "fused_kda_gate", "kda_gate_fwd",
           "kda_gate_bwd", "kda_gate_chunk_cumsum", "naive_recurrent_kda", "naive_kda_gate", "naive_kda_lowerbound_gate"]
