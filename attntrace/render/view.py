"""The display choices every view takes: digits, rows, columns and heads shown.

None of them changes a number; the command line's flags and the Python API fill one
:class:`View`, and every renderer reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """

    precision: int = DEFAULT_PRECISION
    max_rows: int = DEFAULT_MAX_ROWS
    max_cols: int | None = None
    max_heads: int | None = None


DEFAULT_VIEW = View()
