"""Shared builders for the op tests: random inputs, rounding to the dtype under test, and the
float64 gold (forward and gradients by autograd through the naive recurrence).

Conventions:
- ``op`` is ``"kda"`` (per-key gate ``g`` ``[B, T, HV, K]``) or ``"gdn"`` (scalar gate ``[B, T, HV]``).
- Input dicts hold ``q, k, v, g, beta`` and optionally ``A_log``, ``dt_bias``, ``h0`` (always in the
  k-first layout ``[N, HV, K, V]``; the state_v_first transposition is done at the call).
- Result dicts hold ``o``, ``ht`` (k-first) and the gradients ``dq, dk, dv, dg, dbeta, dA_log,
  ddt_bias, dh0`` (those that exist).

The gold never calls fla_npu's own pre-processing: l2norm, beta sigmoid and the gate activations
are written here in float64 from the formulas of FLA's documentation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
import torch
import torch.nn.functional as F

from fla_npu.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule
from fla_npu.ops.kda.naive import naive_recurrent_kda
from fla_npu.testing import check_close

L2_EPS = 1e-6
GRAD_NAMES = {"q": "dq", "k": "dk", "v": "dv", "g": "dg", "beta": "dbeta", "A_log": "dA_log",
              "dt_bias": "ddt_bias", "h0": "dh0"}

# The parametrisations the op tests share (KDA's and GDN's alike).
FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16
DTYPES = [pytest.param(FP32, id="fp32"), pytest.param(BF16, id="bf16"), pytest.param(FP16, id="fp16")]
LOW_PRECISION = [pytest.param(BF16, id="bf16"), pytest.param(FP16, id="fp16")]
FP32_BF16 = [pytest.param(FP32, id="fp32"), pytest.param(BF16, id="bf16")]
HEAD_DIMS = pytest.mark.parametrize("K,V", [(64, 64), (128, 128), (100, 100), (64, 32), (32, 100)],
                                    ids=["K64V64", "K128V128", "K100V100", "K64V32", "K32V100"])
VARLEN_CASES = [
    pytest.param([1, 70, 33], id="with_len1"),
    pytest.param([45, 100, 77], id="not_multiple_of_chunk"),
    pytest.param([3, 7, 1, 12, 9, 15, 2, 8, 11, 4, 6, 13, 1, 10, 5, 14, 3, 9, 2, 7], id="20_short"),
    pytest.param([300], id="one_long"),
    pytest.param([30, 0, 50], id="zero_len_middle"),
    pytest.param([0, 64, 0], id="zero_len_ends"),
]


@dataclass(frozen=True)
class Switches:
    """The in-kernel pre-processing switches shared by the gold and the op call."""
    qk_l2norm: bool = False
    gate: str | None = None            # None: g is the log decay; "softplus" or "lower_bound": raw gate
    use_A_log: bool = True             # gate in kernel: pass A_log (lower_bound form may omit it)
    use_dt_bias: bool = True           # gate in kernel: pass dt_bias
    lower_bound: float | None = None   # the lower_bound argument of the op (selects the sigmoid form)
    beta_sigmoid: bool = False         # beta holds logits
    neg_eigval: bool = False           # beta <- 2 * sigmoid(beta)
    safe_gate: bool = False
    disable_recompute: bool = False
    state_v_first: bool = False
    scale: float | None = None
    chunk_size: int = 64

    def but(self, **kw) -> "Switches":
        return replace(self, **kw)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Run each test module single-threaded. The tensors here are tiny and the gold is a Python loop
    of small ops, where intra-op threads only synchronise: on the 2-core machine the default
    2 threads gave the same wall time on idle cores for twice the CPU time, and 5-10x the wall
    time while another process used the cores. Import this fixture into a test module to activate
    it there; the previous thread count is restored afterwards."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# inputs


def make_inputs(op: str, B: int, T: int, H: int, HV: int, K: int, V: int, sw: Switches = Switches(), *,
                N: int | None = None, initial_state: bool = True, g_clamp: float | None = None,
                mask_p: float = 0.0, g_fill: float | None = None, strong_gate: bool = False) -> dict:
    """Random float32 inputs, never all zero. ``N`` (number of sequences) defaults to ``B``.

    - q, v ~ randn; k ~ randn, l2-normalised unless the op normalises it (``sw.qk_l2norm``), so that
      the delta rule stays contractive.
    - g: the log decay ``logsigmoid(randn)`` when ``sw.gate`` is None (clamped to ``>= g_clamp`` if
      given; a fraction ``mask_p`` of entries replaced by -1000, FLA's masked gates), else the raw
      pre-activation ``randn``; the constant ``g_fill`` everywhere if given.
    - beta: ``rand`` in (0, 1), or ``randn`` logits when ``sw.beta_sigmoid``.
    - A_log ~ randn (as FLA's chunk tests; the activated softplus gate is then of order -1 per
      step), or with ``strong_gate`` ``log U(1, 16)`` (the range of real models' ``A``; with
      randn gates and dt_bias the activated gate is ~-12 per step on average, the state is nearly
      reset at every step); dt_bias ~ randn (``HV * K`` values for KDA, ``HV`` for GDN);
      h0 ~ randn float32 ``[N, HV, K, V]``.
    """
    N = B if N is None else N
    gshape = (B, T, HV, K) if op == "kda" else (B, T, HV)
    k = torch.randn(B, T, H, K)
    if not sw.qk_l2norm:
        k = F.normalize(k, p=2, dim=-1)
    x = {"q": torch.randn(B, T, H, K), "k": k, "v": torch.randn(B, T, HV, V)}
    if g_fill is not None:
        g = torch.full(gshape, float(g_fill))
    elif sw.gate is None:
        g = F.logsigmoid(torch.randn(gshape))
        if g_clamp is not None:
            g = g.clamp_min(g_clamp)
        if mask_p > 0:
            g = torch.where(torch.rand(gshape) < mask_p, torch.full_like(g, -1000.0), g)
    else:
        g = torch.randn(gshape)
    x["g"] = g
    x["beta"] = torch.randn(B, T, HV) if sw.beta_sigmoid else torch.rand(B, T, HV).clamp_min(1e-3)
    if sw.gate is not None:
        if sw.use_A_log:
            x["A_log"] = (torch.rand(HV) * 15 + 1).log() if strong_gate else torch.randn(HV)
        if sw.use_dt_bias:
            x["dt_bias"] = torch.randn(HV * K if op == "kda" else HV)
    if initial_state:
        x["h0"] = torch.randn(N, HV, K, V)
    return x


def round_inputs(x: dict, dtype: torch.dtype, h0_dtype: torch.dtype = torch.float32,
                 overrides: dict | None = None) -> dict:
    """The inputs as the op receives them: q, k, v, g, beta in ``dtype``; A_log, dt_bias float32;
    h0 in ``h0_dtype``; ``overrides`` maps names to other dtypes. The gold is then built on exactly
    these (rounded) values."""
    out = {}
    for name, t in x.items():
        if overrides and name in overrides:
            out[name] = t.to(overrides[name])
        elif name in ("q", "k", "v", "g", "beta", "gk", "gv"):
            out[name] = t.to(dtype)
        elif name == "h0":
            out[name] = t.to(h0_dtype)
        else:
            out[name] = t.float()
    return out


def make_cotangents(o_shape, N: int, HV: int, K: int, V: int, dtype: torch.dtype):
    """``do`` (rounded to the output dtype, as autograd hands it to the op) and ``dht`` (float32, k-first)."""
    return torch.randn(o_shape).to(dtype), torch.randn(N, HV, K, V)


# --------------------------------------------------------------------------------------------
# float64 pre-processing and gold


def l2norm64(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt(x.square().sum(-1, keepdim=True) + L2_EPS)


def gate64(op: str, g: torch.Tensor, A_log: torch.Tensor | None, dt_bias: torch.Tensor | None, sw: Switches):
    """The in-kernel gate activation of ``sw`` in float64. ``A_log``/``dt_bias`` hold ``HV`` /
    ``HV*K`` (KDA) or ``HV`` (GDN) values, or are already broadcast to ``g``'s shape."""
    HV = g.shape[2]
    ashape, bshape = ((HV, 1), (HV, g.shape[-1])) if op == "kda" else ((HV,), (HV,))
    A = None if A_log is None else (A_log if A_log.shape == g.shape else A_log.reshape(ashape))
    b = None if dt_bias is None else (dt_bias if dt_bias.shape == g.shape else dt_bias.reshape(bshape))
    z = g if b is None else g + b
    if sw.gate == "softplus":
        return -torch.exp(A) * F.softplus(z)
    assert sw.gate == "lower_bound" and sw.lower_bound is not None
    if A is not None:
        z = torch.exp(A) * z
    return sw.lower_bound * torch.sigmoid(z)


def activate64(op: str, x: dict, sw: Switches):
    """Apply the in-kernel pre-processing of ``sw`` in float64 with plain torch formulas.
    ``x`` holds float64 tensors; returns ``(q, k, g, beta)`` ready for the naive recurrence."""
    q, k, g = x["q"], x["k"], x.get("g")
    beta = x["beta"] if x.get("beta") is not None else torch.ones(x["v"].shape[:3], dtype=x["v"].dtype)
    if sw.qk_l2norm:
        q, k = l2norm64(q), l2norm64(k)
    if sw.beta_sigmoid:
        beta = (2.0 if sw.neg_eigval else 1.0) * torch.sigmoid(beta)
    if sw.gate is not None:
        g = gate64(op, g, x.get("A_log"), x.get("dt_bias"), sw)
    return q, k, g, beta


def naive64(op: str, q, k, v, g, beta, scale, h0, cu_seqlens=None, gk=None, gv=None):
    """The naive recurrence (float64 inputs) -> ``(o, final_state)`` with the state k-first."""
    if op == "kda":
        return naive_recurrent_kda(q, k, v, g, beta, scale=scale, initial_state=h0, output_final_state=True,
                                   cu_seqlens=cu_seqlens)
    return naive_recurrent_gated_delta_rule(q, k, v, beta, g, scale=scale, initial_state=h0, output_final_state=True,
                                            cu_seqlens=cu_seqlens, gk=gk, gv=gv)


def gold_forward(op: str, x: dict, sw: Switches, cu_seqlens=None) -> dict:
    """float64 forward only: ``{"o", "ht"}``."""
    with torch.no_grad():
        x64 = {n: t.double() for n, t in x.items()}
        q, k, g, beta = activate64(op, x64, sw)
        o, ht = naive64(op, q, k, x64["v"], g, beta, sw.scale, x64.get("h0"), cu_seqlens, x64.get("gk"),
                        x64.get("gv"))
    return {"o": o, "ht": ht}


def gold_forward_backward(op: str, x: dict, sw: Switches, do: torch.Tensor, dht: torch.Tensor | None,
                          cu_seqlens=None) -> dict:
    """float64 forward and gradients (autograd through the naive recurrence) of
    ``loss = sum(o * do) + sum(ht * dht)`` with respect to every input in ``x``."""
    x64 = {n: t.detach().double().requires_grad_() for n, t in x.items()}
    q, k, g, beta = activate64(op, x64, sw)
    o, ht = naive64(op, q, k, x64["v"], g, beta, sw.scale, x64.get("h0"), cu_seqlens)
    loss = (o * do.double()).sum()
    if dht is not None:
        loss = loss + (ht * dht.double()).sum()
    loss.backward()
    out = {"o": o.detach(), "ht": ht.detach()}
    out.update({GRAD_NAMES[n]: t.grad for n, t in x64.items()})
    return out


# --------------------------------------------------------------------------------------------
# calling the ops


def op_kwargs(op: str, x: dict, sw: Switches) -> dict:
    """Keyword arguments of chunk_kda / chunk_gated_delta_rule for the switches ``sw``."""
    kw = dict(scale=sw.scale, use_qk_l2norm_in_kernel=sw.qk_l2norm, use_beta_sigmoid_in_kernel=sw.beta_sigmoid,
              allow_neg_eigval=sw.neg_eigval, state_v_first=sw.state_v_first, chunk_size=sw.chunk_size)
    if sw.gate is not None:
        kw.update(use_gate_in_kernel=True, A_log=x.get("A_log"), dt_bias=x.get("dt_bias"))
    if op == "kda":
        kw.update(safe_gate=sw.safe_gate, lower_bound=sw.lower_bound, disable_recompute=sw.disable_recompute)
    return kw


def state_in(h: torch.Tensor | None, sw: Switches):
    return None if h is None else (h.transpose(-1, -2).contiguous() if sw.state_v_first else h)


def state_out(h: torch.Tensor | None, sw: Switches):
    return None if h is None else (h.transpose(-1, -2) if sw.state_v_first else h)


def run_chunk(fn, op: str, x: dict, sw: Switches, do: torch.Tensor | None, dht: torch.Tensor | None,
              cu_seqlens=None, **extra) -> dict:
    """Call the chunked op on ``x`` (leaves with ``requires_grad``), back-propagate the same loss
    as the gold and return ``o``, ``ht`` (k-first) and the gradients. ``do=None``: forward only."""
    grad = do is not None
    leaves = {}
    for n, t in x.items():
        t = state_in(t, sw) if n == "h0" else t
        leaves[n] = t.detach().clone().requires_grad_(grad)
    kw = op_kwargs(op, leaves, sw)
    kw.update(extra)
    o, ht = fn(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"], initial_state=leaves.get("h0"),
               output_final_state=True, cu_seqlens=cu_seqlens, **kw)[:2]
    out = {"o": o.detach(), "ht": state_out(ht, sw).detach()}
    if grad:
        loss = (o * do).sum()
        if dht is not None:
            loss = loss + (ht * state_in(dht, sw)).sum()
        loss.backward()
        for n, t in leaves.items():
            d = t.grad
            out[GRAD_NAMES[n]] = None if d is None else (state_out(d, sw) if n == "h0" else d)
    return out


def assert_matches(out: dict, gold: dict, dtype: torch.dtype, names=None, dtypes: dict | None = None) -> dict:
    """``check_close`` every quantity of ``gold`` (or ``names``) present in both; a gradient
    expected by the gold but missing from ``out`` fails. Returns the errors by name."""
    errs = {}
    for name in (names or list(gold)):
        assert out.get(name) is not None, f"{name}: missing (None) in the op's result"
        errs[name] = check_close(name, out[name], gold[name], (dtypes or {}).get(name, dtype))
    return errs


def seq_bounds(B: int, T: int, cu_seqlens=None):
    """``[(batch, start, end)]`` per sequence."""
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    cu = cu_seqlens.tolist()
    return [(0, s, e) for s, e in zip(cu[:-1], cu[1:])]


def cu(*lengths, dtype=torch.int64) -> torch.Tensor:
    """``cu_seqlens`` from sequence lengths."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=dtype)


def one_sequence(x: dict, n: int, b: int, s: int, e: int) -> dict:
    """The inputs of sequence ``n`` (batch row ``b``, tokens ``s:e``) as a batch of one."""
    out = {}
    for name, t in x.items():
        if name in ("q", "k", "v", "g", "beta", "gk", "gv"):
            out[name] = t[b:b + 1, s:e]
        elif name == "h0":
            out[name] = t[n:n + 1]
        else:
            out[name] = t
    return out


def gold_state_after(op: str, x: dict, sw: Switches, n: int, b: int, s: int, length: int) -> torch.Tensor:
    """float64 state of sequence ``n`` after its first ``length`` tokens, ``[HV, K, V]``."""
    if length == 0:
        ref = x.get("h0")
        if ref is None:
            HV, K, V = x["v"].shape[2], x["q"].shape[-1], x["v"].shape[-1]
            return torch.zeros(HV, K, V, dtype=torch.float64)
        return ref[n].double()
    return gold_forward(op, one_sequence(x, n, b, s, s + length), sw)["ht"][0]


def check_chunk_op(fn, op: str, B: int, T: int, H: int, HV: int, K: int, V: int, sw: Switches = Switches(),
                   dtype: torch.dtype = torch.float32, *, cu_seqlens=None, initial_state: bool = True, seed: int = 0,
                   make_kw: dict | None = None, h0_dtype: torch.dtype = torch.float32,
                   overrides: dict | None = None, transform=None, **extra):
    """Seed, build inputs rounded to ``dtype``, run the chunked op forward + backward and compare
    ``o``, the final state and every gradient with the float64 gold. Also checks that every input
    gets a gradient of its own dtype and shape. ``overrides`` gives some inputs another dtype (see :func:`round_inputs`);
    ``transform(x)`` may edit the rounded inputs before the gold and the op see them.
    Returns ``(inputs, op result, gold)``."""
    torch.manual_seed(seed)
    N = B if cu_seqlens is None else len(cu_seqlens) - 1
    x = round_inputs(make_inputs(op, B, T, H, HV, K, V, sw, N=N, initial_state=initial_state, **(make_kw or {})),
                     dtype, h0_dtype, overrides)
    if transform is not None:
        x = transform(x)
    do, dht = make_cotangents((B, T, HV, V), N, HV, K, V, dtype)
    gold = gold_forward_backward(op, x, sw, do, dht, cu_seqlens)
    out = run_chunk(fn, op, x, sw, do, dht, cu_seqlens, **extra)
    assert out["o"].dtype == dtype and out["ht"].dtype == torch.float32
    for name, t in x.items():
        d = out[GRAD_NAMES[name]]
        assert d is not None and d.dtype == t.dtype and d.shape == t.shape, f"gradient of {name}"
    assert_matches(out, gold, dtype, dtypes={"dh0": h0_dtype} if h0_dtype != torch.float32 else None)
    return x, out, gold


def gold_token_states(op: str, x: dict, sw: Switches, n: int, b: int, s: int, e: int, h0: torch.Tensor | None):
    """float64 outputs ``[e - s, HV, V]`` and states after each token ``[e - s, HV, K, V]`` of the
    sequence at batch row ``b``, tokens ``s:e``, started from ``h0`` ``[HV, K, V]``."""
    xs = one_sequence({k: v for k, v in x.items() if k != "h0"}, n, b, s, e)
    HV, K, V = x["v"].shape[2], x["q"].shape[-1], x["v"].shape[-1]
    state = torch.zeros(1, HV, K, V, dtype=torch.float64) if h0 is None else h0.double()[None]
    outs, states = [], []
    for t in range(e - s):
        step = {k: (v[:, t:t + 1] if v.dim() >= 3 and k not in ("A_log", "dt_bias") else v) for k, v in xs.items()}
        step["h0"] = state
        res = gold_forward(op, step, sw)
        state = res["ht"]
        outs.append(res["o"][0, 0])
        states.append(state[0])
    if not outs:
        return torch.zeros(0, HV, V, dtype=torch.float64), torch.zeros(0, HV, K, V, dtype=torch.float64)
    return torch.stack(outs), torch.stack(states)


def check_cu_seqlens_cpu_same_result(fn, op: str, sw: Switches, seed: int):
    """Passing the CPU copy of cu_seqlens gives bit-identical outputs and gradients (and both match the gold)."""
    torch.manual_seed(seed)
    lengths = [20, 65, 0, 31]
    cs = cu(*lengths)
    x = round_inputs(make_inputs(op, 1, sum(lengths), 2, 2, 32, 32, sw, N=len(lengths)), torch.float32)
    do, dht = make_cotangents((1, sum(lengths), 2, 32), len(lengths), 2, 32, 32, torch.float32)
    a = run_chunk(fn, op, x, sw, do, dht, cs)
    b = run_chunk(fn, op, x, sw, do, dht, cs, cu_seqlens_cpu=cs.clone())
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert_matches(b, gold_forward_backward(op, x, sw, do, dht, cs), torch.float32)


def check_varlen_equals_separate_calls(fn, op: str, seed: int):
    """A varlen batch gives each sequence what a call on that sequence alone gives."""
    torch.manual_seed(seed)
    lengths = [50, 9, 77]
    cs = cu(*lengths)
    sw = Switches(qk_l2norm=True)
    x = round_inputs(make_inputs(op, 1, sum(lengths), 2, 2, 32, 32, sw, N=3), torch.float32)
    full = run_chunk(fn, op, x, sw, None, None, cs)
    for n, (_b, s, e) in enumerate(seq_bounds(1, sum(lengths), cs)):
        xs = {k: (v[:, s:e] if k in ("q", "k", "v", "g", "beta") else v[n:n + 1] if k == "h0" else v)
              for k, v in x.items()}
        one = run_chunk(fn, op, xs, sw, None, None)
        check_close(f"o[seq {n}]", full["o"][:, s:e], one["o"].double(), torch.float32)
        check_close(f"ht[seq {n}]", full["ht"][n:n + 1], one["ht"].double(), torch.float32)
