"""What an op's Python call does beyond its descriptor (the generic call: :mod:`.kernels`), the one
place for it: an :class:`OpCall` per op that needs one, keyed by the op's Python name.

``call`` has the op's own Python signature (where the descriptor's arguments are not what a caller
passes; its annotations, the custom op's schema, say what the kernel call returns): it returns the
call in the descriptor's terms, ``({argument: value}, {type variable: torch dtype})``, and must not
read any tensor's data (it also serves the custom op's fake). ``host``
runs on real calls only, before the launch: the checks that read data, the inputs derived from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from ..ops.common.chunk_plan import chunk_list


@dataclass(frozen=True)
class OpCall:
    call: Callable | None = None
    host: Callable | None = None


# ---- gate_chunk_cumsum: the activation by name, A_log / dt_bias as float32, varlen chunk rows ----
ACTIVATIONS = {"none": 0, "softplus": 1, "sigmoid": 2}


def _gate_params(activation: str, A_log: Tensor | None, dt_bias: Tensor | None, lower_bound: float | None) -> dict:
    """The gate's arguments as the kernels take them: ``gate_form`` from the activation's name, A_log
    (not for the form without it) and dt_bias flat float32, ``lower_bound`` 0 when not given."""
    form = ACTIVATIONS[activation]
    A = None if (A_log is None or form == 0) else A_log.detach().to(torch.float32).contiguous().reshape(-1)
    b = None if dt_bias is None else dt_bias.detach().to(torch.float32).contiguous().reshape(-1)
    return {"a_log": A, "dt_bias": b, "gate_form": form, "lower_bound": float(0.0 if lower_bound is None else lower_bound)}


def gate_chunk_cumsum(g: Tensor, chunk_size: int, activation: str = "none", A_log: Tensor | None = None,
                      dt_bias: Tensor | None = None, lower_bound: float | None = None, scale: float | None = None,
                      cu_seqlens: Tensor | None = None, chunk_indices: Tensor | None = None) -> Tensor:
    """The kernel's call: ``g`` ``[B, T, H, K]`` or ``[B, T, H]`` (fp32/fp16/bf16) -> the fp32 chunk-local
    cumsum of the activated gate times ``scale``, same shape. ``activation``: ``"none"``,
    ``"softplus"`` (``-exp(A_log) * softplus(g + dt_bias)``) or ``"sigmoid"`` (``lower_bound *
    sigmoid(exp(A_log) * (g + dt_bias))``). Varlen (``B == 1``): validated offsets ``cu_seqlens``
    ``[N + 1]``, and the chunk rows the kernel walks, ``chunk_indices`` ``[NC, 2]`` (sequence, chunk
    of it; rows past a sequence's end are skipped), both where ``g`` is; without ``chunk_indices``,
    ``cu_seqlens`` must be a CPU tensor and the rows are built from it. A_log and dt_bias are passed
    to the kernel as float32."""
    return {"g": g, "cu_seqlens": cu_seqlens, "chunk_indices": chunk_indices, "chunk_size": int(chunk_size),
            **_gate_params(activation, A_log, dt_bias, lower_bound), "scale": float(1.0 if scale is None else scale)}, {}


def _gate_host(values: dict) -> None:
    """Varlen: the offsets and chunk rows on ``g``'s device as int32 (the rows built from a CPU
    ``cu_seqlens`` when not given)."""
    cu, rows = values["cu_seqlens"], values["chunk_indices"]
    if cu is None and rows is None:
        return
    if cu is None:
        raise ValueError("gate_chunk_cumsum: `chunk_indices` was given without `cu_seqlens`")
    if rows is None:
        if cu.device.type != "cpu":
            raise ValueError("gate_chunk_cumsum: `cu_seqlens` on the device needs `chunk_indices` (or pass it on the CPU)")
        rows = chunk_list(cu, values["chunk_size"])
    device = values["g"].device
    values["cu_seqlens"] = cu.to(device=device, dtype=torch.int32).contiguous()
    values["chunk_indices"] = rows.to(device=device, dtype=torch.int32).contiguous()


def gate_chunk_cumsum_tokens(fn: str, g: torch.Tensor, chunk_size: int, activation: str, A_log, dt_bias, lower_bound,
                             scale, cu_seqlens, chunk_indices, output_dtype) -> torch.Tensor:
    """The simulated kernel behind the public ``*_gate_chunk_cumsum`` helpers: the checks of the
    reference stage (``chunk_local_cumsum_tokens``), then the kernel, then ``output_dtype``."""
    from ..ops.common.validate import check_cu_seqlens
    from . import kernels

    if cu_seqlens is not None and g.shape[0] != 1:
        raise ValueError(f"{fn}: the batch size must be 1 when `cu_seqlens` is given, got {g.shape[0]}.")
    cpu = check_cu_seqlens(fn, cu_seqlens, g.shape[1], g.device)
    if chunk_indices is not None:
        nc = g.shape[0] * -(-g.shape[1] // chunk_size) if cpu is None else chunk_list(cpu, chunk_size).shape[0]
        if chunk_indices.shape[0] != nc:
            raise ValueError(f"{fn}: `chunk_indices` has {chunk_indices.shape[0]} rows, the sequences have {nc} chunks.")
    if g.numel() == 0:  # B, T or H is 0: nothing to launch
        kernels.get("gate_chunk_cumsum").forget_launch()
        return torch.zeros(g.shape, dtype=output_dtype, device=g.device)
    out = kernels.gate_chunk_cumsum(g, chunk_size, activation, A_log, dt_bias, lower_bound, scale, cpu)
    return out.to(output_dtype)


# ---- chunk_intra: the rows' factors off by default ------------------------------------------------
def chunk_intra(q: Tensor, k: Tensor, beta: Tensor, g: Tensor, qk_l2norm: bool = False, scale: float = 1.0,
                aqk_dtype: torch.dtype = torch.float32, akk_dtype: torch.dtype = torch.float32,
                akk_beta: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The kernel's call: ``Aqk``, ``Akk = (I + L)^-1`` (with ``akk_beta``: ``(I + L)^-1 diag(beta)``,
    the operand :func:`chunk_state_output` takes; each float32 or q's dtype: ``aqk_dtype``,
    ``akk_dtype``) and the factors the kernel applied to q's and k's rows, ``q_scale``, ``k_scale``
    ``[NC, HQ, BT]`` float32: with ``qk_l2norm`` their reciprocal l2 norms (FLA's l2norm), q's times
    ``scale``; without it ``scale`` and 1. q, k token-major ``[NC, BT, HQ, K]`` (float16 / bfloat16),
    beta ``[NC, HV, BT]`` and g (G, natural log: KDA token-major ``[NC, BT, HV, K]``, GDN ``[NC, HV, BT, 1]``)
    float32."""
    return {"q": q, "k": k, "beta": beta, "g": g, "qk_l2norm": int(bool(qk_l2norm)), "scale": float(scale),
            "akk_beta": int(bool(akk_beta))}, {"A": aqk_dtype, "O": akk_dtype}


