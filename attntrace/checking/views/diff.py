"""``attntrace diff``'s view: one line per stage, then where the first change is.

    * Q          changed   max |Δ| 2.97     1 of 44 cells

Each stage says ``same`` or ``changed`` (with its largest |Δ| and how many cells
changed), or that only one trace holds it. Then the first changed stage as a table of
B's values with the changed cells marked, and, where softmax changed, a heatmap of its
Δ = B − A. A changed cell is marked with ``*`` as well as shaded, so the view reads the
same without colour (``NO_COLOR=1``, a pipe). Every label came from a file or an
argument: it is shown through :mod:`attntrace.ui.shown`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby, pairwise

import numpy as np
import numpy.typing as npt
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.style import Style
from rich.text import Text

from attntrace.checking.diff import (
    ATOL,
    CHANGED,
    ONLY_IN_A,
    ONLY_IN_B,
    RTOL,
    SAME,
    Cell,
    StageDiff,
    TraceDiff,
    cell_changes,
)
from attntrace.forward.views.document import header
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.ui.heatmap import delta_style
from attntrace.ui.numbers import cell_text, format_number, short_float, significant
from attntrace.ui.shown import label, labels, pad, quoted, shortened, shown_trace
from attntrace.ui.titles import head_label, numbered
from attntrace.ui.view import DEFAULT_MAX_ROWS, DEFAULT_PRECISION
from attntrace.ui.wrap import Wrapped
from attntrace.visible import ELLIPSIS, visible

MARK = "*"  # beside a changed cell and a changed stage: readable without colour
GAP = 2  # spaces between two columns (the mark of a changed cell makes a third)
HEADER_LIMIT = 12  # cells of a column's label: a 40-character token would make it wide
SIDE_LIMIT = 200  # characters of a side's name (a file name, the --set edits)
_CHANGED_VALUE = Style(bold=True, color="yellow")
_BOLD = Style(bold=True)
TOLERANCE = (
    f"|Δ| ≤ {short_float(ATOL)}·max(1, the stage's max |value|) + {short_float(RTOL)}·|value|"
)


def diff_view(
    diff: TraceDiff,
    sides: tuple[str, str] = ("A", "B"),
    *,
    precision: int = DEFAULT_PRECISION,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> Group:
    """The whole view: what A and B are, each stage's line, the first change's tables.

    ``sides`` names A and B (file names, or what the model was traced with); they are
    shown through :func:`attntrace.visible.visible`."""
    parts: list[RenderableType] = list(_heading(diff, sides))
    parts.append(Text(""))
    many_heads = _many_heads(diff)
    width = max(cell_len(label(s.name)) for s in (*diff.stages, *diff.weights))
    parts += [group_line(group, width, many_heads) for group in grouped(diff.stages)]
    parts += list(_weight_lines(diff, width, many_heads))
    parts.append(Text(""))
    first = diff.first_changed
    if not diff.changed:
        parts.append(Wrapped(Text(f"nothing changed: each {TOLERANCE}")))
        return Group(*parts)
    if first is None:
        parts.append(Wrapped(Text("every stage is the same; what differs is said above")))
        return Group(*parts)
    parts.append(Wrapped(first_change_line(first, precision, many_heads)))
    softmax = next((s for s in diff.stages if s.name == "softmax" and s.largest is not None), None)
    if first.largest is not None and first is not softmax:
        parts += [
            Text(""),
            _table_title(first, diff, f"B's values, {MARK} where they changed"),
            MarkedTable(first, precision=precision, max_rows=max_rows),
        ]
    if softmax is not None:
        parts += [
            Text(""),
            _table_title(softmax, diff, f"Δ = B − A, {MARK} where it changed"),
            MarkedTable(softmax, precision=precision, max_rows=max_rows, delta=True),
        ]
    return Group(*parts)


def _heading(diff: TraceDiff, sides: tuple[str, str]) -> Iterator[RenderableType]:
    a, b = (visible(side, SIDE_LIMIT) for side in sides)
    yield Wrapped(Text.assemble(("A: ", "bold"), a))
    yield Wrapped(Text.assemble(("B: ", "bold"), b))
    yield header(shown_trace(diff.b))
    for change in diff.model_changes:
        yield Text(
            f"the model's {change.field} differs: {_setting(change.a)} in A, "
            f"{_setting(change.b)} in B",
            style="yellow",
        )
    if diff.a.model.name != diff.b.model.name:
        yield Text(
            f"A's model is named {quoted(diff.a.model.name)}, B's {quoted(diff.b.model.name)}",
            style="dim",
        )
    inputs = (
        ("tokens", diff.a.tokens, diff.b.tokens),
        ("context", diff.a.context_tokens, diff.b.context_tokens),
    )
    for what, left, right in inputs:
        if left != right:
            yield Wrapped(
                Text(f"the {what} differ: A {_tokens(left)}; B {_tokens(right)}", style="yellow")
            )


def _setting(value: object) -> str:
    """A model field's value as a person writes it: true, 4, rope, none."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    return visible(str(value), SIDE_LIMIT)


