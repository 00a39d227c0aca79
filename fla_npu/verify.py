"""``fla-npu verify``: every production shape, every implementation, against the float64 gold.

The cases come from ``fla_npu/data/production.json`` (the package's copy of the project's
production shapes), scaled down so that the whole run fits a CPU. The scaling is deterministic:

* ``T``: ``full * 64 + 32`` tokens, ``full = max(1, floor(log2 T) - 11)`` chunks of 64 plus a
  32-token tail (T=8192 -> 160, T=32768 -> 288, T=65536 -> 352), never more than ``T``. Every case
  has several chunks (so the inter-chunk recurrence runs) and a partial last chunk, and the
  long-context shapes stay the longest.
* heads: ``H' = max(1, H // 16)`` and ``HV' = H' * (HV // H)``, which keeps the GVA ratio.
* ``B`` is kept; ``K`` and ``V`` are kept (128) with ``scale="cpu"`` (the default) and capped at 64
  with ``scale="small"``.

Several production shapes scale to the same dimensions; each keeps its own row and its own random
inputs (the seed is derived from the case id), so a duplicate shape is another independent draw.

Cases, per op (``kda``: ``chunk_kda``, ``gdn``: ``chunk_gated_delta_rule``):

* every production shape with each switch set: KDA ``production`` (``kda_switches_production`` of
  the JSON: gate, beta sigmoid and q/k l2norm in the kernel, safe gate, lower bound -5, no
  recompute) and ``plain`` (all switches off: pre-computed log decay, post-sigmoid beta, unit-norm
  q/k); GDN ``plain`` and ``gate_in_kernel`` (gate, q/k l2norm and beta sigmoid in the kernel);
* one ``varlen`` case (three sequences of 37, 93 and 70 tokens, with initial states) with the
  in-kernel switch set;
* one ``decode`` case: ``fused_recurrent_*`` called token by token (two sequences, 8 steps of
  ``T=1``, the float32 state carried from call to call, starting from a random initial state).

For each case and each registered implementation (:func:`implementations`), the chunk op runs
forward and backward (cotangents for ``o`` and the final state) on inputs rounded to the dtype
under test; the gold is :func:`fla_npu.ops.common.naive.naive_recurrent_batch` (through the op's
``naive`` module) in float64 on the same rounded values, with autograd for the gradients. The
forward error is the largest relative RMS error (:func:`fla_npu.testing.rel_rms`) over ``o`` and
the final state, the gradient error the largest over the gradients of every input (``q``, ``k``,
``v``, ``g``, ``beta``, and ``A_log``, ``dt_bias``, ``initial_state`` where present). A row passes
when both are finite and within ``fla_npu.testing.TOLERANCES[dtype]``. Decode rows are forward only.

Implementations live in a registry: ``reference`` (fla_npu's public ops on CPU tensors), ``sim``
(the chunk ops' forward on the Ascend C stage kernels on the host simulation, for fp16/bf16 all five
stages, for fp32 stage 1 alone; the backward on the reference; available when the native library is
installed) and ``npu`` (the public ops on NPU tensors; available with
torch_npu and a device). Another one joins with
``register_implementation(Implementation(name, description, ops={"chunk_kda": ..., ...}))`` and is
then checked on every case whose function it provides.
"""

from __future__ import annotations

import json
import math
import os
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Iterable, Mapping

import torch
import torch.nn.functional as F

from .ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from .ops.gated_delta_rule.naive import naive_gdn_gate, naive_recurrent_gated_delta_rule
from .ops.kda import chunk_kda, fused_recurrent_kda
from .ops.kda.naive import naive_kda_gate, naive_kda_lowerbound_gate, naive_recurrent_kda
from .runtime._native import load_library
from .runtime.routing import ENV as ENV_CPU_IMPL
from .testing import TOLERANCES, rel_rms
from .verify_choices import DTYPE_NAMES, OPS, SCALES

CHUNK_FUNCTIONS = {"kda": "chunk_kda", "gdn": "chunk_gated_delta_rule"}
DECODE_FUNCTIONS = {"kda": "fused_recurrent_kda", "gdn": "fused_recurrent_gated_delta_rule"}
DTYPES = dict(zip(DTYPE_NAMES, (torch.bfloat16, torch.float16, torch.float32)))

