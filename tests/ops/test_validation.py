"""Argument validation of the public ops.

(a) Where FLA's public function rejects an input before it launches a kernel, ours must raise the
    same exception type with the same message: both are called with the very same arguments, in
    positional and in keyword form. Where FLA lets an input through to its kernel (which cannot
    launch on a CPU-only machine), that is asserted as well, so that a check FLA adds later shows up
    here, and ours is tested alone.
(b) Checks FLA lacks: ours raises before computing anything, with a message naming the argument.
(c) No failing call changes the caller's tensors (every error case of (a) and (b)).
(d) Valid extreme inputs (T=1, gates at the lower bound, g=-1000 masked steps) give finite outputs
    and gradients that match the float64 naive reference.

Part (a) needs FLA (``fla``) and is skipped without it; (b)-(d) do not.
"""

from __future__ import annotations

import inspect
import warnings
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

import fla_npu
from fla_npu.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule as gold_gdn
from fla_npu.ops.kda.naive import naive_kda_lowerbound_gate as gold_kda_lb_gate, naive_recurrent_kda as gold_kda
from fla_npu.testing import check_close

KDA_OPS = ("chunk_kda", "fused_recurrent_kda")
GDN_OPS = ("chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule")
OPS = KDA_OPS + GDN_OPS
CHUNK_OPS = ("chunk_kda", "chunk_gated_delta_rule")
RECURRENT_OPS = ("fused_recurrent_kda", "fused_recurrent_gated_delta_rule")
DECODE_OPS = ("fused_recurrent_kda", "fused_recurrent_kda_fwd", "fused_recurrent_gated_delta_rule")
FORMS = ("positional", "keyword")
PUBLIC = ("chunk_kda", "fused_recurrent_kda", "fused_recurrent_kda_fwd", "fused_kda_gate", "kda_gate_chunk_cumsum",
          "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule", "fused_gdn_gate", "gdn_gate_chunk_cumsum")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ------------------------------------------------------------------------------------------------
# helpers


def _fla_functions() -> dict:
    """FLA's public functions by name (skips the calling test when FLA is not installed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Triton is not supported on current platform, roll back to CPU."
        pytest.importorskip("einops")
        pytest.importorskip("fla")
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
        from fla.ops.gated_delta_rule.gate import fused_gdn_gate, gdn_gate_chunk_cumsum
        from fla.ops.kda import chunk_kda, fused_recurrent_kda
        from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd
        from fla.ops.kda.gate import fused_kda_gate, kda_gate_chunk_cumsum
    return {f.__name__: f for f in (chunk_kda, fused_recurrent_kda, fused_recurrent_kda_fwd, fused_kda_gate,
                                    kda_gate_chunk_cumsum, chunk_gated_delta_rule, fused_recurrent_gated_delta_rule,
                                    fused_gdn_gate, gdn_gate_chunk_cumsum)}


def inputs(op: str, B: int = 2, T: int = 8, H: int = 2, HV: int | None = None, K: int = 16, V: int = 16,
           seed: int = 0) -> dict:
    """Valid fp32 keyword arguments of ``op`` (post-activation gates and betas)."""
    HV = H if HV is None else HV
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, HV, V, generator=gen)
    per_key = op in KDA_OPS or op == "fused_recurrent_kda_fwd"
    g = F.logsigmoid(torch.randn(B, T, HV, *((K,) if per_key else ()), generator=gen))
    beta = torch.rand(B, T, HV, generator=gen)
    kw = dict(q=q, k=k, v=v, g=g, beta=beta)
    if op == "fused_recurrent_kda_fwd":
        kw["inplace_final_state"] = False  # FLA's default (True) needs an initial state
    return kw


def h0(N: int, HV: int = 2, K: int = 16, V: int = 16, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(N, HV, K, V).to(dtype)


def split_call(fn, kw: dict, form: str):
    """``(args, kwargs)`` calling ``fn`` with ``kw``: all keywords, or every named parameter up to the
    last one given passed positionally (the gaps filled with the signature's defaults)."""
    if form == "keyword":
        return (), dict(kw)
    params = inspect.signature(fn).parameters
    named = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    last = max((named.index(n) for n in kw if n in named), default=-1)
    args = tuple(kw[n] if n in kw else params[n].default for n in named[:last + 1])
    rest = {n: x for n, x in kw.items() if n not in named[:last + 1]}
    return args, rest


def _tensors(args, kwargs):
    return [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor) and x.device.type != "meta"]


def raise_unchanged(fn, args, kwargs, exc_type, match=None) -> BaseException:
    """Call ``fn``, expect ``exc_type`` (and ``match``), and check that no argument tensor changed."""
    snap = [(t, t.clone()) for t in _tensors(args, kwargs)]
    with pytest.raises(exc_type, match=match) as info:
        fn(*args, **kwargs)
    for t, before in snap:
        assert torch.equal(t, before), f"{fn.__name__} modified an argument before raising {exc_type.__name__}"
    return info.value