def _tokens(tokens: tuple[str, ...] | None) -> str:
    if tokens is None:
        return "has none"
    shown = labels(tokens)
    words = " ".join(shown if len(shown) <= 16 else (*shown[:8], ELLIPSIS, *shown[-8:]))
    return f"has {len(tokens)}: {words}"


def _many_heads(diff: TraceDiff) -> bool:
    """Whether a stage is named with its head: only where some trace has several."""
    return max(diff.a.model.heads, diff.b.model.heads) > 1


def grouped(stages: tuple[StageDiff, ...]) -> list[list[StageDiff]]:
    """The stages (or learned matrices) by name, each name's heads together: they come
    in computation order, every head of a stage one after another."""
    return [list(group) for _, group in groupby(stages, key=lambda s: s.name)]


def whose(stage: StageDiff) -> str:
    """``head 1``, ``K/V head 0`` (a learned matrix of one K/V head), or ''."""
    if stage.head is not None:
        return f"head {stage.head}"
    if stage.kv_head is not None:
        return f"K/V head {stage.kv_head}"
    return ""


def _whose_all(stages: list[StageDiff]) -> str:
    """``head 1``, ``heads 0, 1``, ``K/V heads 0 to 3``: the heads of ``stages``."""
    heads = [s.head for s in stages if s.head is not None]
    if heads:
        return numbered("head", heads)
    kv_heads = [s.kv_head for s in stages if s.kv_head is not None]
    return numbered("K/V head", kv_heads) if kv_heads else ""


def group_line(group: list[StageDiff], width: int, many_heads: bool = False) -> Text:
    """``* Q        changed  in heads 0, 1 of 4  max |Δ| 2.97  3 of 176 cells``: a
    stage, every head of it, on one line; what else differs on the lines below it."""
    changed = [s for s in group if s.status != SAME]
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{MARK if changed else ' '} ", style="bold yellow" if changed else "")
    line.append(pad(label(group[0].name), width) + "  ", style="bold")
    compared = [s for s in group if s.changed is not None]
    largest = max((s.max_abs_delta or 0.0 for s in compared), default=0.0)
    if not changed:
        line.append("same", style="green")
        if largest > 0:
            line.append(f"  max |Δ| {delta_size(largest)}", style="dim")
        return line
    statuses = {s.status for s in changed}
    alone = len(statuses) == 1 and statuses != {CHANGED}  # every change: in one trace only
    word = {ONLY_IN_A: "only in A", ONLY_IN_B: "only in B"}.get(changed[0].status, CHANGED)
    line.append(word if alone else CHANGED, style="yellow")
    if many_heads and len(group) > 1 and len(changed) < len(group):
        line.append(f"  in {_whose_all(changed)} of {len(group)}")
    if any(s.changed_cells for s in compared):
        count = sum(s.changed_cells or 0 for s in compared)
        line.append(f"  max |Δ| {delta_size(largest)}  ")
        line.append(f"{count} of {sum(s.cells for s in compared)} cells", style="dim")
    notes = []
    for status, side in ((ONLY_IN_A, "A"), (ONLY_IN_B, "B")):
        held = [s for s in changed if s.status == status]
        if held and not alone:
            notes.append(f"{_whose_all(held)}: only in {side}")
    for stage in changed:
        who = f"{whose(stage)}: " if many_heads and whose(stage) else ""
        notes += [who + note for note in stage.notes]
    for note in notes:
        line.append(f"\n    {visible(note)}", style="dim")
    return line


def delta_size(value: float) -> str:
    """A |Δ| in three significant digits: ``2.97``, ``0.189``, ``2.22e-16``, ``∞``."""
    return significant(value, 3)


def _weight_lines(diff: TraceDiff, width: int, many_heads: bool) -> Iterator[Text]:
    """The learned matrices: a line for each that changed, one line for the rest."""
    if not diff.weights_compared:
        which = "A" if not diff.a.weights else "B"
        yield Text(f"  (the learned matrices are not compared: {which} carries none)", style="dim")
        return
    groups = grouped(diff.weights)
    changed = [g for g in groups if any(s.status != SAME for s in g)]
    if changed:
        yield Text("learned matrices:", style="dim")
        for group in changed:
            yield group_line(group, width, many_heads)
    same = [label(g[0].name) for g in groups if g not in changed]
    if same:
        rest = "the other learned matrices" if changed else "the learned matrices"
        yield Text(f"  ({rest} are the same: {', '.join(same)})", style="dim")