CHUNK_SIZE = 64
HEAD_DIVISOR = 16
SMALL_HEAD_DIM = 64
VARLEN_LENGTHS = (37, 93, 70)
DECODE_BATCH = 2
DECODE_STEPS = 8

GDN_SWITCH_SETS = {
    "plain": {"use_gate_in_kernel": False, "use_qk_l2norm_in_kernel": False, "use_beta_sigmoid_in_kernel": False},
    "gate_in_kernel": {"use_gate_in_kernel": True, "use_qk_l2norm_in_kernel": True, "use_beta_sigmoid_in_kernel": True},
}
# Switches that only the chunk ops take (fused_recurrent_kda has no safe_gate / disable_recompute).
_CHUNK_ONLY_SWITCHES = ("safe_gate", "disable_recompute")


# --------------------------------------------------------------------------------------------
# Shapes and cases
# --------------------------------------------------------------------------------------------

def load_production_shapes() -> dict:
    """The production shapes shipped with the package (``fla_npu/data/production.json``)."""
    text = resources.files("fla_npu").joinpath("data", "production.json").read_text(encoding="utf-8")
    return json.loads(text)


def scaled_length(T: int, chunk_size: int = CHUNK_SIZE) -> int:
    """CPU length for a production length ``T``: ``max(1, floor(log2 T) - 11)`` full chunks plus half
    a chunk of tail (8192 -> 160, 32768 -> 288, 65536 -> 352 for chunk 64), at most ``T``."""
    full = max(1, T.bit_length() - 1 - 11)
    return min(T, full * chunk_size + chunk_size // 2)


def scale_shape(shape: Mapping[str, int], scale: str = "cpu") -> dict:
    """Scale one production shape (``B, T, H, HV, K, V``) down for the CPU: ``T`` by
    :func:`scaled_length`, ``H' = max(1, H // 16)``, ``HV' = H' * (HV // H)`` (same GVA ratio), ``B``
    kept, ``K``/``V`` kept with ``scale="cpu"`` and capped at 64 with ``scale="small"``."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    H, HV = int(shape["H"]), int(shape["HV"])
    if HV % H:
        raise ValueError(f"production shape has HV={HV} not a multiple of H={H}: {dict(shape)}")
    Hs = max(1, H // HEAD_DIVISOR)
    K, V = int(shape["K"]), int(shape["V"])
    if scale == "small":
        K, V = min(K, SMALL_HEAD_DIM), min(V, SMALL_HEAD_DIM)
    return {"B": int(shape["B"]), "T": scaled_length(int(shape["T"])), "H": Hs, "HV": Hs * (HV // H), "K": K, "V": V}


@dataclass(frozen=True)
class Case:
    """One verification case: an op, its switches, a (scaled) shape and the kind of call.

    ``kind`` is ``"chunk"`` (the chunk op, forward and backward), ``"varlen"`` (the chunk op with
    ``cu_seqlens`` and initial states) or ``"decode"`` (the fused recurrent op, ``T`` calls of one
    token each, forward only). ``production`` is the production shape the case was scaled from."""

    id: str
    op: str
    kind: str
    switch_set: str
    switches: Mapping[str, Any]
    B: int
    T: int
    H: int
    HV: int
    K: int
    V: int
    cu_seqlens: tuple | None = None
    initial_state: bool = False
    production: Mapping[str, int] | None = None

    @property
    def function(self) -> str:
        """Name of the public fla_npu function this case calls."""
        return DECODE_FUNCTIONS[self.op] if self.kind == "decode" else CHUNK_FUNCTIONS[self.op]

    @property
    def seed(self) -> int:
        """Seed of the case's random inputs, derived from its id (stable across runs and machines)."""
        return zlib.crc32(self.id.encode())

    @property
    def gate_in_kernel(self) -> bool:
        """Whether ``g`` is the raw gate (activated inside the op with ``A_log``/``dt_bias``)."""
        return bool(self.switches.get("use_gate_in_kernel"))

    def shape(self) -> dict:
        """The shape as a JSON-ready dict (with ``cu_seqlens`` for varlen, ``steps`` for decode)."""
        d = {"B": self.B, "T": self.T, "H": self.H, "HV": self.HV, "K": self.K, "V": self.V}
        if self.kind != "decode":
            d["chunk_size"] = CHUNK_SIZE
        if self.cu_seqlens is not None:
            d["cu_seqlens"] = list(self.cu_seqlens)
        if self.kind == "decode":
            d["steps"] = self.T
        d["initial_state"] = self.initial_state
        return d


def _kda_switch_sets(spec: Mapping) -> dict:
    production = dict(spec["kda_switches_production"])
    plain = {k: (None if k == "lower_bound" else False) for k in production}
    return {"production": production, "plain": plain}


def _decode_switches(switches: Mapping) -> dict:
    return {k: v for k, v in switches.items() if k not in _CHUNK_ONLY_SWITCHES}


def build_cases(spec: Mapping | None = None, ops: Iterable[str] = OPS, scale: str = "cpu",
                quick: bool = False) -> list[Case]:
    """The verification cases for ``ops`` (see the module docstring for the list).

    ``spec`` defaults to :func:`load_production_shapes`. With ``quick``, each op keeps only its first
    production shape (with every switch set), its varlen case and its decode case."""
    spec = load_production_shapes() if spec is None else spec
    ops = list(ops)
    for op in ops:
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    cases: list[Case] = []
    for op in OPS:
        if op not in ops:
            continue
        switch_sets = _kda_switch_sets(spec) if op == "kda" else GDN_SWITCH_SETS
        in_kernel = "production" if op == "kda" else "gate_in_kernel"
        shapes = spec[op][:1] if quick else spec[op]
        for set_name, switches in switch_sets.items():
            for i, prod in enumerate(shapes):
                dims = scale_shape(prod, scale)
                cases.append(Case(f"{op}:{set_name}:{i}", op, "chunk", set_name, dict(switches), **dims,
                                  production=dict(prod)))
        base = scale_shape(spec[op][0], scale)
        cu = tuple([0] + [sum(VARLEN_LENGTHS[:i + 1]) for i in range(len(VARLEN_LENGTHS))])
        cases.append(Case(f"{op}:varlen", op, "varlen", in_kernel, dict(switch_sets[in_kernel]),
                          **{**base, "B": 1, "T": cu[-1]}, cu_seqlens=cu, initial_state=True,
                          production=dict(spec[op][0])))
        cases.append(Case(f"{op}:decode", op, "decode", in_kernel, _decode_switches(switch_sets[in_kernel]),
                          **{**base, "B": DECODE_BATCH, "T": DECODE_STEPS}, initial_state=True,
                          production=dict(spec[op][0])))
    return cases


# --------------------------------------------------------------------------------------------
# Inputs and the float64 gold
# --------------------------------------------------------------------------------------------

def make_inputs(case: Case, dtype: torch.dtype) -> dict:
    """Deterministic random inputs for ``case`` (CPU tensors).

    ``q, k, v, g, beta`` and the cotangent ``do`` are rounded to ``dtype``; ``A_log``, ``dt_bias``,
    ``initial_state`` and the final-state cotangent ``dht`` are float32, as models keep them.
    Distributions: ``v``, ``do``, ``dht`` standard normal; ``q, k`` standard normal when the op
    l2-normalises them, else unit vectors; ``beta`` logits ``N(0,1)`` or their sigmoid; ``g`` raw
    ``N(0,1)`` when the gate is in the kernel, else ``logsigmoid(N(0,1))``; ``A_log = log U(1, 16)``;
    ``dt_bias`` ``N(0,1)`` for KDA (the lower-bound gate then spans ``(lower_bound, 0)``) and the
    usual ``softplus^-1(U_log(1e-3, 1e-1))`` for GDN; ``initial_state`` ``0.1 * N(0,1)``."""
    gen = torch.Generator().manual_seed(case.seed)
    sw = case.switches

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    B, T, H, HV, K, Vd = case.B, case.T, case.H, case.HV, case.K, case.V
    q, k = randn(B, T, H, K), randn(B, T, H, K)
    if not sw.get("use_qk_l2norm_in_kernel"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    v = randn(B, T, HV, Vd)
    g_shape = (B, T, HV, K) if case.op == "kda" else (B, T, HV)
    g = randn(*g_shape)
    if not case.gate_in_kernel:
        g = F.logsigmoid(g)
    beta = randn(B, T, HV)
    if not sw.get("use_beta_sigmoid_in_kernel"):
        beta = torch.sigmoid(beta)
    x = {"q": q, "k": k, "v": v, "g": g, "beta": beta}
    x = {n: t.to(dtype) for n, t in x.items()}
    if case.gate_in_kernel:
        x["A_log"] = torch.log(1 + 15 * torch.rand(HV, generator=gen))
        if case.op == "kda":
            x["dt_bias"] = randn(HV * K)
        else:
            dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3)) * torch.rand(HV, generator=gen))
            x["dt_bias"] = dt + torch.log(-torch.expm1(-dt))
    N = len(case.cu_seqlens) - 1 if case.cu_seqlens is not None else B
    if case.initial_state:
        x["initial_state"] = 0.1 * randn(N, HV, K, Vd)
    x["do"] = randn(B, T, HV, Vd).to(dtype)
    x["dht"] = randn(N, HV, K, Vd)
    return x


