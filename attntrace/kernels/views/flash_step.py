"""`flash --step`: one computed tile per screen (forward/views/step.py's page_through keys), then
the summary.

Each screen: where the tile is in the grid of query blocks × key blocks (``■`` this
tile, ``✓`` done, ``·`` skipped, ``□`` not yet; each block labelled by its tokens), the
tile's numbers as the full view draws them, and the running m and ℓ of every query row
after it. Skipped tiles get no screen of their own: the kernel never visits them, and
the grid shows them as ``·``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from attntrace.kernel.frozen import Matrix
from attntrace.kernel.trace import Stage
from attntrace.kernels.flash import Tile
from attntrace.kernels.flash_report import FlashReport
from attntrace.kernels.views.flash import Labels, span, summary, tile_block
from attntrace.ui.pager import Paged
from attntrace.ui.shown import pad, quoted, shortened
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Wrapped

CURRENT, DONE, SKIPPED, AHEAD = "■", "✓", "·", "□"
GRID_ROWS = 12  # query blocks shown at once: a window around the current one
LABEL_CELLS = 24  # a query block's label in the grid
CELL = 3  # cells per key block in the grid
KEY_BLOCKS_NAMED = 4  # up to this many key blocks in the grid are named by their tokens


def _window(count: int, current: int, size: int) -> range:
    """``size`` indices of ``count`` around ``current``, clipped to the ends."""
    if count <= size:
        return range(count)
    start = min(max(0, current - size // 2), count - size)
    return range(start, start + size)


def _block_label(tokens: tuple[str, ...], bounds: tuple[int, int], cells: int) -> str:
    """A block by its tokens and range where that fits ``cells``; else its range first
    (the part that places it), then as much of its first token as fits."""
    whole = span(tokens, *bounds)
    if cell_len(whole) <= cells:
        return whole
    start, stop = bounds
    where = f"{start}–{stop - 1}" if stop - start > 1 else f"{start}"
    return shortened(f"{where} {quoted(tokens[start])} …", cells)


class TileGrid:
    """The grid of query blocks × key blocks at tile ``index``: each block's mark."""

    def __init__(self, report: FlashReport, index: int) -> None:
        tiles = report.record.tiles
        self.report, self.index = report, index
        self.rows = sorted({tile.rows for tile in tiles})
        self.cols = sorted({tile.cols for tile in tiles})
        self.marks: dict[tuple[int, int], str] = {}
        for position, tile in enumerate(tiles):
            mark = (
                SKIPPED
                if tile.skipped
                else (CURRENT if position == index else DONE if position < index else AHEAD)
            )
            self.marks[(tile.i, tile.j)] = mark

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.renderable(options.max_width)

    def renderable(self, width: int) -> RenderableType:
        """The grid, cut to a window around the current tile where it would not fit."""
        labels, here = Labels(self.report), self.report.record.tiles[self.index]
        fit = max(1, (width - LABEL_CELLS - 2) // CELL)
        rows = _window(len(self.rows), here.i, GRID_ROWS)
        cols = _window(len(self.cols), here.j, fit)
        lines = [
            Text(pad("", LABEL_CELLS + 1) + "".join(f"{j:>{CELL}}" for j in cols), style="dim")
        ]
        for i in rows:
            name = _block_label(labels.queries, self.rows[i], LABEL_CELLS - 4)  # 4: "31 "
            line = Text(pad(f"{i} {name}", LABEL_CELLS) + " ")
            for j in cols:
                mark = self.marks[(i, j)]
                style = "bold magenta" if mark == CURRENT else "dim" if mark != DONE else ""
                line.append(f"{mark:>{CELL}}", style=style)
            lines.append(line)
        shown = len(rows) < len(self.rows) or len(cols) < len(self.cols)
        cut = (
            (
                f" (query blocks {rows.start}–{rows.stop - 1} of {len(self.rows)}, key blocks "
                f"{cols.start}–{cols.stop - 1} of {len(self.cols)})"
            )
            if shown
            else ""
        )
        if len(cols) <= KEY_BLOCKS_NAMED:
            named = [f"{j}: {_block_label(labels.keys, self.cols[j], LABEL_CELLS)}" for j in cols]
            keys = "key blocks " + " · ".join(named)
        else:
            size = self.report.record.block_k
            keys = f"key block j: keys {size}·j to {size}·j + {size - 1}"
        legend = f"{CURRENT} this tile, {DONE} done, {SKIPPED} skipped, {AHEAD} not yet{cut}"
        return Group(*lines, Wrapped(Text(keys, style="dim")), Wrapped(Text(legend, style="dim")))


def running_state(report: FlashReport, index: int) -> tuple[Matrix, Matrix]:
    """Every query row's m and ℓ after tile ``index``: −∞ and 0 for rows not reached."""
    record = report.record
    m, ell = np.full(len(record.m), -np.inf), np.zeros(len(record.m))
    for tile in record.tiles[: index + 1]:
        r0, r1 = tile.rows
        m[r0:r1], ell[r0:r1] = tile.m_new, tile.l_new
    return m, ell


def tile_screen(
    report: FlashReport, index: int, number: int, total: int, labels: Labels, view: View
) -> Callable[[Console], None]:
    """The screen of tile ``index``, the ``number``-th (from 1) of ``total`` computed."""
    tile: Tile = report.record.tiles[index]

    def pinned(console: Console) -> None:
        console.print(
            Text.assemble(
                (f"Tile {number} of {total} computed", "dim"),
                (f" · ({tile.i}, {tile.j})", "bold magenta"),
                (f" · head {report.head} · variant {report.record.variant}", "dim"),
            )
        )

    def body(console: Console) -> None:
        console.print(TileGrid(report, index), crop=False)
        console.print()
        console.print(tile_block(report, tile, labels, view), crop=False)
        console.print()
        m, ell = running_state(report, index)
        console.print(Text("running m and ℓ of every query row so far", style="bold"))
        state = Stage("running", "", labels.queries, ("m", "ℓ"), np.column_stack([m, ell]))
        console.print(StageTable(state, view), crop=False)
        console.print()

    return Paged(pinned, body)


def screens(report: FlashReport, view: View = DEFAULT_VIEW) -> list[Callable[[Console], None]]:
    """One screen per computed tile, in the order the variant runs them, then the summary.
    Each is drawn only when shown: a long run has tens of thousands."""
    computed = [index for index, tile in enumerate(report.record.tiles) if not tile.skipped]
    labels = Labels(report)
    pages = [
        tile_screen(report, index, number, len(computed), labels, view)
        for number, index in enumerate(computed, start=1)
    ]

    def last(console: Console) -> None:
        for renderable in summary(report, view):
            console.print(renderable, crop=False)

    return [*pages, last]