def first_change_line(stage: StageDiff, precision: int, many_heads: bool = False) -> Text:
    """``first change: Q``, then where its change is largest: the cell, A's and B's
    values and the change (or, for a stage not compared cell by cell, why)."""
    text = Text("first change: ", style="bold")
    text.append(label(stage.name), style="bold yellow")
    if many_heads and whose(stage):
        text.append(f" ({whose(stage)})", style="bold yellow")
    cell = stage.largest
    if cell is None:
        reason = {ONLY_IN_A: "only A holds it", ONLY_IN_B: "only B holds it"}.get(
            stage.status, "; ".join(visible(note) for note in stage.notes)
        )
        text.append(f": {reason}")
        return text
    digits = telling_digits(cell.a, cell.b, precision)
    text.append(
        f"\n  largest at row {quoted(cell.row_label)}, column {quoted(cell.col_label)}: "
        f"A {_value(cell.a, digits)}, B {_value(cell.b, digits)}, "
        f"Δ {signed(cell.delta, digits)}"
    )
    return text


def telling_digits(a: float, b: float, precision: int) -> int:
    """``precision``, or as many more digits (up to 15) as make A's and B's values read
    differently: a change in the sixth digit is not shown as 0.5000 and 0.5000."""
    return next((p for p in range(precision, 16) if _value(a, p) != _value(b, p)), 15)


def _value(value: float, precision: int) -> str:
    return cell_text(value, precision)


def signed(delta: float, precision: int) -> str:
    """A change with its sign: ``+0.5000``, ``-2.9700``, ``+∞``, ``nan``."""
    if math.isnan(delta):
        return cell_text(delta, precision)
    if math.isinf(delta):
        return "+∞" if delta > 0 else "−∞"
    text = format_number(delta, precision)
    return text if text.startswith("-") else "+" + text


def _table_title(stage: StageDiff, diff: TraceDiff, what: str) -> Wrapped:
    b = stage.b
    assert b is not None  # a table is drawn only of a stage both traces hold
    text = Text(visible(b.formula, 200), style="bold")
    text.append(f"   [{b.shape[0]} × {b.shape[1]}]", style="cyan")
    text.append(head_label(b, diff.b.model), style="bold yellow")
    text.append(f"\n{what}", style="dim")
    return Wrapped(text)


