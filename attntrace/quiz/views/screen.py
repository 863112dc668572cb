"""What a question's screen shows and hides: the operands its cell needs, the cells
it keeps secret, and the table that draws both (docs/teaching.md, "What is shown").

- **The operands, whole.** Each stage's cell is computed from a few vectors
  (:func:`needs`): Q, K, V from the input's row and the weight's column; scores from
  the query's row and the key's row; scaled, masked, ... from the stage before it, the
  same cell; softmax from the row it normalises; output from the softmax row and V's
  column. Those are shown whole, whatever the token count: in parts one under another
  where the width cannot hold them, never cut. Past :data:`MOST_BY_HAND` numbers (a
  real model's 576-wide embedding) the table is fitted to the width as ``run`` fits
  it; the hints give the numbers.
- **The secrets** (:func:`secrets`): the asked cell (``?``); the rest of its row where
  it is an attention weight (a row sums to 1, so its neighbours would give it away);
  and in an exercise the cells later questions ask, in their own stage and in any
  stage that copies them, written ``·``.
- **No width tells.** A column holding a secret is as wide as the widest number of its
  table shown: the hidden value's own width is never measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

from attntrace.forward.views.equation import operands
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace
from attntrace.quiz.question import Question
from attntrace.ui.elide import chosen
from attntrace.ui.grid import Grid
from attntrace.ui.stage_table import StageTable, hidden_note
from attntrace.ui.view import View
from attntrace.ui.wrap import Wrapped

HIDDEN = "?"  # the asked cell
SECRET = "·"  # a cell kept secret: a later question's, or the asked weight's row
MOST_BY_HAND = 64  # numbers an operand shows whole; past it, fitted as run fits it
WEIGHT_STAGES = frozenset({"softmax", "weights"})

Key = tuple[str, int | None]  # a stage by name and head
Cells = frozenset[tuple[int, int]]


@dataclass(frozen=True)
class Need:
    """The part of ``stage`` a cell is computed from: its ``rows`` and ``cols`` by
    index (None: every one)."""

    stage: Stage
    rows: tuple[int, ...] | None
    cols: tuple[int, ...] | None


def key(stage: Stage) -> Key:
    return (stage.name, stage.head)


def needs(trace: Trace, question: Question) -> dict[Key, Need]:
    """The operands ``question``'s cell is computed from, by stage."""
    stage = trace.stage(question.stage, head=question.head)
    r, c = question.row, question.col
    found: list[Need] = []
    name = stage.name
    if name in ("Q", "K", "V"):
        pair = operands(stage, trace)
        if pair is not None:
            found = [Need(pair[0], (r,), None), Need(pair[1], None, (c,))]
        weight = trace.weight_for(stage)
        if pair is None and weight is not None:
            source = "X_context" if name != "Q" and trace.context_tokens is not None else "X"
            found = [Need(trace.stage(source), (r,), None), Need(weight, None, (c,))]
    elif name == "scores":
        q_name, k_name = trace.model.score_inputs
        found = [
            Need(trace.stage(q_name, head=stage.head), (r,), None),
            Need(trace.stage(k_name, head=stage.head), (c,), None),
        ]
    elif name in WEIGHT_STAGES and stage.head is not None:
        found = [Need(trace.softmax_input(stage.head), (r,), None)]
    elif name == "output" and stage.head is not None:
        found = [
            Need(trace.stage("softmax", head=stage.head), (r,), None),
            Need(trace.stage("V", head=stage.head), None, (c,)),
        ]
    elif stage.head is not None:
        previous = _previous(trace, stage)
        if previous is not None:
            found = [Need(previous, (r,), None)]
    return {key(need.stage): need for need in found}


def _previous(trace: Trace, stage: Stage) -> Stage | None:
    """The stage of the same head and shape just before ``stage`` (scaled's scores,
    masked's scaled): the one it is computed from, cell by cell."""
    before = None
    for other in trace.stages:
        if other is stage:
            return before
        if other.head == stage.head and other.data.shape == stage.data.shape:
            before = other
    return None


