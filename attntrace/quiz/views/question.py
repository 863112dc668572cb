"""The question on screen: the stages before the hidden one, as `run` draws them, then
the hidden stage's table with its one cell written ``?``.

What a long trace shows (docs/teaching.md): past :data:`LONG_TRACE` tokens, the tables
over tokens keep only the rows the cell needs (its query's row and, where the column is
a key, that key's row), as ``run --rows`` would, so the question fits a terminal of 24
lines. Whatever the token count, the operands the cell is computed from are shown whole,
and the secrets (the asked cell, its weight's row, later questions' cells) are written
``?`` and ``·``, unshaded, in columns whose width tells nothing (:mod:`.screen`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from attntrace.forward.views.document import block_notes, header
from attntrace.forward.views.equation import operands
from attntrace.forward.views.stage_block import stage_block
from attntrace.forward.words import one_line
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage, Trace
from attntrace.quiz.question import Question, stage_of
from attntrace.quiz.views.screen import Cells, Key, Need, QuizTable, key, needs, secrets
from attntrace.ui.numbers import stage_cell
from attntrace.ui.stage_table import StageTable
from attntrace.ui.titles import fitted_title
from attntrace.ui.view import View
from attntrace.ui.wrap import Wrapped

LONG_TRACE = 8  # tokens: past this, the tables keep only the rows the cell needs


def shown_value(trace: Trace, question: Question, view: View) -> str:
    """The hidden cell as its table would write it (the digits an answer is judged by)."""
    value = float(stage_of(trace, question).data[question.row, question.col])
    return stage_cell(value, view.precision, masked_stage=question.stage == "masked")


def question_view(trace: Trace, question: Question, view: View) -> View:
    """The view the question is drawn with: its row pinned (kept wherever rows are cut)
    and, for a long trace, only the rows the cell needs."""
    pinned = replace(
        view,
        focus=question.row_label,
        chosen_note="the rows the question needs",
        more_note="the rest do not fit the width",
    )
    if len(trace.tokens) <= LONG_TRACE:
        return pinned
    rows = [question.row_label]
    if question.col_label in unique_labels(trace.tokens):  # a key: its K (or V) row
        rows.append(question.col_label)
    return replace(pinned, rows=tuple(dict.fromkeys(rows)))


def before(
    trace: Trace, question: Question, view: View, later: Sequence[Question] = ()
) -> Iterator[RenderableType]:
    """The header, the sentence, and every stage computed before the hidden one (the
    shared ones and the question's head's), each as `run` draws it, except where the
    screen shows an operand whole or keeps a cell secret (:mod:`.screen`)."""
    yield header(trace)
    yield from block_notes(trace, view)
    hidden = stage_of(trace, question)
    needed = needs(trace, question)
    kept = secrets(trace, question, later)
    for stage in trace.stages:
        if stage is hidden:
            return
        if stage.head is None or stage.head == question.head:
            yield Text("")
            stacked = _block(stage, trace, view, needed, kept)
            if not _plain(stage, trace, {}, kept):  # a secret in it, or beside it
                yield stacked
            elif _plain(stage, trace, needed, {}):  # no operand of the cell
                yield stage_block(stage, trace, view)
            else:  # an operand: as run draws it, where that shows it whole
                long = len(trace.tokens) > LONG_TRACE
                yield Whole(stage, trace, view, stage_block(stage, trace, view), stacked, long)


@dataclass(frozen=True)
class Whole:
    """An operand of the cell: drawn as run draws it where every table of its block
    shows whole at the width (a short trace, narrow tables), else ``stacked`` (its
    needed rows and columns whole, in parts)."""

    stage: Stage
    trace: Trace
    view: View
    plain: RenderableType
    stacked: RenderableType
    long: bool

    def _chosen(self, width: int) -> RenderableType:
        tables = [self.stage, self.trace.weight_for(self.stage), self.trace.bias_for(self.stage)]
        fits = not self.long and all(
            t.data.shape[0] <= self.view.max_rows
            and StageTable(t, self.view).natural_width() <= width
            for t in tables
            if t is not None
        )
        return self.plain if fits else self.stacked

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._chosen(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._chosen(options.max_width))


def _plain(stage: Stage, trace: Trace, needed: dict[Key, Need], kept: dict[Key, Cells]) -> bool:
    """Whether ``stage`` is drawn as run draws it: neither it nor the operands its
    equation shows beside it is an operand shown whole or holds a secret."""
    shown = [stage, *(operands(stage, trace) or ())]
    for weight in (trace.weight_for(stage), trace.bias_for(stage)):
        if weight is not None:
            shown.append(weight)
    return not any(key(s) in needed or key(s) in kept for s in shown)


def _block(
    stage: Stage,
    trace: Trace,
    view: View,
    needed: dict[Key, Need],
    kept: dict[Key, Cells],
    asked: tuple[int, int] | None = None,
) -> Group:
    """A stage stacked: the weight it multiplies by (Q, K, V), its title, its table
    with its secrets and needs, and its caption."""
    long = len(trace.tokens) > LONG_TRACE

    def table(of: Stage, at: tuple[int, int] | None = None) -> QuizTable:
        return QuizTable(of, view, at, kept.get(key(of), frozenset()), needed.get(key(of)), long)

    parts: list[RenderableType] = []
    for learned in (trace.weight_for(stage), trace.bias_for(stage)):
        if learned is not None:
            parts += [fitted_title(learned, trace.model), table(learned), Text("")]
    parts += [
        fitted_title(stage, trace.model),
        table(stage, asked),
        Wrapped(Text(one_line(stage, trace), style="italic dim")),
    ]
    return Group(*parts)


def hidden_block(
    trace: Trace, question: Question, view: View, later: Sequence[Question] = ()
) -> Group:
    """The hidden stage: the weight it multiplies by (Q, K, V), its title, its table with
    the cell written ``?`` (and its secrets ``·``), and its caption."""
    stage = stage_of(trace, question)
    kept = secrets(trace, question, later)
    block = _block(stage, trace, view, needs(trace, question), kept, (question.row, question.col))
    return Group(Text(""), block)


def question_line(trace: Trace, question: Question) -> str:
    """``What is softmax[fish, fish]?``, with the head where the trace has several."""
    head = "" if question.head is None or trace.model.heads == 1 else f", head {question.head}"
    return f"What is {question.cell}{head}? (the ? in the table)"