# ---- chunk_gate_intra: chunk_intra with KDA's gate formed in the launch ---------------------------
def chunk_gate_intra(q: Tensor, k: Tensor, beta: Tensor, g: Tensor, chunk_len: Tensor, activation: str = "none",
                     A_log: Tensor | None = None, dt_bias: Tensor | None = None, lower_bound: float | None = None,
                     qk_l2norm: bool = False, scale: float = 1.0,
                     akk_beta: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """The kernel's call: :func:`chunk_intra` (``Aqk``, ``Akk``, ``q_scale``, ``k_scale``; Aqk and Akk in
    q's dtype) on the G that :func:`gate_chunk_cumsum` forms from the raw per-key gate ``g`` (``[NC, BT,
    HV, K]``, token-major chunk layout; float32 or q's dtype, other dtypes cast to float32) with
    ``activation``, ``A_log``, ``dt_bias`` and ``lower_bound`` as there (scale 1: natural log), rows at
    or past ``chunk_len[c]`` (``[NC]``, int32, 0..BT) counting as no decay; also returns that G
    (float32, padding rows the last valid row's value) and ``e_last = exp(G[:, -1])`` ``[NC, HV, K]``:
    what :func:`chunk_state_output` takes. KDA only, K up to 128."""
    raw = g if g.dtype in (torch.float32, q.dtype) else g.to(torch.float32)
    return {"q": q, "k": k, "beta": beta, "g": raw, "chunk_len": chunk_len.to(torch.int32),
            **_gate_params(activation, A_log, dt_bias, lower_bound), "qk_l2norm": int(bool(qk_l2norm)),
            "scale": float(scale), "akk_beta": int(bool(akk_beta))}, {
        "T": q.dtype, "R": raw.dtype}


def _chunk_gate_intra_host(values: dict) -> None:
    _check_chunk_len("chunk_gate_intra", values["chunk_len"], values["q"])


def _check_chunk_len(op: str, lens: Tensor, q: Tensor) -> None:
    """Chunk lengths outside [0, BT] (BT: q's chunk size; checked when they are on the host)."""
    BT = q.shape[1] if q.dim() == 4 else 0
    if lens.device.type == "cpu" and lens.numel():
        low, high = torch.aminmax(lens)
        if int(low) < 0 or int(high) > BT:
            raise ValueError(f"{op}: `chunk_len` must lie in [0, BT = {BT}], got {lens.tolist()}")


# ---- chunk_state: the Cube dtype the caller picks, the inputs cast to what the kernel reads ------
def chunk_state(w: Tensor, u: Tensor, kg: Tensor, e_last: Tensor, chunk_offsets: Tensor, h0: Tensor | None = None,
                state_v_first: bool = False, h_dtype: torch.dtype = torch.float32,
                v_new_dtype: torch.dtype = torch.float32,
                cube_dtype: torch.dtype = torch.bfloat16) -> tuple[Tensor, Tensor, Tensor]:
    """The kernel's call, in the chunk layout: per sequence ``n`` and head, ``S = h0[n]`` (or zeros),
    then for each of the sequence's chunks ``c`` (``chunk_offsets[n] <= c < chunk_offsets[n + 1]``,
    an int32 tensor ``[N + 1]`` read by the kernel, never by the host) ``h[c] = S``, ``v_new[c] = u[c]
    - w[c] @ S``, ``S = e_last[c, :, None] * S + kg[c]^T @ v_new[c]``; ``final[n] = S``.

    ``w``, ``kg`` ``[NC, HV, BT, K]`` are rounded once to ``cube_dtype`` (float16 or bfloat16: the
    Cube reads them in it; pass them in it to skip the cast), ``u`` ``[NC, HV, BT, V]`` and ``h0``
    ``[N, HV, K, V]`` (``[N, HV, V, K]`` with ``state_v_first``) are taken as float32, ``e_last``
    ``[NC, HV, K or 1]`` float32. Returns ``h`` ``[NC, HV, K, V]`` in ``h_dtype``, ``v_new`` ``[NC, HV,
    BT, V]`` in ``v_new_dtype`` (each float32 or ``cube_dtype``, rounded once) and ``final`` float32
    (``[N, HV, K, V]``, or ``[N, HV, V, K]`` with ``state_v_first``). The state stays in float32; the
    Cube multiplies it and ``v_new`` as hi + lo halves of ``cube_dtype``. Padding rows of tail chunks
    must hold zeros in ``w``, ``kg`` and ``u``."""
    if cube_dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"chunk_state: `cube_dtype` must be torch.float16 or torch.bfloat16, got {cube_dtype}")
    for name, dtype in (("h_dtype", h_dtype), ("v_new_dtype", v_new_dtype)):
        if dtype not in (torch.float32, cube_dtype):
            raise ValueError(f"chunk_state: `{name}` must be torch.float32 or the Cube dtype {cube_dtype}, got {dtype}")
    if w.dim() != 4 or u.dim() != 4 or chunk_offsets.dim() != 1:
        raise ValueError("chunk_state: `w`, `kg`, `u` must be [NC, HV, BT, D] and `chunk_offsets` [N + 1]")
    f32 = torch.float32
    return {"w": w.to(cube_dtype), "u": u.to(f32), "kg": kg.to(cube_dtype), "e_last": e_last.to(f32),
            "chunk_offsets": chunk_offsets, "h0": None if h0 is None else h0.to(f32),
            "state_v_first": int(bool(state_v_first))}, {"H": h_dtype, "V": v_new_dtype, "T": cube_dtype}


