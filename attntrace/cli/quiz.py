"""`quiz`: a learner computes a hidden cell of the trace (docs/teaching.md)."""

from __future__ import annotations


def quiz() -> None:
    """Compute a hidden cell of the trace yourself."""
    raise NotImplementedError  # filled by issue 32's quiz work
