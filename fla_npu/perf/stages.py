"""The stage kernels the bench runs, one row per kernel: which op and stage it belongs to, its kernel
(``fla_npu.runtime.kernels``), how to launch it on random inputs at a (scaled) shape, and its unit
of work (what its launch splits over the cores) at any shape. A stage whose kernel does not exist
yet has ``launch=None`` and is reported as "reference (no kernel)".

Adding a kernel: write ``_launch_<stage>(shape, dtype)`` (random inputs of the stage's layout at
``shape``, one call of the kernel) and put it in the stage's row with the kernel's name in
``kernel``: the bench reports the stage without a kernel while the build has none. The launchers
of the chunk stages are written to the calls of ``runtime/chunk_pipeline.py``.

Units: the chunk kernels split (chunk, value head) pairs over the AI cores; the gate kernel
(token, head) pairs; prefix-shared attention (batch, query tile, K/V tile) triples. Note that the
state recurrence (stage 4) is sequential over the chunks of a sequence: its units are independent
only across heads and sequences, so its extrapolation by chunks x heads / cores holds when there are
at least as many (sequence, head) pairs as cores."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

BT = 64  # the chunk size of the production configuration


@dataclass(frozen=True)
class Stage:
    name: str
    title: str
    kernel: str | None                 # the kernel's name in fla_npu.runtime.kernels (None: no kernel yet)
    launch: Callable | None            # (shape, dtype name) -> runs the kernel once
    units: Callable                    # shape -> units of work of one launch
    scale: Callable                    # full shape -> the shape the simulation runs

    def available(self) -> str | None:
        """Why the stage has no kernel to run here (``None`` if it has)."""
        from ..runtime import kernels

        if self.launch is None or self.kernel is None or kernels.get(self.kernel) is None:
            return "reference (no kernel)"
        return None


def _torch_dtype(name: str):
    import torch
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def _gen(seed: int = 0):
    import torch
    return torch.Generator().manual_seed(seed)


# ---- shapes ---------------------------------------------------------------------------------------

def chunks(shape: dict) -> int:
    return shape["B"] * math.ceil(shape["T"] / BT)


def scale_delta_rule(shape: dict) -> dict:
    """The simulated shape of a delta-rule stage: 8 chunks (B = 1, T = 512) and 4 value heads (GVA
    ratio kept when it fits), K and V kept: enough units for every simulated core to take several."""
    groups = max(1, shape["HV"] // shape["H"])
    HV = max(groups, min(shape["HV"], 4))
    return {"B": 1, "T": min(shape["T"], 8 * BT), "H": max(1, HV // groups), "HV": HV, "K": shape["K"], "V": shape["V"]}


def scale_psa(shape: dict) -> dict:
    """The simulated shape of prefix-shared attention: one batch, at most two 128-row query tiles
    (G kept), at most 8 K/V tiles of 128 keys."""
    G = shape["G"]
    lq = max(1, min(shape["len_q"], 256 // G)) if G <= 256 else 1
    return {"bs": 1, "G": G, "len_q": lq, "len_kv": min(shape["len_kv"], 1024), "D": shape["D"]}


def units_tokens(shape: dict) -> int:
    return shape["B"] * shape["T"] * shape["HV"]


def units_chunks(shape: dict) -> int:
    return chunks(shape) * shape["HV"]


def units_psa(shape: dict) -> int:
    """(batch, 128-row query tile, 128-key K/V tile) triples."""
    return shape["bs"] * math.ceil(shape["G"] * shape["len_q"] / 128) * math.ceil(shape["len_kv"] / 128)


# ---- launchers ------------------------------------------------------------------------------------

def _launch_gate(per_key: bool):
    def run(shape: dict, dtype: str):
        import torch

        from ..runtime.kernels import gate_chunk_cumsum
        g = _gen()
        B, T, HV, K = shape["B"], shape["T"], shape["HV"], shape["K"]
        x = torch.randn((B, T, HV, K) if per_key else (B, T, HV), generator=g).to(_torch_dtype(dtype))
        A_log = torch.rand(HV, generator=g)
        if per_key:  # KDA production: the lower-bound (sigmoid) gate with dt_bias per key
            dt = torch.randn(HV * K, generator=g)
            gate_chunk_cumsum(x, BT, "sigmoid", A_log, dt, -5.0, 1.0)
        else:        # GDN: -exp(A_log) softplus(g + dt_bias)
            dt = torch.randn(HV, generator=g)
            gate_chunk_cumsum(x, BT, "softplus", A_log, dt, None, 1.0)
    return run


def _chunk_tensors(shape: dict, dtype: str, per_key: bool):
    import torch
    g = _gen(1)
    NC, HV, K, V = chunks(shape), shape["HV"], shape["K"], shape["V"]
    dt = _torch_dtype(dtype)
    k = torch.nn.functional.normalize(torch.randn(NC, BT, HV, K, generator=g), dim=-1).to(dt)   # token-major
    v = torch.randn(NC, BT, HV, V, generator=g).to(dt)
    A = (torch.tril(torch.randn(NC, HV, BT, BT, generator=g), -1) * 0.05 + torch.eye(BT)).to(dt)
    # a decaying gate cumsum (natural log), as the kernels read it: KDA token-major, GDN head-major
    G = (-torch.rand(NC, BT, HV, K, generator=g).cumsum(1) if per_key else
         -torch.rand(NC, HV, BT, 1, generator=g).cumsum(2))
    return k, v, A, G


def _row_factors(shape):
    """Factors of q's and k's rows [NC, H, BT] (the production switches' l2 norms and scale: the chain
    passes them to the intra-chunk and the fused kernels)."""
    import torch
    return torch.rand(shape, generator=_gen(8)) + 0.5


# The launches of fla_npu.runtime.chunk_pipeline.forward (the chunk layout), as it makes them; each
# active once the build has the kernel.
def _launch_intra(shape: dict, dtype: str):
    """KDA's stage 2 on the gate kernel's G (K above what the gate in its launch takes)."""
    import torch

    from ..runtime.kernels import chunk_intra
    q, _, A, e = _chunk_tensors(shape, dtype, True)
    k = q.roll(1, dims=1).contiguous()   # another set of normalised keys
    beta = torch.rand(A.shape[:3], generator=_gen(2))
    G = torch.cumsum(-torch.rand(e.shape, generator=_gen(5)) * 0.1, dim=1)
    dt = _torch_dtype(dtype)
    chunk_intra(q, k, beta, G, True, 0.088, dt, dt, True)  # as the chained forward calls it


def _state_inputs(shape: dict, dtype: str, per_key: bool) -> tuple:
    """The inputs the state kernels share as the chained forward passes them: ``(q, k, v, A, G, e_last,
    offsets)`` (e_last ``[NC, HV, K or 1]`` in (0.5, 1), offsets of dense sequences of whole chunks)."""
    import torch

    NC, HV, K = chunks(shape), shape["HV"], shape["K"]
    e_last = torch.rand(NC, HV, K if per_key else 1, generator=_gen(7)) * 0.5 + 0.5
    per_seq = math.ceil(shape["T"] / BT)
    offsets = torch.arange(0, (shape["B"] + 1) * per_seq, per_seq, dtype=torch.int32)
    k, v, A, G = _chunk_tensors(shape, dtype, per_key)
    return k.roll(1, dims=1).contiguous(), k, v, A, G, e_last, offsets


def _launch_state_output(per_key: bool):
    def run(shape: dict, dtype: str):
        from ..runtime.kernels import chunk_state_output
        q, k, v, A, G, e_last, offsets = _state_inputs(shape, dtype, per_key)
        f = _row_factors((chunks(shape), shape["HV"], BT))
        chunk_state_output(q, k, v, G, A, A, e_last, offsets, None, False, f, f.clone())  # as the chained forward calls it
    return run


def _launch_forward(shape: dict, dtype: str):
    """Gated DeltaNet's stages 2-5 in one launch, as the chained forward calls it (KDA's take the gate in
    too: _launch_gate_forward)."""
    import torch

    from ..runtime.kernels import chunk_forward
    q, k, v, _, G, e_last, offsets = _state_inputs(shape, dtype, False)
    beta = torch.rand(chunks(shape), shape["HV"], BT, generator=_gen(2))
    chunk_forward(q, k, v, G, beta, e_last, offsets, None, True, 0.088, False)


def _launch_psa(shape: dict, dtype: str):
    import torch

    from ..runtime.kernels import prefix_shared_attention
    g = _gen(4)
    dt = _torch_dtype(dtype)
    bs, G, lq, lkv, D = (shape[k] for k in ("bs", "G", "len_q", "len_kv", "D"))
    q = torch.randn(bs, G, lq, D, generator=g).to(dt)
    k = torch.randn(bs, lkv, D, generator=g).to(dt)
    v = torch.randn(bs, lkv, D, generator=g).to(dt)
    prefix_shared_attention(q, k, v, D ** -0.5)


def _launch_gate_forward(shape: dict, dtype: str):
    """KDA's stages 1 to 5 in one launch, with the production gate (the lower-bound sigmoid with A_log
    and a dt_bias per key, the raw gate in the input dtype) and switches, as the chained forward calls it."""
    import torch

    from ..runtime.kernels import chunk_gate_forward
    NC, HV, K = chunks(shape), shape["HV"], shape["K"]
    q, k, v, _, _, _, offsets = _state_inputs(shape, dtype, True)
    g = _gen(5)
    beta = torch.rand(NC, HV, BT, generator=g)
    raw = torch.randn(NC, BT, HV, K, generator=g).to(_torch_dtype(dtype))
    A_log, dt = torch.rand(HV, generator=g), torch.randn(HV * K, generator=g)
    lengths = torch.full((NC,), BT, dtype=torch.int32)
    chunk_gate_forward(q, k, v, raw, beta, lengths, offsets, "sigmoid", A_log, dt, -5.0, None, True, 0.088, False)


def _delta_rule_stages(per_key: bool, one_launch: bool = True) -> tuple:
    """The launches of the chained forward: KDA's stages 1-5 in one launch (``one_launch``); Gated
    DeltaNet's gate cumsum, then stages 2-5 in one launch; KDA with K above 128 the gate cumsum, the
    intra-chunk kernel and the fused WY + state + output kernel."""
    s = scale_delta_rule
    if per_key and one_launch:
        return (Stage("chunk_gate_forward", "1-5: gate + intra-chunk + WY + state + output", "chunk_gate_forward",
                      _launch_gate_forward, units_chunks, s),)
    gate = Stage("gate_cumsum", "1: gate + chunk-local cumsum", "gate_chunk_cumsum", _launch_gate(per_key), units_tokens, s)
    if one_launch:
        return (gate, Stage("chunk_forward", "2-5: intra-chunk + WY + state + output", "chunk_forward",
                            _launch_forward, units_chunks, s))
    state_output = Stage("chunk_state_output", "3-5: WY + state + output", "chunk_state_output",
                         _launch_state_output(per_key), units_chunks, s)
    return (gate, Stage("chunk_intra", "2: intra-chunk Aqk, Akk", "chunk_intra", _launch_intra, units_chunks, s), state_output)


def production_inputs(op: str, shape: dict, dtype: str, seed: int = 0, gate_shift: float = 0.0) -> tuple:
    """Random inputs ``(q, k, v, gate, beta, A_log, dt_bias)`` of ``chunk_kda`` / ``chunk_gated_delta_rule``
    at ``shape`` (``B, T, H, HV, K, V``: GVA when ``HV > H``) for :func:`production_forward`: the raw gate
    ~ N(0, 1) (plus ``gate_shift``) with ``A_log = log U(1, 16)``, as models initialise them; KDA's beta
    as logits (its sigmoid in the kernel), GDN's after the sigmoid."""
    import torch

    g, dt = _gen(seed), _torch_dtype(dtype)
    B, T, H, HV, K, V = (shape[x] for x in ("B", "T", "H", "HV", "K", "V"))
    q, k = (torch.randn(B, T, H, K, generator=g).to(dt) for _ in range(2))
    v = torch.randn(B, T, HV, V, generator=g).to(dt)
    beta = torch.randn(B, T, HV, generator=g)
    beta = (beta if op == "kda" else torch.sigmoid(beta)).to(dt)
    gate = (torch.randn(B, T, HV, *((K,) if op == "kda" else ()), generator=g) + gate_shift).to(dt)
    A_log = torch.log(torch.empty(HV).uniform_(1, 16, generator=g))
    dt_bias = torch.randn(HV * (K if op == "kda" else 1), generator=g) * 0.1
    return q, k, v, gate, beta, A_log, dt_bias