def secrets(trace: Trace, question: Question, later: Sequence[Question] = ()) -> dict[Key, Cells]:
    """The cells the screen of ``question`` keeps secret, by stage: the asked one, the
    rest of its row where it is a weight, and each later question's (its row too where
    it is a weight) in its stage and in every stage that copies it (the same head and
    labels, the same value at the same place)."""
    hidden: dict[Key, set[tuple[int, int]]] = {}
    for asked in (question, *later):
        stage = trace.stage(asked.stage, head=asked.head)
        cells = {(asked.row, asked.col)}
        if stage.name in WEIGHT_STAGES:
            cells |= {(asked.row, j) for j in range(stage.data.shape[1])}
        hidden.setdefault(key(stage), set()).update(cells)
        if asked is question:
            continue
        for other in trace.stages:
            if other is stage or other.head not in (None, stage.head):
                continue
            if other.rows == stage.rows and other.cols == stage.cols:
                copied = {cell for cell in cells if other.data[cell] == stage.data[cell]}
                if copied:
                    hidden.setdefault(key(other), set()).update(copied)
    return {k: frozenset(v) for k, v in hidden.items()}


@dataclass(frozen=True)
class QuizTable:
    """A stage's table on a question's screen: ``asked`` written ``?``, ``hidden``
    written ``·`` (neither shaded, their columns as wide as the table's widest number),
    and ``need``'s rows and columns shown whole, in parts where the width cannot hold
    them. ``long``: a trace past the tokens a screen shows every row of."""

    stage: Stage
    view: View
    asked: tuple[int, int] | None = None
    hidden: Cells = frozenset()
    need: Need | None = None
    long: bool = False

    def parts(self, width: int) -> list[Grid]:
        """The table's grids, one under another: several only for an operand too wide."""
        return self._layout(width)[0]

    def _layout(self, width: int) -> tuple[list[Grid], bool]:
        """The grids, and whether they show a need whole (else: fitted as run fits)."""
        if self.need is not None:
            rows, cols = self._needed()
            if len(rows) * len(cols) <= MOST_BY_HAND:
                return self._split(rows, cols, width), True
        return [self._fitted(width)], False

    def _needed(self) -> tuple[list[int], list[int]]:
        """The rows and columns an operand shows: for a short trace the whole table,
        where it holds at most :data:`MOST_BY_HAND` numbers; else exactly the needed."""
        assert self.need is not None
        n_rows, n_cols = self.stage.data.shape
        every_row, every_col = list(range(n_rows)), list(range(n_cols))
        if not self.long and n_rows <= self.view.max_rows and n_rows * n_cols <= MOST_BY_HAND:
            return every_row, every_col
        rows = list(self.need.rows) if self.need.rows is not None else every_row
        cols = list(self.need.cols) if self.need.cols is not None else every_col
        return rows, cols

    def _grid(self, rows: Iterable[int], cols: Iterable[int], width: int) -> Grid:
        """Exactly ``rows`` and ``cols`` (as --rows/--cols choose), secrets applied."""
        stage = self.stage
        row_labels, col_labels = unique_labels(stage.rows), unique_labels(stage.cols)
        view = replace(
            self.view,
            rows=tuple(row_labels[i] for i in sorted(set(rows))),
            cols=tuple(col_labels[j] for j in sorted(set(cols))),
            focus=None,
        )
        grid = StageTable(stage, view).layout(width)
        return self._secret(_without_gaps(grid) if self.need is not None else grid)

    def _split(self, rows: list[int], cols: list[int], width: int) -> list[Grid]:
        """``cols`` in as few parts as fit ``width`` (at least one column a part)."""
        parts: list[Grid] = []
        start = 0
        while start < len(cols):
            end = start + 1
            while end < len(cols) and self._grid(rows, cols[start : end + 1], width).width <= width:
                end += 1
            parts.append(self._grid(rows, cols[start:end], width))
            start = end
        return parts

    def _fitted(self, width: int) -> Grid:
        """The table fitted to ``width`` as run fits it, the asked column kept: where the
        width cut it, it takes the place of the last shown, and columns are dropped from
        the end until the table fits again."""
        grid = self._secret(StageTable(self.stage, self.view).layout(width))
        if self.asked is None:
            return grid
        col = self.asked[1]
        shown = [j for j in grid.cols if j is not None]
        if col in shown and grid.width <= width:
            return grid
        others = [j for j in shown if j != col]
        rows = [i for i in grid.rows if i is not None]
        while True:
            wanted = sorted({*others, col})
            grid = self._grid(rows, wanted, width)
            if grid.width <= width or not others:
                return grid
            others.pop()

    def _secret(self, grid: Grid) -> Grid:
        """``grid`` with the secrets written, unshaded, and every column with a secret
        as wide as the widest number shown (so its width tells nothing)."""
        marks = dict.fromkeys(self.hidden, SECRET)
        if self.asked is not None:
            marks[self.asked] = HIDDEN
        body = [list(cells) for cells in grid.body]
        shades = [list(styles) for styles in grid.shades]
        marked: set[int] = set()
        for a, i in enumerate(grid.rows):
            for b, j in enumerate(grid.cols):
                if i is not None and j is not None and (i, j) in marks:
                    body[a][b + 1] = marks[i, j]
                    shades[a][b] = None
                    marked.add(b)
        if not marked:
            return grid
        numbers = [
            cells[b + 1]
            for cells, i in zip(body, grid.rows, strict=True)
            if i is not None
            for b, j in enumerate(grid.cols)
            if j is not None and cells[b + 1] not in (HIDDEN, SECRET)
        ]
        widest = max((len(text) for text in numbers), default=1)
        widths = [grid.widths[0]]
        for b in range(len(grid.cols)):
            column = [cells[b + 1] for cells in body]
            width = max(cell_len(grid.header[b]), *(len(text) for text in column))
            widths.append(max(width, widest) if b in marked else width)
        return replace(grid, body=body, shades=shades, widths=widths)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        parts, whole = self._layout(options.max_width)
        for index, grid in enumerate(parts):
            if index:
                yield Text("")
            yield from grid.segments()
        note = self._note(parts, whole)
        if note:
            yield Wrapped(Text(note, style="dim"))

    def _note(self, parts: list[Grid], whole: bool) -> str:
        """What the table leaves out: for an operand, that it shows what the cell
        needs; else as run says it."""
        n_rows, n_cols = self.stage.data.shape
        rows = parts[0].rows
        if whole:
            shown_rows = sum(i is not None for i in rows)
            shown_cols = sum(j is not None for grid in parts for j in grid.cols)
            said = [] if shown_rows == n_rows else [f"{shown_rows} of {n_rows} rows"]
            if shown_cols < n_cols:
                said.append(f"{shown_cols} of {n_cols} columns")
            return f"showing {' and '.join(said)}: what the cell needs" if said else ""
        picked = (
            chosen(unique_labels(self.stage.rows), self.view.rows) is not None,
            chosen(unique_labels(self.stage.cols), self.view.cols) is not None,
        )
        return hidden_note(self.stage, rows, parts[0].cols, picked, self.view)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = max(grid.width for grid in self.parts(options.max_width))
        return Measurement(width, width)


def _without_gaps(grid: Grid) -> Grid:
    """``grid`` without its ``…`` rows and columns: an operand's parts show the rows and
    columns the cell needs, and the note says how many of the table's those are."""
    rows = [a for a, i in enumerate(grid.rows) if i is not None]
    cols = [b for b, j in enumerate(grid.cols) if j is not None]
    return Grid(
        rows=[grid.rows[a] for a in rows],
        cols=[grid.cols[b] for b in cols],
        header=[grid.header[b] for b in cols],
        body=[[grid.body[a][0], *(grid.body[a][b + 1] for b in cols)] for a in rows],
        shades=[[grid.shades[a][b] for b in cols] for a in rows],
        widths=[grid.widths[0], *(grid.widths[b + 1] for b in cols)],
    )