def fla_exception(fn, args, kwargs) -> BaseException | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - DeprecationWarning is raised as an exception by FLA's GDN
            return e
    return None


def is_kernel_launch(exc: BaseException | None) -> bool:
    """FLA got past its argument checks: its Triton launch fails on a machine without a GPU driver
    (or, with a GPU, the launch itself runs or rejects the CPU tensors)."""
    return exc is None or (isinstance(exc, RuntimeError) and ("driver" in str(exc) or "cpu tensor" in str(exc).lower()))


# ------------------------------------------------------------------------------------------------
# (a) the checks FLA makes before any kernel launch: same exception type and message


def _varlen_batch(op):
    return {**inputs(op), "cu_seqlens": torch.tensor([0, 3, 8])}


def _varlen_num_states(op):
    return {**inputs(op, B=1), "cu_seqlens": torch.tensor([0, 3, 8]), "initial_state": h0(3)}


def _neg_eigval(op):
    return {**inputs(op), "allow_neg_eigval": True}


def _both_layouts(op):
    return {**inputs(op), "state_v_first": True, "transpose_state_layout": True}


def _gate_without_A_log(op):
    return {**inputs(op), "use_gate_in_kernel": True}


def _gate_A_log_none(op):
    return {**inputs(op), "use_gate_in_kernel": True, "A_log": None, "dt_bias": None}


def _h0_dtype(dtype):
    return lambda op: {**inputs(op), "initial_state": h0(2, dtype=dtype)}


def _chunk_size(bt):
    return lambda op: {**inputs(op), "chunk_size": bt}


def _safe_gate(lower_bound):
    return lambda op: {**inputs(op), "use_gate_in_kernel": True, "safe_gate": True, "lower_bound": lower_bound,
                       "A_log": torch.zeros(2)}


def _k_differs(op):
    kw = inputs(op)
    return {**kw, "k": F.normalize(torch.randn(2, 8, 2, 32), dim=-1)}


def _k_other_T(op):
    kw = inputs(op)
    return {**kw, "k": kw["k"][:, :7]}


def _k_other_heads(op):
    kw = inputs(op, H=2, HV=4)
    return {**kw, "k": torch.randn(2, 8, 4, 16)}


def _K_too_big(op):
    return inputs(op, B=1, T=2, H=1, K=272, V=8)


def _HV_not_multiple(op):
    return inputs(op, H=2, HV=3)


def _g_shape(op):
    kw = inputs(op)
    return {**kw, "g": kw["g"][..., :8] if kw["g"].dim() == 4 else kw["g"][..., :1]}


def _beta_shape(op):
    kw = inputs(op)
    return {**kw, "beta": kw["beta"][..., :1]}


def _head_first(flag):
    return lambda op: {**inputs(op), "head_first": flag}


def _gate_without_g(op):
    return {**inputs(op), "g": None, "use_gate_in_kernel": True, "A_log": torch.zeros(2)}


def _fwd_inplace_without_state(op):
    kw = inputs(op)
    del kw["inplace_final_state"]  # FLA's default: True
    return kw


def _fwd_out_shape(op):
    kw = inputs(op)
    return {**kw, "out": torch.zeros(2, 8, 2, 8)}


def _graph_padding(op):
    return {**inputs(op, B=1), "cu_seqlens": torch.tensor([0, 3, 8]), "use_graph": True, "max_num_seqs": 4}


def _cp(op, B=1, **extra):
    """A context-parallel call: FLA's context fields (no process group: nothing is exchanged)."""
    cu = torch.tensor([0, 3, 8])
    ctx = SimpleNamespace(group=None, cu_seqlens=cu, cu_seqlens_cpu=cu)
    return {**inputs(op, B=B), "cp_context": ctx, **extra}


def _cp_without_cu_seqlens(op):
    kw = _cp(op)
    kw["cp_context"].cu_seqlens = None
    return kw


