"""Context parallelism, at FLA's path (``fla.ops.cp``): :func:`build_cp_context` for callers without
FLA (FLA's own context object works the same with ``cp_context``)."""

from ..common.context_parallel import CPContext, build_cp_context

__all__ = ["CPContext", "build_cp_context"]
