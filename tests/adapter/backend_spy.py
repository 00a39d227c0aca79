"""Counting the calls FLA's dispatch hands to the fla_npu backend: shared by the adapter tests'
``spy`` fixture (conftest.py) and the subprocess scenarios (scenarios.py)."""

from __future__ import annotations


def count_backend_calls(keys, patch=setattr, calls: dict | None = None) -> dict:
    """Wrap the backend's method of every key of ``keys`` (``_backend.registered``'s ``"<class>.<method>"``)
    so that each call is counted; returns ``{key: calls}``, filled as the calls come. ``patch(cls, name,
    wrapper)`` installs a wrapper: pytest's ``monkeypatch.setattr`` in a test (undone after it),
    ``setattr`` in a scenario's fresh interpreter. ``calls``: a dict to go on counting in (the methods
    of a backend registered again)."""
    from fla_npu_adapter import _backend

    calls = {} if calls is None else calls

    def install(key):
        cls = _backend.registered[key]
        name = key.partition(".")[2]
        original = getattr(cls, name)

        def spied(self, *args, **kwargs):
            calls[key] = calls.get(key, 0) + 1
            return original(*args, **kwargs)  # the class attribute is a staticmethod

        patch(cls, name, spied)

    for key in keys:
        install(key)
    return calls