def production_forward(op: str, x: tuple, initial_state=None):
    """The op on :func:`production_inputs` with the production switches (KDA: gate, beta sigmoid and
    q / k l2norm in the kernel, safe gate, lower bound -5; GDN: gate and q / k l2norm in the kernel),
    the final state returned: ``(o, final)``."""
    import fla_npu

    q, k, v, gate, beta, A_log, dt_bias = x
    common = dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
                  initial_state=initial_state, output_final_state=True)
    if op == "kda":
        return fla_npu.chunk_kda(q, k, v, gate, beta, use_beta_sigmoid_in_kernel=True, safe_gate=True,
                                 lower_bound=-5.0, **common)
    return fla_npu.chunk_gated_delta_rule(q, k, v, gate, beta, **common)


def forward_call(op: str, shape: dict, dtype: str):
    """A callable running the op's no-grad production forward at ``shape`` on inputs made now (what
    the bench's PyTorch-operations model measures around the kernels, the inputs' making left out)."""
    import torch

    x = production_inputs(op, shape, dtype, seed=4)

    def run():
        with torch.no_grad():
            production_forward(op, x)
    return run


def fwd_stages(op: str, shape: dict, dtype: str) -> tuple:
    """The stages of the op's forward at ``shape``: :data:`FWD_STAGES`, but KDA's stages 2-5 in two launches
    above what one launch takes (K above 128), as :func:`~fla_npu.runtime.chunk_pipeline.runs_one_launch`
    routes the call."""
    from ..runtime.chunk_pipeline import ONE_LAUNCH_PER_KEY_MAX_K
    if op == "kda" and shape["K"] > ONE_LAUNCH_PER_KEY_MAX_K:
        return KDA_TWO_LAUNCHES
    return FWD_STAGES[op]


# op -> the stages of its forward, in order (fwd_stages)
FWD_STAGES = {
    "kda": _delta_rule_stages(per_key=True),
    "gdn": _delta_rule_stages(per_key=False),
    "prefix_shared_attention": (
        Stage("prefix_shared_attention", "attention forward", "prefix_shared_attention", _launch_psa,
              units_psa, scale_psa),
    ),
}
KDA_TWO_LAUNCHES = _delta_rule_stages(per_key=True, one_launch=False)  # KDA with K above one launch's limit
