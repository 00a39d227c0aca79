"""``fla_npu.prefix_shared_attention``: attention of G responses to one shared prefix per batch.

``q [bs, G, len_q, D]``, ``k, v [bs, len_kv, D]``; ``out[b, g] = softmax(q[b, g] k[b]^T * scale) v[b]``,
non-causal, ``scale`` defaults to ``D ** -0.5``, the output has q's dtype. Forward only.

Routing: NPU tensors run the Ascend C kernel (``csrc/prefix_shared_attention/``: Q K^T and P V on
the Cube, the online softmax on the vector cores, K/V read once per 128 stacked query rows). CPU
tensors run the PyTorch reference (``naive.py``) unless ``FLA_NPU_CPU_IMPL=sim``, which sends
float16/bfloat16 calls to the same kernel on the host simulation. float32 is accepted by the
reference only.
"""

from __future__ import annotations

import math
import numbers

import torch

from ...runtime.routing import use_sim
from .naive import naive_prefix_shared_attention

FN = "prefix_shared_attention"
KERNEL_DTYPES = (torch.bfloat16, torch.float16)
DTYPES = KERNEL_DTYPES + (torch.float32,)
HEAD_DIMS = (128, 64)
DEVICE_TYPES = ("cpu", "npu")


def _validate(q, k, v, scale) -> None:
    """Every check runs before any computation; ValueError (TypeError for non-tensors / a bad scale type)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{FN}: `{name}` must be a torch.Tensor, got {type(t).__name__}.")
    if q.dim() != 4 or k.dim() != 3 or v.dim() != 3:
        raise ValueError(f"{FN}: q must be 4-D [bs, G, len_q, D] and k, v 3-D [bs, len_kv, D], got "
                         f"q={tuple(q.shape)}, k={tuple(k.shape)}, v={tuple(v.shape)}.")
    if not (q.shape[0] == k.shape[0] == v.shape[0]):
        raise ValueError(f"{FN}: batch size mismatch between q, k, v: q={q.shape[0]}, k={k.shape[0]}, v={v.shape[0]}.")
    D = q.shape[3]
    if k.shape[2] != D or v.shape[2] != D:
        raise ValueError(f"{FN}: head dim mismatch: q={D}, k={k.shape[2]}, v={v.shape[2]}.")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"{FN}: k/v length mismatch: k={k.shape[1]}, v={v.shape[1]}.")
    if D not in HEAD_DIMS:
        raise ValueError(f"{FN}: head dim D must be 128 or 64, got {D}.")
    if q.dtype not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"{FN}: q, k, v must share one dtype, bfloat16 or float16 (float32: the reference only), "
                         f"got q={q.dtype}, k={k.dtype}, v={v.dtype}.")
    if not (q.device == k.device == v.device):
        raise ValueError(f"{FN}: q, k, v must be on one device, got q={q.device}, k={k.device}, v={v.device}.")
    if q.device.type not in DEVICE_TYPES:
        raise ValueError(f"{FN}: runs on NPU tensors (or CPU: reference / simulation), got {q.device}.")
    if q.shape[1] < 1 or q.shape[2] < 1 or k.shape[1] < 1:
        raise ValueError(f"{FN}: G, len_q and len_kv must be positive, got G={q.shape[1]}, len_q={q.shape[2]}, "
                         f"len_kv={k.shape[1]}.")
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError(f"{FN}: `scale` must be a real number or None, got {type(scale).__name__}.")
        if not math.isfinite(float(scale)):
            raise ValueError(f"{FN}: `scale` must be finite, got {scale}.")


def prefix_shared_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """Prefix-shared attention forward: ``out[b, g] = softmax(q[b, g] k[b]^T * scale) v[b]``.

    Args:
        q: ``[bs, G, len_q, D]`` queries of the G responses of each batch (bfloat16 / float16;
            float32 runs the reference).
        k, v: ``[bs, len_kv, D]`` the prefix shared by the G responses of a batch, q's dtype.
        scale: score scale, default ``D ** -0.5``.
    Returns:
        ``[bs, G, len_q, D]`` in q's dtype.
    """
    _validate(q, k, v, scale)
    scale = q.shape[3] ** -0.5 if scale is None else float(scale)
    if q.shape[0] == 0:
        return q.new_zeros(q.shape)
    if q.device.type == "npu":  # pragma: no cover - needs an NPU
        kernel = q.dtype in KERNEL_DTYPES
    else:  # FLA_NPU_CPU_IMPL=sim: the Ascend C kernel, simulated
        kernel = use_sim(FN, q, supported_dtypes=KERNEL_DTYPES)
    if kernel:
        from ...runtime import kernels
        return kernels.prefix_shared_attention(q, k, v, scale)
    return naive_prefix_shared_attention(q, k, v, scale)