def grad_names(case: Case) -> list[str]:
    """The inputs whose gradients a chunk case checks (empty for decode cases)."""
    if case.kind == "decode":
        return []
    names = ["q", "k", "v", "g", "beta"]
    if case.gate_in_kernel:
        names += ["A_log", "dt_bias"]
    if case.initial_state:
        names.append("initial_state")
    return names


def _l2norm(x):
    return x / torch.sqrt(x.square().sum(-1, keepdim=True) + 1e-6)


def gold_forward(case: Case, x: Mapping[str, torch.Tensor]):
    """The op in float64 from its definition: the pre-processing the switches ask for (l2norm, beta
    sigmoid, gate activation) written out here, then the op's naive token-by-token recurrence.
    ``x`` holds float64 tensors named as in :func:`make_inputs`. Returns ``(o, final_state)``."""
    sw = case.switches
    q, k, v, g, beta = x["q"], x["k"], x["v"], x["g"], x["beta"]
    if sw.get("use_qk_l2norm_in_kernel"):
        q, k = _l2norm(q), _l2norm(k)
    if sw.get("use_beta_sigmoid_in_kernel"):
        beta = torch.sigmoid(beta)
    if case.gate_in_kernel:
        if case.op == "gdn":
            g = naive_gdn_gate(g, x["A_log"], x.get("dt_bias"))
        elif sw.get("lower_bound") is not None:
            g = naive_kda_lowerbound_gate(g, x.get("A_log"), x.get("dt_bias"), sw["lower_bound"])
        else:
            g = naive_kda_gate(g, x["A_log"], x.get("dt_bias"))
    cu = None if case.cu_seqlens is None else torch.tensor(case.cu_seqlens, dtype=torch.long)
    h0 = x.get("initial_state")
    if case.op == "kda":
        return naive_recurrent_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu)
    return naive_recurrent_gated_delta_rule(q, k, v, beta, g, initial_state=h0, output_final_state=True,
                                            cu_seqlens=cu)


