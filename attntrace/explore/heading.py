"""What stays pinned above the table: where the walk is, the stage's title and shapes.

``Stage 7 of 8 · softmax · head 0`` and the model and sentence; the stage's formula with
its shape (:func:`attntrace.ui.titles.title`); its equation of shapes
(:func:`attntrace.forward.words.shape_equation`). The trace given is the one made
visible, so its names and tokens are safe to show.
"""

from __future__ import annotations

from rich.text import Text

from attntrace.explore.walk import Walk
from attntrace.forward.words import shape_equation
from attntrace.kernel.trace import Trace
from attntrace.ui.titles import head_label, title


def where_line(walk: Walk, trace: Trace) -> Text:
    """``Stage 7 of 8 · softmax  head 0 · it-animal: The animal …``."""
    stage = walk.stage
    text = Text.assemble(
        (f"Stage {walk.position + 1} of {len(walk.indices)} · ", "dim"),
        (stage.name, "bold magenta"),
        (head_label(stage, trace.model), "bold yellow"),
        (f"   {trace.model.name}: ", "dim"),
        (" ".join(trace.tokens), "dim"),
    )
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def stage_heading(walk: Walk, trace: Trace) -> Text:
    """The stage's title (formula and shape) and its equation of shapes."""
    stage = walk.stage
    text = title(stage)
    text.append("\n")
    text.append(shape_equation(stage, trace), style="cyan")
    return text
