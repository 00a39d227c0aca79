"""What the chunked delta rule carries between its stages, for one head slice: the pre-processed
inputs in the chunk layout ``[NC, HV, BT, D]`` (:class:`ChunkInputs`) and the stage results
(:class:`ChunkForward`). Stage numbers and names, one per stage, as the kernels and docs use them:

====  ==================  ==========================  ======================================================
 no.  name                reference (chunk_fwd.py)     kernel (fla_npu/runtime/, csrc/)
====  ==================  ==========================  ======================================================
  1   gate cumsum         ``chunk_local_cumsum``       ``gate`` (GateChunkCumsum; KDA: in the one launch)
  2   intra-chunk         ``chunk_intra_fwd``          ``chunk_intra`` (the inverse in its launch; with 3-5:
                                                       ``chunk_forward``, KDA with 1: ``chunk_gate_forward``)
  3   WY factors          ``wy_fwd``                   ``wy_fast`` (or with 4, 5: ``chunk_state_output``)
  4   state recurrence    ``state_fwd``                ``chunk_state``
  5   output              ``output_fwd``               ``chunk_output``
====  ==================  ==========================  ======================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .decay import ChunkDecay


@dataclass
class KernelGate:
    """KDA's raw gate, for the one launch that forms ``G`` itself (``chunk_gate_forward``: stages 1 to 5)
    instead of stage 1 running before."""
    g: torch.Tensor                 # [NC, BT, HV, K] token-major chunk layout, capped as stage 1's kernel takes it
    chunk_len: torch.Tensor         # [NC] int32: each chunk's valid rows
    activation: str                 # "none", "softplus" or "sigmoid"
    A_log: torch.Tensor | None
    dt_bias: torch.Tensor | None
    lower_bound: float | None


@dataclass
class ChunkInputs:
    """Stage inputs of one head slice after pre-processing (l2norm, beta sigmoid, stage 1)."""
    ct: torch.dtype                 # compute dtype of the reference (float32, float64 for float64 inputs)
    groups: int                     # GVA: value heads per q/k head
    qn: torch.Tensor                # q, k after l2norm (token layout, ct), kept for its backward
    kn: torch.Tensor
    q_rstd: torch.Tensor | None     # l2norm's reciprocal norms (None without l2norm)
    k_rstd: torch.Tensor | None
    beta: torch.Tensor              # activated beta, token layout
    q: torch.Tensor                 # [NC, HV, BT, K] ct, times the attention scale, heads expanded;
                                    # for the kernels token-major [NC, BT, HV / groups, K] in their Cube dtype
    k: torch.Tensor                 # [NC, HV, BT, K] ct, heads expanded (kernels: as q)
    v: torch.Tensor                 # [NC, HV, BT, V] ct (kernels: token-major [NC, BT, HV, V], Cube dtype)
    b: torch.Tensor                 # [NC, HV, BT] beta
    decay: ChunkDecay | None        # factors of G, the stage-1 result [NC, HV, BT, K or 1] (log2 units); None
                                    #   when the intra-chunk kernel forms G (gate)
    row_factors: tuple[bool, float] | None = None  # kernels: (l2norm, scale) of q's and k's rows, which the
                                                   #   intra-chunk kernel applies (q and k unscaled); None: scaled
    gate: KernelGate | None = None  # kernels, KDA: the raw gate when stage 1 runs in the one launch


def expand_heads(xc: torch.Tensor, groups: int) -> torch.Tensor:
    """GVA: ``[NC, HQ, ...]`` -> ``[NC, HQ * groups, ...]``, value head ``i`` reading q / k head ``i // groups``."""
    return xc if groups == 1 else xc.repeat_interleave(groups, dim=1)


@dataclass
class ChunkForward:
    """Results of stages 2-4 (``o`` is returned, not kept): ``Aqk``, ``Akk`` ``[NC, HV, BT, BT]``;
    ``w``, ``kg`` ``[NC, HV, BT, K]``; ``u``, ``v_new`` ``[NC, HV, BT, V]``; ``h`` ``[NC, HV, K, V]``
    (chunk-start states; ``w``, ``u``, ``kg``, ``h`` and ``v_new`` ``None`` after the fused WY + state +
    output kernel);
    ``final`` ``[N, HV, K, V]``."""
    Aqk: torch.Tensor
    Akk: torch.Tensor
    w: torch.Tensor | None
    u: torch.Tensor | None
    kg: torch.Tensor | None
    h: torch.Tensor | None
    v_new: torch.Tensor | None
    final: torch.Tensor