@dataclass(frozen=True)
class MarkedTable:
    """A stage both traces hold, as a table with its changed cells marked and shaded:
    B's values, or (``delta``) the change B − A, ``·`` where there is none.

    Where it is too big for the screen, the rows and columns that changed most are
    kept first, and the note under it says what is hidden.
    """

    stage: StageDiff
    precision: int = DEFAULT_PRECISION
    max_rows: int = DEFAULT_MAX_ROWS
    delta: bool = False

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        stage, changed, cell = self.stage.b, self.stage.changed, self.stage.largest
        a = self.stage.a
        assert stage is not None
        assert a is not None
        assert changed is not None
        assert cell is not None
        width = options.max_width
        row_labels = unique_labels(labels(stage.rows))
        col_labels = [shortened(c, HEADER_LIMIT) for c in unique_labels(labels(stage.cols))]
        sizes = np.where(changed, cell_changes(a.data, stage.data)[1], -1.0)
        rows = chosen(
            sizes.max(axis=1).tolist(),
            cell.row,
            self.max_rows or len(row_labels),
            lambda count: True,
        )
        shown_rows = [i for i in rows if i is not None]
        label_width = min(max(cell_len(row_labels[i]) for i in shown_rows), max(8, width // 4))
        write = self._writer(a, stage)
        widths: dict[int, int] = {}

        def column_width(j: int) -> int:
            if j not in widths:
                cells = [cell_len(write(i, j, bool(changed[i, j]))) for i in shown_rows]
                widths[j] = max(cell_len(col_labels[j]) + 1, *cells)
            return widths[j]

        def fits(columns: list[int]) -> bool:
            ordered = sorted(columns)
            gaps = sum(1 for x, y in pairwise(ordered) if y > x + 1)
            gaps += (ordered[0] > 0) + (ordered[-1] < len(col_labels) - 1)
            used = label_width + sum(GAP + column_width(j) for j in ordered)
            return used + gaps * (GAP + 1) <= width

        cols = chosen(sizes.max(axis=0).tolist(), cell.col, len(col_labels), fits)
        widths_shown = [1 if j is None else column_width(j) for j in cols]
        yield _header_line(cols, widths_shown, col_labels, label_width)
        yield Text(
            "─" * (label_width + sum(GAP + w for w in widths_shown)), no_wrap=True, overflow="crop"
        )
        for i in rows:
            if i is None:
                yield _ellipsis_line(widths_shown, label_width)
                continue
            label = pad(shortened(row_labels[i], label_width), label_width)
            yield self._row_line(i, label, cols, widths_shown, write)
        note = hidden_note(changed, shown_rows, [j for j in cols if j is not None])
        if note:
            yield Text(note, style="dim")

    def _row_line(
        self,
        i: int,
        label: str,
        cols: list[int | None],
        widths: list[int],
        write: Callable[[int, int, bool], str],
    ) -> Text:
        """Row ``i`` as the table draws it: its label, then each column shown (``…`` for
        those left out), a changed cell marked and shaded."""
        a, stage, changed = self.stage.a, self.stage.b, self.stage.changed
        assert a is not None
        assert stage is not None
        assert changed is not None
        gap = " " * GAP
        line = Text(no_wrap=True, overflow="crop")
        line.append(label, style=_BOLD)
        for j, w in zip(cols, widths, strict=True):
            if j is None:
                line.append(gap + ELLIPSIS.rjust(w))
                continue
            mark = bool(changed[i, j])
            text = write(i, j, mark)
            line.append(gap)
            line.append(
                " " * (w - cell_len(text)) + text, style=self._style(a, stage, i, j) if mark else ""
            )
        line.rstrip()
        return line

    def _writer(self, a: Stage, b: Stage) -> Callable[[int, int, bool], str]:
        precision = self.precision

        def write(i: int, j: int, mark: bool) -> str:
            if self.delta:
                if not mark:
                    return "· "
                return (
                    signed(
                        Cell(i, j, "", "", float(a.data[i, j]), float(b.data[i, j])).delta,
                        precision,
                    )
                    + MARK
                )
            return _value(float(b.data[i, j]), precision) + (MARK if mark else " ")

        return write

    def _style(self, a: Stage, b: Stage, i: int, j: int) -> Style:
        if not self.delta:
            return _CHANGED_VALUE
        largest = self.stage.max_abs_delta or 0.0
        change = Cell(i, j, "", "", float(a.data[i, j]), float(b.data[i, j])).delta
        return delta_style(change, largest)


def _header_line(
    cols: list[int | None], widths: list[int], col_labels: list[str], label_width: int
) -> Text:
    """The column labels over the marked table, each over its column (``…`` for those
    left out), past the row labels' width."""
    gap = " " * GAP
    line = Text(" " * label_width, no_wrap=True, overflow="crop")
    for j, w in zip(cols, widths, strict=True):
        head = ELLIPSIS if j is None else col_labels[j]
        line.append(
            gap + (" " * (w - 1 - cell_len(head)) + head + " " if j is not None else head),
            style=_BOLD,
        )
    line.rstrip()
    return line


def _ellipsis_line(widths: list[int], label_width: int) -> Text:
    """The line that stands for rows left out: ``…`` under the labels and each column."""
    line = Text(no_wrap=True, overflow="crop")
    line.append(pad(ELLIPSIS, label_width))
    for w in widths:
        line.append(" " * GAP + ELLIPSIS.rjust(w))
    return line


def chosen(
    sizes: list[float], anchor: int, limit: int, fits: Callable[[list[int]], bool]
) -> list[int | None]:
    """Which of an axis's indices show, in order, None where hidden ones go: all when
    they fit, else the largest changes first (``sizes``: each index's largest |Δ|, −1
    where nothing changed), then the others nearest ``anchor``, up to ``limit`` and
    while ``fits`` (at least ``anchor``, the largest change, itself)."""
    count = len(sizes)
    every = list(range(count))
    if count <= limit and fits(every):
        return list(every)
    order = sorted(every, key=lambda k: (-sizes[k], abs(k - anchor), k))
    kept = [anchor]
    for k in order:
        if len(kept) >= limit:
            break
        if k == anchor:
            continue
        if not fits([*kept, k]):
            break
        kept.append(k)
    result: list[int | None] = []
    for k in sorted(kept):
        if (result and result[-1] is not None and k > result[-1] + 1) or (not result and k > 0):
            result.append(None)
        result.append(k)
    if result[-1] != count - 1:
        result.append(None)
    return result


def hidden_note(mask: npt.NDArray[np.bool_], rows: list[int], cols: list[int]) -> str:
    """What a cut table leaves out, and how many changed cells are among it."""
    n_rows, n_cols = mask.shape
    parts = []
    if len(rows) < n_rows:
        parts.append(f"{len(rows)}/{n_rows} rows")
    if len(cols) < n_cols:
        parts.append(f"{len(cols)}/{n_cols} columns")
    if not parts:
        return ""
    hidden = int(mask.sum()) - int(mask[np.ix_(rows, cols)].sum())
    more = f"; {hidden} changed cell{'s' if hidden != 1 else ''} hidden" if hidden else ""
    return f"showing {', '.join(parts)} (most changed first){more}"
