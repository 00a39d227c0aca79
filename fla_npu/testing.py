"""How fla_npu measures correctness: the relative RMS error against a float64 gold, and the
tolerances, stated once here and used by the tests and by ``fla-npu verify``.

Inputs are first rounded to the dtype under test and the gold runs on those rounded values in
float64, so a tolerance bounds the implementation's own error (fp32 internal arithmetic plus
rounding of the outputs to the dtype), not the rounding of the inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# Relative RMS error allowed for outputs, states and gradients, by the dtype of q/k/v.
TOLERANCES = {
    torch.float64: 1e-9,
    torch.float32: 5e-5,
    torch.float16: 2e-3,
    torch.bfloat16: 1.5e-2,
}

# Relative RMS error allowed against FLA's own pure-PyTorch references (``fla.ops.*.naive``,
# ``naive_*_gate``): they cast every input to float32 and compute in float32 (token-by-token
# recurrences, explicit forward substitution), so they are themselves only float32-accurate; this
# bounds the float32 error of both sides (measured: below 2e-6 on the conformance shapes).
FLA_NAIVE_TOLERANCE = 1e-4


def rel_rms(x: torch.Tensor, ref: torch.Tensor) -> float:
    """``RMS(x - ref) / RMS(ref)``, in float64 (``RMS(x)`` when ``ref`` is all zeros; 0 when both
    are empty)."""
    if x.numel() == 0 and ref.numel() == 0:
        return 0.0
    x, ref = x.double(), ref.double()
    den = ref.square().mean().sqrt()
    num = (x - ref).square().mean().sqrt()
    return float(num / den) if den > 0 else float(num)


def check_close(name: str, x: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype,
                terms: torch.Tensor | Callable[[], torch.Tensor] | None = None) -> float:
    """Assert ``x`` has no NaN/Inf, the shape of ``ref`` and a relative RMS error within
    ``TOLERANCES[dtype]``; returns the error.

    ``terms``, for a value that is a sum (a parameter gradient such as ``dA_log``: a sum over every
    token): the sum of the magnitudes of its terms, shaped like ``ref``. A float32 sum is accurate
    to its terms' magnitude, not to its own, however far they cancel (measured: ``dA_log`` 1.2e4
    times smaller than its terms), so the error is then relative to ``RMS(terms)`` where that is
    larger than ``RMS(ref)``; for a sum without cancellation the two are equal. ``terms`` may be a
    function returning them, called only when the plain relative error exceeds the tolerance.

    A 16-bit ``x`` may also err by twice the gold's own rounding to that dtype, where that exceeds the
    tolerance: values far below the dtype's normal range (gradients of 1e-9 in float16) cannot be
    closer than their rounding, whatever computes them."""
    assert x.shape == ref.shape, f"{name}: shape {list(x.shape)} != gold {list(ref.shape)}"
    assert torch.isfinite(x).all(), f"{name}: non-finite values"
    err = rel_rms(x, ref)
    tol = TOLERANCES[dtype]
    if x.dtype in (torch.float16, torch.bfloat16):
        tol = max(tol, 2 * rel_rms(ref.to(x.dtype), ref))
    if terms is not None and err > tol:
        terms = terms() if callable(terms) else terms
        scale = max(float(ref.double().square().mean().sqrt()), float(terms.double().square().mean().sqrt()))
        err = float((x.double() - ref.double()).square().mean().sqrt()) / scale if scale > 0 else err
        assert err <= tol, f"{name}: error {err:.3e} relative to its terms' magnitude > {tol:.2e} ({dtype})"
        return err
    assert err <= tol, f"{name}: relative RMS error {err:.3e} > {tol:.2e} ({dtype})"
    return err
