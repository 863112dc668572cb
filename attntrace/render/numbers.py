"""How a number and a label read in a table, and which rows/columns fit on screen."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

# Above this magnitude fixed-point gets too wide to scan; switch to scientific notation.
_FIXED_LIMIT = 1e8
# Shown in place of a masked (−∞) cell.
MASKED = "−∞"
ELLIPSIS = "…"


def format_number(value: float, precision: int) -> str:
    """``3.995761`` at precision 4 -> ``3.9958``; never ``-0.0000``; huge values in e-notation."""
    if value == -math.inf:
        return MASKED
    if abs(value) >= _FIXED_LIMIT:
        return f"{value:.{precision}e}"
    text = f"{value:.{precision}f}"
    if text.startswith("-") and not any(ch in "123456789" for ch in text):
        text = text[1:]
    return text


def column_widths(data: npt.NDArray[np.float64], precision: int) -> list[int]:
    """Each column's widest formatted cell, found from its extremes (two formats per column)."""
    if data.size == 0:
        return [1] * data.shape[1]
    finite = np.where(np.isfinite(data), data, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-masked column has no extremes
        lows, highs = np.nanmin(finite, axis=0), np.nanmax(finite, axis=0)
    widths = []
    for j, (low, high) in enumerate(zip(lows, highs, strict=True)):
        candidates = [len(format_number(float(x), precision)) for x in (low, high) if x == x]
        if not np.all(np.isfinite(data[:, j])):
            candidates.append(len(MASKED))
        widths.append(max(candidates, default=1))
    return widths


def visible_indices(count: int, limit: int) -> list[int | None]:
    """Indices to show for an axis of ``count`` items, ``None`` where an ellipsis goes.

    Like numpy's summarized printing: all of them when they fit, else the first and last
    halves of ``limit`` around one ellipsis.
    """
    if count <= limit:
        return list(range(count))
    head = max(1, (limit + 1) // 2)
    tail = limit // 2
    return [*range(head), None, *range(count - tail, count)]


def columns_that_fit(widths: Sequence[int], budget: int) -> int:
    """How many columns (each ``width + 3`` cells with padding and rule) fit in ``budget``."""
    used = 0
    for count, width in enumerate(widths):
        used += width + 3
        if used > budget:
            return count
    return len(widths)
