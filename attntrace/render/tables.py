"""Stage -> Rich table: token-labelled rows, a title with formula and shape, a caption.

A matrix wider or taller than the screen is summarized the way numpy prints (first and
last rows/columns around an ellipsis); the column budget is measured at render time,
so the same trace reads at 40, 80 or 200 columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from io import StringIO

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from attntrace.core.labels import unique_labels
from attntrace.core.trace import ModelInfo, Stage, Trace
from attntrace.render.explain import one_line
from attntrace.render.fitted import Fitted
from attntrace.render.heatmap import weight_style
from attntrace.render.numbers import (
    column_widths,
    columns_that_fit,
    format_number,
    visible_indices,
)
from attntrace.render.shown import pad, shown_trace
from attntrace.render.wrap import Wrapped
from attntrace.visible import ELLIPSIS

DEFAULT_PRECISION = 4
DEFAULT_MAX_ROWS = 20
DEFAULT_MAX_HEADS = 4
_GAP = 3  # spaces between columns


@dataclass(frozen=True)
class View:
    """Display choices that never change a number: digits, rows, columns and heads shown.

    ``max_cols`` None fits the columns to the width; a number shows that many (first
    and last halves), wider than the terminal if it must be. ``max_heads`` summarizes a
    many-headed trace's tables the same way (the first and last heads, every shared
    stage); None shows every head, as ``print(trace)`` does. The command line's default
    is ``DEFAULT_MAX_HEADS``.
    """

    precision: int = DEFAULT_PRECISION
    max_rows: int = DEFAULT_MAX_ROWS
    max_cols: int | None = None
    max_heads: int | None = None


DEFAULT_VIEW = View()


def title(stage: Stage, model: ModelInfo | None = None) -> Text:
    """``Q = X · WQ   [3 × 2]  head 1 · K/V head 0``: formula, shape, and whose it is.

    The head is named wherever the model has more than one, and the K/V head wherever
    query heads share them (GQA, MQA), so a reader knows which slice is on screen.
    """
    rows, cols = stage.shape
    text = Text()
    text.append(stage.formula, style="bold")
    text.append(f"   [{rows} × {cols}]", style="cyan")
    text.append(head_label(stage, model), style="bold yellow")
    return text


def fitted_title(stage: Stage, model: ModelInfo | None = None) -> Fitted:
    """:func:`title` on one line where it fits, else the head on a line of its own: a
    narrow terminal would otherwise leave ``K/V head`` at a line's end and ``0`` below."""
    whose = head_label(stage, model).strip()
    narrow = title(stage)  # no model: no head
    narrow.append("\n" + whose, style="bold yellow")
    return Fitted((title(stage, model), narrow) if whose else (title(stage, model),))


def head_label(stage: Stage, model: ModelInfo | None) -> str:
    """``  head 1 · K/V head 0``, or '' for a one-head model and shared stages."""
    if model is None or (model.heads == 1 and model.kv_heads == 1):
        return ""
    parts = []
    if stage.head is not None:
        parts.append(f"head {stage.head}")
    if stage.kv_head is not None and (model.group > 1 or stage.head is None):
        parts.append(f"K/V head {stage.kv_head}")
    return "  " + " · ".join(parts) if parts else ""


