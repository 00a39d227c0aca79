"""The prefix-shared attention forward kernel (``csrc/prefix_shared_attention/``) called through the
C entry points ``flaNpuPrefixSharedAttentionGetWorkspaceSize`` / ``flaNpuPrefixSharedAttention``."""

from __future__ import annotations

import torch

from . import _native as N

KERNEL_DTYPES = (torch.float16, torch.bfloat16)

ENTRY = "flaNpuPrefixSharedAttention"
KERNEL = N.KernelEntry(ENTRY, "prefix-shared attention kernel")


def prefix_shared_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Run the kernel on validated inputs: ``q`` ``[bs, G, len_q, D]``, ``k``/``v`` ``[bs, len_kv, D]``
    (fp16 or bf16, one dtype, D 64 or 128) -> ``out`` of ``q``'s shape and dtype."""
    lib = KERNEL.library()
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    descs = [N.tensor_desc(t) for t in (q, k, v, out)]
    N.run_two_phase(lib, ENTRY,
                    (N.ref(descs[0]), N.ref(descs[1]), N.ref(descs[2]), float(scale), N.ref(descs[3])), q.device)
    return out


last_tiling = KERNEL.last_tiling  # the tiling of the last call on this thread, as a dict

last_launch = KERNEL.last_launch  # simulation counters of the last launch, or None: nothing launched
