"""Gated DeltaNet decode: ``fused_recurrent_gated_delta_rule`` (FLA's signature, forward only)."""

from __future__ import annotations

import torch

from ..common import validate as V
from ..common.recurrent import run_recurrent
from .gate import gdn_gate_fwd


@torch.no_grad()
def fused_recurrent_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None = None,
    gk: torch.Tensor | None = None,
    gv: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    use_gate_in_kernel: bool = False,
    A_log: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False,
    state_v_first: bool = False,
    cu_seqlens: torch.LongTensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-by-token Gated DeltaNet (FLA's ``fused_recurrent_gated_delta_rule``; forward only: the
    results carry no autograd history, where FLA's raise ``NotImplementedError`` in backward).

    Args:
        q, k ``[B, T, H, K]``; v ``[B, T, HV, V]``; g ``[B, T, HV]`` scalar log decay (raw gate with
        ``use_gate_in_kernel``, which then needs ``A_log`` and applies to ``g`` only); optional
        per-key ``gk`` ``[B, T, HV, K]`` and per-value ``gv`` ``[B, T, HV, V]`` log decays;
        beta ``[B, T, HV]`` or ``[B, T, HV, V]`` (``None``: ones); other arguments as
        :func:`fla_npu.chunk_gated_delta_rule`. Serving keywords as
        :func:`fla_npu.fused_recurrent_kda_fwd`: ``ssm_state_indices``, ``num_accepted_tokens``,
        ``inplace_final_state`` (default False) and ``out``.
    Returns:
        ``(o, final_state)``: ``o`` in ``v``'s dtype, ``final_state`` float32 (or the pool, in place).
    """
    fn = "fused_recurrent_gated_delta_rule"
    state_v_first = V.pop_state_layout(state_v_first, kwargs)
    V.reject_unknown_kwargs(fn, kwargs, ("ssm_state_indices", "num_accepted_tokens", "inplace_final_state", "out"))
    idx = kwargs.get("ssm_state_indices")
    V.check_varlen(q, initial_state, cu_seqlens if idx is None else None)
    for name, t in (("q", q), ("k", k), ("v", v), ("gk", gk), ("gv", gv)):
        V.check_ndim(fn, name, t, (4,), "BSND")
    B, T, H, K = q.shape
    HV = v.shape[2]
    V.check_dims(fn, H=H, HV=HV, K=K, V=v.shape[-1])
    if k.shape != q.shape or v.shape[:2] != (B, T) or HV % H:
        raise ValueError(f"{fn}: need q, k [B, T, H, K] and v [B, T, HV, V] with HV % H == 0; "
                         f"got q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}.")
    if beta is None:
        beta = torch.ones(B, T, HV, dtype=q.dtype, device=q.device)
    if use_gate_in_kernel:
        if A_log is None:
            raise ValueError("`A_log` must be provided when `use_gate_in_kernel=True`.")
        if g is None:
            raise ValueError("`g` (raw pre-activation) must be provided when `use_gate_in_kernel=True`.")
    elif A_log is not None or dt_bias is not None:
        V.warn_once(f"{fn}: `A_log`/`dt_bias` are ignored because `use_gate_in_kernel=False` (as in FLA).")
    V.check_neg_eigval(allow_neg_eigval, use_beta_sigmoid_in_kernel)
    V.check_tensors(fn, q.device, q=q, k=k, v=v, g=g, gk=gk, gv=gv, beta=beta, A_log=A_log if use_gate_in_kernel else None,
                    dt_bias=dt_bias if use_gate_in_kernel else None, initial_state=initial_state, out=kwargs.get("out"))
    V.check_tensors(fn, q.device, floating=False, ssm_state_indices=idx, num_accepted_tokens=kwargs.get("num_accepted_tokens"))
    for name, t, shape in (("g", g, (B, T, HV)), ("gk", gk, (B, T, HV, K)), ("gv", gv, tuple(v.shape))):
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"{fn}: `{name}` must have shape {list(shape)}, got {list(t.shape)}.")
    if beta.shape not in ((B, T, HV), tuple(v.shape)):
        raise ValueError(f"{fn}: `beta` must have shape {[B, T, HV]} or {list(v.shape)}, got {list(beta.shape)}.")
    if use_gate_in_kernel:
        for name, t in (("A_log", A_log), ("dt_bias", dt_bias)):
            if t is not None and t.numel() != HV:
                raise ValueError(f"{fn}: `{name}` must have HV={HV} elements, got shape {list(t.shape)}.")
        g = gdn_gate_fwd(g, A_log, dt_bias, None)
    cu_cpu = V.check_cu_seqlens(fn, cu_seqlens, T, q.device)
    return run_recurrent(
        fn, q, k, v, beta, g=g, gk=gk, gv=gv, scale=K ** -0.5 if scale is None else float(scale),
        initial_state=initial_state, output_final_state=output_final_state,
        inplace_final_state=kwargs.get("inplace_final_state", False), state_v_first=state_v_first, cu_cpu=cu_cpu,
        ssm_state_indices=idx, num_accepted_tokens=kwargs.get("num_accepted_tokens"),
        use_qk_l2norm=use_qk_l2norm_in_kernel,
        beta_sigmoid_scale=(2.0 if allow_neg_eigval else 1.0) if use_beta_sigmoid_in_kernel else None,
        out=kwargs.get("out"))
