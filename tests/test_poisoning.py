"""The NaN trap of conftest.py must really fire for fla_npu allocations, and only for them."""

import torch


def test_fla_npu_allocations_are_poisoned():
    ns = {"__name__": "fla_npu.probe", "torch": torch}
    exec("x = torch.empty(4); y = torch.empty_like(x); z = x.new_empty(3)", ns)
    for name in "xyz":
        assert torch.isnan(ns[name]).all(), name


def test_other_allocations_are_not_poisoned():
    ns = {"__name__": "somewhere_else", "torch": torch}
    exec("x = torch.empty(4).zero_()", ns)
    assert not torch.isnan(ns["x"]).any()
