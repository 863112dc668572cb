"""The first difference of `attntrace check`'s report, close up: the region's table.

The region is at most 6 × 6 cells around the worst one (docs/check.md). Each of its
rows is drawn twice: the person's numbers, a wrong cell red and marked ✗ (the mark is
what a pipe or ``NO_COLOR`` shows), and the expected ones beneath, dim, so each pair is
read down a column. The numbers are the tables' (fixed point, NaN, ∞ and −∞ as words
would not fit), with more digits than ``precision`` where a wrong cell would otherwise
read the same as the right one (``0.5000`` for both 0.50004 and 0.5).

Labels are run's: escaped, cut, and a repeated token told apart by its position
(``the#4``), which is found by placing the region's window on the sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import JustifyMethod, RenderableType
from rich.text import Text

from attntrace.checking.report import CheckReport, Divergence, Region
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.stage_names import KEY_COLUMNS, KEY_ROWS
from attntrace.ui.numbers import cell_text
from attntrace.ui.shown import label, shortened
from attntrace.ui.shown import labels as shown_labels
from attntrace.ui.split_table import SplitTable

WRONG = "✗"
#: A region's row and column labels are cut to this many cells, so six columns of
#: numbers and the labels fit 80 columns.
REGION_LABEL = 12
#: How many digits past ``precision`` a wrong cell may take to read unlike the right one.
MORE_DIGITS = 8


def number(value: float, precision: int) -> str:
    """A cell as the tables write it, with NaN and ∞ (the tables' −∞ is a masked cell)."""
    return cell_text(value, precision)


def digits(region: Region, first: Divergence, precision: int) -> int:
    """``precision``, or the fewest more digits that make every wrong cell (and the
    worst) read unlike its expected value, up to :data:`MORE_DIGITS` more."""
    pairs = [
        (float(e), float(f))
        for e, f, wrong in zip(
            region.expected.flat, region.found.flat, region.wrong.flat, strict=True
        )
        if wrong
    ]
    if first.expected is not None and first.found is not None:
        pairs.append((first.expected, first.found))
    if first.first_cell is not None:  # the first in reading order, said in words too
        pairs.append((first.first_cell.expected, first.first_cell.found))
    finite = [(e, f) for e, f in pairs if math.isfinite(e) and math.isfinite(f)]
    for more in range(MORE_DIGITS + 1):
        if all(number(e, precision + more) != number(f, precision + more) for e, f in finite):
            return precision + more
    return precision + MORE_DIGITS


@dataclass(frozen=True)
class Labels:
    """One axis of the region: the worst cell's row (or column) as a sentence names it,
    and the region's labels as its table heads them."""

    worst: str
    shown: tuple[str, ...]


def axis_labels(report: CheckReport, first: Divergence, axis: str) -> Labels:
    """The region's ``rows`` or ``cols``: a token quoted (``'the#4'``), a dimension as
    it is (``d1``)."""
    assert first.region is not None
    if axis == "rows":
        at, worst, window = first.row, first.row_label, first.region.rows
    else:
        at, worst, window = first.column, first.column_label, first.region.cols
    tokens = _axis_tokens(report, first, axis)
    plain = tuple(shortened(label(x), REGION_LABEL) for x in window)
    named = cell_label(report, first, axis, at, worst or "")
    if tokens is None or at is None or at >= len(tokens) or tokens[at] != (worst or ""):
        return Labels(named, plain)
    told_apart = unique_labels(shown_labels(tokens))
    start = first.region.row_start if axis == "rows" else first.region.col_start
    placed = told_apart[start : start + len(window)]
    return Labels(named, tuple(shortened(x, REGION_LABEL) for x in placed))


def _axis_tokens(report: CheckReport, first: Divergence, axis: str) -> tuple[str, ...] | None:
    """The tokens that label ``axis`` of the first differing stage, or None (d0, d1)."""
    keys = report.context_tokens or report.tokens
    if axis != "rows" and first.stage not in KEY_COLUMNS:
        return None
    return report.tokens if axis == "rows" and first.stage not in KEY_ROWS else keys


def cell_label(report: CheckReport, first: Divergence, axis: str, at: int | None, raw: str) -> str:
    """A cell's row (or column) as a sentence names it: a token quoted and told apart
    (``'the#4'``), a dimension as it is (``d1``)."""
    tokens = _axis_tokens(report, first, axis)
    if tokens is None or at is None or at >= len(tokens) or tokens[at] != raw:
        return label(raw)
    return f"'{unique_labels(shown_labels(tokens))[at]}'"


def region_table(region: Region, rows: Labels, cols: Labels, precision: int) -> SplitTable:
    """Each row of the region twice: your numbers, then the expected ones under them."""
    body: list[list[RenderableType]] = []
    for i, row in enumerate(rows.shown):
        found: list[RenderableType] = [Text(row, style="bold")]
        expected: list[RenderableType] = [Text("  expected", style="dim")]
        for j in range(len(cols.shown)):
            wrong = bool(region.wrong[i, j])
            mine = number(float(region.found[i, j]), precision) + (WRONG if wrong else " ")
            found.append(Text(mine, style="bold red" if wrong else ""))
            expected.append(
                Text(number(float(region.expected[i, j]), precision) + " ", style="dim")
            )
        body += [found, expected]
    headers: Sequence[Text] = [Text(""), *(Text(col, style="bold") for col in cols.shown)]
    left: JustifyMethod = "left"
    right: JustifyMethod = "right"
    return SplitTable(headers, [left, *[right] * len(cols.shown)], body)