def _check_chunk_offsets(op: str, offsets: Tensor, NC: int) -> None:
    """Offsets the kernel could not read within bounds: decreasing, or outside [0, NC] (free on the
    host; on a device the kernel reads them as given)."""
    if offsets.device.type == "cpu" and offsets.dtype == torch.int32 and offsets.numel() and (
            int(offsets.min()) < 0 or int(offsets.max()) > NC or bool((offsets[1:] < offsets[:-1]).any())):
        raise ValueError(f"{op}: `chunk_offsets` must be non-decreasing within [0, NC = {NC}], got {offsets.tolist()}")


def _chunk_state_host(values: dict) -> None:
    _check_chunk_offsets("chunk_state", values["chunk_offsets"], values["w"].shape[0])


def _state_cube_dtype(op: str, k: Tensor, chunk_offsets: Tensor) -> torch.dtype:
    """The fused state ops' Cube dtype, ``k``'s (float16 or bfloat16), with ``chunk_offsets`` checked 1-D."""
    if k.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"{op}: `k` must be torch.float16 or torch.bfloat16 (the Cube dtype), got {k.dtype}")
    if chunk_offsets.dim() != 1:
        raise ValueError(f"{op}: `chunk_offsets` must be [N + 1]")
    return k.dtype


# ---- chunk_state_output: stages 3, 4 and 5 in one launch, the Cube dtype that of k -------------
def chunk_state_output(q: Tensor, k: Tensor, v: Tensor, g: Tensor, akk: Tensor, aqk: Tensor, e_last: Tensor,
                       chunk_offsets: Tensor, h0: Tensor | None = None, state_v_first: bool = False,
                       q_scale: Tensor | None = None, k_scale: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The kernel's call: the WY factors (:func:`wy_fast`'s ``w``, ``kg`` in the Cube dtype, ``u``)
    fed into :func:`chunk_state`'s recurrence (``e_last``, ``chunk_offsets``, ``h0``, ``state_v_first``
    as there) with the chunk output formed where the chunk-start state is: returns ``o`` ``[NC, BT, HV,
    V]`` (token-major, in ``k``'s dtype) and ``final`` (float32), none of ``w``, ``u``, ``kg``, ``h``,
    ``v_new``. ``o[c] = T(q * e^G) @ T(S) + aqk @ T(v_new)`` (the WY, state and output kernels'
    products on ``(I + L)^-1`` and beta, ``v_new = u - w S`` accumulated at once in float32).
    ``q``, ``k`` ``[NC, BT, HQ, K]`` and ``v`` ``[NC, BT, HV, V]`` token-major (GVA: HQ divides HV), ``akk``
    (``(I + L)^-1 diag(beta)``: :func:`chunk_intra`'s with ``akk_beta``; beta enters only there) and
    ``aqk`` ``[NC, HV, BT, BT]`` are cast to ``k``'s dtype (float16 or bfloat16: the Cube's), ``g`` (G,
    natural log: KDA token-major ``[NC, BT, HV, K]``, GDN ``[NC, HV, BT, 1]``), ``e_last`` and ``h0`` to
    float32. ``q_scale``, ``k_scale`` ``[NC, HQ, BT]`` (both or neither; float32): factors of q's and
    k's rows (the l2 norms' reciprocals, q's times the attention scale), applied in float32 before
    anything is rounded. Padding rows of tail chunks must hold zeros in ``k``
    and ``v``. Rows of chunks outside every sequence's range are not written."""
    T, f32 = _state_cube_dtype("chunk_state_output", k, chunk_offsets), torch.float32
    return {"q": q.to(T), "k": k, "v": v.to(T), "g": g.to(f32), "akk": akk.to(T), "aqk": aqk.to(T),
            "e_last": e_last.to(f32), "chunk_offsets": chunk_offsets, "h0": None if h0 is None else h0.to(f32),
            "q_scale": None if q_scale is None else q_scale.to(f32), "k_scale": None if k_scale is None else k_scale.to(f32),
            "state_v_first": int(bool(state_v_first))}, {"T": T}


def _chunk_state_output_host(values: dict) -> None:
    _check_chunk_offsets("chunk_state_output", values["chunk_offsets"], values["akk"].shape[0])


# ---- chunk_forward: stages 2 to 5 in one launch (Gated DeltaNet), the Cube dtype that of k --------
def chunk_forward(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, e_last: Tensor, chunk_offsets: Tensor,
                  h0: Tensor | None = None, qk_l2norm: bool = False, scale: float = 1.0,
                  state_v_first: bool = False) -> tuple[Tensor, Tensor]:
    """The kernel's call: :func:`chunk_intra`'s ``Aqk`` and ``(I + L)^-1 diag(beta)`` fed into
    :func:`chunk_state_output` in one launch, neither in GM: returns ``o`` ``[NC, BT, HV, V]``
    (token-major, in ``k``'s dtype) and ``final`` (float32). ``q``, ``k`` ``[NC, BT, HQ, K]`` and ``v``
    ``[NC, BT, HV, V]`` token-major (GVA: HQ divides HV) in ``k``'s dtype (float16 or bfloat16),
    ``g`` (G, natural log, one per row: ``[NC, HV, BT, 1]``; Gated DeltaNet only), ``beta``
    ``[NC, HV, BT]``, ``e_last`` ``[NC, HV, 1]`` and ``h0`` cast to float32; with ``qk_l2norm`` each row
    of q and k divided by its l2 norm, q's times ``scale``, in float32 before anything is rounded.
    Padding rows of tail chunks must hold zeros in ``k``, ``v`` and ``beta``. Rows of chunks outside
    every sequence's range are not written."""
    T, f32 = _state_cube_dtype("chunk_forward", k, chunk_offsets), torch.float32
    return {"q": q.to(T), "k": k, "v": v.to(T), "g": g.to(f32), "beta": beta.to(f32), "e_last": e_last.to(f32),
            "chunk_offsets": chunk_offsets, "h0": None if h0 is None else h0.to(f32), "qk_l2norm": int(bool(qk_l2norm)),
            "scale": float(scale), "state_v_first": int(bool(state_v_first))}, {"T": T}


def _chunk_forward_host(values: dict) -> None:
    _check_chunk_offsets("chunk_forward", values["chunk_offsets"], values["beta"].shape[0])


# ---- chunk_gate_forward: KDA's stages 1 to 5 in one launch ------------------------------------------
def chunk_gate_forward(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, chunk_len: Tensor, chunk_offsets: Tensor,
                       activation: str = "none", A_log: Tensor | None = None, dt_bias: Tensor | None = None,
                       lower_bound: float | None = None, h0: Tensor | None = None, qk_l2norm: bool = False,
                       scale: float = 1.0, state_v_first: bool = False) -> tuple[Tensor, Tensor]:
    """The kernel's call: :func:`chunk_forward` on the G and e_last that :func:`chunk_gate_intra` forms
    from the raw per-key gate ``g`` (``[NC, BT, HV, K]``, token-major chunk layout; float32 or k's dtype,
    other dtypes cast to float32) with ``activation``, ``A_log``, ``dt_bias``, ``lower_bound`` and
    ``chunk_len`` (``[NC]``, int32, 0..BT) as there, in one launch: neither G nor e_last in GM. Returns
    ``o`` ``[NC, BT, HV, V]`` (token-major, in k's dtype) and ``final`` (float32). KDA only, K up to 128;
    the other arguments as :func:`chunk_forward`'s."""
    T, f32 = _state_cube_dtype("chunk_gate_forward", k, chunk_offsets), torch.float32
    raw = g if g.dtype in (f32, T) else g.to(f32)
    return {"q": q.to(T), "k": k, "v": v.to(T), "g": raw, "beta": beta.to(f32), "chunk_len": chunk_len.to(torch.int32),
            "chunk_offsets": chunk_offsets, "h0": None if h0 is None else h0.to(f32),
            **_gate_params(activation, A_log, dt_bias, lower_bound), "qk_l2norm": int(bool(qk_l2norm)),
            "scale": float(scale), "state_v_first": int(bool(state_v_first))}, {"T": T, "R": raw.dtype}


def _chunk_gate_forward_host(values: dict) -> None:
    _check_chunk_offsets("chunk_gate_forward", values["chunk_offsets"], values["beta"].shape[0])
    _check_chunk_len("chunk_gate_forward", values["chunk_len"], values["k"])


OP_CALLS = {
    "gate_chunk_cumsum": OpCall(gate_chunk_cumsum, _gate_host),
    "chunk_intra": OpCall(chunk_intra),
    "chunk_gate_intra": OpCall(chunk_gate_intra, _chunk_gate_intra_host),
    "chunk_state": OpCall(chunk_state, _chunk_state_host),
    "chunk_state_output": OpCall(chunk_state_output, _chunk_state_output_host),
    "chunk_forward": OpCall(chunk_forward, _chunk_forward_host),
    "chunk_gate_forward": OpCall(chunk_gate_forward, _chunk_gate_forward_host),
}
