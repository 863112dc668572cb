"""Row and column labels a reader can tell apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Labels a reader can tell apart: a repeated token gets its 0-based position, ``the#4``."""
    counts = Counter(labels)
    return [f"{label}#{i}" if counts[label] > 1 else label for i, label in enumerate(labels)]