# (op, case, builder): FLA rejects these before any kernel launch.
FLA_REJECTS = [
    *[(op, "cp_initial_state", lambda op: _cp(op, initial_state=h0(2))) for op in CHUNK_OPS],
    *[(op, "cp_output_final_state", lambda op: _cp(op, output_final_state=True)) for op in CHUNK_OPS],
    *[(op, "cp_without_cu_seqlens", _cp_without_cu_seqlens) for op in CHUNK_OPS],
    *[(op, "cp_batch_not_1", lambda op: _cp(op, B=2)) for op in CHUNK_OPS],
    *[(op, "varlen_batch_not_1", _varlen_batch) for op in OPS],
    *[(op, "varlen_wrong_number_of_states", _varlen_num_states) for op in OPS],
    *[(op, "allow_neg_eigval_without_beta_sigmoid", _neg_eigval) for op in OPS],
    *[(op, "transpose_state_layout_and_state_v_first", _both_layouts) for op in OPS],
    ("chunk_kda", "initial_state_fp16", _h0_dtype(torch.float16)),
    ("chunk_kda", "initial_state_bf16", _h0_dtype(torch.bfloat16)),
    ("chunk_kda", "initial_state_fp64", _h0_dtype(torch.float64)),
    ("chunk_kda", "gate_in_kernel_without_A_log", _gate_without_A_log),
    ("chunk_kda", "gate_in_kernel_A_log_None", _gate_A_log_none),
    ("chunk_kda", "chunk_size_16", _chunk_size(16)),
    ("chunk_kda", "chunk_size_128", _chunk_size(128)),
    ("chunk_kda", "safe_gate_without_lower_bound", _safe_gate(None)),
    ("chunk_kda", "safe_gate_lower_bound_below_-5", _safe_gate(-5.5)),
    ("chunk_kda", "safe_gate_lower_bound_0", _safe_gate(0.0)),
    ("chunk_kda", "safe_gate_lower_bound_positive", _safe_gate(1.0)),
    ("chunk_kda", "q_k_head_dim_differ", _k_differs),
    ("chunk_kda", "q_k_length_differ", _k_other_T),
    ("chunk_kda", "K_above_256", _K_too_big),
    ("chunk_kda", "HV_not_multiple_of_H", _HV_not_multiple),
    ("chunk_kda", "g_shape", _g_shape),
    ("chunk_kda", "beta_shape", _beta_shape),
    ("chunk_kda", "use_graph_cu_seqlens_not_padded", _graph_padding),
    ("chunk_gated_delta_rule", "gate_in_kernel_without_A_log", _gate_without_A_log),
    ("chunk_gated_delta_rule", "chunk_size_8", _chunk_size(8)),
    ("chunk_gated_delta_rule", "chunk_size_128", _chunk_size(128)),
    ("chunk_gated_delta_rule", "q_k_heads_differ", _k_other_heads),
    ("chunk_gated_delta_rule", "HV_not_multiple_of_H", _HV_not_multiple),
    ("chunk_gated_delta_rule", "head_first_True", _head_first(True)),
    ("chunk_gated_delta_rule", "head_first_False", _head_first(False)),
    ("fused_recurrent_gated_delta_rule", "gate_in_kernel_without_A_log", _gate_without_A_log),
    ("fused_recurrent_gated_delta_rule", "gate_in_kernel_without_g", _gate_without_g),
]

# FLA's bare asserts (no message): same type; ours carries a message.
FLA_REJECTS_NO_MESSAGE = [
    ("fused_recurrent_kda_fwd", "inplace_final_state_without_initial_state", _fwd_inplace_without_state),
    ("fused_recurrent_kda_fwd", "out_shape", _fwd_out_shape),
]


def _ids(cases):
    return [f"{op}-{name}" for op, name, _ in cases]


@pytest.mark.parametrize("name", PUBLIC)
def test_signature_matches_fla(name):
    fla = _fla_functions()
    ours, theirs = inspect.signature(getattr(fla_npu, name)), inspect.signature(fla[name])
    spec = [(n, p.kind, p.default) for n, p in ours.parameters.items()]
    assert spec == [(n, p.kind, p.default) for n, p in theirs.parameters.items()]


def _call_fla(op: str, build, form: str):
    """``op``'s call built by ``build``, passed in ``form``: (our function, args, kwargs, FLA's exception)."""
    fla = _fla_functions()
    ours = getattr(fla_npu, op)
    args, kwargs = split_call(ours, build(op), form)
    return ours, args, kwargs, fla_exception(fla[op], args, kwargs)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op,case,build", FLA_REJECTS, ids=_ids(FLA_REJECTS))
def test_same_error_as_fla(op, case, build, form):
    ours, args, kwargs, theirs = _call_fla(op, build, form)
    assert theirs is not None and not is_kernel_launch(theirs), f"FLA no longer rejects {case}: {theirs!r}"
    mine = raise_unchanged(ours, args, kwargs, type(theirs))
    assert type(mine) is type(theirs)
    assert str(mine) == str(theirs)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op,case,build", FLA_REJECTS_NO_MESSAGE, ids=_ids(FLA_REJECTS_NO_MESSAGE))
def test_same_error_type_as_fla_bare_assert(op, case, build, form):
    ours, args, kwargs, theirs = _call_fla(op, build, form)
    assert isinstance(theirs, AssertionError) and str(theirs) == "", repr(theirs)
    mine = raise_unchanged(ours, args, kwargs, AssertionError)
    assert str(mine), "our assertion should say what is wrong"


