"""What `attntrace grad` prints: a header, then every gradient as a titled table beside
the forward stage it mirrors (docs/learning.md#what-is-shown).

A gradient and its forward stage have the same shape and labels, so side by side a
reader sees which number each gradient belongs to; where the terminal is too narrow for
both, the forward table comes first, dimmed. Heads the loss does not reach (every
gradient exactly 0) are named in one line instead of drawn, and beyond ``--max-heads``
the middle heads give way to a note, as `run` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.styled import Styled
from rich.table import Table
from rich.text import Text

from attntrace.forward.views.document import block_notes, model_facts
from attntrace.kernel.trace import ModelInfo, Stage
from attntrace.learning.grad_trace import GradTrace
from attntrace.learning.grad_words import ATTEND_ZEROS, stage_caption
from attntrace.ui.elide import weights_beside
from attntrace.ui.fitted import RightTrimmed
from attntrace.ui.numbers import format_number, visible_indices
from attntrace.ui.shown import FORMULA_LIMIT, label, labels, shown_trace
from attntrace.ui.stage_table import StageTable
from attntrace.ui.titles import fitted_title, numbered, title
from attntrace.ui.view import DEFAULT_VIEW, View
from attntrace.ui.wrap import Facts, Wrapped
from attntrace.visible import ELLIPSIS, visible

GAP = 4  # cells between a forward table and its gradient, side by side


def shown_grad(grad: GradTrace) -> GradTrace:
    """``grad`` as the views draw it: its forward trace, its stages' labels and formulas,
    and the loss's formula and notes made visible (tokens come from files)."""
    cache: dict[tuple[str, ...], tuple[str, ...]] = {}

    def shown(tokens: tuple[str, ...]) -> tuple[str, ...]:
        if tokens not in cache:
            cache[tokens] = labels(tokens)
        return cache[tokens]

    stages = tuple(
        replace(
            stage,
            name=label(stage.name),
            rows=shown(stage.rows),
            cols=shown(stage.cols),
            formula=visible(stage.formula, FORMULA_LIMIT),
        )
        for stage in grad.stages
    )
    notes = tuple(visible(note, FORMULA_LIMIT) for note in grad.loss.notes)
    loss = replace(grad.loss, formula=visible(grad.loss.formula, FORMULA_LIMIT), notes=notes)
    return replace(grad, forward=shown_trace(grad.forward), stages=stages, loss=loss)


def reached_heads(grad: GradTrace) -> list[int]:
    """The heads the loss reads (the others' gradients are all 0: not reached). Said by
    the loss, not read off the numbers: a head whose weight is exactly 1 at the attend
    loss's cell has gradients of 0 and is still one the loss reads."""
    return sorted(grad.loss.heads)


def drawn_stages(grad: GradTrace, view: View = DEFAULT_VIEW) -> list[Stage | None]:
    """The stages the view draws, in order, None where hidden heads' stages would go:
    the reached heads' (the first and last ``view.max_heads``), their K/V heads' sums,
    and every whole-model gradient."""
    reached = reached_heads(grad)
    limit = len(reached) if view.max_heads is None else view.max_heads
    shown = {reached[i] for i in visible_indices(len(reached), limit) if i is not None}
    out: list[Stage | None] = []
    for stage in grad.stages:
        if stage.head is not None:
            if stage.head not in shown:
                if reached and stage.head in reached and None not in out:
                    out.append(None)
                continue
        elif stage.kv_head is not None:  # a K/V head's sum over its query heads
            summed = grad.summed.get(stage.kv_head, ())
            if not any(h in shown for h in summed):
                continue
        out.append(stage)
    return out


def loss_line(grad: GradTrace, view: View = DEFAULT_VIEW) -> Text:
    """``loss  L = −log softmax[it, animal] = 0.4329   (head 1 alone)``: the loss, its
    value, and which heads it reads (every head, or --head H's alone)."""
    loss, model = grad.loss, grad.forward.model
    if model.heads == 1:
        reads = ""
    elif grad.objective.head is not None:
        reads = f"{numbered('head', list(loss.heads))} alone"
    else:
        reads = "every head"
    value = format_number(loss.loss.value, view.precision)
    text = Text.assemble(("loss  ", "dim"), (loss.formula, "bold"), (f" = {value}", "bold cyan"))
    if reads:
        text.append(f"   ({reads})", style="yellow")
    return text


