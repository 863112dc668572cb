"""A stage's matrix as a table that fits the width it is given.

A matrix wider or taller than the screen is summarized the way numpy prints (first and
last rows/columns around an ellipsis); the column budget is measured at render time,
so the same trace reads at 40, 80 or 200 columns. A note under a summarized table says
what it leaves out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from attntrace.kernel.labels import Dims, dims, unique_labels
from attntrace.kernel.trace import Stage
from attntrace.ui import elide
from attntrace.ui.elide import gap_labels, heaviest, keeping_order, with_gaps
from attntrace.ui.grid import Grid
from attntrace.ui.heatmap import weight_style
from attntrace.ui.numbers import (
    COLUMN_GAP,
    CUT,
    OVERFLOWED,
    column_widths,
    stage_cell,
)
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Wrapped


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


# The stages whose cells are attention weights: their heaviest keys are kept.
WEIGHT_STAGES = frozenset({"softmax", "weights"})


@dataclass(frozen=True)
class StageTable:
    """A stage's matrix as a table that fits the width it is given.

    ``weights``: the attention weights whose heaviest keys this table keeps where its
    columns do not all fit (the same head's softmax, for scores and scaled), so that
    the stages' tables show the same keys; a weights stage ranks by itself.
    """

    stage: Stage
    view: View = DEFAULT_VIEW
    weights: Stage | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        grid = self.layout(options.max_width, options.size.width)
        yield from grid.segments()
        view, stage = self.view, self.stage
        chosen = (
            elide.chosen(unique_labels(stage.rows), view.rows) is not None,
            elide.chosen(unique_labels(stage.cols), view.cols) is not None,
        )
        note = hidden_note(stage, grid.rows, grid.cols, chosen, view)
        if note:  # wrapped between words, no space left at a line's end
            yield Wrapped(Text(note, style="dim"))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the table it draws at this width (so grids can place it)."""
        width = self.layout(options.max_width, options.size.width).width
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

    def layout(self, width: int, screen: int | None = None) -> Grid:
        """Choose the rows and columns that fit ``width`` (:mod:`attntrace.ui.elide`'s
        rule) and format their cells. ``screen``: the width the weights' own table is
        drawn at, where this one is placed beside others in less (--overview): its keys
        are the weights' keys as that table shows them, not as they would fit here."""
        stage = self.stage
        row_labels = unique_labels(stage.rows)
        col_labels = unique_labels(stage.cols)
        rows = self.shown_rows(row_labels)
        gaps = gap_labels(rows, len(row_labels))
        # the labels of the rows shown: a tall matrix's million others take no room
        label_width = max(
            cell_len(gap if i is None else row_labels[i]) for i, gap in zip(rows, gaps, strict=True)
        )
        n_cols = len(col_labels)
        picked = elide.chosen(col_labels, self.view.cols)
        if picked is not None:  # --cols: exactly those, however wide
            return self._grid(rows, with_gaps(picked, n_cols), row_labels, col_labels)
        order = self.column_order(col_labels, [i for i in rows if i is not None])
        if self.view.max_cols is not None:
            kept = list(islice(order, self.view.max_cols))
            return self._grid(rows, with_gaps(kept, n_cols), row_labels, col_labels)
        # Each column costs its width + 3 (the gap), so at most width // 4 can ever show:
        # only the first of them in keeping order are measured (a 768-wide X: 20).
        reach = max(1, width // (1 + COLUMN_GAP))
        candidates = list(islice(order, reach))
        cells = cached_column_widths(
            stage, self.view.precision, tuple(candidates), reads_minus_inf_as_mask(stage, self.view)
        )
        widths = {
            j: max(cell, cell_len(col_labels[j])) for j, cell in zip(candidates, cells, strict=True)
        }
        fits = _how_many_fit(candidates, widths, n_cols, width - label_width)
        if self.weights is not None:  # no more keys than the weights' table shows
            beside = StageTable(self.weights, self.view).layout(screen or width).cols
            fits = min(fits, max(1, sum(j is not None for j in beside)))
        grid = self._grid(rows, with_gaps(candidates[:fits], n_cols), row_labels, col_labels)
        # The budget is an estimate from each column's extremes; where the drawn table
        # is still too wide, drop a column until it fits (or one is left).
        while grid.width > width and fits > 1:
            fits -= 1
            grid = self._grid(rows, with_gaps(candidates[:fits], n_cols), row_labels, col_labels)
        return grid

    def shown_rows(self, labels: list[str]) -> list[int | None]:
        """The rows shown: ``--rows``' tokens, else up to ``max_rows`` in keeping order
        (the focused token, the first and last, then from either end)."""
        picked = elide.chosen(labels, self.view.rows)
        if picked is None:
            focus = elide.pinned(labels, self.view.focus) if _over_tokens(self.stage.rows) else []
            picked = list(islice(keeping_order(len(labels), focus), self.view.max_rows))
        return with_gaps(picked, len(labels))

    def column_order(self, labels: list[str], rows: list[int]) -> Iterator[int]:
        """The columns in the order this table keeps them: see :mod:`attntrace.ui.elide`."""
        stage = self.stage
        if not _over_tokens(stage.cols):
            return keeping_order(len(labels))
        weights = self.weights
        if weights is None and stage.name in WEIGHT_STAGES:
            weights = stage
        # a focused token's row ranks the keys first: the keys it weighs most are its story
        focused = elide.pinned(unique_labels(stage.rows), self.view.focus)
        rows = focused if focused and _over_tokens(stage.rows) else rows
        if weights is not None and weights.data.shape == stage.data.shape:
            ranked = heaviest(weights.data, rows, magnitude=False)
        else:
            masks = reads_minus_inf_as_mask(stage, self.view)
            ranked = heaviest(stage.data, rows, magnitude=True, masks=masks)
        return keeping_order(len(labels), elide.pinned(labels, self.view.focus), ranked)

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
        row_gaps = gap_labels(rows, len(row_labels))
        for i, gap in zip(rows, row_gaps, strict=True):
            if i is None:
                body.append([gap] + [CUT] * len(cols))
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
        col_gaps = gap_labels(cols, len(col_labels))
        header = [
            gap if j is None else col_labels[j] for j, gap in zip(cols, col_gaps, strict=True)
        ]
        # display cells, not characters: 猫 takes two (the numbers are ASCII, one each)
        widths = [max(cell_len(r[0]) for r in body)] + [
            max(cell_len(header[c]), *(len(r[c + 1]) for r in body)) for c in range(len(cols))
        ]
        return Grid(rows, cols, header, body, shades, widths)


def _over_tokens(labels: tuple[str, ...]) -> bool:
    """Whether an axis runs over tokens (not d0, d1, ... over dimensions)."""
    if isinstance(labels, Dims):
        return False
    return not (labels and labels[0] == "d0" and labels == dims(len(labels)))


def _how_many_fit(candidates: list[int], widths: dict[int, int], count: int, budget: int) -> int:
    """How many of ``candidates`` (in keeping order) fit ``budget`` cells, their gaps'
    ``…N`` columns counted: at least one."""
    if len(candidates) == count and sum(widths.values()) + COLUMN_GAP * count <= budget:
        return count  # all of them (an equation's table, at any width): nothing to try
    for kept in range(1, len(candidates) + 1):
        shown = with_gaps(candidates[:kept], count)
        gaps = gap_labels(shown, count)
        used = sum(
            (cell_len(gap) if j is None else widths[j]) + COLUMN_GAP
            for j, gap in zip(shown, gaps, strict=True)
        )
        if used > budget:
            return max(1, kept - 1)
    return len(candidates)


def _shade(value: float | None, weights: bool, masked_stage: bool, marks: bool) -> Style | None:
    """A cell's style: a weight's heatmap colour; a --dtype's overflow marked."""
    if value is None:
        return None
    if marks and not math.isfinite(value) and not (masked_stage and value == -math.inf):
        return OVERFLOWED
    return weight_style(value) if weights else None


def hidden_note(
    stage: Stage,
    rows: list[int | None],
    cols: list[int | None],
    chosen: tuple[bool, bool] = (False, False),
    view: View = DEFAULT_VIEW,
) -> str:
    """Say what a summarized table leaves out, and how to see it: '' when nothing is.
    ``chosen``: whether ``--rows``, ``--cols`` chose the rows, the columns shown (where
    they chose all that is hidden, --max-rows/--max-cols would not change it); the
    ``view`` says who chose them and how to see more (its chosen_note, more_note)."""
    n_rows, n_cols = stage.shape
    shown_rows = sum(i is not None for i in rows)
    shown_cols = sum(j is not None for j in cols)
    parts, hidden_by_choice = [], []
    if shown_rows < n_rows:
        parts.append(f"{shown_rows} of {n_rows} rows")
        hidden_by_choice.append(chosen[0])
    if shown_cols < n_cols:
        parts.append(f"{shown_cols} of {n_cols} columns")
        hidden_by_choice.append(chosen[1])
    if not parts:
        return ""
    by_choice = all(hidden_by_choice)
    how = view.chosen_note if by_choice else view.more_note
    return f"showing {' and '.join(parts)} ({how})"