@dataclass(frozen=True)
class Grid:
    """A laid-out table: which rows and columns show, and their text, cell by cell.

    Drawn as plain lines (label column, then right-aligned numbers three spaces apart,
    a rule under the header) rather than through Rich's Table: the layout is decided
    here anyway, and drawing lines directly keeps a 200-row table fast.
    """

    rows: list[int | None]
    cols: list[int | None]
    header: list[str]
    body: list[list[str]]  # per shown row: the label, then one cell per shown column
    shades: list[list[Style | None]]  # heatmap style per cell (softmax), else None
    widths: list[int]  # the label column first

    @property
    def width(self) -> int:
        return self.widths[0] + sum(w + _GAP for w in self.widths[1:])

    def text(self) -> Text:
        """The lines of :meth:`segments` as one Text, never wrapped or cut: for placing
        tables side by side (equations), where a Text splits into lines."""
        text = Text.assemble(
            *((segment.text, segment.style or "") for segment in self.segments()),
            no_wrap=True,
            overflow="ignore",
        )
        text.right_crop(1)  # the newline that ends the last row
        return text

    def segments(self) -> Iterator[Segment]:
        """The same lines as :meth:`text`, as Rich segments: no wrapping or splitting to
        do, which makes drawing a model's hundred tables several times faster.

        Unshaded cells are joined into one segment per line: Rich pays per segment, and
        a GPT-2 layer's tables are otherwise some 50,000 of them.
        """
        label_width, widths = self.widths[0], self.widths[1:]
        gap = " " * _GAP
        yield Segment(" " * label_width)
        for label, width in zip(self.header, widths, strict=True):
            yield Segment(gap)
            yield Segment(pad(label, width, right=True), _BOLD)
        yield Segment.line()
        yield Segment("─" * self.width)
        yield Segment.line()
        for cells, shades in zip(self.body, self.shades, strict=True):
            yield Segment(pad(cells[0], label_width), _BOLD)
            if not any(shades):
                yield Segment(
                    "".join(gap + cell.rjust(width) for cell, width in zip(cells[1:], widths,
                                                                            strict=True))
                )  # fmt: skip
            else:
                for cell, width, shade in zip(cells[1:], widths, shades, strict=True):
                    yield Segment(gap)
                    yield Segment(cell.rjust(width), shade)
            yield Segment.line()


_BOLD = Style(bold=True)


