"""A stage's matrix as the explorer's table holds it: every cell, as Rich text.

Nothing is elided (the table scrolls); the numbers read as run's tables write them
(:func:`attntrace.ui.numbers.stage_cell`, the softmax weights on the same viridis scale,
an overflow of a --dtype trace marked). Labels arrive already made visible
(:func:`attntrace.ui.shown.shown_trace`) and become :class:`~rich.text.Text`, never
markup: a token ``[bold]`` is shown as typed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.heatmap import weight_style
from attntrace.ui.numbers import OVERFLOWED, stage_cell

PRECISION = 4  # digits after the point, as run's tables


@dataclass(frozen=True)
class Cells:
    """One stage laid out: its column labels, and each row's label and cells."""

    header: tuple[Text, ...]
    labels: tuple[Text, ...]
    rows: tuple[tuple[Text, ...], ...]


def stage_cells(stage: Stage, trace: Trace, precision: int = PRECISION) -> Cells:
    """Every cell of ``stage``, formatted and shaded; −∞ is a mask except where a
    low-precision trace overflowed (outside the ``masked`` stage)."""
    low = trace.precision is not None
    masked_stage = is_masked_stage(stage, trace)
    heat = stage.name == "softmax"
    rows = tuple(
        tuple(
            _cell(float(value), precision, heat=heat, masked_stage=masked_stage, marks=low)
            for value in row
        )
        for row in stage.data.tolist()
    )
    return Cells(
        header=tuple(Text(col, justify="right") for col in stage.cols),
        labels=tuple(Text(row) for row in stage.rows),
        rows=rows,
    )


def _cell(value: float, precision: int, *, heat: bool, masked_stage: bool, marks: bool) -> Text:
    style = cell_style(value, heat=heat, masked_stage=masked_stage, marks=marks)
    return Text(cell_text(value, precision, masked_stage), style=style or "", justify="right")


def is_masked_stage(stage: Stage, trace: Trace) -> bool:
    """Whether −∞ in ``stage`` is a mask: always, except where a low-precision trace
    overflowed (outside the ``masked`` stage), as run's tables read it."""
    return trace.precision is None or stage.name == "masked"


def cell_text(value: float, precision: int, masked_stage: bool) -> str:
    """A cell as run's tables write it."""
    return stage_cell(value, precision, masked_stage=masked_stage)


def cell_style(value: float, *, heat: bool, masked_stage: bool, marks: bool) -> Style | None:
    """An overflow of a --dtype trace marked; a softmax weight shaded (viridis)."""
    if marks and not math.isfinite(value) and not (masked_stage and value == -math.inf):
        return OVERFLOWED
    if heat and math.isfinite(value):
        return weight_style(value)
    return None
