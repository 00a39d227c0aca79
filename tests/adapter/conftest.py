"""Fixtures for the adapter tests: FLA and fla_npu_adapter must be installed (``./ci/test.sh``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

fla_backends = pytest.importorskip("fla.backends")
fla_npu_adapter = pytest.importorskip("fla_npu_adapter")
from fla_npu_adapter import _backend  # noqa: E402

from backend_spy import count_backend_calls  # noqa: E402

import fla.ops.gated_delta_rule  # noqa: E402,F401  (the hook registers the backend on import)
import fla.ops.kda  # noqa: E402,F401

SCRIPT = Path(__file__).with_name("scenarios.py")


@pytest.fixture(autouse=True)
def adapter_switch():
    """Every test starts with the switch following the environment, and leaves it that way."""
    fla_npu_adapter.reset()
    yield fla_npu_adapter
    fla_npu_adapter.reset()


@pytest.fixture
def spy(monkeypatch):
    """Count the calls FLA's dispatch hands to the fla_npu backend, per function."""
    return count_backend_calls(list(_backend.registered), monkeypatch.setattr)


class Scenario:
    """``scenarios.py <name>`` running in a fresh interpreter (env vars set before torch/triton import);
    :meth:`result` waits for it and returns the JSON its last line printed."""

    def __init__(self, name: str, **env):
        environ = {k: v for k, v in os.environ.items()
                   if k not in ("FLA_ASCENDC", "FLA_NPU_AUTOLOAD", "FLA_DISABLE_BACKEND_DISPATCH", "TRITON_INTERPRET")}
        environ.update(env)
        self.proc = subprocess.Popen([sys.executable, str(SCRIPT), name], env=environ, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def result(self) -> dict:
        out, err = self.proc.communicate(timeout=300)
        assert self.proc.returncode == 0, out + err
        return json.loads(out.strip().splitlines()[-1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def run_scenario(name: str, **env) -> dict:
    """Run ``scenarios.py <name>`` in a fresh interpreter and return its result."""
    return Scenario(name, **env).result()