# (op, case, builder, our exception, a pattern of our message): FLA lets these through to its kernel.
FLA_MISSES = [
    ("fused_recurrent_kda", "gate_in_kernel_without_A_log", _gate_without_A_log, ValueError,
     "`A_log` must be provided when `use_gate_in_kernel=True` and `lower_bound` is not set."),
    ("fused_recurrent_kda", "q_k_head_dim_differ", _k_differs, ValueError, r"q, k \[B, T, H, K\]"),
    ("fused_recurrent_kda", "HV_not_multiple_of_H", _HV_not_multiple, ValueError, "HV % H == 0"),
    ("fused_recurrent_kda", "g_shape", _g_shape, ValueError, "`g` must have shape"),
    ("fused_recurrent_kda", "beta_shape", _beta_shape, ValueError, "`beta` must have shape"),
    ("chunk_gated_delta_rule", "q_k_head_dim_differ", _k_differs, ValueError, r"q, k \[B, T, H, K\]"),
    ("chunk_gated_delta_rule", "K_above_256", _K_too_big, ValueError, "K must be <= 256"),
    ("chunk_gated_delta_rule", "g_shape", _g_shape, ValueError, "`g` must have shape"),
    ("chunk_gated_delta_rule", "beta_shape", _beta_shape, ValueError, "`beta` must have shape"),
    ("fused_recurrent_gated_delta_rule", "q_k_head_dim_differ", _k_differs, ValueError, r"q, k \[B, T, H, K\]"),
    ("fused_recurrent_gated_delta_rule", "HV_not_multiple_of_H", _HV_not_multiple, ValueError, "HV % H == 0"),
    ("fused_recurrent_gated_delta_rule", "g_shape", _g_shape, ValueError, "`g` must have shape"),
    ("fused_recurrent_gated_delta_rule", "beta_shape", _beta_shape, ValueError, "`beta` must have shape"),
    # FLA refuses this on Ascend only (its CUDA graphs record the CP collectives)
    ("chunk_kda", "cp_use_graph", lambda op: _cp(op, use_graph=True), NotImplementedError,
     "graph mode does not currently support context parallelism"),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op,case,build,exc,match", FLA_MISSES, ids=[f"{c[0]}-{c[1]}" for c in FLA_MISSES])
def test_error_fla_does_not_check(op, case, build, exc, match, form):
    fla = _fla_functions()
    ours = getattr(fla_npu, op)
    args, kwargs = split_call(ours, build(op), form)
    theirs = fla_exception(fla[op], args, kwargs)
    assert is_kernel_launch(theirs), f"FLA now rejects {case} itself ({theirs!r}): compare with it instead"
    raise_unchanged(ours, args, kwargs, exc, match)


def _with(**extra):
    return lambda op: {**inputs(op), **extra}


def _K_too_big_recurrent(op):
    return inputs(op, B=1, T=2, H=1, K=272, V=8)


# (op, case, builder): inputs FLA lets through (its kernel launches): ours must accept them too.
FLA_ACCEPTS = [
    ("chunk_kda", "safe_gate_lower_bound_-5", _safe_gate(-5.0)),
    ("chunk_kda", "safe_gate_lower_bound_-0.5", _safe_gate(-0.5)),
    ("chunk_kda", "safe_gate_pregated", _with(safe_gate=True)),
    ("chunk_kda", "lower_bound_without_A_log", _with(use_gate_in_kernel=True, lower_bound=-5.0)),
    ("chunk_kda", "lower_bound_without_safe_gate", _with(use_gate_in_kernel=True, lower_bound=-7.0,
                                                         A_log=torch.zeros(2))),
    ("chunk_kda", "A_log_ignored_without_gate", _with(A_log=torch.zeros(2), dt_bias=torch.zeros(32))),
    ("chunk_kda", "chunk_size_32", _chunk_size(32)),
    ("chunk_kda", "beta_sigmoid_neg_eigval", _with(use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)),
    ("fused_recurrent_kda", "initial_state_fp16", _h0_dtype(torch.float16)),
    ("fused_recurrent_kda", "lower_bound_without_A_log", _with(use_gate_in_kernel=True, lower_bound=-5.0)),
    ("fused_recurrent_kda", "K_above_256", _K_too_big_recurrent),
    ("chunk_gated_delta_rule", "initial_state_fp16", _h0_dtype(torch.float16)),
    ("chunk_gated_delta_rule", "initial_state_bf16", _h0_dtype(torch.bfloat16)),
    ("chunk_gated_delta_rule", "chunk_size_16", _chunk_size(16)),
    ("chunk_gated_delta_rule", "A_log_ignored_without_gate", _with(A_log=torch.zeros(2))),
    ("fused_recurrent_gated_delta_rule", "initial_state_fp16", _h0_dtype(torch.float16)),
    ("fused_recurrent_gated_delta_rule", "beta_None", _with(beta=None)),
]


@pytest.mark.parametrize("op,case,build", FLA_ACCEPTS, ids=_ids(FLA_ACCEPTS))
def test_accepted_like_fla(op, case, build):
    fla = _fla_functions()
    kw = build(op)
    theirs = fla_exception(fla[op], (), kw)
    assert is_kernel_launch(theirs), f"FLA rejects {case}: {theirs!r}"
    o, ht = getattr(fla_npu, op)(**kw, output_final_state=True)
    B, T, HV, V = kw["v"].shape
    assert o.shape == (B, T, HV, V) and torch.isfinite(o).all()
    assert ht.dtype == torch.float32 and torch.isfinite(ht).all()


@pytest.mark.parametrize("inference,disable_recompute,message", [
    (False, False, "return_intermediate_states is only allowed in inference mode"),
    (True, True, "return_intermediate_states must be used with disable_recompute=False"),
])
def test_return_intermediate_states_misuse(inference, disable_recompute, message):
    """FLA asserts these only after its forward kernels ran, so they cannot be provoked from FLA on
    CPU; ours raises FLA's assertion (same type and text) before computing."""
    kw = {**inputs("chunk_kda"), "return_intermediate_states": True, "disable_recompute": disable_recompute}
    with torch.inference_mode(inference):
        err = raise_unchanged(fla_npu.chunk_kda, (), kw, AssertionError)
    assert str(err) == message


@pytest.mark.parametrize("op", OPS)
def test_transpose_state_layout_deprecated(op):
    fla = _fla_functions()
    ours = getattr(fla_npu, op)
    kw = {**inputs(op), "initial_state": h0(2), "output_final_state": True}
    with pytest.warns(DeprecationWarning) as theirs:
        exc = None
        try:
            fla[op](**kw, transpose_state_layout=True)
        except Exception as e:  # noqa: BLE001
            exc = e
    assert is_kernel_launch(exc), repr(exc)
    with pytest.warns(DeprecationWarning) as mine:
        o, ht = ours(**kw, transpose_state_layout=True)
    deprecations = lambda rec: [str(w.message) for w in rec if issubclass(w.category, DeprecationWarning)]  # noqa: E731
    assert deprecations(mine) == deprecations(theirs) == [
        "`transpose_state_layout` is deprecated and renamed to `state_v_first`."]
    o_ref, ht_ref = ours(**kw, state_v_first=True)
    assert torch.equal(o, o_ref) and torch.equal(ht, ht_ref)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", ["varlen_batch_not_1", "chunk_size_not_power_of_2"])
def test_kda_gate_chunk_cumsum_same_error_as_fla(case, form):
    fla = _fla_functions()
    g = torch.randn(2, 16, 2, 8)
    kw = dict(g=g, A_log=torch.zeros(2), chunk_size=16)
    if case == "varlen_batch_not_1":
        kw["cu_seqlens"] = torch.tensor([0, 5, 16])
    else:
        kw["chunk_size"] = 48
    args, kwargs = split_call(fla_npu.kda_gate_chunk_cumsum, kw, form)
    theirs = fla_exception(fla["kda_gate_chunk_cumsum"], args, kwargs)
    assert isinstance(theirs, AssertionError), repr(theirs)
    mine = raise_unchanged(fla_npu.kda_gate_chunk_cumsum, args, kwargs, AssertionError)
    assert str(mine) == str(theirs)


@pytest.mark.parametrize("name,shape", [("kda_gate_chunk_cumsum", (2, 16, 2)),
                                        ("kda_gate_chunk_cumsum", (2, 16, 2, 8, 1)),
                                        ("gdn_gate_chunk_cumsum", (2, 16, 2, 8)),
                                        ("gdn_gate_chunk_cumsum", (2, 16))])
def test_gate_chunk_cumsum_ndim_same_error_type_as_fla(name, shape):
    """FLA fails with a bare ``assert`` (KDA) or Python's unpacking ``ValueError`` (GDN); ours raises
    the same type with a message naming ``g``."""
    fla = _fla_functions()
    kw = dict(g=torch.randn(*shape), A_log=torch.zeros(2), chunk_size=16)
    theirs = fla_exception(fla[name], (), kw)
    assert isinstance(theirs, (AssertionError, ValueError)) and not is_kernel_launch(theirs), repr(theirs)
    mine = raise_unchanged(getattr(fla_npu, name), (), kw, type(theirs))
    assert "`g`" in str(mine)


# ------------------------------------------------------------------------------------------------
# (b) checks FLA lacks: raised before any computation, naming the argument


def _cu(values, dtype=torch.long):
    return torch.tensor(values, dtype=dtype)


CU_SEQLENS_CASES = {
    "non_monotonic": (_cu([0, 6, 3, 8]), "non-decreasing"),
    "not_starting_at_0": (_cu([1, 4, 8]), "start at 0"),
    "not_ending_at_T": (_cu([0, 4, 7]), "end at the number of tokens"),
    "beyond_T": (_cu([0, 4, 9]), "end at the number of tokens"),
    "float": (_cu([0, 4, 8], torch.float32), "int32/int64"),
    "2d": (_cu([[0, 4, 8]]), "1-D"),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", CU_SEQLENS_CASES)
@pytest.mark.parametrize("op", OPS)
def test_bad_cu_seqlens(op, case, form):
    cu, match = CU_SEQLENS_CASES[case]
    fn = getattr(fla_npu, op)
    args, kwargs = split_call(fn, {**inputs(op, B=1), "cu_seqlens": cu}, form)
    err = raise_unchanged(fn, args, kwargs, ValueError, match)
    assert "`cu_seqlens`" in str(err)


def _meta_cases(op):
    names = ["q_only_cpu", "k", "v", "g", "beta", "initial_state", "A_log", "dt_bias", "cu_seqlens"]
    if op == "fused_recurrent_gated_delta_rule":
        names += ["gk", "gv"]
    if op in RECURRENT_OPS:
        names += ["out"]
    return [(op, n) for n in names]


def _with_meta(op, name):
    kw = {**inputs(op, B=1), "initial_state": h0(1)}
    if name in ("A_log", "dt_bias"):
        HV, K = 2, 16
        kw.update(use_gate_in_kernel=True, A_log=torch.zeros(HV),
                  dt_bias=torch.zeros(HV * K if op in KDA_OPS else HV))
    if name == "cu_seqlens":
        kw["cu_seqlens"] = torch.tensor([0, 8])
    if name == "gk":
        kw["gk"] = F.logsigmoid(torch.randn(1, 8, 2, 16))
    if name == "gv":
        kw["gv"] = F.logsigmoid(torch.randn(1, 8, 2, 16))
    if name == "out":
        kw["out"] = torch.zeros_like(kw["v"])
    if name == "q_only_cpu":  # everything but q on meta: the first other tensor is reported
        return {n: (x.to("meta") if isinstance(x, torch.Tensor) and n != "q" else x) for n, x in kw.items()}, "`k`"
    kw[name] = kw[name].to("meta")
    return kw, f"`{name}`"


@pytest.mark.parametrize("op,name", [c for op in OPS for c in _meta_cases(op)])
def test_tensor_on_other_device(op, name):
    fn = getattr(fla_npu, op)
    kw, arg = _with_meta(op, name)
    err = raise_unchanged(fn, (), kw, ValueError, "meta")
    assert arg in str(err)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("name", ["q", "k", "v", "g", "beta"])
@pytest.mark.parametrize("op", OPS)
def test_non_float_dtype(op, name, dtype):
    fn = getattr(fla_npu, op)
    kw = inputs(op)
    kw[name] = (kw[name] > 0) if dtype is torch.bool else (kw[name] * 4).to(dtype)
    err = raise_unchanged(fn, (), kw, ValueError, "dtype")
    assert f"`{name}`" in str(err) and str(dtype) in str(err)


@pytest.mark.parametrize("case", ["N", "HV", "K", "V", "v_first_layout", "ndim"])
@pytest.mark.parametrize("op", OPS)
def test_wrong_initial_state_shape(op, case):
    fn = getattr(fla_npu, op)
    kw = inputs(op, K=16, V=8)  # K != V so that the two layouts differ
    state = {"N": (3, 2, 16, 8), "HV": (2, 4, 16, 8), "K": (2, 2, 8, 8), "V": (2, 2, 16, 16),
             "v_first_layout": (2, 2, 8, 16), "ndim": (2, 16, 8)}[case]
    err = raise_unchanged(fn, (), {**kw, "initial_state": torch.randn(*state)}, ValueError, "shape")
    assert "`initial_state`" in str(err)
    # ... and the transposed layout is what ``state_v_first`` asks for
    fn(**kw, initial_state=torch.randn(2, 2, 8, 16), state_v_first=True)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op", OPS + ("fused_recurrent_kda_fwd",))
def test_unknown_keyword(op, form):
    fn = getattr(fla_npu, op)
    args, kwargs = split_call(fn, {**inputs(op), "initial_sate": h0(2)}, form)
    err = raise_unchanged(fn, args, kwargs, TypeError)
    assert "initial_sate" in str(err)


def test_cp_return_intermediate_states_refused():
    with torch.inference_mode():
        err = raise_unchanged(fla_npu.chunk_kda, (), _cp("chunk_kda", return_intermediate_states=True),
                              NotImplementedError)
    assert "return_intermediate_states" in str(err) and "cp_context" in str(err)


@pytest.mark.parametrize("layout", ["BTHD", "bsnd", "", None])
@pytest.mark.parametrize("op", CHUNK_OPS)
def test_bad_input_layout(op, layout):
    fn = getattr(fla_npu, op)
    err = raise_unchanged(fn, (), {**inputs(op), "input_layout": layout}, ValueError)
    assert "`input_layout`" in str(err)


# -- decode (serving) arguments: a pool of P states, one token per sequence


def _decode(op, P=4, N=2, T=1, **extra):
    kw = inputs(op, B=1, T=N * T)
    kw.update(cu_seqlens=torch.arange(0, N * T + 1, T), initial_state=h0(P))
    kw.update(extra)
    return kw


DECODE_CASES = {
    "index_beyond_pool": (dict(ssm_state_indices=torch.tensor([0, 4])), ValueError, "`ssm_state_indices`"),
    "negative_index": (dict(ssm_state_indices=torch.tensor([[-1], [2]])), ValueError, "`ssm_state_indices`"),
    "index_float": (dict(ssm_state_indices=torch.tensor([0.0, 1.0])), ValueError, "`ssm_state_indices`"),
    "index_rows_not_N": (dict(ssm_state_indices=torch.tensor([0, 1, 2])), ValueError, "`ssm_state_indices`"),
    "index_on_meta": (dict(ssm_state_indices=torch.tensor([0, 1], device="meta")), ValueError, "`ssm_state_indices`"),
    "accepted_without_indices": (dict(num_accepted_tokens=torch.tensor([1, 1]), initial_state=h0(2)), ValueError,
                                 "`num_accepted_tokens`"),
    "accepted_out_of_range": (dict(ssm_state_indices=torch.tensor([[0, 1], [2, 3]]),
                                   num_accepted_tokens=torch.tensor([1, 3])), ValueError, "`num_accepted_tokens`"),
    "accepted_on_meta": (dict(ssm_state_indices=torch.tensor([[0, 1], [2, 3]]),
                              num_accepted_tokens=torch.tensor([1, 2], device="meta")), ValueError,
                         "`num_accepted_tokens`"),
    "inplace_without_initial_state": (dict(inplace_final_state=True, initial_state=None), ValueError,
                                      "`initial_state`"),
}


@pytest.mark.parametrize("case", DECODE_CASES)
@pytest.mark.parametrize("op", DECODE_OPS)
def test_bad_decode_arguments(op, case):
    extra, exc, arg = DECODE_CASES[case]
    if op == "fused_recurrent_kda_fwd" and case == "inplace_without_initial_state":
        exc = AssertionError  # FLA's own (bare) assert in this function, see test_same_error_type_as_fla_bare_assert
    fn = getattr(fla_npu, op)
    err = raise_unchanged(fn, (), _decode(op, **extra), exc)
    assert arg in str(err)


@pytest.mark.parametrize("op", DECODE_OPS)
def test_decode_pool_untouched_on_error(op):
    """In-place decode must not write a single slot of the pool when the call is rejected."""
    fn = getattr(fla_npu, op)
    kw = _decode(op, ssm_state_indices=torch.tensor([[0], [7]]), inplace_final_state=True)
    pool = kw["initial_state"].clone()
    raise_unchanged(fn, (), kw, ValueError, "ssm_state_indices")
    assert torch.equal(kw["initial_state"], pool)
    # the same call with valid slots does write into the pool
    fn(**{**kw, "ssm_state_indices": torch.tensor([[0], [3]])})
    assert not torch.equal(kw["initial_state"], pool)


# ------------------------------------------------------------------------------------------------
# (d) valid extreme inputs: finite, and equal to the float64 naive reference


def _extreme(family: str, case: str, T: int, seed: int = 0):
    """fp32 inputs of one extreme case and the post-activation gate the gold uses (float64)."""
    B, H, HV, K, V = 2, 2, 4, 16, 16
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, HV, V, generator=gen)
    beta = torch.rand(B, T, HV, generator=gen)
    gshape = (B, T, HV, K) if family == "kda" else (B, T, HV)
    extra = {}
    if case == "T1" or case == "masked":
        g = F.logsigmoid(torch.randn(*gshape, generator=gen))
        if case == "masked":  # FLA's masking: some steps forget everything
            g = g.masked_fill(torch.rand(*gshape, generator=gen) < 0.3, -1000.0)
        g_gold = g.double()
    elif case == "lower_bound_pregated":  # every step at FLA's safe lower bound -5
        g = torch.full(gshape, -5.0)
        g_gold = g.double()
        if family == "kda":
            extra = dict(safe_gate=True)
    elif case == "lower_bound_in_kernel":  # the in-kernel gate saturated at its lower bound
        g = torch.full(gshape, 40.0)
        A_log = torch.zeros(HV)
        if family == "kda":
            dt_bias = torch.zeros(HV * K)
            extra = dict(use_gate_in_kernel=True, safe_gate=True, lower_bound=-5.0, A_log=A_log, dt_bias=dt_bias)
            g_gold = gold_kda_lb_gate(g.double(), A_log.double(), dt_bias.double(), -5.0)
        else:  # GDN has no lower bound: the in-kernel gate at about -5 per step (softplus(5) ~ 5)
            g = torch.full(gshape, 5.0)
            extra = dict(use_gate_in_kernel=True, A_log=A_log)
            g_gold = -F.softplus(g.double())
    else:
        raise AssertionError(case)
    h = torch.randn(B, HV, K, V, generator=gen)
    return dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=h), extra, g_gold


