"""A table whose columns, where the width cannot hold them all, are drawn in parts.

Rich folds a cell that does not fit, so at 40 columns ``24.0053`` became ``24.`` over
``0053``: two numbers that are not there. Here no cell is ever folded or cut. When the
table is wider than the terminal its columns are split into parts, drawn one under
another, each repeating the label column, so every number still shows whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True)
class SplitTable:
    """``headers[0]`` labels the rows and starts every part; ``justify`` is per column."""

    headers: Sequence[str]
    justify: Sequence[str]  # "left" or "right", one per column
    rows: Sequence[Sequence[RenderableType]]

    def part(self, columns: Sequence[int]) -> Table:
        """The table of ``columns`` alone (indices into the headers)."""
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for index in columns:
            table.add_column(self.headers[index], justify=self.justify[index],  # type: ignore[arg-type]
                             no_wrap=True)  # fmt: skip
        for row in self.rows:
            table.add_row(*(row[index] for index in columns))
        return table

    def parts(self, console: Console, options: ConsoleOptions) -> list[Table]:
        """As few parts as fit ``options.max_width``; one column a part at the least."""
        body = list(range(1, len(self.headers)))
        for count in range(1, len(body) + 1):
            size = -(-len(body) // count)  # the first parts take the extra column
            tables = [self.part([0, *body[start : start + size]])
                      for start in range(0, len(body), size)]  # fmt: skip
            if all(_width(console, options, table) <= options.max_width for table in tables):
                return tables
        return tables

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for index, table in enumerate(self.parts(console, options)):
            if index:
                yield Text("")
            # narrower than one column and its labels: run past the edge rather than cut
            width = max(options.max_width, _width(console, options, table))
            yield from console.render(table, options.update(width=width))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = [_width(console, options, table) for table in self.parts(console, options)]
        return Measurement(max(widths), max(widths))


def _width(console: Console, options: ConsoleOptions, table: Table) -> int:
    """The width ``table`` takes when nothing in it wraps."""
    return console.measure(table, options=options.update(width=10**6)).maximum