def header(grad: GradTrace, view: View = DEFAULT_VIEW) -> Iterator[RenderableType]:
    """The model's facts, the tokens, the loss and its value, which heads it reads, and
    what is 0 and what is not drawn."""
    trace = grad.forward
    yield Facts(
        trace.model.name,
        model_facts(trace.model, len(trace.tokens), None, cross=trace.context_tokens is not None),
    )
    yield from (Wrapped(note) for note in block_notes(trace, view))
    yield Wrapped(loss_line(grad, view))
    for note in grad.loss.notes:
        yield Wrapped(Text(note, style="dim"))
    zeros = list(dict.fromkeys(s.name for s in grad.stages if s.name in ATTEND_ZEROS))
    if grad.objective.kind == "attend" and zeros:
        yield Wrapped(
            Text(
                f"The attend loss reads the softmax alone: {_listed(zeros)} are "
                "exactly 0 (shown anyway).",
                style="dim",
            )
        )
    heads = sorted({s.head for s in grad.stages if s.head is not None})
    reached = set(reached_heads(grad))
    silent = [h for h in heads if h not in reached]
    if silent:
        yield Wrapped(
            Text(
                f"{numbered('head', silent)}: not reached by the loss (every "
                "gradient exactly 0), not drawn.",
                style="dim",
            )
        )


def _listed(names: list[str]) -> str:
    """``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def render_grad(grad: GradTrace, view: View = DEFAULT_VIEW) -> Iterator[RenderableType]:
    """The whole view of ``grad`` (give it as shown: :func:`shown_grad`), for
    ``console.print`` one after another."""
    yield from header(grad, view)
    reached = reached_heads(grad)
    stages = drawn_stages(grad, view)
    drawn = {s.head for s in stages if s is not None}
    for stage in stages:
        yield Text("")
        if stage is None:
            hidden = [h for h in reached if h not in drawn]
            kept = len(reached) - len(hidden)
            yield Text(
                f"{ELLIPSIS} {numbered('head', hidden)} not shown ({kept} of "
                f"{len(reached)} heads; --max-heads N, 0 for all)",
                style="dim",
            )
            continue
        yield GradBlock(
            stage,
            grad.mirror(stage),
            grad.forward.model,
            view,
            stage_caption(stage, grad),
            weights_beside(stage, grad.forward),
        )


@dataclass(frozen=True)
class GradBlock:
    """A gradient's title and table beside its forward stage's where both fit whole in
    the width, else after it (dimmed), then its caption."""

    stage: Stage
    mirror: Stage | None
    model: ModelInfo
    view: View = DEFAULT_VIEW
    caption: str = ""
    # the head's softmax: the tables over its keys keep its heaviest (they line up)
    weights: Stage | None = None

    def beside(self, width: int) -> tuple[int, int] | None:
        """The two columns' widths where both tables fit side by side, every column
        shown (a title wraps inside its column where it must); None where they do not."""
        if self.mirror is None:
            return None
        forward = StageTable(self.mirror, self.view).layout(width)
        gradient = StageTable(self.stage, self.view).layout(width)
        whole = None not in forward.cols and None not in gradient.cols
        if not whole or forward.width + GAP + gradient.width > width:
            return None
        left = max(forward.width, _title_width(self.mirror, self.model))
        right = max(gradient.width, _title_width(self.stage, self.model))
        if left + GAP + right > width:  # the titles wrap: the left one first
            left = max(forward.width, width - GAP - right)
            right = width - GAP - left
        return left, right

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        title = fitted_title(self.stage, self.model)
        weights = self.weights
        table = StageTable(self.stage, self.view, weights)
        note = [Wrapped(Text(self.caption, style="italic dim"))] if self.caption else []
        if self.mirror is None:
            yield Group(title, table, *note)
            return
        forward_title = Styled(fitted_title(self.mirror, self.model), "dim")
        forward_table = Styled(
            StageTable(self.mirror, self.view, _ranked_by(weights, self.mirror)), "dim"
        )
        widths = self.beside(width)
        if widths is None:
            yield Group(forward_title, forward_table, Text(""), title, table, *note)
            return
        grid = Table.grid(padding=(0, GAP, 0, 0))
        grid.add_column(width=widths[0])
        grid.add_column(width=widths[1])
        grid.add_row(forward_title, title)  # a row each: the tables start level
        grid.add_row(forward_table, table)
        yield Group(RightTrimmed(grid), *note)  # the grid pads its lines to its width


def _ranked_by(weights: Stage | None, stage: Stage) -> Stage | None:
    """``weights`` where ``stage`` runs over the same rows and keys (scaled beside
    d_scaled; softmax ranks by itself)."""
    if weights is None or stage.name == "softmax":
        return None
    return weights if (weights.rows, weights.cols) == (stage.rows, stage.cols) else None


def _title_width(stage: Stage, model: ModelInfo) -> int:
    """The width of ``stage``'s title on one line."""
    return max(cell_len(line) for line in title(stage, model).plain.split("\n"))
