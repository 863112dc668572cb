"""The selected stage's matrix, every cell, in a table that scrolls inside its pane.

Drawn line by line (Textual's line API on a :class:`~textual.scroll_view.ScrollView`):
only the cells on screen are formatted, so a 12 × 576 stage of a real model, or a
1,000 × 1,000 softmax, shows at once and scrolls at once. The header row and the row
labels stay put while the cells scroll; the cursor is the explorer's cell (arrows, Home,
End, a click), and each move posts :class:`StageTable.CellMoved`, Enter
:class:`StageTable.CellChosen`. Labels come from a trace made visible and are drawn as
text, never markup. It computes nothing.
"""

from __future__ import annotations

import bisect
import itertools
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from attntrace.explore.cells import PRECISION, cell_style, cell_text, is_masked_stage
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.numbers import column_widths
from attntrace.ui.shown import shortened

GAP = 2  # spaces before each column
LABEL_LIMIT = 16  # cells of a row label (its middle given up for … past it)
HEADER = Style(bold=True)
LABEL = Style(bold=True)
CURSOR = Style(reverse=True, bold=True)
CURSOR_AXIS = Style(bold=True, underline=True)  # the cursor's row label and column header
PLAIN = Style()  # every segment has a style: Textual's NO_COLOR filter reads each one


