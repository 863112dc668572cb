"""Stage -> Rich table: token-labelled rows, a title with formula and shape, a caption.

A matrix wider or taller than the screen is summarized the way numpy prints (first and
last rows/columns around an ellipsis); the column budget is measured at render time,
so the same trace reads at 40, 80 or 200 columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attntrace.explain import one_line
from attntrace.render.heatmap import weight_style
from attntrace.render.numbers import (
    ELLIPSIS,
    columns_that_fit,
    format_number,
    number_width,
    unique_labels,
    visible_indices,
)
from attntrace.trace import Stage, Trace

DEFAULT_PRECISION = 4
DEFAULT_MAX_ROWS = 20


@dataclass(frozen=True)
class View:
    """Display choices that never change a number: digits, rows and columns shown.

    ``max_cols`` None fits the columns to the width; a number shows that many (first
    and last halves), wider than the terminal if it must be.
    """

    precision: int = DEFAULT_PRECISION
    max_rows: int = DEFAULT_MAX_ROWS
    max_cols: int | None = None


DEFAULT_VIEW = View()


def title(stage: Stage) -> Text:
    """``Q = X · WQ   [3 × 2]``: the stage's formula and its shape."""
    rows, cols = stage.shape
    head = f"  (head {stage.head})" if stage.head is not None and stage.head > 0 else ""
    text = Text()
    text.append(stage.formula, style="bold")
    text.append(f"   [{rows} × {cols}]{head}", style="cyan")
    return text


@dataclass(frozen=True)
class StageTable:
    """A stage's matrix as a table that fits the width it is given."""

    stage: Stage
    view: View = DEFAULT_VIEW

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table, rows, cols = self.layout(options.max_width)
        if self.view.max_cols is not None:  # asked for: as wide as it needs to be
            width = console.measure(table, options=options.update(max_width=10**6)).maximum
            options = options.update(max_width=max(width, options.max_width))
        yield from console.render(table, options)
        note = hidden_note(self.stage, rows, cols)
        if note:
            yield from console.render(Text(note, style="dim"), options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the table it draws at this width (so Columns can place it)."""
        return Measurement.get(console, options, self.table(options.max_width))

    def table(self, width: int) -> Table:
        """The table alone, summarized to fit ``width``."""
        return self.layout(width)[0]

    def layout(self, width: int) -> tuple[Table, list[int | None], list[int | None]]:
        """The table and the row and column indices it shows (None for an ellipsis)."""
        stage, precision = self.stage, self.view.precision
        data = stage.data
        row_labels = unique_labels(stage.rows)
        col_labels = unique_labels(stage.cols)
        cell = number_width(data, precision)
        label_width = max(len(label) for label in row_labels)
        col_widths = [max(cell, len(label)) for label in col_labels]

        # Each column costs its width + 3 (rule and padding); the label column has no rule.
        budget = width - label_width
        fits = columns_that_fit(col_widths, budget)
        if self.view.max_cols is not None:
            fits = self.view.max_cols
        elif fits < len(col_labels):
            # Leave room for the ellipsis column (1 + 3), then keep first and last columns.
            fits = max(1, columns_that_fit(sorted(col_widths, reverse=True), budget - 4))

        cols = visible_indices(len(col_labels), fits)
        rows = visible_indices(len(row_labels), self.view.max_rows)

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
        # Where even one column cannot fit, digits fold onto a second line: a number
        # cut short with an ellipsis would read as a different number.
        table.add_column("", style="bold", overflow="fold")
        for j in cols:
            # Text, not str: a token such as "[b]" is a label, never Rich markup.
            header = Text(ELLIPSIS if j is None else col_labels[j])
            table.add_column(header, justify="right", overflow="fold")

        shade = stage.name == "softmax"
        for i in rows:
            if i is None:
                table.add_row(ELLIPSIS, *([ELLIPSIS] * len(cols)))
                continue
            cells: list[Text | str] = [Text(row_labels[i])]

            for j in cols:
                if j is None:
                    cells.append(ELLIPSIS)
                    continue
                value = float(data[i, j])
                text = format_number(value, precision)
                cells.append(Text(text, style=weight_style(value)) if shade else text)
            table.add_row(*cells)
        return table, rows, cols


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


def stage_block(stage: Stage, trace: Trace, view: View = DEFAULT_VIEW) -> Group:
    """Title, the stage as an equation of its operands (or its table), and its meaning.

    Where the operands fit beside the result (``X · WQ = Q``), the stage reads as the
    textbook writes it; otherwise its table follows the weight it used, if any.
    """
    from attntrace.render.equation import Equation, operands

    caption = Text(one_line(stage, trace), style="italic dim")
    parts: list[RenderableType] = []
    weight = trace.weight_for(stage)
    if weight is not None:
        parts += [title(weight), StageTable(weight, view), Text("")]
    stacked = Group(*parts, title(stage), StageTable(stage, view))
    pair = operands(stage, trace)
    if pair is None:
        return Group(stacked, caption)
    equation = Equation(title(stage), pair[0], pair[1], stage, view, fallback=stacked)
    return Group(equation, caption)


def header(trace: Trace) -> Text:
    """The trace's first line: model name, sentence length and sizes."""
    model = trace.model
    count = len(trace.tokens)
    text = Text()
    text.append(model.name, style="bold magenta")
    text.append(
        f" · {count} token{'' if count == 1 else 's'} · d_model {model.d_model}"
        f" · d_k {model.d_k} · d_v {model.d_v}",
        style="dim",
    )
    return text


def render_trace(trace: Trace, view: View = DEFAULT_VIEW) -> Iterator[Group | Text]:
    """Every stage of ``trace``, in order, each a titled table, for ``console.print``."""
    yield header(trace)
    yield Text(" ".join(trace.tokens))
    for stage in trace:
        yield Text("")
        yield stage_block(stage, trace, view)


def trace_text(trace: Trace, width: int = 80) -> str:
    """The rendered trace as plain text, for ``print(trace)``."""
    console = Console(file=StringIO(), width=width, color_system=None, highlight=False)
    for renderable in render_trace(trace):
        console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def trace_mimebundle(trace: Trace) -> dict[str, str]:
    """Plain text and HTML of the rendered trace, for Jupyter's rich display."""
    console = Console(record=True, file=StringIO(), width=100, color_system="truecolor")
    for renderable in render_trace(trace):
        console.print(renderable)
    return {
        "text/plain": console.export_text(clear=False),
        "text/html": console.export_html(inline_styles=True),
    }
