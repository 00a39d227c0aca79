"""Test-wide fixtures.

Every float tensor that fla_npu allocates with ``torch.empty``/``torch.empty_like``/``Tensor.new_empty``
starts out filled with NaN during the tests (the same trap FLA's own conftest sets), so an output
element the implementation forgets to write shows up as NaN instead of as stale memory that
happens to look right.
"""

from __future__ import annotations

import sys

import pytest
import torch

_originals = {}


def _poisoned(factory):
    def wrapper(*args, **kwargs):
        out = factory(*args, **kwargs)
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("fla_npu") and out.is_floating_point():
            out.fill_(float("nan"))
        return out

    return wrapper


@pytest.fixture(autouse=True, scope="session")
def poison_empty_allocations():
    _originals.update(empty=torch.empty, empty_like=torch.empty_like, new_empty=torch.Tensor.new_empty)
    torch.empty = _poisoned(_originals["empty"])
    torch.empty_like = _poisoned(_originals["empty_like"])
    torch.Tensor.new_empty = _poisoned(_originals["new_empty"])
    yield
    torch.empty, torch.empty_like = _originals["empty"], _originals["empty_like"]
    torch.Tensor.new_empty = _originals["new_empty"]