@contextmanager
def torch_threads(n: int | None):
    """Run the body with ``n`` intra-op torch threads (``None``: leave the setting alone)."""
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def compute_gold(case: Case, inputs: Mapping[str, torch.Tensor]) -> dict:
    """Float64 gold for ``case`` on ``inputs`` (already rounded): ``{"o", "final_state"}`` and, for
    chunk cases, ``"d<name>"`` for every name of :func:`grad_names` (autograd through the gold)."""
    names = grad_names(case)
    x = {n: t.double().requires_grad_(n in names) for n, t in inputs.items()}
    with torch.enable_grad():
        o, final = gold_forward(case, x)
        out = {"o": o.detach(), "final_state": final.detach()}
        if names:
            grads = torch.autograd.grad([o, final], [x[n] for n in names], [x["do"], x["dht"]])
            out.update({f"d{n}": gr for n, gr in zip(names, grads)})
    return out


# --------------------------------------------------------------------------------------------
# Implementations
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Implementation:
    """Something ``fla-npu verify`` can check: callables with the FLA signatures of the public ops,
    keyed by function name (``chunk_kda``, ``chunk_gated_delta_rule``, ``fused_recurrent_kda``,
    ``fused_recurrent_gated_delta_rule``; a missing one is skipped), run on tensors placed on
    ``device``. ``unavailable`` returns why the implementation cannot run here, or ``None``."""

    name: str
    description: str
    ops: Mapping[str, Callable]
    device: str = "cpu"
    unavailable: Callable[[], str | None] = field(default=lambda: None)

    def reason_unavailable(self) -> str | None:
        """Why this implementation cannot run on this machine, or ``None`` if it can."""
        return self.unavailable()


