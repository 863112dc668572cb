"""A stage's matrix as a table that fits the width it is given.

A matrix wider or taller than the screen is summarized the way numpy prints (first and
last rows/columns around an ellipsis); the column budget is measured at render time,
so the same trace reads at 40, 80 or 200 columns. A note under a summarized table says
what it leaves out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.ui.grid import Grid
from attntrace.ui.heatmap import weight_style
from attntrace.ui.numbers import (
    COLUMN_GAP,
    CUT,
    OVERFLOWED,
    column_widths,
    columns_that_fit,
    stage_cell,
    visible_indices,
)
from attntrace.ui.view import DEFAULT_VIEW, View


def reads_minus_inf_as_mask(stage: Stage, view: View) -> bool:
    """Whether −∞ in ``stage`` is a mask (shown ``−∞``, unmarked): always, except in a
    low-precision view's stages other than ``masked``, where it is an overflow."""
    return not view.overflows or stage.name == "masked"


@lru_cache(maxsize=512)
def cached_column_widths(
    stage: Stage, precision: int, columns: tuple[int, ...], masks: bool = True
) -> list[int]:
    """column_widths of the given columns, per stage (stages are immutable and hashed by
    identity): a stage is laid out several times (measured, fitted, drawn), its widths
    computed once. ``masks``: :func:`reads_minus_inf_as_mask`."""
    every = len(columns) == stage.shape[1]  # then columns is 0..n-1: no copy needed
    data = stage.data if every else stage.data[:, list(columns)]
    return column_widths(data, precision, masked_stage=masks)


@dataclass(frozen=True)
class StageTable:
    """A stage's matrix as a table that fits the width it is given."""

    stage: Stage
    view: View = DEFAULT_VIEW

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        grid = self.layout(options.max_width)
        yield from grid.segments()
        note = hidden_note(self.stage, grid.rows, grid.cols)
        if note:
            yield Text(note, style="dim")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the table it draws at this width (so grids can place it)."""
        width = self.layout(options.max_width).width
        return Measurement(width, width)

    def natural_width(self) -> int:
        """The width with every column shown, estimated without formatting every cell."""
        stage = self.stage
        labels = unique_labels(stage.cols)
        masks = reads_minus_inf_as_mask(stage, self.view)
        cells = cached_column_widths(stage, self.view.precision, tuple(range(len(labels))), masks)
        columns = zip(cells, labels, strict=True)
        return max(cell_len(label) for label in unique_labels(stage.rows)) + sum(
            max(cell, cell_len(label)) + COLUMN_GAP for cell, label in columns
        )

    def table(self, width: int) -> Text:
        """The table alone (no note), summarized to fit ``width``."""
        return self.layout(width).text()

    def layout(self, width: int) -> Grid:
        """Choose the rows and columns that fit ``width`` and format their cells."""
        stage, precision = self.stage, self.view.precision
        row_labels = unique_labels(stage.rows)
        col_labels = unique_labels(stage.cols)
        rows = visible_indices(len(row_labels), self.view.max_rows)
        # the labels of the rows shown: a tall matrix's million others take no room
        label_width = max(cell_len(CUT if i is None else row_labels[i]) for i in rows)
        n_cols = len(col_labels)
        # Each column costs its width + 3 (the gap), so at most width // 4 can ever show,
        # from the two ends: only those columns are measured (a 768-wide X: 20 of them).
        reach = max(1, width // (1 + COLUMN_GAP))
        if self.view.max_cols is not None or n_cols <= 2 * reach:
            edges = tuple(range(n_cols))
        else:
            edges = (*range(reach), *range(n_cols - reach, n_cols))
        cells = cached_column_widths(
            stage, precision, edges, reads_minus_inf_as_mask(stage, self.view)
        )
        pairs = zip(edges, cells, strict=True)
        widths = {j: max(cell, cell_len(col_labels[j])) for j, cell in pairs}

        budget = width - label_width  # the label column has no gap before it
        left_to_right = [widths[j] for j in edges[: min(n_cols, reach + 1)]]
        fits = columns_that_fit(left_to_right, budget) if len(edges) == n_cols else reach
        if self.view.max_cols is not None:
            fits = self.view.max_cols
        elif fits < n_cols:
            # Leave room for the ellipsis column (1 + 3), then keep first and last columns.
            widest_first = sorted(widths.values(), reverse=True)
            fits = max(1, columns_that_fit(widest_first, budget - (1 + COLUMN_GAP)))
        grid = self._grid(rows, visible_indices(len(col_labels), fits), row_labels, col_labels)
        # The budget is an estimate from each column's extremes; where the drawn table
        # is still too wide, drop a column until it fits (or one is left).
        while self.view.max_cols is None and grid.width > width and fits > 1:
            fits -= 1
            grid = self._grid(rows, visible_indices(len(col_labels), fits), row_labels, col_labels)
        return grid

    def _grid(
        self,
        rows: list[int | None],
        cols: list[int | None],
        row_labels: list[str],
        col_labels: list[str],
    ) -> Grid:
        """Format the chosen cells and measure each column."""
        data, precision = self.stage.data, self.view.precision
        shade = self.stage.name == "softmax"
        masked_stage = reads_minus_inf_as_mask(self.stage, self.view)
        marks = self.view.overflows
        body: list[list[str]] = []
        shades: list[list[Style | None]] = []
        for i in rows:
            if i is None:
                body.append([CUT] * (len(cols) + 1))
                shades.append([None] * len(cols))
                continue
            values = [None if j is None else float(data[i, j]) for j in cols]
            body.append(
                [row_labels[i]]
                + [
                    CUT if v is None else stage_cell(v, precision, masked_stage=masked_stage)
                    for v in values
                ]
            )
            shades.append([_shade(v, shade, masked_stage, marks) for v in values])
        header = [CUT if j is None else col_labels[j] for j in cols]
        # display cells, not characters: 猫 takes two (the numbers are ASCII, one each)
        widths = [max(cell_len(r[0]) for r in body)] + [
            max(cell_len(header[c]), *(len(r[c + 1]) for r in body)) for c in range(len(cols))
        ]
        return Grid(rows, cols, header, body, shades, widths)


def _shade(value: float | None, weights: bool, masked_stage: bool, marks: bool) -> Style | None:
    """A cell's style: a weight's heatmap colour; a --dtype's overflow marked."""
    if value is None:
        return None
    if marks and not math.isfinite(value) and not (masked_stage and value == -math.inf):
        return OVERFLOWED
    return weight_style(value) if weights else None


def hidden_note(stage: Stage, rows: list[int | None], cols: list[int | None]) -> str:
    """Say what a summarized table leaves out, and how to see it: '' when nothing is."""
    n_rows, n_cols = stage.shape
    shown_rows = sum(i is not None for i in rows)
    shown_cols = sum(j is not None for j in cols)
    parts = []
    if shown_rows < n_rows:
        parts.append(f"{shown_rows} of {n_rows} rows")
    if shown_cols < n_cols:
        parts.append(f"{shown_cols} of {n_cols} columns")
    if not parts:
        return ""
    return f"showing {' and '.join(parts)} (--max-rows/--max-cols N, 0 for all)"
