"""How a cell story writes its figures and its sums: one rule for every figure.

Every recomputed figure has :data:`DIGITS` significant digits, trailing zeros kept
(``22.0810`` beside ``11.4827``, never ``22.081``), in scientific form where it is very
small or very large (``-3.90000e-5``, never ``0.0000``); a whole number is written whole
(``2 × 1``: it is exact, there are no digits to strip). The cell's own value is written
once, exactly as the trace holds it (Python's shortest round-trip ``repr``), so a reader
can tell the rounding of the terms from the number itself.

A long sum (a dot product over d_model 576) writes its first :data:`FIRST` and last
:data:`LAST` terms, says how many it left out, names its largest term and gives the sum
of all of them: a story stays short whatever the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace

#: Significant digits of every recomputed figure of a story.
DIGITS = 6
#: A sum of at most this many terms is written out whole.
SHORT = 12
#: A longer sum writes its first and last terms (and its largest).
FIRST, LAST = 3, 2


def figure(x: float) -> str:
    """``x`` to :data:`DIGITS` significant digits, trailing zeros kept; whole numbers
    whole; ``−∞``, ``∞`` and ``NaN`` by name."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    if x == math.floor(x) and abs(x) < 10**DIGITS:
        return str(int(x))
    text = f"{x:#.{DIGITS}g}"
    mantissa, mark, exponent = text.partition("e")
    if mark:
        return f"{mantissa.rstrip('.')}e{int(exponent)}"
    return text.rstrip(".")


def factor(x: float) -> str:
    """A figure as the right-hand factor of a product: ``(-1.23457)`` when negative."""
    text = figure(x)
    return f"({text})" if text.startswith("-") or text.startswith("−") else text


def exact(x: float) -> str:
    """The value exactly as the trace holds it: the shortest text that reads back to it."""
    x = float(x)
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    return repr(x)


def value_line(x: float) -> str:
    """The story's last line: the cell's value, once, exactly."""
    return f"= {exact(x)}  (the cell, exactly as the trace holds it)"


@dataclass(frozen=True)
class Term:
    """One term of a sum: its label (a dimension, a key), how it is made, its value."""

    label: str
    made: str  # "0.500000 × (-1.23457)"
    value: float


def term_lines(terms: Sequence[Term]) -> list[str]:
    """The terms, one a line; a long list cut to its first and last terms, the gap
    counted, and its largest term named where the cut left it out."""
    count = len(terms)
    if count <= SHORT:
        shown: list[int | None] = list(range(count))
    else:
        shown = [*range(FIRST), None, *range(count - LAST, count)]
    width = max((len(terms[i].label) for i in shown if i is not None), default=0)
    lines = []
    for i in shown:
        if i is None:
            lines.append(f"  … {count - FIRST - LAST} more terms …")
        else:
            term = terms[i]
            made = f"  {term.made}" if term.made else ""
            lines.append(f"  {term.label:<{width}}{made} = {figure(term.value)}")
    if count > SHORT:
        top = max(range(count), key=lambda i: abs(terms[i].value))
        if FIRST <= top < count - LAST:
            term = terms[top]
            lines.append(f"  largest: {term.label}  {term.made} = {figure(term.value)}")
    return lines


def total(values: Sequence[float]) -> float:
    """The exactly rounded sum of ``values`` (whatever their order): what the terms
    written out add up to. ``math.fsum`` refuses infinities of both signs; then NaN."""
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):
        return math.nan


def sum_line(terms: Sequence[Term], extra: str = "") -> str:
    """``sum of the 576 terms = 3.45678``."""
    count = len(terms)
    what = "the term" if count == 1 else f"the {count} terms"
    return f"sum of {what}{extra} = {figure(total([t.value for t in terms]))}"


@dataclass(frozen=True)
class Cell:
    """The cell being told: its trace, stage, position and labels."""

    trace: Trace
    stage: Stage
    row: int
    col: int

    @property
    def value(self) -> float:
        return float(self.stage.data[self.row, self.col])

    @property
    def row_label(self) -> str:
        return unique_labels(self.stage.rows)[self.row]

    @property
    def col_label(self) -> str:
        return unique_labels(self.stage.cols)[self.col]

    def same_head(self, name: str) -> Stage | None:
        """The stage ``name`` of this cell's head (shared ones where it has none)."""
        head = self.stage.head
        return next(
            (s for s in self.trace.stages if s.name == name and s.head == head),
            None,
        )


@dataclass(frozen=True)
class Told:
    """What a teller found: the lines, the sum's terms, why a cell is hidden."""

    lines: list[str]
    terms: tuple[float, ...] = ()
    hidden: str | None = None


Teller = Callable[[Cell], Told]
