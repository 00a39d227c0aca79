"""The chunked KDA / Gated DeltaNet forward, stages 2 to 5, on the Ascend C kernels.

One chain for both targets: on NPU tensors the kernels run on the device (the aclnn bridge of the
NPU flavour), on CPU tensors with ``FLA_NPU_CPU_IMPL=sim`` on the host simulation; the only
difference is the library :func:`~fla_npu.runtime._native.run_two_phase` calls, so nothing here
knows the target. Every kernel is called through its ``torch.ops.fla_npu`` custom op
(:mod:`.torch_ops`), which ``torch.compile`` and graph capture can trace.

Stage 1 (gate cumsum) runs before, in the pre-processing (its kernel takes the raw gate in the token
layout), except for KDA in one launch (:func:`gate_in_launch`), whose kernel forms G from the raw
gate itself. Per stage, the Cube inputs are rounded once to the op's 16-bit input dtype ``T``:

  1-5  ``o`` (T), ``final`` (fp32) = chunk_gate_forward(q, k, v, g, beta, chunk_len, chunk_offsets,
       activation, A_log, dt_bias, lower_bound, h0, l2norm, scale)  (KDA, K up to 128)

  2  ``Aqk``, ``Akk`` (T), ``q_scale``, ``k_scale`` = chunk_intra(q, k, beta, G, l2norm, scale)
     (``Akk = (I + L)^-1``, the triangular inverse in the same launch: L never leaves the kernel;
     for the fused stages 3-5 ``(I + L)^-1 diag(beta)``, ``akk_beta``: beta enters there only)
  3  ``w``, ``kg`` (T), ``u`` (fp32) = wy_fast(k, v, beta, Akk, G)   (decay factors formed from G)
  4  ``h``, ``v_new`` (T), ``final`` (fp32) = chunk_state(w, u, kg, e_last, chunk_offsets, h0)
  5  ``o`` (T) = chunk_output(q, G, h, Aqk, v_new)           (decay factors formed from G)
  3-5  ``o`` (T), ``final`` (fp32) = chunk_state_output(q, k, v, G, Akk, Aqk, e_last, chunk_offsets, h0[,
       q_scale, k_scale])
  2-5  ``o`` (T), ``final`` (fp32) = chunk_forward(q, k, v, G, beta, e_last, chunk_offsets, h0, l2norm, scale)
       (:func:`runs_one_launch`; KDA with K up to 128: Aqk and Akk never in GM)

With stages 3-5 fused and stage 2 on its kernel (:func:`takes_row_scales`), q and k reach the kernels
unscaled: the intra-chunk kernel forms the factors of their rows (the l2 norms' reciprocals, q's
times the attention scale) from the rows it reads, applies them and returns them, ``q_scale`` /
``k_scale`` ``[NC, HQ, BT]`` float32, which the fused kernel applies too: each multiplies in float32
before rounding, and no PyTorch pass reads or writes q and k. Otherwise q and k come scaled, rounded
once to T.

Stages 3, 4 and 5 run as one launch (``chunk_state_output``: the same products, final within a
float32 rounding, none of w, u, kg, h and v_new in GM) unless the caller keeps ``h``
(``return_intermediate_states``); stage 2 joins them (``chunk_forward``: Gated DeltaNet's Cube forms
q kᵀ and k kᵀ from the rows the vector cores read for the WY operands; for KDA, K up to 128, the vector
cores form the intra-chunk kernel's factored operands from the same rows) and ``Aqk`` / ``Akk`` are
not returned. ``h`` and ``o`` are
written in T, rounded once: stage 5
multiplies ``h`` in T on the Cube, and the op returns ``o`` in its input dtype T. q, k, v and KDA's G
go in and o comes out token-major ``[NC, BT, H, D]`` (for sequences of whole chunks the token layout
itself), q and k with their own heads (GVA); the other chunk tensors (GDN's G
too: one float per row) are head-major ``[NC, HV, BT, D]``.

A stage whose kernel cannot take the call (:func:`stage_reasons`) runs its reference stage instead on
the host simulation (logged once as a warning by the caller); on an NPU the caller refuses the call.
"""

from __future__ import annotations

import torch

from ..ops.common import chunk_fwd as ref
from ..ops.common.chunk_plan import ChunkPlan
from ..ops.common.chunk_tensors import ChunkForward, ChunkInputs, expand_heads
from . import kernels

