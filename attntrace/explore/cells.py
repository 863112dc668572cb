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
    masked_stage = not low or stage.name == "masked"
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
    text = stage_cell(value, precision, masked_stage=masked_stage)
    style: Style | str = ""
    if marks and not math.isfinite(value) and not (masked_stage and value == -math.inf):
        style = OVERFLOWED
    elif heat and math.isfinite(value):
        style = weight_style(value)
    return Text(text, style=style, justify="right")