_REGISTRY: dict[str, Implementation] = {}


def register_implementation(impl: Implementation, replace: bool = False) -> Implementation:
    """Add ``impl`` to the registry (``ValueError`` if the name is taken and ``replace`` is false)."""
    if impl.name in _REGISTRY and not replace:
        raise ValueError(f"an implementation named {impl.name!r} is already registered")
    _REGISTRY[impl.name] = impl
    return impl


def unregister_implementation(name: str) -> None:
    """Remove the implementation called ``name`` from the registry (no error if absent)."""
    _REGISTRY.pop(name, None)


def implementations(include_unavailable: bool = False) -> list[Implementation]:
    """The registered implementations, in registration order; by default only those that can run
    here (:meth:`Implementation.reason_unavailable` is ``None``)."""
    return [i for i in _REGISTRY.values() if include_unavailable or i.reason_unavailable() is None]


def _on_simulated_kernels(fn: Callable) -> Callable:
    """``fn`` with ``FLA_NPU_CPU_IMPL=sim`` during the call: its forward runs on the Ascend C stage
    kernels on the host simulation (fp16/bf16: stages 1-5; fp32: stage 1, the only one taking fp32)."""
    def call(*args, **kwargs):
        old = os.environ.get(ENV_CPU_IMPL)
        os.environ[ENV_CPU_IMPL] = "sim"
        try:
            return fn(*args, **kwargs)
        finally:
            if old is None:
                os.environ.pop(ENV_CPU_IMPL)
            else:
                os.environ[ENV_CPU_IMPL] = old
    call.__name__ = fn.__name__
    return call


def _simulation_unavailable() -> str | None:
    try:
        load_library()
    except Exception as error:  # no native library in this install
        return str(error)
    return None


PUBLIC_OPS = {"chunk_kda": chunk_kda, "chunk_gated_delta_rule": chunk_gated_delta_rule,
              "fused_recurrent_kda": fused_recurrent_kda, "fused_recurrent_gated_delta_rule": fused_recurrent_gated_delta_rule}

register_implementation(Implementation(
    name="reference",
    description="fla_npu's public ops on CPU tensors: the chunked PyTorch reference (decode: the token loop)",
    ops=PUBLIC_OPS,
))


register_implementation(Implementation(
    name="sim",
    description="the chunk ops' forward on the Ascend C stage kernels on the host simulation (fp16/bf16: the "
                "gate cumsum, intra-chunk matrices, triangular inverse, WY factors, state recurrence and output; "
                "fp32: the gate cumsum), the backward on the reference",
    ops={"chunk_kda": _on_simulated_kernels(chunk_kda),
         "chunk_gated_delta_rule": _on_simulated_kernels(chunk_gated_delta_rule)},
    unavailable=_simulation_unavailable,
))


def _npu_unavailable() -> str | None:
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return "torch_npu is not installed (no NPU)"
    if not torch.npu.is_available():  # pragma: no cover - needs torch_npu
        return "torch_npu finds no NPU device"
    return None  # pragma: no cover - needs an NPU


register_implementation(Implementation(
    name="npu",
    description="fla_npu's public ops on NPU tensors: the chunk ops' forward on the installed NPU flavour's kernels, "
                "their backward and decode on the PyTorch reference on the device; the gold stays on the CPU",
    ops=PUBLIC_OPS,
    device="npu",
    unavailable=_npu_unavailable,
))


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------

def _call_kwargs(case: Case, x: Mapping[str, torch.Tensor]) -> dict:
    kw = {"q": x["q"], "k": x["k"], "v": x["v"], "g": x["g"], "beta": x["beta"], "output_final_state": True}
    kw.update(case.switches)
    if case.gate_in_kernel:
        kw["A_log"], kw["dt_bias"] = x["A_log"], x["dt_bias"]
    if "initial_state" in x:
        kw["initial_state"] = x["initial_state"]
    if case.cu_seqlens is not None:
        kw["cu_seqlens"] = torch.tensor(case.cu_seqlens, dtype=torch.long, device=x["q"].device)
    return kw


