"""Pure-PyTorch reference of prefix-shared attention (the gold of the kernel's tests).

``out[b, g] = softmax(q[b, g] @ k[b]^T * scale) @ v[b]`` for ``q [bs, G, len_q, D]`` and
``k, v [bs, len_kv, D]``: every one of the G responses of a batch attends, non-causally, to the
batch's one shared K/V. Computed in float32 (float64 for float64 inputs), returned in q's dtype.
"""

from __future__ import annotations

import torch


def naive_prefix_shared_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None,
                                  out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """Reference forward; no validation (``fla_npu.prefix_shared_attention`` validates)."""
    D = q.shape[-1]
    if scale is None:
        scale = D ** -0.5
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    qf, kf, vf = q.to(acc), k.to(acc), v.to(acc)
    s = torch.einsum("bgqd,bkd->bgqk", qf, kf) * scale
    p = torch.softmax(s, dim=-1)
    out = torch.einsum("bgqk,bkd->bgqd", p, vf)
    return out.to(q.dtype if out_dtype is None else out_dtype)
