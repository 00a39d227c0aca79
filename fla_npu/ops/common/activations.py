"""Element-wise pre-processing shared by the delta-rule ops, with explicit backward functions."""

from __future__ import annotations

import torch
import torch.nn.functional as F

L2NORM_EPS = 1e-6


def compute_dtype(*tensors: torch.Tensor | None) -> torch.dtype:
    """float64 if any input is float64 (the gold path), otherwise float32."""
    return torch.float64 if any(t is not None and t.dtype == torch.float64 for t in tensors) else torch.float32


def l2norm_fwd(x: torch.Tensor):
    """``x / sqrt(sum(x^2) + 1e-6)`` over the last axis; returns ``(y, rstd)``."""
    rstd = torch.rsqrt(x.square().sum(-1, keepdim=True) + L2NORM_EPS)
    return x * rstd, rstd


def l2norm_bwd(y: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return rstd * (dy - y * (y * dy).sum(-1, keepdim=True))


def beta_sigmoid_fwd(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale * sigmoid(x)`` (``scale`` 2 when negative eigenvalues are allowed)."""
    return scale * torch.sigmoid(x)


def beta_sigmoid_bwd(x: torch.Tensor, dy: torch.Tensor, scale: float) -> torch.Tensor:
    s = torch.sigmoid(x)
    return dy * scale * s * (1 - s)


def sum_to_shape(t: torch.Tensor, shape) -> torch.Tensor:
    """Sum a broadcast result back to ``shape`` (the shape of a broadcast operand)."""
    lead = t.dim() - len(shape)
    t = t.sum(dim=tuple(range(lead))) if lead else t
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1)
    return t.sum(dim=dims, keepdim=True) if dims else t


def gate_fwd(g: torch.Tensor, A_log: torch.Tensor | None, dt_bias: torch.Tensor | None,
             lower_bound: float | None) -> torch.Tensor:
    """The in-kernel gate activation, ``A_log``/``dt_bias`` already shaped to broadcast against ``g``:
    ``-exp(A_log) * softplus(g + dt_bias)``, or with ``lower_bound`` set
    ``lower_bound * sigmoid(exp(A_log) * (g + dt_bias))`` (``A_log`` ``None``: no ``exp(A_log)`` factor)."""
    x = g if dt_bias is None else g + dt_bias
    if lower_bound is None:
        return -torch.exp(A_log) * F.softplus(x)
    z = x if A_log is None else torch.exp(A_log) * x
    return lower_bound * torch.sigmoid(z)


def _times(dy: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``dy * x`` with a zero cotangent contributing 0 also where ``x`` is infinite (a raw gate of
    ``±inf``, whose step the loss does not depend on: plain autograd would give ``0 * inf = NaN``)."""
    return torch.where(dy == 0, torch.zeros_like(dy), dy * x)


def gate_bwd(g, A_log, dt_bias, lower_bound, dy):
    """Gradients of :func:`gate_fwd`: ``(dg, dA_log, ddt_bias)`` with the shapes of the operands."""
    x = g if dt_bias is None else g + dt_bias
    if lower_bound is None:
        a = torch.exp(A_log)
        dx = dy * (-a) * torch.sigmoid(x)
        dA = sum_to_shape(_times(dy, (-a) * F.softplus(x)), A_log.shape)
    else:
        a = 1.0 if A_log is None else torch.exp(A_log)
        z = a * x
        s = torch.sigmoid(z)
        dz = dy * lower_bound * s * (1 - s)
        dx = dz * a
        dA = None if A_log is None else sum_to_shape(_times(dz, z), A_log.shape)
    dbias = None if dt_bias is None else sum_to_shape(dx, dt_bias.shape)
    return dx, dA, dbias
