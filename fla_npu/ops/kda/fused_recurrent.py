"""KDA decode: ``fused_recurrent_kda`` (FLA's public function, forward only) and
``fused_recurrent_kda_fwd`` (FLA's dispatched kernel wrapper, with the serving arguments)."""

from __future__ import annotations

import torch

from ..common import validate as V
from ..common.recurrent import run_recurrent
from .gate import kda_gate_fwd


def fused_recurrent_kda_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    initial_state: torch.Tensor | None = None,
    scale: float | None = None,
    output_final_state: bool = False,
    inplace_final_state: bool = True,
    state_v_first: bool = False,
    cu_seqlens: torch.LongTensor | None = None,
    ssm_state_indices: torch.Tensor | None = None,
    num_accepted_tokens: torch.Tensor | None = None,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    lower_bound: float | None = None,
    out: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token KDA for decoding and serving (same arguments as FLA's ``fused_recurrent_kda_fwd``).

    Beyond :func:`fused_recurrent_kda`: ``beta`` may be per value channel ``[B, T, HV, V]``;
    ``inplace_final_state`` writes the final state(s) into ``initial_state``; ``ssm_state_indices``
    (``[N]`` or ``[N, L]``) makes ``initial_state`` a state pool read at slot
    ``idx[n, num_accepted_tokens[n] - 1]`` (or ``idx[n, 0]``) and written after every token ``t`` at
    ``idx[n, t]`` (in place) or at row ``bos + t`` of a new per-token state tensor; ``out`` receives ``o``.
    Returns ``(o, final_state)``; ``o`` has ``v``'s dtype, new states are float32. Forward only:
    the results carry no autograd history (as FLA's).
    """
    fn = "fused_recurrent_kda_fwd"
    V.reject_unknown_kwargs(fn, kwargs, ())
    # FLA's own two checks in this function are asserts (raised before any other of its work).
    if out is not None:
        assert not isinstance(out, torch.Tensor) or out.shape == v.shape, (
            f"{fn}: `out` must have the shape of `v` {list(v.shape)}, got {list(out.shape)}.")
    if inplace_final_state:
        assert initial_state is not None, (
            f"{fn}: `inplace_final_state=True` writes into `initial_state`, which is None.")
    return _fused_recurrent_kda(
        fn, q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, initial_state=initial_state, scale=scale,
        output_final_state=output_final_state, inplace_final_state=inplace_final_state, state_v_first=state_v_first,
        cu_seqlens=cu_seqlens, ssm_state_indices=ssm_state_indices, num_accepted_tokens=num_accepted_tokens,
        use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, use_gate_in_kernel=use_gate_in_kernel,
        use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
        lower_bound=lower_bound, out=out)


@torch.no_grad()
def _fused_recurrent_kda(fn, q, k, v, g, beta, *, A_log, dt_bias, initial_state, scale, output_final_state,
                         inplace_final_state, state_v_first, cu_seqlens, ssm_state_indices, num_accepted_tokens,
                         use_qk_l2norm_in_kernel, use_gate_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval,
                         lower_bound, out):
    """The checks FLA lacks (``ValueError``, naming ``fn``), the gate activation and the recurrence."""
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g)):
        V.check_ndim(fn, name, t, (4,), "BSND")
    V.check_ndim(fn, "beta", beta, (3, 4), "BSND")
    V.check_tensors(fn, q.device, q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias,
                    initial_state=initial_state, out=out)
    V.check_tensors(fn, q.device, floating=False, ssm_state_indices=ssm_state_indices, num_accepted_tokens=num_accepted_tokens)
    B, T, H, K = q.shape
    HV = v.shape[2]
    V.check_dims(fn, H=H, HV=HV, K=K, V=v.shape[-1])
    if k.shape != q.shape or v.shape[:2] != (B, T) or HV % H:
        raise ValueError(f"{fn}: need q, k [B, T, H, K] and v [B, T, HV, V] with HV % H == 0; "
                         f"got q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}.")
    if g.shape != (B, T, HV, K):
        raise ValueError(f"{fn}: `g` must have shape {[B, T, HV, K]}, got {list(g.shape)}.")
    if beta.shape not in ((B, T, HV), tuple(v.shape)):
        raise ValueError(f"{fn}: `beta` must have shape {[B, T, HV]} or {list(v.shape)}, got {list(beta.shape)}.")
    V.check_neg_eigval(allow_neg_eigval, use_beta_sigmoid_in_kernel)
    cu_cpu = V.check_cu_seqlens(fn, cu_seqlens, T, q.device)
    if cu_seqlens is not None and B != 1:
        raise ValueError(f"{fn}: the batch size must be 1 when `cu_seqlens` is given, got {B}.")
    if use_gate_in_kernel:
        if A_log is None and lower_bound is None:
            raise ValueError("`A_log` must be provided when `use_gate_in_kernel=True` and `lower_bound` is not set.")
        if A_log is not None and A_log.numel() != HV:
            raise ValueError(f"{fn}: `A_log` must have HV={HV} elements, got shape {list(A_log.shape)}.")
        if dt_bias is not None and dt_bias.numel() != HV * K:
            raise ValueError(f"{fn}: `dt_bias` must have HV*K={HV * K} elements, got shape {list(dt_bias.shape)}.")
        gk = kda_gate_fwd(g, A_log, dt_bias, lower_bound, None)
    else:
        gk = g
    return run_recurrent(
        fn, q, k, v, beta, gk=gk, scale=K ** -0.5 if scale is None else float(scale),
        initial_state=initial_state, output_final_state=output_final_state,
        inplace_final_state=inplace_final_state, state_v_first=state_v_first, cu_cpu=cu_cpu,
        ssm_state_indices=ssm_state_indices, num_accepted_tokens=num_accepted_tokens,
        use_qk_l2norm=use_qk_l2norm_in_kernel,
        beta_sigmoid_scale=(2.0 if allow_neg_eigval else 1.0) if use_beta_sigmoid_in_kernel else None, out=out)


def fused_recurrent_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    lower_bound: float | None = None,
    state_v_first: bool = False,
    cu_seqlens: torch.LongTensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token KDA (FLA's ``fused_recurrent_kda``; forward only, like FLA's).

    Arguments as :func:`fla_npu.chunk_kda` (``A_log``/``dt_bias`` positional here, as in FLA), plus
    the serving keywords of :func:`fused_recurrent_kda_fwd`: ``ssm_state_indices``,
    ``num_accepted_tokens``, ``inplace_final_state`` (default False here) and ``out``.
    Returns ``(o, final_state)``.
    """
    fn = "fused_recurrent_kda"
    state_v_first = V.pop_state_layout(state_v_first, kwargs)
    V.reject_unknown_kwargs(fn, kwargs, ("ssm_state_indices", "num_accepted_tokens", "inplace_final_state", "out"))
    V.check_varlen(q, initial_state, cu_seqlens if kwargs.get("ssm_state_indices") is None else None)
    V.check_neg_eigval(allow_neg_eigval, use_beta_sigmoid_in_kernel)
    return _fused_recurrent_kda(
        fn, q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, initial_state=initial_state, scale=scale,
        output_final_state=output_final_state, inplace_final_state=kwargs.get("inplace_final_state", False),
        state_v_first=state_v_first, cu_seqlens=cu_seqlens, ssm_state_indices=kwargs.get("ssm_state_indices"),
        num_accepted_tokens=kwargs.get("num_accepted_tokens"), use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
        use_gate_in_kernel=use_gate_in_kernel, use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
        allow_neg_eigval=allow_neg_eigval, lower_bound=lower_bound, out=kwargs.get("out"))
