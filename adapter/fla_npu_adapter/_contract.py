"""FLA's return contract for the functions whose fla_npu counterpart returns something different.

FLA's gate functions in ``fla.ops.kda.gate`` / ``fla.ops.gated_delta_rule.gate`` return:

- ``fused_kda_gate``, ``kda_gate_fwd``, ``gdn_gate_fwd``: ``torch.empty_like(g, dtype=output_dtype)``
  filled by the kernel, so ``output_dtype=None`` gives ``g``'s dtype. fla_npu's return the compute
  dtype for ``None`` (what its own chunked and recurrent code wants).
- ``kda_gate_bwd``, ``gdn_gate_bwd``: ``(dg, dA, dbias)`` with ``dg = torch.empty_like(g)`` (``g``'s
  dtype), ``dA`` shaped and typed like ``A_log``, ``dbias`` the float32 per-block sums summed and
  ``.to(dt_bias)``: flat (``H*K`` / ``HV`` elements) in ``dt_bias``'s dtype, ``None`` without
  ``dt_bias`` (and ``dA`` ``None`` without ``A_log``). fla_npu's ``dg`` is in the compute dtype and
  its ``dbias`` shaped like ``dt_bias``.
- The forward / backward pieces are Triton launches: their results are never part of an autograd
  graph, so they are computed here with autograd recording off (fla_npu's are differentiable PyTorch).

Each contract names the FLA parameters it reads; the backend reads them with a function generated
from FLA's own signature (``Binder.extractor``), as the verifier does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


def _output_dtype(y, g, output_dtype):
    """FLA: ``torch.empty_like(g, dtype=output_dtype)``."""
    if output_dtype is None and y.dtype != g.dtype:
        return y.to(g.dtype)
    return y


def _gate_grads(grads, g):
    """FLA: ``(dg like g, dA like A_log, dbias flat in dt_bias's dtype)``."""
    dg, dA, dbias = grads
    if dg.dtype != g.dtype:
        dg = dg.to(g.dtype)
    if dbias is not None and dbias.ndim != 1:
        dbias = dbias.reshape(-1)
    return dg, dA, dbias


@dataclass(frozen=True)
class Contract:
    reads: tuple[str, ...]   # FLA parameters ``convert`` takes after the result
    convert: Callable        # (fla_npu's result, *values of reads) -> FLA's result
    records_graph: bool      # False: FLA's function is a kernel launch, computed without autograd


CONTRACTS = {
    "kda.fused_kda_gate": Contract(("g", "output_dtype"), _output_dtype, records_graph=True),
    "kda.kda_gate_fwd": Contract(("g", "output_dtype"), _output_dtype, records_graph=False),
    "kda.kda_gate_bwd": Contract(("g",), _gate_grads, records_graph=False),
    "gated_delta_rule.gdn_gate_fwd": Contract(("g", "output_dtype"), _output_dtype, records_graph=False),
    "gated_delta_rule.gdn_gate_bwd": Contract(("g",), _gate_grads, records_graph=False),
}