def _gold(family, kw, g_gold):
    d = {n: x.double() for n, x in kw.items()}
    if family == "kda":
        return gold_kda(d["q"], d["k"], d["v"], g_gold, d["beta"], initial_state=d["initial_state"],
                        output_final_state=True)
    return gold_gdn(d["q"], d["k"], d["v"], d["beta"], g_gold, initial_state=d["initial_state"],
                    output_final_state=True)


EXTREME = [("T1", 1), ("masked", 100), ("lower_bound_pregated", 100), ("lower_bound_in_kernel", 100)]


@pytest.mark.parametrize("case,T", EXTREME, ids=[c for c, _ in EXTREME])
@pytest.mark.parametrize("op", OPS)
def test_extreme_inputs_forward(op, case, T):
    family = "kda" if op in KDA_OPS else "gdn"
    kw, extra, g_gold = _extreme(family, case, T)
    if op in RECURRENT_OPS:
        extra = {n: x for n, x in extra.items() if n != "safe_gate"}
    o, ht = getattr(fla_npu, op)(**kw, **extra, output_final_state=True)
    o_ref, ht_ref = _gold(family, kw, g_gold)
    check_close(f"{op} {case} o", o, o_ref, torch.float32)
    check_close(f"{op} {case} ht", ht, ht_ref, torch.float32)


