"""One stage as the tables show it: its title, its table (or equation), its meaning.

The document (:mod:`attntrace.forward.views.document`) draws a block per stage; step mode
draws the same body (:func:`stage_body`) under a heading and a paragraph of its own.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.forward.views.dtype import error_line, overflow_line
from attntrace.forward.views.equation import Equation, operands
from attntrace.forward.words import one_line
from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.elide import weights_beside
from attntrace.ui.stage_table import StageTable
from attntrace.ui.titles import fitted_title
from attntrace.ui.view import DEFAULT_VIEW, View, marking_overflows
from attntrace.ui.wrap import Wrapped


def stage_block(stage: Stage, trace: Trace, view: View = DEFAULT_VIEW) -> Group:
    """Title, the stage as an equation of its operands (or its table), and its meaning.

    Where the operands fit beside the result (``X · WQ = Q``), the stage reads as the
    textbook writes it; otherwise its table follows the weight it used, if any.
    """
    caption = Wrapped(Text(one_line(stage, trace), style="italic dim"))
    return Group(stage_body(stage, trace, view), caption)


def stage_body(stage: Stage, trace: Trace, view: View = DEFAULT_VIEW) -> RenderableType:
    """The stage's title and table: as an equation of its operands where that fits,
    else after the weight it was computed with (if any). A --dtype trace's overflowed
    cells are marked, whichever view (the tables, step mode) draws it."""
    view = marking_overflows(view, trace.precision is not None)
    parts: list[RenderableType] = []
    weight = trace.weight_for(stage)
    if weight is not None:
        parts += [fitted_title(weight, trace.model), StageTable(weight, view), Text("")]
    bias = trace.bias_for(stage)
    if bias is not None:  # one row, added to every row of the product
        parts += [fitted_title(bias, trace.model), StageTable(bias, view), Text("")]
    table = StageTable(stage, view, weights_beside(stage, trace))  # scores: softmax's keys
    stacked = Group(*parts, heading(stage, trace), table)
    pair = operands(stage, trace)
    body: RenderableType = stacked
    if pair is not None:
        body = Equation(heading(stage, trace), pair[0], pair[1], stage, view, fallback=stacked)
    overflow = overflow_line(stage, trace)
    return body if overflow is None else Group(body, overflow)


def heading(stage: Stage, trace: Trace) -> RenderableType:
    """The stage's title, and under a --dtype its error against float64."""
    error = error_line(stage, trace)
    title = fitted_title(stage, trace.model)
    return title if error is None else Group(title, error)
