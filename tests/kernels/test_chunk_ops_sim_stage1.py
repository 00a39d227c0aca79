"""``chunk_kda`` / ``chunk_gated_delta_rule`` with ``FLA_NPU_CPU_IMPL=sim``: stage 1 (gate activation
+ chunk-local cumsum) runs as the Ascend C kernel on the host simulation, the later stages on the
reference (float32 calls; a 16-bit call runs the whole chain on kernels, and for KDA stage 1 inside
the intra-chunk launch). Forward output, final state and every gradient must still match the float64
gold, with tails, varlen (length-1 and zero-length sequences), GVA and every gate form; the kernel must
really have run (its launch is observed), in forward and again in the backward recompute."""

from __future__ import annotations

import pytest
import torch

from fla_npu.runtime import kernels

from helpers import Switches
from sim_helpers import check_stage_op_case, record_launches

FP32, BF16 = torch.float32, torch.bfloat16


@pytest.fixture
def launches(monkeypatch):
    """Route stage 1 to the simulated kernel and count its launches."""
    return record_launches(monkeypatch, kernels, "gate_chunk_cumsum",
                           before=lambda args, kwargs: args[2] if len(args) > 2 else kwargs.get("activation"))


CASES = [
    pytest.param("kda", Switches(), 64, None, FP32, id="kda-pregated-tail"),
    pytest.param("kda", Switches(gate="softplus", qk_l2norm=True), 32, (0, 1, 1, 70, 150), FP32, id="kda-softplus-varlen"),
    pytest.param("kda", Switches(gate="lower_bound", lower_bound=-5.0, safe_gate=True, beta_sigmoid=True,
                                 qk_l2norm=True, disable_recompute=True), 64, None, BF16, id="kda-production-bf16"),
    pytest.param("gdn", Switches(), 16, (0, 37, 37, 100), FP32, id="gdn-pregated-varlen"),
    pytest.param("gdn", Switches(gate="softplus", beta_sigmoid=True), 64, None, FP32, id="gdn-softplus-tail"),
]


@pytest.mark.parametrize("op,sw,chunk_size,cu,dtype", CASES)
def test_chunk_op_with_simulated_stage1_matches_gold(monkeypatch, launches, op, sw, chunk_size, cu, dtype):
    in_launch = record_launches(monkeypatch, kernels, "chunk_gate_forward",
                                before=lambda args, kwargs: args[7] if len(args) > 7 else kwargs.get("activation"))
    check_stage_op_case(op, sw, chunk_size, cu, dtype, seed=7)
    expected = {None: "none", "softplus": "softplus", "lower_bound": "sigmoid"}[sw.gate]
    if op == "kda" and dtype == BF16:  # the kernel chain: stage 1 in the one launch, no recompute on kernels
        assert in_launch == [expected] and launches == []
        return
    # forward, plus the backward's recompute unless every intermediate was kept
    assert launches == [expected] * (1 if sw.disable_recompute else 2) and in_launch == []
