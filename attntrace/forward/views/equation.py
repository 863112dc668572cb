"""The textbook layout: a product shown as one equation of labelled matrices.

        X          WQ          Q
      ┌────┐     ┌────┐     ┌────┐
      │ .. │  ·  │ .. │  =  │ .. │
      └────┘     └────┘     └────┘
      [3×2]      [2×2]      [3×2]

Used where the three tables fit side by side; otherwise the caller's stacked layout is
shown instead, so a narrow terminal never gets a squeezed equation.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View

_UNLIMITED = 10**6


def operands(stage: Stage, trace: Trace) -> tuple[Stage, Stage] | None:
    """The two matrices whose product ``stage`` is; None for stages that are no product,
    or whose operands the trace does not carry (a hand-edited trace, say)."""
    try:
        return _operands(stage, trace)
    except KeyError:
        return None


def _operands(stage: Stage, trace: Trace) -> tuple[Stage, Stage] | None:
    if trace.bias_for(stage) is not None:  # X · W + b is no product of two: stacked instead
        return None
    if stage.name in ("Q", "K", "V"):
        weight = trace.weight_for(stage)
        cross = stage.name != "Q" and trace.context_tokens is not None
        source = trace.stage("X_context" if cross else "X")
        return None if weight is None else (source, weight)
    if stage.name == "projected":
        weight = trace.weight_for(stage)
        before = "concat" if trace.model.heads > 1 else "output"
        return (
            None
            if weight is None
            else (trace.stage(before, head=None if trace.model.heads > 1 else 0), weight)
        )
    if stage.name == "scores":  # of the turned rows, under RoPE
        q, k = trace.model.score_inputs
        keys = trace.stage(k, head=stage.head)
        transposed = Stage(f"{k}ᵀ", f"{k}ᵀ", keys.cols, keys.rows, keys.data.T, head=stage.head)
        return trace.stage(q, head=stage.head), transposed
    if stage.name == "output":
        return trace.stage("softmax", head=stage.head), trace.stage("V", head=stage.head)
    return None


@dataclass(frozen=True)
class Equation:
    """``left · right = result`` side by side, or ``fallback`` where that does not fit."""

    heading: RenderableType
    left: Stage
    right: Stage
    result: Stage
    view: View
    fallback: RenderableType

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        matrices = (self.left, self.right, self.result)
        # every column takes at least 4 cells: a quick no for wide matrices
        if sum(m.shape[1] for m in matrices) * 4 > options.max_width:
            yield self.fallback
            return
        # two operator columns of one cell, and one cell of padding between columns
        widths = [StageTable(m, self.view).natural_width() for m in matrices]
        if sum(widths) + 2 + 4 > options.max_width:
            yield self.fallback
            return
        from rich.table import Table  # only where an equation fits: small matrices

        tables = [StageTable(m, self.view).table(_UNLIMITED) for m in matrices]
        yield self.heading
        grid = Table.grid(padding=(0, 1))
        for index in range(5):
            operator = index % 2 == 1
            grid.add_column(justify="center", vertical="middle" if operator else "top")
        names = [Text(m.name, style="bold magenta") for m in matrices]
        grid.add_row(names[0], "", names[1], "", names[2])
        grid.add_row(
            tables[0], Text("·", style="bold"), tables[1], Text("=", style="bold"), tables[2]
        )
        shapes = [Text(f"[{m.shape[0]} × {m.shape[1]}]", style="cyan") for m in matrices]
        grid.add_row(shapes[0], "", shapes[1], "", shapes[2])
        yield grid