@pytest.mark.parametrize("case,T", EXTREME, ids=[c for c, _ in EXTREME])
@pytest.mark.parametrize("op", CHUNK_OPS)
def test_extreme_inputs_backward(op, case, T):
    family = "kda" if op == "chunk_kda" else "gdn"
    kw, extra, _ = _extreme(family, case, T)
    gen = torch.Generator().manual_seed(1)
    do = torch.randn(*kw["v"].shape, generator=gen)
    dht = torch.randn(*kw["initial_state"].shape, generator=gen)

    leaves = {n: x.clone().requires_grad_() for n, x in kw.items()}
    o, ht = getattr(fla_npu, op)(**leaves, **extra, output_final_state=True)
    ((o * do).sum() + (ht * dht).sum()).backward()

    gold_leaves = {n: x.double().requires_grad_() for n, x in kw.items()}
    g = gold_leaves["g"]
    if "lower_bound" in extra:
        g_act = gold_kda_lb_gate(g, extra["A_log"].double(), extra["dt_bias"].double(), extra["lower_bound"])
    elif extra.get("use_gate_in_kernel"):
        g_act = -F.softplus(g)
    else:
        g_act = g
    o_ref, ht_ref = _gold(family, gold_leaves, g_act)
    ((o_ref * do.double()).sum() + (ht_ref * dht.double()).sum()).backward()
    for n in leaves:
        check_close(f"{op} {case} d{n}", leaves[n].grad, gold_leaves[n].grad, torch.float32)


