"""Every stage of a small trace on one screen: compact tables packed side by side.

    X [3×2]     Q [3×2]     K [3×2]     V [3×2]
    scores …    scaled …    softmax …   output …

For a first look at a whole head; the stage-by-stage views explain each one. Tables
are packed left to right in computation order, as many per row as the width allows,
and never squeezed: a table that does not fit beside another starts a new row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from attntrace.render.tables import StageTable, View, header
from attntrace.trace import Stage, Trace

_GAP = 3
_UNLIMITED = 10**6


def compact(stage: Stage, view: View) -> Group:
    """A stage as a short title (name and shape) over its full-width table."""
    rows, cols = stage.shape
    title = Text.assemble((stage.name, "bold magenta"), (f" [{rows}×{cols}]", "cyan"))
    return Group(title, StageTable(stage, view).table(_UNLIMITED))


@dataclass(frozen=True)
class Packed:
    """Blocks laid out in rows, left to right, as many per row as fit the width."""

    blocks: Sequence[RenderableType]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        wide = options.update(max_width=_UNLIMITED)
        widths = [console.measure(block, options=wide).maximum for block in self.blocks]
        rows: list[list[int]] = [[]]
        used = 0
        for index, width in enumerate(widths):
            if rows[-1] and used + _GAP + width > options.max_width:
                rows.append([])
                used = 0
            used += width + (_GAP if rows[-1] else 0)
            rows[-1].append(index)
        for number, row in enumerate(rows):
            grid = Table.grid(padding=(0, _GAP, 0, 0))
            for _ in row:
                grid.add_column(vertical="top")
            grid.add_row(*(self.blocks[i] for i in row))
            if number:
                yield Text("")
            yield grid


def overview(trace: Trace, view: View) -> Iterator[RenderableType]:
    """The header, then every stage and the weights, packed to the width."""
    yield header(trace)
    yield Text(" ".join(trace.tokens))
    yield Text("")
    yield Packed([compact(stage, view) for stage in trace.stages])
    if trace.weights:
        yield Text("")
        yield Packed([compact(weight, view) for weight in trace.weights])
