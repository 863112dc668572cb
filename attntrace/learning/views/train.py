"""`train`'s view: the header, the history as a table (piped), and what changed.

The live display (:mod:`attntrace.learning.views.train_live`) draws the steps as they come;
where there is none (stdout piped, a dumb terminal) the history is a table of step,
loss and the to-token's weight: every step up to 20, else 21 rows spread evenly
(step 0 and the last always among them), each line printed as its step is reached
(:class:`PipedTraining`). Both end with :func:`summary`: the loss and
the weight before → after, and each trained matrix's change as a table (a
:class:`attntrace.kernel.trace.Stage` drawn by StageTable, labelled d0, d1, ... like
the weights).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from rich.console import Console, RenderableType
from rich.text import Text

from attntrace.forward.views.document import model_facts
from attntrace.kernel.labels import dims
from attntrace.kernel.trace import Stage, Trace
from attntrace.learning.objective import Resolved
from attntrace.learning.train import Change, StepRecord, Training, Vector
from attntrace.ui.numbers import ARROW, format_number
from attntrace.ui.shown import labels, model_name, pad
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View
from attntrace.ui.wrap import Facts
from attntrace.visible import visible

HISTORY_ROWS = 20  # steps shown besides step 0, at most
HEAD_COLUMNS = 4  # heads with a weight column of their own; more: min, mean, max


def shown_steps(steps: int, rows: int = HISTORY_ROWS) -> list[int]:
    """The steps the table shows: 0 … ``steps`` when there are at most ``rows``, else 0
    and ``rows`` steps spread evenly up to the last (which is always among them)."""
    if steps <= rows:
        return list(range(steps + 1))
    return [0, *sorted({round(steps * k / rows) for k in range(1, rows + 1)})]


def header(trace: Trace, loss: Resolved, settings: str) -> list[RenderableType]:
    """The model line (as run's), the loss and the heads it reads, the settings."""
    cross = trace.context_tokens is not None
    lines: list[RenderableType] = [
        Facts(
            model_name(trace.model.name),
            model_facts(trace.model, len(trace.tokens), None, cross=cross),
        ),
        Text(f"{visible(loss.formula)} · {heads_read(trace, loss)}", style="dim"),
        Text(settings, style="dim"),
    ]
    lines += [Text(visible(note), style="dim") for note in loss.notes]
    return lines


def heads_read(trace: Trace, loss: Resolved) -> str:
    """Which heads the loss reads, in words."""
    if trace.model.heads == 1:
        return "one head"
    if len(loss.heads) == 1:
        return f"head {loss.heads[0]} alone"
    return f"summed over {len(loss.heads)} heads"


def settings_line(names: Sequence[str], steps: int, lr: float, init: str, seed: int) -> str:
    """``train WQ, WK · 100 steps · lr 0.5 · from random weights (seed 0)``."""
    start = "the model's own weights" if init == "model" else f"random weights (seed {seed})"
    return (
        f"train {', '.join(names)} · {steps} step{'' if steps == 1 else 's'} · "
        f"lr {lr:g} · from {start}"
    )


def cell_name(trace: Trace, loss: Resolved) -> str:
    """``it → animal``: the attend loss's cell, as the views name its weight."""
    assert loss.cell is not None
    row, col = loss.cell
    return f"{labels(trace.tokens)[row]} {ARROW} {key_labels(trace)[col]}"


def key_labels(trace: Trace) -> tuple[str, ...]:
    """The key tokens' labels: the sentence's, or the context's under cross-attention."""
    return labels(trace.tokens if trace.context_tokens is None else trace.context_tokens)


def weight_names(trace: Trace, loss: Resolved) -> list[str]:
    """The history's weight columns: the cell (one head), a column per head read (2-4),
    or min/mean/max over many; none under mse."""
    heads = loss.heads
    if loss.cell is None:
        return []
    if len(heads) == 1:
        return [cell_name(trace, loss)]
    if len(heads) <= HEAD_COLUMNS:
        return [f"head {h}" for h in heads]
    return ["min", "mean", "max"]


def weight_values(to_weights: Vector, heads: int) -> list[float]:
    """A step's numbers for :func:`weight_names`' columns."""
    if heads <= HEAD_COLUMNS:
        return [float(w) for w in to_weights]
    return [float(np.min(to_weights)), float(np.mean(to_weights)), float(np.max(to_weights))]


class HistoryTable:
    """The history table of ``steps`` steps, drawn a line at a time as the steps come
    (piped output shows each as it is reached): its widths are fixed by step 0 (a
    weight is at most 1, and the loss of step 0 is mostly the largest; a later loss
    wider than it pushes its line out by the difference)."""

    def __init__(
        self, trace: Trace, loss: Resolved, record: StepRecord, steps: int, view: View
    ) -> None:
        self.heads = len(loss.heads)
        self.precision = view.precision
        self.names = ["step", "loss", *weight_names(trace, loss)]
        weight = len(format_number(1.0, view.precision))
        self.widths = [
            max(len("step"), len(str(steps))),
            max(len("loss"), len(format_number(record.loss, view.precision))),
            *(max(len(name), weight) for name in self.names[2:]),
        ]
        self.note = (
            f"the weight of {cell_name(trace, loss)} in each head"
            if loss.cell is not None and self.heads > 1
            else None
        )

    def _line(self, cells: Sequence[str]) -> str:
        return "   ".join(pad(c, w, right=True) for c, w in zip(cells, self.widths, strict=True))

    def head(self) -> Text:
        return Text(self._line(self.names), style="bold", no_wrap=True, overflow="ignore")

    def row(self, record: StepRecord) -> Text:
        p = self.precision
        weights = weight_values(record.to_weights, self.heads)
        cells = [
            str(record.step),
            format_number(record.loss, p),
            *(format_number(v, p) for v in weights),
        ]
        return Text(self._line(cells), no_wrap=True, overflow="ignore")


class PipedTraining:
    """The view where there is no live display, as the run goes: :meth:`on_step` is
    :func:`attntrace.learning.train.train`'s callback; it prints the header at step 0 and
    each shown step's line as that step is reached (flushed, so a pipe sees it), and
    :meth:`finish` yields the rest (the table's note and the summary)."""

    def __init__(self, console: Console, steps: int, settings: str, view: View) -> None:
        self.console = console
        self.steps = steps
        self.settings = settings
        self.view = view
        self.shown = set(shown_steps(steps))
        self.table: HistoryTable | None = None

    def on_step(self, record: StepRecord, trace: Trace, loss: Resolved) -> None:
        if self.table is None:
            for line in header(trace, loss, self.settings):
                self.console.print(line)
            self.console.print()
            self.table = HistoryTable(trace, loss, record, self.steps, self.view)
            self.console.print(self.table.head())
        if record.step in self.shown:
            self.console.print(self.table.row(record))
            self.console.file.flush()

    def stop(self) -> None:
        """Nothing to end: the lines printed stay as they are."""

    def finish(self, training: Training) -> Iterator[RenderableType]:
        if self.table is not None and self.table.note is not None:
            yield Text(self.table.note, style="dim")
        yield from summary(training, self.view)


def before_after(training: Training, view: View) -> Text:
    """``loss 2.3734 → 0.0030 · it → animal 0.0932 → 0.9971``."""
    first, last = training.first, training.last
    p = view.precision
    text = Text()
    text.append("loss ", style="bold")
    text.append(f"{format_number(first.loss, p)} → {format_number(last.loss, p)}")
    if training.loss.cell is not None:
        text.append(" · ")
        text.append(cell_name(training.before, training.loss), style="bold")
        text.append(
            " "
            + "; ".join(
                f"{prefix}{format_number(a, p)} → {format_number(b, p)}"
                for prefix, a, b in zip(
                    _prefixes(training), first.to_weights, last.to_weights, strict=True
                )
            )
        )
    return text


def _prefixes(training: Training) -> list[str]:
    heads = training.loss.heads
    return [""] if len(heads) == 1 else [f"head {h} " for h in heads]


def change_stage(training: Training, change: Change) -> Stage:
    """A trained matrix's Δ as a stage: labelled d0, d1, ... as the weights are (a bias
    as one row named after it)."""
    delta = change.delta
    name = change.name
    rows: Sequence[str] = (name,) if name.startswith("b") else dims(delta.shape[0])
    cols = dims(delta.shape[1])
    return Stage(
        f"Δ{name}", f"Δ{name} = {name} after − {name} before", tuple(rows), tuple(cols), delta
    )


def summary(training: Training, view: View) -> Iterator[RenderableType]:
    """What changed: the loss and weight before → after, then each trained matrix's Δ."""
    yield Text()
    yield before_after(training, view)
    for change in training.changes:
        stage = change_stage(training, change)
        i, j = change.where
        yield Text()
        title = Text()
        title.append(stage.formula, style="bold")
        title.append(f"   [{stage.shape[0]} × {stage.shape[1]}]", style="dim")
        title.append(
            f" · largest |Δ| {format_number(change.largest, view.precision)} at "
            f"{stage.rows[i]}, {stage.cols[j]}",
            style="dim",
        )
        yield title
        yield StageTable(stage, view)
