"""The question on screen: the stages before the hidden one, as `run` draws them, then
the hidden stage's table with its one cell written ``?``.

What a long trace shows (docs/teaching.md): past :data:`LONG_TRACE` tokens, the tables
over tokens keep only the rows the cell needs (its query's row and, where the column is
a key, that key's row), as ``run --rows`` would, so the question fits a terminal of 24
lines. The hidden cell's own shade is dropped (a softmax's heat would tell its size) and
its row and column are always on screen.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from attntrace.forward.views.document import block_notes, header
from attntrace.forward.views.stage_block import stage_block
from attntrace.forward.words import one_line
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace
from attntrace.quiz.question import Question, stage_of
from attntrace.ui.elide import chosen
from attntrace.ui.grid import Grid
from attntrace.ui.numbers import stage_cell
from attntrace.ui.stage_table import StageTable, hidden_note
from attntrace.ui.titles import fitted_title
from attntrace.ui.view import View
from attntrace.ui.wrap import Wrapped

LONG_TRACE = 8  # tokens: past this, the tables keep only the rows the cell needs
HIDDEN = "?"


def shown_value(trace: Trace, question: Question, view: View) -> str:
    """The hidden cell as its table would write it (the digits an answer is judged by)."""
    value = float(stage_of(trace, question).data[question.row, question.col])
    return stage_cell(value, view.precision, masked_stage=question.stage == "masked")


def question_view(trace: Trace, question: Question, view: View) -> View:
    """The view the question is drawn with: its row pinned (kept wherever rows are cut)
    and, for a long trace, only the rows the cell needs."""
    pinned = replace(view, focus=question.row_label)
    if len(trace.tokens) <= LONG_TRACE:
        return pinned
    rows = [question.row_label]
    if question.col_label in unique_labels(trace.tokens):  # a key: its K (or V) row
        rows.append(question.col_label)
    return replace(pinned, rows=tuple(dict.fromkeys(rows)))


def before(trace: Trace, question: Question, view: View) -> Iterator[RenderableType]:
    """The header, the sentence, and every stage computed before the hidden one (the
    shared ones and the question's head's), each as `run` draws it."""
    yield header(trace)
    yield from block_notes(trace, view)
    hidden = stage_of(trace, question)
    for stage in trace.stages:
        if stage is hidden:
            return
        if stage.head is None or stage.head == question.head:
            yield Text("")
            yield stage_block(stage, trace, view)


def hidden_block(trace: Trace, question: Question, view: View) -> Group:
    """The hidden stage: the weight it multiplies by (Q, K, V), its title, its table with
    the cell written ``?``, and its caption."""
    stage = stage_of(trace, question)
    parts: list[RenderableType] = [Text("")]
    for learned in (trace.weight_for(stage), trace.bias_for(stage)):
        if learned is not None:
            parts += [fitted_title(learned, trace.model), StageTable(learned, view), Text("")]
    parts += [
        fitted_title(stage, trace.model),
        HiddenTable(stage, question, view),
        Wrapped(Text(one_line(stage, trace), style="italic dim")),
    ]
    return Group(*parts)


@dataclass(frozen=True)
class HiddenTable:
    """A stage's table (:class:`StageTable`, fitted to the width) with one cell hidden:
    written ``?``, unshaded, its row and column kept on screen."""

    stage: Stage
    question: Question
    view: View

    def _table(self) -> StageTable:
        return StageTable(self.stage, self.view)

    def layout(self, width: int) -> Grid:
        table = self._table()
        grid = table.layout(width)
        q = self.question
        if q.col not in grid.cols:  # the hidden key was cut: shown in place of the last
            cols = [*[j for j in grid.cols if j is not None][:-1], q.col]
            labels = unique_labels(self.stage.cols)
            wanted = tuple(labels[j] for j in cols)
            table = StageTable(self.stage, replace(self.view, cols=wanted))
            grid = table.layout(width)
        return _hidden(grid, q.row, q.col)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        grid = self.layout(options.max_width)
        yield from grid.segments()
        picked = (
            chosen(unique_labels(self.stage.rows), self.view.rows) is not None,
            chosen(unique_labels(self.stage.cols), self.view.cols) is not None,
        )
        note = hidden_note(self.stage, grid.rows, grid.cols, picked)
        if note:
            yield Wrapped(Text(note, style="dim"))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self.layout(options.max_width).width
        return Measurement(width, width)


def _hidden(grid: Grid, row: int, col: int) -> Grid:
    """``grid`` with cell (``row``, ``col``) written ``?`` and unshaded (the column
    keeps the width the number would take: the width tells nothing a reader could use)."""
    body = [list(cells) for cells in grid.body]
    shades = [list(styles) for styles in grid.shades]
    i, j = grid.rows.index(row), grid.cols.index(col)
    body[i][j + 1] = HIDDEN
    shades[i][j] = None
    return replace(grid, body=body, shades=shades)


def question_line(trace: Trace, question: Question) -> str:
    """``What is softmax[fish, fish]?``, with the head where the trace has several."""
    head = "" if question.head is None or trace.model.heads == 1 else f", head {question.head}"
    return f"What is {question.cell}{head}? (the ? in the table)"
