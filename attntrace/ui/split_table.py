"""A table whose columns, where the width cannot hold them all, are drawn in parts.

Rich folds a cell that does not fit, so at 40 columns ``24.53`` became ``24.`` over
``53``: two numbers that are not there. Here no cell is ever folded or cut. When the
table is wider than the terminal its columns are split into parts, drawn one under
another, each repeating the label column, so every number still shows whole (print it
with ``crop=False``: a part wider than the terminal then runs past its edge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from rich import box
from rich.cells import cell_len
from rich.console import (
    Console,
    ConsoleOptions,
    JustifyMethod,
    RenderableType,
    RenderResult,
)
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True)
class SplitTable:
    """``headers[0]`` labels the rows and starts every part; ``justify`` is per column.

    A header written as a str is Rich markup, as the fixed headers are; one that came
    from a file (a token heading a column) comes as Text, shown as it is."""

    headers: Sequence[str | Text]
    justify: Sequence[JustifyMethod]
    rows: Sequence[Sequence[RenderableType]]

    def part(self, columns: Sequence[int]) -> Table:
        """The table of ``columns`` alone (indices into the headers)."""
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for index in columns:
            table.add_column(self.headers[index], justify=self.justify[index], no_wrap=True)
        for row in self.rows:
            table.add_row(*(row[index] for index in columns))
        return table

    def widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        """Each column's natural width, from the cells' text: measuring tables of every
        row would be slow for a row of thousands of scores."""
        return [
            max(
                [
                    _cell_width(console, options, self.headers[column]),
                    *(_cell_width(console, options, row[column]) for row in self.rows),
                ]
            )
            for column in range(len(self.headers))
        ]

    def parts(self, widths: Sequence[int], width: int) -> list[list[int]]:
        """The columns of each part, each part starting with the label column: as few
        parts as fit ``width`` (at least one column a part), their columns shared out
        evenly where that still fits (a lone last column reads oddly)."""
        greedy: list[list[int]] = []
        used = width  # start a new part at the first column
        for column in range(1, len(self.headers)):
            extra = _GAP + widths[column]
            if greedy and used + extra <= width:
                greedy[-1].append(column)
                used += extra
            else:
                greedy.append([column])
                used = widths[0] + extra
        body, count = list(range(1, len(self.headers))), max(1, len(greedy))
        size, more = divmod(len(body), count)
        starts = [i * size + min(i, more) for i in range(count + 1)]  # the first take one more
        even = [[0, *body[a:b]] for a, b in pairwise(starts)]
        if all(_part_width(widths, part) <= width for part in even):
            return even
        return [[0, *columns] for columns in greedy]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.widths(console, options)
        for index, columns in enumerate(self.parts(widths, options.max_width)):
            if index:
                yield Text("")
            # narrower than one column and its labels: run past the edge rather than cut
            width = max(options.max_width, _part_width(widths, columns))
            yield from console.render(self.part(columns), options.update(width=width))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = self.widths(console, options)
        widest = max(
            _part_width(widths, columns) for columns in self.parts(widths, options.max_width)
        )
        return Measurement(widest, widest)


_GAP = 3  # between two columns: a cell's padding on each side, and the rule's gap


def _cell_width(console: Console, options: ConsoleOptions, cell: RenderableType) -> int:
    if isinstance(cell, str):
        return cell_len(cell)
    if isinstance(cell, Text):
        return cell.cell_len
    return console.measure(cell, options=options).maximum


def _part_width(widths: Sequence[int], columns: Sequence[int]) -> int:
    """How wide the part of ``columns`` draws: its cells and the gaps between them."""
    return sum(widths[column] for column in columns) + _GAP * (len(columns) - 1)
