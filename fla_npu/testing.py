"""How fla_npu measures correctness: the relative RMS error against a float64 gold, and the
tolerances, stated once here and used by the tests and by ``fla-npu verify``.

Inputs are first rounded to the dtype under test and the gold runs on those rounded values in
float64, so a tolerance bounds the implementation's own error (fp32 internal arithmetic plus
rounding of the outputs to the dtype), not the rounding of the inputs.
"""

from __future__ import annotations

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


def check_close(name: str, x: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> float:
    """Assert ``x`` has no NaN/Inf, the shape of ``ref`` and a relative RMS error within
    ``TOLERANCES[dtype]``; returns the error."""
    assert x.shape == ref.shape, f"{name}: shape {list(x.shape)} != gold {list(ref.shape)}"
    assert torch.isfinite(x).all(), f"{name}: non-finite values"
    err = rel_rms(x, ref)
    tol = TOLERANCES[dtype]
    assert err <= tol, f"{name}: relative RMS error {err:.3e} > {tol:.1e} ({dtype})"
    return err
