"""The selected stage's matrix, every cell, in a table that scrolls inside its pane.

A :class:`~textual.widgets.DataTable`: its header row and the row labels stay put while
the cells scroll, and its cursor is the explorer's cell. Filled from
:func:`attntrace.explore.cells.stage_cells`; it computes nothing.
"""

from __future__ import annotations

from textual.widgets import DataTable

from attntrace.explore.cells import stage_cells
from attntrace.kernel.trace import Stage, Trace


class StageTable(DataTable[object]):
    """One stage at a time; :meth:`show` replaces it, the cursor at ``row``, ``col``."""

    def __init__(self, id: str = "table") -> None:
        super().__init__(cursor_type="cell", zebra_stripes=False, id=id)
        self.shown: Stage | None = None

    def show(self, stage: Stage, trace: Trace, row: int, col: int) -> None:
        if stage is not self.shown:
            cells = stage_cells(stage, trace)
            self.clear(columns=True)
            self.add_columns(*cells.header)
            for label, row_cells in zip(cells.labels, cells.rows, strict=True):
                self.add_row(*row_cells, label=label)
            self.shown = stage
        self.move_cursor(row=row, column=col, animate=False)
