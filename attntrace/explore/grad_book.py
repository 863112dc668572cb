"""grad as a book: each gradient, beside the forward stage it mirrors.

The gradients are :func:`attntrace.learning.grad_trace.grad_trace`'s, in backward order
(d_output first, d_X last); the explorer shows the forward stage of the same shape
beside each (:meth:`GradTrace.mirror`), and a cell's story is the chain rule's step
that makes it (:func:`attntrace.learning.grad_cell_story.grad_cell_story`), then the
forward number at the same cell and what the gradient means under this loss
(:mod:`attntrace.learning.grad_words`).
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text

from attntrace.explore.book import Book
from attntrace.explore.walk import Walk
from attntrace.forward.cell_story import CellStory
from attntrace.forward.cell_terms import figure
from attntrace.kernel.trace import Stage, Trace
from attntrace.learning.grad_cell_story import grad_cell_story
from attntrace.learning.grad_trace import GradTrace
from attntrace.learning.grad_words import stage_caption
from attntrace.ui.shown import shown_trace
from attntrace.ui.titles import title
from attntrace.visible import visible


def grad_book(grad: GradTrace) -> Book:
    """``grad``'s gradients; :func:`mirror_of` gives each one's forward stage."""
    forward = grad.forward
    book = shown_trace(
        Trace(
            model=forward.model,
            tokens=forward.tokens,
            stages=grad.stages,
            context_tokens=forward.context_tokens,
        )
    )
    originals = dict(zip(book.stages, grad.stages, strict=True))

    def mirror(stage: Stage) -> Stage | None:
        found = grad.mirror(originals[stage])
        return None if found is None else shown_trace(_alone(forward, found)).stages[0]

    def heading(walk: Walk) -> Text:
        text = title(walk.stage, book.model)
        beside = mirror(walk.stage)
        text.append("\n")
        if beside is None:
            text.append("no one forward table: the trace keeps this weight by head", style="cyan")
        else:
            text.append("beside: ", style="cyan")
            text.append_text(title(beside))
        loss = grad.loss
        text.append(f"\nloss {visible(loss.formula)} = {loss.loss.value:.4f}", style="dim")
        return text

    def story(walk: Walk) -> CellStory:
        """grad_cell_story's chain-rule step, then the forward number at the same cell
        and what the gradient means under this loss."""
        stage, row, col = walk.stage, walk.row, walk.col
        told = grad_cell_story(grad, originals[stage], row, col)
        lines = list(told.lines)
        beside = mirror(stage)
        if beside is not None and beside.shape == stage.shape:
            forward = float(beside.data[row, col])
            lines.append(
                f"beside it, forward {beside.name}[{beside.rows[row]}, {beside.cols[col]}]"
                f" = {figure(forward)}"
            )
        caption = stage_caption(originals[stage], grad)
        if caption:
            lines.append(caption)
        return replace(told, lines=tuple(lines))

    return Book("grad", "gradient", book, heading, story, mirror=mirror)


def _alone(forward: Trace, stage: Stage) -> Trace:
    """``stage`` as a trace of its own, so it is made visible as the trace's are."""
    return Trace(model=forward.model, tokens=forward.tokens, stages=(stage,))
