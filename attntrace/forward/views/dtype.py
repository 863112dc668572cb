"""The lines a low-precision trace (``run --dtype``) adds to its views: the dtype and
its rule under the header, each stage's error against float64 under its title, and
the first overflow explained under its stage (docs/kernels.md, "What the views show").

A float64 trace has none of them: every function here returns None for it.
"""

from __future__ import annotations

from rich.text import Text

from attntrace.kernel.casting import StageError
from attntrace.kernel.trace import Stage, Trace
from attntrace.ui.wrap import Wrapped


def precision_line(trace: Trace) -> Wrapped | None:
    """``float16: values rounded to float16; matrix products accumulated in float32, ...``."""
    record = trace.precision
    return None if record is None else rule_line(record.dtype, record.rule)


def rule_line(dtype: str, rule: str) -> Wrapped:
    """The dtype and its casting rule, under a header (run's, decode's)."""
    return Wrapped(Text.assemble((f"{dtype}: ", "bold red"), (rule, "dim")))


def delta(value: float | None) -> str:
    """An error as the lines write it: ``1.2e-03``, ``0`` where exact, ``—`` where no
    cell compares."""
    if value is None:
        return "—"
    return "0" if value == 0 else f"{value:.1e}"


def error_text(error: StageError, dtype: str) -> str:
    """``float16 · max |Δ| 1.2e-03 · max rel 4.9e-04 vs float64 · 3 NaN``; where cells
    overflowed to ±inf the maximum is inf, and says how many, the finite cells' own
    after it: ``float16 · max |Δ| inf: 2 cells inf · the rest max |Δ| 0 · max rel 0
    vs float64`` (``max |Δ| 0`` beside 2 infinite cells read as exact)."""
    finite = f"max |Δ| {delta(error.max_abs)} · max rel {delta(error.max_rel)} vs float64"
    if error.inf:
        cells = "1 cell" if error.inf == 1 else f"{error.inf} cells"
        text = f"{dtype} · max |Δ| inf: {cells} inf · the rest {finite}"
    else:
        text = f"{dtype} · {finite}"
    if error.nan:
        text += f" · {error.nan} NaN"
    return text


def error_line(stage: Stage, trace: Trace) -> Wrapped | None:
    """The line under a stage's title: how far it is from float64."""
    record = trace.precision
    error = None if record is None else record.error_of(stage.name, stage.head)
    if record is None or error is None:
        return None
    style = "red" if error.overflowed else "dim"
    return Wrapped(Text(error_text(error, record.dtype), style=style))


def overflow_line(stage: Stage, trace: Trace) -> Wrapped | None:
    """Under the first stage that overflowed: why, in numbers, and what follows."""
    record = trace.precision
    if record is None or record.overflow is None:
        return None
    first = record.overflow
    if (first.stage, first.head) != (stage.name, stage.head):
        return None
    return Wrapped(Text(first.sentence, style="bold red"))