def _run_chunk(fn: Callable, case: Case, x: Mapping[str, torch.Tensor]) -> dict:
    names = grad_names(case)
    leaves = {n: (t.detach().clone().requires_grad_(True) if n in names else t) for n, t in x.items()}
    with torch.enable_grad():
        out = fn(**_call_kwargs(case, leaves))
        o, final = out[0], out[1]
        if final is None:
            raise RuntimeError("the op returned no final state although output_final_state=True")
        grads = torch.autograd.grad([o, final], [leaves[n] for n in names],
                                    [x["do"].to(o.dtype), x["dht"].to(final.dtype)], allow_unused=True)
    res = {"o": o.detach(), "final_state": final.detach()}
    for n, gr in zip(names, grads):
        if gr is None:
            raise RuntimeError(f"the op returned no gradient for `{n}`")
        res[f"d{n}"] = gr
    return res


def _run_decode(fn: Callable, case: Case, x: Mapping[str, torch.Tensor]) -> dict:
    state = x["initial_state"]
    outs = []
    with torch.no_grad():
        for t in range(case.T):
            step = {n: (x[n][:, t:t + 1] if n in ("q", "k", "v", "g", "beta") else x[n]) for n in x}
            step["initial_state"] = state
            o, state = fn(**_call_kwargs(case, step))[:2]
            if state is None:
                raise RuntimeError("the op returned no final state although output_final_state=True")
            outs.append(o)
    return {"o": torch.cat(outs, dim=1), "final_state": state}


def _finite_or_none(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def run_case(case: Case, impl: Implementation, inputs: Mapping[str, torch.Tensor], gold: Mapping[str, torch.Tensor],
             dtype_name: str) -> dict:
    """Run ``impl`` on one case and compare with ``gold``; returns the result row (a JSON-ready dict
    with ``op, implementation, shape, switches, dtype, fwd_err, grad_err, tol, passed, seconds`` and
    ``case, kind, switch_set, production, errors`` (per tensor), ``error`` (an exception, if any)).
    Errors that are not finite are reported as ``None`` and fail the row."""
    tol = TOLERANCES[DTYPES[dtype_name]]
    row = {"op": case.function, "implementation": impl.name, "shape": case.shape(), "switches": dict(case.switches),
           "dtype": dtype_name, "fwd_err": None, "grad_err": None, "tol": tol, "passed": False, "seconds": None,
           "case": case.id, "kind": case.kind, "switch_set": case.switch_set, "production": case.production,
           "errors": {}, "error": None}
    fn = impl.ops[case.function]
    x = {n: t.detach().to(impl.device, copy=True) for n, t in inputs.items()}  # fresh copies per implementation
    t0 = time.perf_counter()
    try:
        res = _run_decode(fn, case, x) if case.kind == "decode" else _run_chunk(fn, case, x)
    except Exception as e:  # a broken implementation is a failed row, not a crashed run
        row["seconds"] = round(time.perf_counter() - t0, 3)
        row["error"] = f"{type(e).__name__}: {e}"
        return row
    row["seconds"] = round(time.perf_counter() - t0, 3)

    errors, problems = {}, []
    for name, ref in gold.items():
        got = res[name].detach().cpu()
        if tuple(got.shape) != tuple(ref.shape):
            problems.append(f"{name}: shape {list(got.shape)} != gold {list(ref.shape)}")
            errors[name] = None
            continue
        errors[name] = _finite_or_none(rel_rms(got, ref)) if torch.isfinite(got).all() else None
    row["errors"] = errors
    fwd = [errors[n] for n in ("o", "final_state")]
    grad = [e for n, e in errors.items() if n.startswith("d")]
    row["fwd_err"] = None if None in fwd else max(fwd)
    if case.kind != "decode":
        row["grad_err"] = None if (None in grad or not grad) else max(grad)
    bad = [n for n, e in errors.items() if e is None]
    if bad and not problems:
        problems.append("non-finite output/gradient: " + ", ".join(bad))
    if problems:
        row["error"] = "; ".join(problems)
    row["passed"] = (not bad and row["fwd_err"] <= tol
                     and (case.kind == "decode" or row["grad_err"] <= tol))
    return row


def verify(cases: Iterable[Case], impls: Iterable[Implementation], dtype_name: str = "bf16",
           on_row: Callable[[int, int, Case, dict], None] | None = None, threads: int | None = 1) -> list[dict]:
    """Run every case on every implementation that provides its function; the gold is computed
    once per case. ``on_row(index, total, case, row)`` is called after each row (1-based index).
    Returns the rows in order (see :func:`run_case`).

    ``threads``: intra-op torch threads during the run (``None``: unchanged). The default is 1: the
    cases are small and the gold is a long chain of small ops, so more threads gain little, and on
    a loaded machine (more busy threads than cores) they made the run about 10x slower."""
    if dtype_name not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype_name!r}")
    cases, impls = list(cases), list(impls)
    plan = [(c, [i for i in impls if c.function in i.ops]) for c in cases]
    total = sum(len(i) for _, i in plan)
    with torch_threads(threads):
        return _verify(plan, total, dtype_name, on_row)