class StageTable(ScrollView, can_focus=True):
    """One stage at a time; :meth:`show` replaces it, the cursor at ``row``, ``col``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1, 0)", show=False),
        Binding("down", "move(1, 0)", show=False),
        Binding("left", "move(0, -1)", show=False),
        Binding("right", "move(0, 1)", show=False),
        Binding("home", "edge(-1)", show=False),
        Binding("end", "edge(1)", show=False),
        Binding("enter", "choose", show=False),
    ]

    class CellMoved(Message):
        """The cursor is on a new cell."""

        def __init__(self, table: StageTable, row: int, col: int) -> None:
            super().__init__()
            self.table, self.row, self.col = table, row, col

    class CellChosen(CellMoved):
        """Enter, or a click: explain this cell."""

    def __init__(self, id: str = "table") -> None:
        super().__init__(id=id)
        self.shown: Stage | None = None
        self.row = self.col = 0
        self.texts: dict[int, list[tuple[str, Style | None]]] = {}
        self.widths: list[int] = []
        self.starts: list[int] = []  # each column's first cell, the label column not counted
        self.label_width = 0
        self.labels: list[str] = []
        self.header: list[str] = []
        self.masked_stage = True
        self.marks = False
        self.show_cursor = True  # the forward stage beside a gradient of another shape: off

    # --- what is shown ---------------------------------------------------------

    def show(self, stage: Stage, trace: Trace, row: int, col: int) -> None:
        if stage is not self.shown:
            self.shown = stage
            self.texts = {}
            self.masked_stage, self.marks = (
                is_masked_stage(stage, trace),
                trace.precision is not None,
            )
            # a repeated token told apart as run and the story tell it: the#0, the#4
            self.labels = [shortened(label, LABEL_LIMIT) for label in unique_labels(stage.rows)]
            self.header = unique_labels(stage.cols)
            numbers = column_widths(stage.data, PRECISION, masked_stage=self.masked_stage)
            self.widths = [max(w, cell_len(h)) for w, h in zip(numbers, self.header, strict=True)]
            self.starts = [0, *itertools.accumulate(GAP + w for w in self.widths)]
            self.label_width = max((cell_len(label) for label in self.labels), default=0) + 1
            rows, _ = stage.shape
            self.virtual_size = Size(self.label_width + self.starts[-1] + 1, rows + 1)
            self.scroll_to(0, 0, animate=False)
        self.row, self.col = row, col
        self.scroll_to_cursor()
        self.refresh()

    def row_texts(self, row: int) -> list[tuple[str, Style | None]]:
        """Row ``row``'s cells as written, formatted when first drawn."""
        if row not in self.texts:
            assert self.shown is not None
            values = self.shown.data[row].tolist()
            heat = self.shown.name == "softmax"
            self.texts[row] = [
                (
                    cell_text(value, PRECISION, self.masked_stage),
                    cell_style(value, heat=heat, masked_stage=self.masked_stage, marks=self.marks),
                )
                for value in values
            ]
        return self.texts[row]

    # --- drawing ---------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        """Line ``y`` on screen, on the widget's own colours (every segment styled:
        Textual's NO_COLOR filter reads each one's style)."""
        return self.line(y).apply_style(self.rich_style)

    def line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self.shown is None or width <= 0:
            return Strip.blank(width)
        scroll_x, scroll_y = int(self.scroll_offset.x), int(self.scroll_offset.y)
        data_width = max(0, width - self.label_width)
        first = max(0, bisect.bisect_right(self.starts, scroll_x) - 1)
        last = bisect.bisect_left(self.starts, scroll_x + data_width)
        columns = range(first, min(last, len(self.widths)))
        if y == 0:
            label = Segment(" " * self.label_width, PLAIN)
            cells = [self.header_cell(j) for j in columns]
        else:
            row = scroll_y + y - 1
            if row >= len(self.labels):
                return Strip.blank(width)
            style = CURSOR_AXIS if row == self.row else LABEL
            text = self.labels[row]
            pad = Segment(" " * (self.label_width - cell_len(text)), PLAIN)
            cells = [self.data_cell(row, j) for j in columns]
            return self.joined([Segment(text, style), pad], cells, scroll_x, first, data_width)
        return self.joined([label], cells, scroll_x, first, data_width)

    def joined(
        self,
        label: list[Segment],
        cells: list[tuple[Segment, Segment]],
        scroll_x: int,
        first: int,
        data_width: int,
    ) -> Strip:
        """The label, then the cells from ``first`` cropped to what is in view."""
        body = Strip([s for pair in cells for s in pair])
        offset = scroll_x - self.starts[first] if cells else 0
        body = body.crop(offset, offset + data_width).adjust_cell_length(data_width, PLAIN)
        return Strip.join([Strip(label), body])

    def header_cell(self, col: int) -> tuple[Segment, Segment]:
        text = self.header[col]
        pad = " " * (GAP + self.widths[col] - cell_len(text))
        return Segment(pad, PLAIN), Segment(text, CURSOR_AXIS if col == self.col else HEADER)

    def data_cell(self, row: int, col: int) -> tuple[Segment, Segment]:
        text, style = self.row_texts(row)[col]
        if (row, col) == (self.row, self.col) and self.show_cursor:
            style = CURSOR if style is None else style + CURSOR
        # a width estimated a cell short (a rounding carry) takes a space of the gap
        pad = " " * max(1, GAP + self.widths[col] - len(text))
        return Segment(pad, PLAIN), Segment(text, style or PLAIN)

    # --- the cursor ------------------------------------------------------------

    def scroll_to_cursor(self) -> None:
        """Scroll just enough for the cursor's cell to be on screen. A pane not laid out
        yet (a table first shown, its pane hidden by the loading indicator) has no width:
        scrolled then, it went to the column's last character (``0`` of ``k0``), so the
        scroll waits for the layout, and :meth:`on_resize` does it again."""
        if self.shown is None or not self.widths:
            return
        region = self.scrollable_content_region
        if region.width <= self.label_width or region.height < 1:
            self.call_after_refresh(self.scroll_when_laid_out)
            return
        x, y = int(self.scroll_x), int(self.scroll_y)
        data_width = region.width - self.label_width
        left, right = self.starts[self.col], self.starts[self.col + 1]
        if left < x or right - left > data_width:  # a column wider than the pane: its start
            x = left
        elif right > x + data_width:
            x = right - data_width
        rows_shown = max(1, self.scrollable_content_region.height - 1)
        if self.row < y:
            y = self.row
        elif self.row >= y + rows_shown:
            y = self.row - rows_shown + 1
        self.scroll_to(x, y, animate=False)

    def scroll_when_laid_out(self) -> None:
        """:meth:`scroll_to_cursor` once the pane has its size (else nothing: the next
        resize scrolls)."""
        if self.scrollable_content_region.width > self.label_width:
            self.scroll_to_cursor()

    def on_resize(self, event: events.Resize) -> None:
        self.scroll_to_cursor()

    def place(self, row: int, col: int, *, chosen: bool = False) -> None:
        if self.shown is None:
            return
        rows, cols = self.shown.shape
        self.row, self.col = max(0, min(row, rows - 1)), max(0, min(col, cols - 1))
        self.scroll_to_cursor()
        self.refresh()
        message = self.CellChosen if chosen else self.CellMoved
        self.post_message(message(self, self.row, self.col))

    def action_move(self, down: int, right: int) -> None:
        self.place(self.row + down, self.col + right)

    def action_edge(self, side: int) -> None:
        cols = 0 if self.shown is None else self.shown.shape[1]
        self.place(self.row, 0 if side < 0 else cols - 1)

    def action_choose(self) -> None:
        self.place(self.row, self.col, chosen=True)

    def on_click(self, event: events.Click) -> None:
        """A click on a cell chooses it (on the header or a label, its column or row)."""
        if self.shown is None:
            return
        row = int(self.scroll_y) + event.y - 1 if event.y >= 1 else self.row
        col = self.col
        if event.x >= self.label_width:
            x = int(self.scroll_x) + event.x - self.label_width
            col = max(0, bisect.bisect_right(self.starts, x) - 1)
        if row < self.shown.shape[0] and col < self.shown.shape[1]:
            self.place(row, col, chosen=True)
