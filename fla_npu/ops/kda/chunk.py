"""``chunk_kda``: FLA's chunked Kimi Delta Attention, same signature, semantics and errors."""

from __future__ import annotations

from functools import partial

import torch

from ..common import context_parallel as CP, validate as V
from ..common.chunk import ChunkDeltaRuleFunction, DeltaRuleConfig
from ..common.chunk_plan import ChunkPlan
from .gate import kda_gate_bwd, kda_gate_fwd

_EXTRA_KWARGS = ("A_log", "dt_bias", "chunk_size", "transpose_state_layout", "input_layout")


def chunk_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    safe_gate: bool = False,
    lower_bound: float | None = None,
    disable_recompute: bool = False,
    return_intermediate_states: bool = False,
    state_v_first: bool = False,
    cu_seqlens: torch.LongTensor | None = None,
    cu_seqlens_cpu: torch.LongTensor | None = None,
    cp_context=None,
    use_graph: bool = False,
    max_num_seqs: int | None = None,
    **kwargs,
):
    r"""Chunked KDA, forward and backward: ``S_t = (I - b_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + b_t k_t v_t^T``,
    ``o_t = S_t^T (scale q_t)``.

    Args:
        q, k: ``[B, T, H, K]`` (``K <= 256``).
        v: ``[B, T, HV, V]``; ``HV % H == 0`` (GVA: value head ``i`` reads q/k head ``i // (HV // H)``).
        g: ``[B, T, HV, K]``, the per-step log decay, or the raw gate if ``use_gate_in_kernel``.
        beta: ``[B, T, HV]``, post-sigmoid, or logits if ``use_beta_sigmoid_in_kernel``.
        scale: attention scale, default ``K ** -0.5``.
        initial_state: float32 ``[N, HV, K, V]`` (``[N, HV, V, K]`` if ``state_v_first``).
        output_final_state: also return the float32 final state (same layout as ``initial_state``).
        use_qk_l2norm_in_kernel: l2-normalise q and k (eps 1e-6) first.
        use_gate_in_kernel: ``g <- -exp(A_log) * softplus(g + dt_bias)``, or with ``lower_bound``
            ``lower_bound * sigmoid(exp(A_log) * (g + dt_bias))``; ``A_log`` (``HV`` elements) and
            ``dt_bias`` (``HV * K``) are keyword arguments; ``A_log`` may be ``None`` with ``lower_bound``.
        use_beta_sigmoid_in_kernel: ``beta <- sigmoid(beta)`` (``2 * sigmoid`` with ``allow_neg_eigval``).
        allow_neg_eigval: requires ``use_beta_sigmoid_in_kernel``.
        safe_gate: FLA's bounded-gate kernels; with ``use_gate_in_kernel`` requires
            ``-5 <= lower_bound < 0``. The reference is exact for any gate, so this changes no number.
        lower_bound: selects the lower-bound gate form (see ``use_gate_in_kernel``).
        disable_recompute: keep every forward intermediate for backward instead of recomputing it.
        return_intermediate_states: inference only; also return the chunk-start states
            ``h`` ``[B, NT, HV, K, V]`` (varlen: ``[1, total chunks, ...]``) in ``k.dtype``.
        state_v_first: state layout ``[..., V, K]``.
        cu_seqlens: ``[N + 1]`` int32/int64 cumulative lengths (``B`` must be 1).
        cu_seqlens_cpu: a CPU copy of ``cu_seqlens``: its values are checked and the chunk tables built
            from it on the host. Without it, NPU tensors' chunk tables are built on the device from
            ``cu_seqlens`` (nothing read on the host; its values then go unchecked, clamped into range).
        cp_context: FLA's context parallelism (``fla.ops.cp.build_cp_context``): this rank's slice
            of the packed sequences (``B == 1``); ``cu_seqlens`` comes from the context, and
            ``initial_state`` / ``output_final_state`` / ``return_intermediate_states`` / ``use_graph``
            are refused. The states crossing ranks travel over the context's process group.
        use_graph, max_num_seqs: FLA's graph-capture padding contract for varlen; checked, and
            zero-length tail sequences are handled.
        chunk_size (kwarg): 32 or 64 (default 64).
        input_layout (kwarg): ``"BSND"`` (FLA's ``[B, T, H, D]``, default) or ``"BNSD"``
            (head-major ``[B, H, T, D]``: q, k, v, g, beta and o all head-major).

    Returns:
        ``(o, final_state)`` — ``o`` ``[B, T, HV, V]`` in ``q.dtype`` — or ``(o, final_state, h)``.
    """
    fn = "chunk_kda"
    state_v_first = V.pop_state_layout(state_v_first, kwargs)
    V.reject_unknown_kwargs(fn, kwargs, _EXTRA_KWARGS)
    layout = kwargs.get("input_layout", "BSND")
    q, k, v, g, beta = V.to_bsnd(layout, fn, q, k, v, g, beta)
    if cp_context is not None and use_graph:
        raise NotImplementedError("Ascend KDA graph mode does not currently support context parallelism.")
    cu_seqlens, cu_seqlens_cpu = CP.resolve(fn, cp_context, initial_state, output_final_state, cu_seqlens,
                                            cu_seqlens_cpu, return_intermediate_states)
    V.check_varlen(q, initial_state, cu_seqlens)
    if initial_state is not None:
        assert initial_state.dtype == torch.float32, "initial_state must be in float32."

    A_log, dt_bias = None, None
    if use_gate_in_kernel:
        A_log, dt_bias = kwargs.get("A_log"), kwargs.get("dt_bias")
        if A_log is None and lower_bound is None:
            raise ValueError("`A_log` must be provided when `use_gate_in_kernel=True` and `lower_bound` is not set.")
    elif kwargs.get("A_log") is not None or kwargs.get("dt_bias") is not None:
        V.warn_once(f"{fn}: `A_log`/`dt_bias` are ignored because `use_gate_in_kernel=False` (as in FLA).")

    chunk_size = kwargs.get("chunk_size", 64)
    V.check_chunk_size(chunk_size, (32, 64), "`chunk_size` must be either 32 or 64 for KDA")
    if safe_gate and use_gate_in_kernel:
        if lower_bound is None:
            raise ValueError("`lower_bound` must be specified when `safe_gate=True` and `use_gate_in_kernel=True`.")
        if not (-5 <= lower_bound < 0):
            raise ValueError(f"`lower_bound` must be in the safe range [-5, 0), got {lower_bound}.")
    V.check_neg_eigval(allow_neg_eigval, use_beta_sigmoid_in_kernel)

    for name, t in (("q", q), ("k", k), ("v", v), ("g", g)):
        V.check_ndim(fn, name, t, (4,), layout)
    V.check_ndim(fn, "beta", beta, (3,), layout)
    B, T, H, K, HV = *q.shape, v.shape[2]
    V.check_dims(fn, H=H, HV=HV, K=K, V=v.shape[-1])
    assert q.shape == k.shape, f"q and k must have the same shape, got q={q.shape} vs k={k.shape}"
    assert K <= 256, f"Currently we only support key headdim <=256 for KDA, got {K}."
    assert HV % H == 0, (
        f"For GVA, num_v_heads (HV={HV}) must be evenly divisible by num_qk_heads (H={H}), "
        f"but got HV % H = {HV % H}"
    )
    assert g.shape == (B, T, HV, K), f"g must have shape [B, T, HV, K]={[B, T, HV, K]}, got {list(g.shape)}"
    assert beta.shape == (B, T, HV), f"beta must have shape [B, T, HV]={[B, T, HV]}, got {list(beta.shape)}"

    V.check_tensors(fn, q.device, q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias,
                    initial_state=initial_state)
    if v.shape[:2] != (B, T):
        raise ValueError(f"{fn}: `v` must have shape [B, T, HV, V] with B={B}, T={T}, got {list(v.shape)}.")
    if A_log is not None and A_log.numel() != HV:
        raise ValueError(f"{fn}: `A_log` must have HV={HV} elements, got shape {list(A_log.shape)}.")
    if dt_bias is not None and dt_bias.numel() != HV * K:
        raise ValueError(f"{fn}: `dt_bias` must have HV*K={HV * K} elements, got shape {list(dt_bias.shape)}.")
    if not use_gate_in_kernel:
        V.check_log_decay(fn, g)
    cu_cpu = V.check_cu_seqlens(fn, cu_seqlens, T, q.device, cu_seqlens_cpu, host_copy=cp_context is not None)
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    V.check_state(fn, "initial_state", initial_state, N, HV, K, v.shape[-1], state_v_first)
    if use_graph and cu_seqlens is not None:
        expected = cu_seqlens.shape[0] - 1 if max_num_seqs is None else max_num_seqs
        assert cu_seqlens.shape[0] - 1 == expected, (
            f"cu_seqlens must be padded with zero-length tail sequences to exactly "
            f"max_num_seqs + 1 entries, got {cu_seqlens.shape[0] - 1} sequences "
            f"with max_num_seqs={expected}"
        )
    if return_intermediate_states:
        assert torch.is_inference_mode_enabled(), "return_intermediate_states is only allowed in inference mode"
        assert disable_recompute is False, "return_intermediate_states must be used with disable_recompute=False"

    cfg = DeltaRuleConfig(
        name=fn,
        scale=K ** -0.5 if scale is None else float(scale),
        chunk_size=chunk_size,
        per_key_gate=True,
        use_qk_l2norm=use_qk_l2norm_in_kernel,
        beta_sigmoid_scale=(2.0 if allow_neg_eigval else 1.0) if use_beta_sigmoid_in_kernel else None,
        gate_fwd=partial(kda_gate_fwd, lower_bound=lower_bound, output_dtype=None) if use_gate_in_kernel else None,
        gate_bwd=partial(kda_gate_bwd, lower_bound=lower_bound) if use_gate_in_kernel else None,
        gate_form=("softplus" if lower_bound is None else "sigmoid") if use_gate_in_kernel else "none",
        lower_bound=lower_bound,
        state_v_first=state_v_first,
        output_final_state=output_final_state,
        disable_recompute=disable_recompute,
        return_intermediate_states=return_intermediate_states,
    )
    if CP.enabled(cp_context):
        o = CP.chunk_cp(q, k, v, g, beta, A_log, dt_bias, cfg, cu_cpu, cp_context, fn)
        return (o if layout == "BSND" else o.transpose(1, 2)), None
    plan = ChunkPlan.of_call(B, T, chunk_size, cu_seqlens, cu_cpu, q.device)
    out = ChunkDeltaRuleFunction.apply(q, k, v, g, beta, A_log, dt_bias, initial_state, cfg, plan)
    o = out[0] if layout == "BSND" else out[0].transpose(1, 2)
    return (o, *out[1:])
