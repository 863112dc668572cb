"""Any cell of any stage, spelled out as the arithmetic a person would do to get it.

The explorer's explanation pane (``attntrace explore``) shows this for the cell under
the cursor; ``--focus`` and the page say the same for their cells. The numbers are read
from the :class:`Trace`; only the pieces a person writes down (a dot product's terms,
a softmax row's exps and their sum, the weighted value rows) are recomputed, and tests
hold them to an independent loop. No Rich here: the lines are plain text, and whoever
shows them makes them safe (tokens come from files).
"""

from __future__ import annotations

from dataclasses import dataclass

from attntrace.kernel.trace import Stage, Trace


@dataclass(frozen=True)
class CellStory:
    """One cell of one stage and how it is computed, line by line.

    ``heading`` names the cell (``softmax[it, animal], head 0``); ``formula`` is the
    stage's; ``lines`` are the arithmetic, term by term, in plain text; ``value`` is the
    trace's own number for the cell.
    """

    stage: str
    head: int | None
    row: str
    col: str
    value: float
    heading: str
    formula: str
    lines: tuple[str, ...]


def cell_story(trace: Trace, stage: Stage, row: int, col: int) -> CellStory:
    """The cell ``stage[row, col]`` of ``trace`` as hand arithmetic."""
    value = float(stage.data[row, col])
    where = "" if stage.head is None else f", head {stage.head}"
    heading = f"{stage.name}[{stage.rows[row]}, {stage.cols[col]}]{where}"
    return CellStory(
        stage=stage.name,
        head=stage.head,
        row=stage.rows[row],
        col=stage.cols[col],
        value=value,
        heading=heading,
        formula=stage.formula,
        lines=(f"= {value!r}",),
    )
