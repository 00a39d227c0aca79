"""``chunk_gated_delta_rule``: FLA's chunked Gated DeltaNet, same signature, semantics and errors."""

from __future__ import annotations

from functools import partial

import torch

from ..common import context_parallel as CP, validate as V
from ..common.chunk import ChunkDeltaRuleFunction, DeltaRuleConfig
from ..common.chunk_plan import ChunkPlan
from .gate import gdn_gate_bwd, gdn_gate_fwd

_EXTRA_KWARGS = ("use_gate_in_kernel", "A_log", "dt_bias", "chunk_size", "transpose_state_layout", "head_first",
                 "input_layout")


def chunk_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    state_v_first: bool = False,
    cu_seqlens: torch.LongTensor | None = None,
    cu_seqlens_cpu: torch.LongTensor | None = None,
    chunk_indices: torch.LongTensor | None = None,
    cp_context=None,
    **kwargs,
):
    r"""Chunked Gated DeltaNet, forward and backward:
    ``S_t = (I - b_t k_t k_t^T) exp(g_t) S_{t-1} + b_t k_t v_t^T``, ``o_t = S_t^T (scale q_t)``.

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, HV, V]`` with ``HV % H == 0`` (GVA).
        g: ``[B, T, HV]`` per-step log decay, or the raw gate if ``use_gate_in_kernel``.
        beta: ``[B, T, HV]``, post-sigmoid, or logits if ``use_beta_sigmoid_in_kernel``.
        scale: default ``K ** -0.5``.
        initial_state: ``[N, HV, K, V]`` (``[N, HV, V, K]`` if ``state_v_first``), any float dtype;
            its gradient comes back in its dtype.
        output_final_state: also return the float32 final state.
        use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, state_v_first,
        cu_seqlens, cu_seqlens_cpu: as in :func:`fla_npu.chunk_kda`.
        chunk_indices: FLA's ``[NT, 2]`` chunk list for varlen; its row count checked against
            ``cu_seqlens`` when the chunk count is known on the host (``cu_seqlens_cpu`` or CPU
            tensors), not used otherwise (the chunk tables come from ``cu_seqlens``).
        cp_context: FLA's context parallelism, as in :func:`fla_npu.chunk_kda`.
        use_gate_in_kernel (kwarg): ``g <- -exp(A_log) * softplus(g + dt_bias)`` with ``A_log`` and
            optional ``dt_bias`` (kwargs, ``HV`` elements each).
        chunk_size (kwarg): 16, 32 or 64 (default 64).
        input_layout (kwarg): ``"BSND"`` (default) or ``"BNSD"`` (head-major q, k, v, g, beta and o).

    Returns:
        ``(o, final_state)``: ``o`` ``[B, T, HV, V]`` in ``q.dtype``, ``final_state`` float32 or None.
    """
    fn = "chunk_gated_delta_rule"
    state_v_first = V.pop_state_layout(state_v_first, kwargs)
    V.reject_unknown_kwargs(fn, kwargs, _EXTRA_KWARGS)
    layout = kwargs.get("input_layout", "BSND")
    q, k, v, g, beta = V.to_bsnd(layout, fn, q, k, v, g, beta)
    for name, t in (("q", q), ("k", k), ("v", v)):
        V.check_ndim(fn, name, t, (4,), layout)
    if q.shape[2] != k.shape[2]:
        raise ValueError(
            f"q and k must have the same number of heads, "
            f"but got q.shape[2]={q.shape[2]} and k.shape[2]={k.shape[2]}"
        )
    H, HV = q.shape[2], v.shape[2]
    V.check_dims(fn, H=H, HV=HV, K=q.shape[-1], V=v.shape[-1])
    if HV % H != 0:
        raise ValueError(
            f"For GVA, num_v_heads (HV={HV}) must be evenly divisible by "
            f"num_heads (H={H}), but got HV % H = {HV % H}"
        )
    if "head_first" in kwargs:
        raise DeprecationWarning("head_first has been removed. Inputs must be in `[B, T, H, ...]` format.")
    chunk_size = kwargs.get("chunk_size", 64)
    V.check_chunk_size(chunk_size, (16, 32, 64), "`chunk_size` must be 16, 32, or 64 for Gated Delta Rule")
    cu_seqlens, cu_seqlens_cpu = CP.resolve(fn, cp_context, initial_state, output_final_state, cu_seqlens,
                                            cu_seqlens_cpu)
    V.check_varlen(q, initial_state, cu_seqlens)
    use_gate_in_kernel = kwargs.get("use_gate_in_kernel", False)
    A_log = kwargs.get("A_log") if use_gate_in_kernel else None
    dt_bias = kwargs.get("dt_bias") if use_gate_in_kernel else None
    if use_gate_in_kernel:
        assert A_log is not None, "A_log must be provided when use_gate_in_kernel=True."
    elif kwargs.get("A_log") is not None or kwargs.get("dt_bias") is not None:
        V.warn_once(f"{fn}: `A_log`/`dt_bias` are ignored because `use_gate_in_kernel=False` (as in FLA).")
    V.check_neg_eigval(allow_neg_eigval, use_beta_sigmoid_in_kernel)

    B, T, _, K = q.shape
    if k.shape != q.shape or v.shape[:2] != (B, T):
        raise ValueError(f"{fn}: need q, k [B, T, H, K] and v [B, T, HV, V]; got q {list(q.shape)}, "
                         f"k {list(k.shape)}, v {list(v.shape)}.")
    if K > 256:
        raise ValueError(f"{fn}: key head dim K must be <= 256, got {K}.")
    if g.shape != (B, T, HV):
        raise ValueError(f"{fn}: `g` must have shape [B, T, HV]={[B, T, HV]}, got {list(g.shape)}.")
    if beta.shape != (B, T, HV):
        raise ValueError(f"{fn}: `beta` must have shape [B, T, HV]={[B, T, HV]}, got {list(beta.shape)}.")
    V.check_tensors(fn, q.device, q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias,
                    initial_state=initial_state)
    for name, t in (("A_log", A_log), ("dt_bias", dt_bias)):
        if t is not None and t.numel() != HV:
            raise ValueError(f"{fn}: `{name}` must have HV={HV} elements, got shape {list(t.shape)}.")
    if not use_gate_in_kernel:
        V.check_log_decay(fn, g)
    cu_cpu = V.check_cu_seqlens(fn, cu_seqlens, T, q.device, cu_seqlens_cpu, host_copy=cp_context is not None)
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    V.check_state(fn, "initial_state", initial_state, N, HV, K, v.shape[-1], state_v_first)
    plan = ChunkPlan.of_call(B, T, chunk_size, cu_seqlens, cu_cpu, q.device)
    if chunk_indices is not None and not plan.on_device and chunk_indices.shape[0] != plan.num_chunks:
        raise ValueError(f"{fn}: `chunk_indices` has {chunk_indices.shape[0]} rows, the sequences have {plan.num_chunks} chunks.")

    cfg = DeltaRuleConfig(
        name=fn,
        scale=K ** -0.5 if scale is None else float(scale),
        chunk_size=chunk_size,
        per_key_gate=False,
        use_qk_l2norm=use_qk_l2norm_in_kernel,
        beta_sigmoid_scale=(2.0 if allow_neg_eigval else 1.0) if use_beta_sigmoid_in_kernel else None,
        gate_fwd=partial(gdn_gate_fwd, output_dtype=None) if use_gate_in_kernel else None,
        gate_bwd=gdn_gate_bwd if use_gate_in_kernel else None,
        gate_form="softplus" if use_gate_in_kernel else "none",
        lower_bound=None,
        state_v_first=state_v_first,
        output_final_state=output_final_state,
        disable_recompute=False,
        return_intermediate_states=False,
    )
    if CP.enabled(cp_context):
        o = CP.chunk_cp(q, k, v, g, beta, A_log, dt_bias, cfg, cu_cpu, cp_context, fn)
        return (o if layout == "BSND" else o.transpose(1, 2)), None
    o, final = ChunkDeltaRuleFunction.apply(q, k, v, g, beta, A_log, dt_bias, initial_state, cfg, plan)
    return (o if layout == "BSND" else o.transpose(1, 2)), final