# Stage -> its kernels: (kernel name, why that kernel cannot take a call: (kernel, dtype, BT, K, V)
# -> reason or None), the dtype being the op's input dtype (the Cube type).
STAGE_KERNELS = {
    "stage 2: intra-chunk": (("chunk_intra", lambda m, dt, BT, K, V: m.unsupported(dt, BT, K)),),
    "stage 3: WY factors": (("wy_fast", lambda m, dt, BT, K, V: m.unsupported(dt, BT, K, V)),),
    "stage 4: state recurrence": (("chunk_state", lambda m, dt, BT, K, V: m.unsupported(dt, BT, K, V)),),
    "stage 5: output": (("chunk_output", lambda m, dt, BT, K, V: m.unsupported(dt, BT, K, V)),),
}


def stage_reasons(dtype: torch.dtype, BT: int, K: int, V: int) -> dict:
    """``{stage: reason}`` for every stage whose kernels cannot take a call with these facts (an empty
    dict: the whole chain runs on kernels)."""
    reasons = {}
    for stage, stage_kernels in STAGE_KERNELS.items():
        for name, why_not in stage_kernels:
            kernel = kernels.get(name)
            why = f"the {name} kernel does not exist yet" if kernel is None else why_not(kernel, dtype, BT, K, V)
            if why is not None:
                reasons[stage] = why
                break
    return reasons


FUSED_STATE_OUTPUT = "chunk_state_output"  # stages 3, 4 and 5 in one launch
FUSED_STAGES = {"stage 3: WY factors", "stage 4: state recurrence", "stage 5: output"}


def runs_fused(skip: dict, keep_h: bool) -> bool:
    """Whether :func:`forward` runs stages 3, 4 and 5 as one launch (``chunk_state_output``)."""
    return not keep_h and not (FUSED_STAGES & skip.keys()) and kernels.get(FUSED_STATE_OUTPUT) is not None


ONE_LAUNCH = "chunk_forward"  # stages 2 to 5 in one launch
ONE_LAUNCH_PER_KEY_MAX_K = 128  # KDA's fp32 stage-2 operands in one launch (chunk_state_tiling.h kKdaIntraMaxK)


def runs_one_launch(skip: dict, keep_h: bool, per_key: bool, K: int) -> bool:
    """Whether :func:`forward` runs stages 2 to 5 as one launch (``chunk_forward``): every stage on
    its kernel, ``h`` not kept, and KDA's per-key gate (``per_key``) with K up to 128."""
    return ((not per_key or K <= ONE_LAUNCH_PER_KEY_MAX_K) and takes_row_scales(skip, keep_h)
            and kernels.get(ONE_LAUNCH) is not None)


def takes_row_scales(skip: dict, keep_h: bool) -> bool:
    """Whether :func:`forward` takes q and k unscaled, ``ChunkInputs.row_factors`` saying how their
    rows are scaled (l2norm, scale): when every kernel that reads q or k applies the factors (the
    intra-chunk kernel forms them, the fused kernel takes them from it); otherwise q and k come scaled."""
    return runs_fused(skip, keep_h) and "stage 2: intra-chunk" not in skip


GATE_IN_LAUNCH = "chunk_gate_forward"  # stages 1 to 5 in one launch (KDA's per-key gate)


def gate_in_launch(skip: dict, keep_h: bool, per_key: bool, dtype: torch.dtype, BT: int, K: int) -> bool:
    """Whether KDA's stage 1 runs in the one launch of stages 2-5 too (``chunk_gate_forward``: G and
    e_last formed from the raw gate in the kernel, never in GM): per-key gate, stages 2-5 in one launch
    (:func:`runs_one_launch`) and a call that kernel takes (K up to 128)."""
    kernel = kernels.get(GATE_IN_LAUNCH)
    return (per_key and runs_one_launch(skip, keep_h, per_key, K) and kernel is not None
            and kernel.unsupported(dtype, BT, K) is None)