@lru_cache(maxsize=512)
def cached_column_widths(stage: Stage, precision: int, columns: tuple[int, ...]) -> list[int]:
    """column_widths of the given columns, per stage (stages are immutable and hashed by
    identity): a stage is laid out several times (measured, fitted, drawn), its widths
    computed once."""
    every = len(columns) == stage.shape[1]  # then columns is 0..n-1: no copy needed
    return column_widths(stage.data if every else stage.data[:, list(columns)], precision)


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
        cells = cached_column_widths(stage, self.view.precision, tuple(range(len(labels))))
        return max(cell_len(label) for label in unique_labels(stage.rows)) + sum(
            max(cell, cell_len(label)) + _GAP for cell, label in zip(cells, labels, strict=True)
        )

    def table(self, width: int) -> Text:
        """The table alone (no note), summarized to fit ``width``."""
        return self.layout(width).text()

    def layout(self, width: int) -> Grid:
        """Choose the rows and columns that fit ``width`` and format their cells."""
        stage, precision = self.stage, self.view.precision
        row_labels = unique_labels(stage.rows)
        col_labels = unique_labels(stage.cols)
        label_width = max(cell_len(label) for label in row_labels)
        n_cols = len(col_labels)
        # Each column costs its width + 3 (the gap), so at most width // 4 can ever show,
        # from the two ends: only those columns are measured (a 768-wide X: 20 of them).
        reach = max(1, width // 4)
        if self.view.max_cols is not None or n_cols <= 2 * reach:
            edges = tuple(range(n_cols))
        else:
            edges = (*range(reach), *range(n_cols - reach, n_cols))
        cells = cached_column_widths(stage, precision, edges)
        pairs = zip(edges, cells, strict=True)
        widths = {j: max(cell, cell_len(col_labels[j])) for j, cell in pairs}

        budget = width - label_width  # the label column has no gap before it
        left_to_right = [widths[j] for j in edges[: min(n_cols, reach + 1)]]
        fits = columns_that_fit(left_to_right, budget) if len(edges) == n_cols else reach
        if self.view.max_cols is not None:
            fits = self.view.max_cols
        elif fits < n_cols:
            # Leave room for the ellipsis column (1 + 3), then keep first and last columns.
            fits = max(1, columns_that_fit(sorted(widths.values(), reverse=True), budget - 4))
        rows = visible_indices(len(row_labels), self.view.max_rows)
        grid = self._grid(rows, visible_indices(len(col_labels), fits), row_labels, col_labels)
        # The budget is an estimate from each column's extremes; where the drawn table
        # is still too wide, drop a column until it fits (or one is left).
        while self.view.max_cols is None and grid.width > width and fits > 1:
            fits -= 1
            grid = self._grid(rows, visible_indices(len(col_labels), fits), row_labels,
                              col_labels)  # fmt: skip
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
        body: list[list[str]] = []
        shades: list[list[Style | None]] = []
        for i in rows:
            if i is None:
                body.append([ELLIPSIS] * (len(cols) + 1))
                shades.append([None] * len(cols))
                continue
            values = [None if j is None else float(data[i, j]) for j in cols]
            body.append(
                [row_labels[i]]
                + [ELLIPSIS if v is None else format_number(v, precision) for v in values]
            )
            shades.append([weight_style(v) if shade and v is not None else None for v in values])
        header = [ELLIPSIS if j is None else col_labels[j] for j in cols]
        # display cells, not characters: 猫 takes two (the numbers are ASCII, one each)
        widths = [max(cell_len(r[0]) for r in body)] + [
            max(cell_len(header[c]), *(len(r[c + 1]) for r in body)) for c in range(len(cols))
        ]
        return Grid(rows, cols, header, body, shades, widths)


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
    caption = Wrapped(Text(one_line(stage, trace), style="italic dim"))
    return Group(stage_body(stage, trace, view), caption)


def stage_body(stage: Stage, trace: Trace, view: View = DEFAULT_VIEW) -> RenderableType:
    """The stage's title and table: as an equation of its operands where that fits,
    else after the weight it was computed with (if any)."""
    from attntrace.render.equation import Equation, operands

    parts: list[RenderableType] = []
    weight = trace.weight_for(stage)
    if weight is not None:
        parts += [fitted_title(weight, trace.model), StageTable(weight, view), Text("")]
    bias = trace.bias_for(stage)
    if bias is not None:  # one row, added to every row of the product
        parts += [fitted_title(bias, trace.model), StageTable(bias, view), Text("")]
    stacked = Group(*parts, fitted_title(stage, trace.model), StageTable(stage, view))
    pair = operands(stage, trace)
    if pair is None:
        return stacked
    return Equation(fitted_title(stage, trace.model), pair[0], pair[1], stage, view,
                    fallback=stacked)  # fmt: skip


@dataclass(frozen=True)
class Facts:
    """``name · fact · fact``, wrapped between facts, never inside one (``3 K/V heads``
    split over two lines reads as nonsense)."""

    name: str
    facts: tuple[str, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = Text(self.name, style="bold magenta")
        for fact in self.facts:
            piece = " · " + fact
            if line.cell_len + cell_len(piece) > options.max_width and line.plain.strip():
                yield line
                line = Text(fact, style="dim")
            else:
                line.append(piece, style="dim")
        yield line


def header(trace: Trace) -> Facts:
    """The trace's first line: model name, sentence length, sizes and what kind of block."""
    model = trace.model
    count = len(trace.tokens)
    facts = [f"{count} token{'' if count == 1 else 's'}", f"d_model {model.d_model}"]
    if trace.is_cut:
        shown = ", ".join(str(h) for h in trace.traced_heads)
        facts.append(f"head{'s' if len(trace.traced_heads) > 1 else ''} {shown} of "
                     f"{model.heads}")  # fmt: skip
    elif model.heads > 1:
        facts.append(f"{model.heads} heads")
    facts += [f"d_k {model.d_k}", f"d_v {model.d_v}"]
    if model.kv_heads != model.heads:
        kind = "MQA" if model.kv_heads == 1 else "GQA"
        facts.append(f"{model.kv_heads} K/V head{'s' if model.kv_heads > 1 else ''} ({kind})")
    if model.causal:
        facts.append("causal")
    if model.positions != "none":
        facts.append(f"{model.positions} positions")
    if trace.context_tokens is not None:
        facts.append("cross-attention")
    return Facts(model.name, tuple(facts))


def block_notes(trace: Trace, view: View = DEFAULT_VIEW) -> list[Text]:
    """Lines under the header that say how the block is wired: the sentence (and the
    context), K/V sharing."""
    model, notes = trace.model, []
    if trace.context_tokens is not None:
        notes.append(Text.assemble(("queries from: ", "dim"), sentence_line(trace.tokens, view)))
        notes.append(Text.assemble(("keys, values from the context: ", "dim"),
                                   sentence_line(trace.context_tokens, view)))  # fmt: skip
    else:
        notes.append(Text(sentence_line(trace.tokens, view)))
    if model.kv_heads != model.heads:
        groups = "; ".join(
            f"K/V head {g} serves query heads "
            + ", ".join(str(h) for h in range(g * model.group, (g + 1) * model.group))
            for g in range(model.kv_heads)
        )
        notes.append(Text(
            f"{groups}. K and V (and a KV cache of them) are {model.group}× smaller than "
            f"with {model.heads} full heads.", style="dim",
        ))  # fmt: skip
    return notes


SENTENCE_LIMIT = 64  # tokens: a longer sentence is summarized like a table's rows


def sentence_line(tokens: tuple[str, ...], view: View = DEFAULT_VIEW) -> str:
    """The tokens, space-separated: whole up to 64 (or with --max-rows 0), else the
    first and last 16 around ``… (512 tokens)``; the X table lists every row anyway."""
    if len(tokens) <= max(SENTENCE_LIMIT, view.max_rows):
        return " ".join(tokens)
    shown = visible_indices(len(tokens), SENTENCE_LIMIT // 2)
    return " ".join(f"{ELLIPSIS} ({len(tokens)} tokens)" if i is None else tokens[i]
                    for i in shown)  # fmt: skip


def shown_heads(trace: Trace, view: View = DEFAULT_VIEW) -> list[int | None]:
    """The traced heads whose tables show, None where the hidden ones go: all of them up
    to ``view.max_heads``, else the first and last halves (as rows are summarized)."""
    heads = trace.traced_heads
    if view.max_heads is None:
        return list(heads)
    return [None if i is None else heads[i] for i in visible_indices(len(heads), view.max_heads)]


def hidden_heads_note(trace: Trace, shown: list[int | None]) -> Text:
    """``… heads 2 to 9 not shown (4 of 12 heads; --max-heads N, 0 for all)``.

    Of a trace cut to some heads (``--json --heads 0,3,5``) only traced heads count.
    """
    heads = trace.traced_heads
    hidden = [h for h in heads if h not in shown]
    kept = len(heads) - len(hidden)
    return Text(f"{ELLIPSIS} {_heads_named(hidden)} not shown ({kept} of {len(heads)} heads; "
                "--max-heads N, 0 for all)", style="dim")  # fmt: skip


def _heads_named(heads: list[int]) -> str:
    """``head 3``, ``heads 3 and 4``, ``heads 2 to 9``, ``heads 3, 5 and 8``."""
    if len(heads) == 1:
        return f"head {heads[0]}"
    if len(heads) > 2 and heads[-1] - heads[0] == len(heads) - 1:  # a run, none missing
        return f"heads {heads[0]} to {heads[-1]}"
    return f"heads {', '.join(map(str, heads[:-1]))} and {heads[-1]}"


def render_trace(trace: Trace, view: View = DEFAULT_VIEW) -> Iterator[RenderableType]:
    """Every stage of ``trace``, in order, each a titled table, for ``console.print``;
    beyond ``view.max_heads`` heads, the middle heads' stages give way to one note.

    ``trace`` is drawn as it is: give it as shown (:func:`shown_trace`) where its text
    came from a file."""
    yield header(trace)
    yield from block_notes(trace, view)
    shown = shown_heads(trace, view)
    noted = False
    for stage in trace:
        if stage.head is not None and stage.head not in shown:
            if not noted:
                yield Text("")
                yield hidden_heads_note(trace, shown)
                noted = True
            continue
        yield Text("")
        yield stage_block(stage, trace, view)


def shown_renderables(trace: Trace) -> Iterator[RenderableType]:
    """The tables of ``trace`` as shown (its text made visible), for ``rich.print``."""
    yield from render_trace(shown_trace(trace))


def trace_text(trace: Trace, width: int = 80) -> str:
    """The rendered trace as plain text, for ``print(trace)``."""
    console = Console(file=StringIO(), width=width, color_system=None, highlight=False)
    for renderable in render_trace(shown_trace(trace)):
        console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def trace_mimebundle(trace: Trace) -> dict[str, str]:
    """Plain text and HTML of the rendered trace, for Jupyter's rich display."""
    console = Console(record=True, file=StringIO(), width=100, color_system="truecolor")
    for renderable in render_trace(shown_trace(trace)):
        console.print(renderable)
    return {
        "text/plain": console.export_text(clear=False),
        "text/html": console.export_html(inline_styles=True),
    }
