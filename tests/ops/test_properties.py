"""Property-based tests: random valid calls of chunk_kda, chunk_gated_delta_rule,
fused_recurrent_kda and fused_recurrent_gated_delta_rule (shapes, dtypes, every switch, varlen
layouts with empty, one-token and tail sequences, GVA, gates down to the lower bound and -inf,
initial states; property_cases.py) against the float64 gold: no NaN/Inf where the gold is finite,
every output, state and gradient within the dtype's tolerance.

The default run draws :data:`DEFAULT_EXAMPLES` cases per op, derandomized (the same cases every
run); ``pytest -m slow tests/ops/test_properties.py`` draws :data:`SLOW_EXAMPLES` per op (see the
README). A failing draw is kept in :data:`REGRESSIONS`, run every time.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from helpers import Switches, one_thread
from property_cases import Case, cases, check_case

_ = one_thread
DEFAULT_EXAMPLES = {"chunk": 100, "recurrent": 60}
SLOW_EXAMPLES = 10_000
OPS = [pytest.param(op, kind, id=f"{kind}_{op}") for kind in ("chunk", "recurrent") for op in ("kda", "gdn")]
_SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Draws that failed once, kept as they were printed (the fix is named next to each).
REGRESSIONS: list[Case] = []


def _run(op: str, kind: str, examples: int) -> None:
    @settings(max_examples=examples, **_SETTINGS)
    @given(case=cases(op, kind))
    def prop(case):
        check_case(case)

    prop()


@pytest.mark.parametrize("op,kind", OPS)
def test_random_valid_calls_match_the_gold(op, kind):
    _run(op, kind, DEFAULT_EXAMPLES[kind])


@pytest.mark.slow
@pytest.mark.parametrize("op,kind", OPS)
def test_random_valid_calls_match_the_gold_10000(op, kind):
    _run(op, kind, SLOW_EXAMPLES)


@pytest.mark.parametrize("case", REGRESSIONS or [pytest.param(None, marks=pytest.mark.skip(reason="none yet"))])
def test_regressions(case):
    assert check_case(case)
