"""A laid-out table drawn as plain lines: a label column, then right-aligned numbers.

:class:`~attntrace.ui.stage_table.StageTable` decides which rows and columns show
and formats their cells; a :class:`Grid` is the result, drawn as Rich segments (or one
Text, for placing tables side by side).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from attntrace.ui.numbers import COLUMN_GAP
from attntrace.ui.shown import pad

_BOLD = Style(bold=True)


@dataclass(frozen=True)
class Grid:
    """A laid-out table: which rows and columns show, and their text, cell by cell.

    Drawn as plain lines (label column, then right-aligned numbers three spaces apart,
    a rule under the header) rather than through Rich's Table: the layout is decided
    here anyway, and drawing lines directly keeps a 200-row table fast.
    """

    rows: list[int | None]
    cols: list[int | None]
    header: list[str]
    body: list[list[str]]  # per shown row: the label, then one cell per shown column
    shades: list[list[Style | None]]  # heatmap style per cell (softmax), else None
    widths: list[int]  # the label column first

    @property
    def width(self) -> int:
        return self.widths[0] + sum(w + COLUMN_GAP for w in self.widths[1:])

    def text(self) -> Text:
        """The lines of :meth:`segments` as one Text, never wrapped or cut: for placing
        tables side by side (equations), where a Text splits into lines."""
        text = Text.assemble(
            *((segment.text, segment.style or "") for segment in self.segments()),
            no_wrap=True,
            overflow="ignore",
        )
        text.right_crop(1)  # the newline that ends the last row
        return text

    def segments(self) -> Iterator[Segment]:
        """The same lines as :meth:`text`, as Rich segments: no wrapping or splitting to
        do, which makes drawing a model's hundred tables several times faster.

        Unshaded cells are joined into one segment per line: Rich pays per segment, and
        a GPT-2 layer's tables are otherwise some 50,000 of them.
        """
        label_width, widths = self.widths[0], self.widths[1:]
        gap = " " * COLUMN_GAP
        yield Segment(" " * label_width)
        for label, width in zip(self.header, widths, strict=True):
            yield Segment(gap)
            yield Segment(pad(label, width, right=True), _BOLD)
        yield Segment.line()
        yield Segment("─" * self.width)
        yield Segment.line()
        for cells, shades in zip(self.body, self.shades, strict=True):
            yield Segment(pad(cells[0], label_width), _BOLD)
            if not any(shades):
                yield Segment(
                    "".join(
                        gap + cell.rjust(width)
                        for cell, width in zip(cells[1:], widths, strict=True)
                    )
                )
            else:
                for cell, width, shade in zip(cells[1:], widths, shades, strict=True):
                    yield Segment(gap)
                    yield Segment(cell.rjust(width), shade)
            yield Segment.line()