@pytest.mark.parametrize("op", OPS)
def test_empty_sequences_in_varlen(op):
    """Zero-length sequences (FLA's graph padding) keep their initial state and produce no rows."""
    family = "kda" if op in KDA_OPS else "gdn"
    kw, _, g_gold = _extreme(family, "masked", 10)
    kw = {n: (x[:1] if n != "initial_state" else x) for n, x in kw.items()}
    cu = torch.tensor([0, 0, 10, 10])
    kw["initial_state"] = torch.randn(3, *kw["initial_state"].shape[1:])
    o, ht = getattr(fla_npu, op)(**kw, cu_seqlens=cu, output_final_state=True)
    d = {n: x.double() for n, x in kw.items()}
    if family == "kda":
        o_ref, ht_ref = gold_kda(d["q"], d["k"], d["v"], g_gold[:1], d["beta"], initial_state=d["initial_state"],
                                 output_final_state=True, cu_seqlens=cu)
    else:
        o_ref, ht_ref = gold_gdn(d["q"], d["k"], d["v"], d["beta"], g_gold[:1], initial_state=d["initial_state"],
                                 output_final_state=True, cu_seqlens=cu)
    check_close(f"{op} o", o, o_ref, torch.float32)
    check_close(f"{op} ht", ht, ht_ref, torch.float32)
    assert torch.equal(ht[0], kw["initial_state"][0]) and torch.equal(ht[2], kw["initial_state"][2])


@pytest.mark.parametrize("op", CHUNK_OPS)
@pytest.mark.parametrize("value,shown", [("64", r"'64' \(a str, not an int\)"), (64.0, r"64\.0 \(a float, not an int\)"),
                                         (True, r"True \(a bool, not an int\)")])
def test_chunk_size_of_another_type_names_the_type(op, value, shown):
    """``chunk_size='64'`` must not read 'must be either 32 or 64 ... got 64': the type is named."""
    with pytest.raises(ValueError, match=rf"`chunk_size` must be .*, got {shown}\."):
        getattr(fla_npu, op)(**inputs(op), chunk_size=value)
