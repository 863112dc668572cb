"""What the explorer walks: a book of stages, how its pinned heading reads and how a
cell's story is told.

The trace is one book (its stages, :func:`attntrace.forward.cell_story.cell_story`);
decode's steps (:mod:`.decode_book`) and grad's gradients (:mod:`.grad_book`) are made
into books of the same shape, so one set of widgets and keys walks all three.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text

from attntrace.explore.walk import Walk
from attntrace.forward.cell_story import CellStory, cell_story
from attntrace.forward.views.dtype import error_text
from attntrace.forward.words import shape_equation
from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.shown import shown_trace
from attntrace.ui.titles import title


@dataclass(frozen=True)
class Book:
    """``trace``'s stages walked as ``noun`` (``stage``, ``step``, ``gradient``), each
    headed by ``heading`` and each cell told by ``story``; ``view`` names the book
    (``trace``, ``decode``, ``grad``). Its labels are already made visible."""

    view: str
    noun: str
    trace: Trace
    heading: Callable[[Walk], Text]
    story: Callable[[Walk], CellStory]
    # grad: the forward stage shown beside a gradient (None where there is no one)
    mirror: Callable[[Stage], Stage | None] | None = None
    dtype: str | None = None  # --dtype's, named in the top line (None: float64's)

    def walk(self) -> Walk:
        return Walk(self.trace, noun=self.noun)

    @property
    def heads(self) -> bool:
        """Whether more than one head is walked (h, H work)."""
        return len(self.trace.traced_heads) > 1


def trace_book(trace: Trace) -> Book:
    """A trace's stages; each cell told by :func:`cell_story`."""
    shown = shown_trace(trace)

    def heading(walk: Walk) -> Text:
        """The stage's title (formula and shape) and its equation of shapes."""
        stage = walk.stage
        text = title(stage)
        text.append("\n")
        text.append(shape_equation(stage, shown), style="cyan")
        record = shown.precision
        error = None if record is None else record.errors.get((stage.name, stage.head))
        if record is not None and error is not None:  # --dtype: this stage against float64
            text.append("\n" + error_text(error, record.dtype), style="red")
        return text

    def story(walk: Walk) -> CellStory:
        return cell_story(shown, walk.stage, walk.row, walk.col)

    dtype = None if shown.precision is None else shown.precision.dtype
    return Book("trace", "stage", shown, heading, story, dtype=dtype)