def forward(p: ChunkInputs, h0: torch.Tensor | None, plan: ChunkPlan, T: torch.dtype, state_v_first: bool,
            skip: dict, keep_h: bool = False) -> tuple[torch.Tensor, ChunkForward]:
    """Stages 2-5 (with ``p.gate``: 1-5) of one head slice: ``o`` ``[NC, HV, BT, V]`` (T) and the stage
    results. ``T``: the Cube input dtype (float16 / bfloat16); ``h0`` ``[N, HV, K, V]`` (``[N, HV, V, K]`` if
    ``state_v_first``) or ``None``; ``skip``: the stages that run their reference instead
    (:func:`stage_reasons`); ``keep_h``: return the chunk-start states ``h`` (otherwise stages 3, 4
    and 5 on their kernels run as one launch and ``w``, ``u``, ``kg``, ``h`` and ``v_new`` are ``None``). ``final`` is returned in
    the layout ``state_v_first`` asks for."""
    from . import torch_ops  # noqa: F401  (registers torch.ops.fla_npu)

    ops = torch.ops.fla_npu
    f32 = torch.float32
    q, k, v = p.q.to(T), p.k.to(T), p.v.to(T)   # in T already (the chain's pre-processing rounds them once)
    b = p.b.to(f32)
    if p.gate is not None:  # KDA, stages 1 to 5 in one launch, from the raw gate
        l2norm, scale = p.row_factors
        x = p.gate
        o, final = ops.chunk_gate_forward(q, k, v, x.g, b, x.chunk_len, plan.offsets, x.activation, x.A_log, x.dt_bias,
                                          x.lower_bound, h0, l2norm, scale, state_v_first)
        return o.transpose(1, 2), ChunkForward(None, None, None, None, None, None, None, final)
    d = p.decay
    # token-major [NC, BT, H, D], q and k with HV / groups heads: the kernels read value head h's from
    # head h / groups (GVA); a reference stage takes them head-major and expanded
    qf, kf, vf = ((expand_heads(q.transpose(1, 2), p.groups).to(p.ct), expand_heads(k.transpose(1, 2), p.groups).to(p.ct),
                   v.transpose(1, 2).to(p.ct)) if skip else (None,) * 3)
    # G as the kernels read it, in natural-log units: KDA token-major [NC, BT, HV, K] (the chain's G is
    # a view of such a tensor: no copy), GDN head-major [NC, HV, BT, 1]
    G = d.G_nat
    G = G.transpose(1, 2) if G.shape[-1] != 1 else G

    if runs_one_launch(skip, keep_h, G.shape[-1] != 1, q.shape[-1]):
        l2norm, scale = p.row_factors or (False, 1.0)
        o, final = ops.chunk_forward(q, k, v, G, b, d.e_last, plan.offsets, h0, l2norm, scale, state_v_first)
        return o.transpose(1, 2), ChunkForward(None, None, None, None, None, None, None, final)

    fused = runs_fused(skip, keep_h)
    if "stage 2: intra-chunk" in skip:
        Aqk, Akk = ref.chunk_intra_fwd(qf, kf, p.b, d)
    else:
        # Aqk and Akk in T: the later stages' Cube reads them so; with p.row_factors the kernel applies
        # q's and k's l2 norms and scale, and returns the factors; for the fused stages Akk diag(beta)
        l2norm, scale = p.row_factors or (False, 1.0)
        Aqk, Akk, q_scale, k_scale = ops.chunk_intra(q, k, b, G, l2norm, scale, T, T, fused)

    if fused:
        # o token-major [NC, BT, HV, V], as [NC, HV, BT, V] a view; Akk times beta's columns (the
        # reference's Akk, of stage 2 skipped, here)
        factors = (q_scale, k_scale) if p.row_factors else (None, None)
        akk_b = Akk if "stage 2: intra-chunk" not in skip else Akk * p.b.to(Akk.dtype).unsqueeze(-2)
        o, final = ops.chunk_state_output(q, k, v, G, akk_b.to(T), Aqk.to(T), d.e_last, plan.offsets, h0, state_v_first,
                                          *factors)
        return o.transpose(1, 2), ChunkForward(Aqk, None, None, None, None, None, None, final)

    if "stage 3: WY factors" in skip:
        w, u, kg = ref.wy_fwd(kf, vf, p.b, d, Akk.to(p.ct))
    else:
        w, u, kg = ops.wy_fast(k, v, b, Akk.to(T), G, T)  # w, kg in T: the state kernel's Cube type

    if "stage 4: state recurrence" in skip:
        h0_k = None if h0 is None else (h0.transpose(-1, -2) if state_v_first else h0)
        h, v_new, final = ref.state_fwd(kg.to(p.ct), w.to(p.ct), u.to(p.ct), d, h0_k, plan)
        if state_v_first:
            final = final.transpose(-1, -2)
    else:
        # the call casts w / kg to T (a no-op after the WY kernel), u, e_last and h0 to float32
        h, v_new, final = ops.chunk_state(w, u, kg, d.e_last, plan.offsets, h0, state_v_first, T, T, T)

    if "stage 5: output" in skip:
        o = ref.output_fwd(qf, d, h.to(p.ct), Aqk.to(p.ct), v_new.to(p.ct))
    else:
        # token-major [NC, BT, HV, V]; as [NC, HV, BT, V] a view (whole chunks: the token layout as it is)
        o = ops.chunk_output(q, G, h.to(T), Aqk.to(T), v_new.to(T), T).transpose(1, 2)
    return o, ChunkForward(Aqk, Akk, w, u, kg, h, v_new, final)