def _verify(plan, total, dtype_name, on_row) -> list[dict]:
    rows, n = [], 0
    for case, case_impls in plan:
        if not case_impls:
            continue
        inputs = make_inputs(case, DTYPES[dtype_name])
        t0 = time.perf_counter()
        gold = compute_gold(case, inputs)
        gold_seconds = round(time.perf_counter() - t0, 3)
        for impl in case_impls:
            row = run_case(case, impl, inputs, gold, dtype_name)
            row["gold_seconds"] = gold_seconds
            rows.append(row)
            n += 1
            if on_row is not None:
                on_row(n, total, case, row)
    return rows


def _fmt_err(e: float | None, applicable: bool = True) -> str:
    if not applicable:
        return "-"
    return "nan/inf" if e is None else f"{e:.2e}"


def describe_row(row: dict) -> str:
    """One-line summary of a row: shape, switch set, implementation, errors and verdict."""
    return (f"{row['op']} {_shape_text(row)} {row['switch_set']} [{row['implementation']}]: "
            f"fwd {_fmt_err(row['fwd_err'])} grad {_fmt_err(row['grad_err'], row['kind'] != 'decode')} "
            f"{'pass' if row['passed'] else 'FAIL'} ({row['seconds']:.2f}s)"
            + (f" -- {row['error']}" if row["error"] else ""))


def _shape_text(row: dict) -> str:
    s = row["shape"]
    t = f"T={s['T']}x1" if row["kind"] == "decode" else f"T={s['T']}"
    text = f"B={s['B']} {t} H={s['H']} HV={s['HV']} K={s['K']} V={s['V']}"
    if "cu_seqlens" in s:
        text += " cu=" + ",".join(map(str, s["cu_seqlens"]))
    return text


def _production_text(p: Mapping | None) -> str:
    if not p:
        return "-"
    return f"T={p['T']} H={p['H']} HV={p['HV']}" + (f" tp={p['tp']}" if "tp" in p else "")


def format_table(rows: list[dict]) -> str:
    """The result table: op, implementation, shape, the production shape it was scaled from,
    switches, fwd err, grad err, pass; then a summary line."""
    header = ("op", "impl", "shape", "scaled from", "switches", "fwd err", "grad err", "pass")
    body = [(r["op"], r["implementation"], _shape_text(r), _production_text(r["production"]),
             r["switch_set"] + (" +h0" if r["shape"]["initial_state"] else ""),
             _fmt_err(r["fwd_err"]), _fmt_err(r["grad_err"], r["kind"] != "decode"),
             "yes" if r["passed"] else "NO") for r in rows]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body)]
    right = {5, 6}

    def line(cells):
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(header), line("-" * w for w in widths)] + [line(b) for b in body]
    passed = sum(r["passed"] for r in rows)
    tols = sorted({(r["dtype"], r["tol"]) for r in rows})
    tol_text = ", ".join(f"{d} tol {t:.1e}" for d, t in tols)
    out.append(f"{passed}/{len(rows)} rows pass ({tol_text}; errors are relative RMS vs the float64 gold)")
    return "\n".join(out)
