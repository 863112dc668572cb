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
from itertools import groupby

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from attntrace.forward.views.document import block_notes, header, rule_lines
from attntrace.kernel.trace import ModelInfo, Stage, Trace
from attntrace.ui.elide import weights_beside
from attntrace.ui.stage_table import StageTable
from attntrace.ui.titles import head_label
from attntrace.ui.view import View, marking_overflows

_GAP = 3


def compact(stage: Stage, view: View, model: ModelInfo, weights: Stage | None = None) -> Group:
    """A stage as a short title (name, shape, head) over its table, fitted to the width
    (keeping ``weights``' heaviest keys, where given: scores keeps softmax's)."""
    rows, cols = stage.shape
    title = Text.assemble(
        (stage.name, "bold magenta"),
        (f" [{rows}×{cols}]", "cyan"),
        (head_label(stage, model).replace("K/V head", "K/V"), "bold yellow"),
    )
    return Group(title, StageTable(stage, view, weights))


@dataclass(frozen=True)
class Packed:
    """Blocks laid out in rows, left to right, as many per row as fit the width."""

    blocks: Sequence[RenderableType]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = [console.measure(block, options=options).maximum for block in self.blocks]
        rows: list[list[int]] = [[]]
        used = 0
        for index, width in enumerate(widths):
            if rows[-1] and used + _GAP + width > options.max_width:
                rows.append([])
                used = 0
            used += width + (_GAP if rows[-1] else 0)
            rows[-1].append(index)
        gap = Segment(" " * _GAP)
        for number, row in enumerate(rows):
            if number:
                yield Segment.line()
            # Each block drawn at its own width, then the lines laid side by side.
            drawn = [
                console.render_lines(self.blocks[i], options.update(width=widths[i]), pad=True)
                for i in row
            ]
            for y in range(max(len(lines) for lines in drawn)):
                for k, lines in enumerate(drawn):
                    if k:
                        yield gap
                    yield from lines[y] if y < len(lines) else [Segment(" " * widths[row[k]])]
                yield Segment.line()


def overview(trace: Trace, view: View) -> Iterator[RenderableType]:
    """The header, then every stage and the weights, packed to the width."""
    view = marking_overflows(view, trace.precision is not None)
    yield header(trace)
    yield from rule_lines(trace)
    yield from block_notes(trace, view)
    yield Text("")
    # shared stages, then each head's, then concat and projected: a new row for each
    runs = [list(run) for _, run in groupby(trace.stages, key=lambda stage: stage.head)]
    for number, stages in enumerate(runs):
        if number:
            yield Text("")
        yield Packed([compact(s, view, trace.model, weights_beside(s, trace)) for s in stages])
    if trace.weights:
        yield Text("")
        yield Packed([compact(weight, view, trace.model) for weight in trace.weights])
