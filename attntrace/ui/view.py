"""The display choices every view takes: digits, rows, columns and heads shown.

None of them changes a number; the command line's flags and the Python API fill one
:class:`View`, and every renderer reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

DEFAULT_PRECISION = 4
DEFAULT_MAX_ROWS = 20
DEFAULT_MAX_HEADS = 4


@dataclass(frozen=True)
class View:
    """Display choices that never change a number: digits, rows, columns and heads shown.

    ``max_cols`` None fits the columns to the width; a number shows that many (first
    and last halves), wider than the terminal if it must be. ``max_heads`` summarizes a
    many-headed trace's tables the same way (the first and last heads, every shared
    stage); None shows every head, as ``print(trace)`` does. The command line's default
    is ``DEFAULT_MAX_HEADS``.

    ``overflows`` is set for a low-precision computation (``--dtype``): there an inf,
    a NaN, or a −∞ outside the masked stage is an overflow, shown as ``inf``, ``NaN``
    or ``−inf`` and marked. Elsewhere −∞ is a mask, or a max of no key yet, as always.

    ``focus`` (the focused token, as the tables label it) is kept wherever a table's
    rows or columns are summarized; ``rows``/``cols`` (``--rows``/``--cols``) are the
    only tokens a table over tokens shows. :mod:`attntrace.ui.elide` has the rule.
    ``chosen_note`` says who chose them, and ``more_note`` how to see more, where a
    table says what it leaves out (the quiz picks the rows a question needs, and has
    no --max-rows).
    """

    precision: int = DEFAULT_PRECISION
    max_rows: int = DEFAULT_MAX_ROWS
    max_cols: int | None = None
    max_heads: int | None = None
    overflows: bool = False
    focus: str | None = None
    rows: tuple[str, ...] | None = None
    cols: tuple[str, ...] | None = None
    chosen_note: str = "--rows/--cols chose them"
    more_note: str = "--max-rows/--max-cols N, 0 for all"


DEFAULT_VIEW = View()


def marking_overflows(view: View, low_precision: bool) -> View:
    """``view``, marking overflows where the numbers are a low-precision dtype's."""
    return replace(view, overflows=True) if low_precision and not view.overflows else view


SHOW_ALL = 10**9  # rows or columns: "all" (the flags' 0)


def view_from_flags(
    precision: int | None, max_rows: int, max_cols: int | None, max_heads: int | None = None
) -> View:
    """The View the display flags ask for: ``precision`` None is the tables' default, 0
    rows, columns or heads is all of them (``max_heads`` None: every head)."""
    return View(
        precision=DEFAULT_PRECISION if precision is None else precision,
        max_rows=SHOW_ALL if max_rows == 0 else max_rows,
        max_cols=SHOW_ALL if max_cols == 0 else max_cols,
        max_heads=max_heads or None,
    )
