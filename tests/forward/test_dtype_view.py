"""The lines and marks a --dtype trace adds to the tables (forward/views/dtype, the cells of
ui/stage_table): inf, −inf and NaN shown and marked so they survive NO_COLOR, the
columns wide enough for them, a mask's −∞ left as it was."""

from __future__ import annotations

import io
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
from rich.console import Console

from attntrace.api import trace_attention
from attntrace.forward.views.document import render_trace
from attntrace.forward.views.dtype import error_text
from attntrace.forward.words import one_line, paragraph
from attntrace.kernel.casting import StageError
from attntrace.kernel.trace import Stage
from attntrace.ui.numbers import column_widths, stage_cell
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View

OVERFLOW = Path(__file__).resolve().parents[2] / "docs" / "examples" / "float16-overflow.yaml"


def drawn(renderable: object, *, width: int = 80) -> str:
    out = io.StringIO()
    console = Console(
        file=out, width=width, no_color=True, force_terminal=True, color_system="standard"
    )
    console.print(renderable)
    return out.getvalue()


def test_cells_read_inf_minus_inf_and_nan() -> None:
    assert stage_cell(math.inf, 4, masked_stage=False) == "inf"
    assert stage_cell(-math.inf, 4, masked_stage=False) == "−inf"
    assert stage_cell(math.nan, 4, masked_stage=False) == "NaN"
    assert stage_cell(-math.inf, 4, masked_stage=True) == "−∞"  # a mask, as ever
    assert stage_cell(1.5, 2, masked_stage=False) == "1.50"


def test_columns_are_wide_enough() -> None:
    data = np.array([[1.0, math.nan, -math.inf, math.inf]])
    assert column_widths(data, 1, masked_stage=False) == [3, 3, 4, 3]
    assert column_widths(data, 1, masked_stage=True)[2] == 2


def test_overflow_is_marked_without_colour() -> None:
    stage = Stage(
        "scores",
        "scores = Q · Kᵀ",
        ("a", "b"),
        ("a", "b"),
        np.array([[1.0, math.inf], [math.nan, -math.inf]]),
    )
    low = View(overflows=True)
    text = drawn(StageTable(stage, low))
    assert "\x1b[" in text
    assert "7m" in text
    assert "31" not in text.split("\x1b[")[1]  # and no red under NO_COLOR
    # outside a low-precision view nothing is marked, and −∞ reads as a mask
    assert "\x1b[1;7m" not in drawn(StageTable(stage))
    assert "−∞" in drawn(StageTable(stage))
    plain = drawn(StageTable(stage, low)).replace("\x1b[1;7m", "").replace("\x1b[0m", "")
    assert "inf" in plain
    assert "NaN" in plain
    assert "−inf" in plain


def test_error_line_words() -> None:
    error = StageError(1.2e-3, 4.9e-4, 2, 3)
    # the maximum counts the infinite cells: `max |Δ| 0 … 3 inf` read as exact (issue 30)
    assert error_text(error, "float16") == (
        "float16 · max |Δ| inf: 2 cells inf · the rest max |Δ| 1.2e-03 · max rel 4.9e-04"
        " vs float64 · 3 NaN"
    )
    assert error_text(StageError(0.0, 0.0, 1, 0), "float16") == (
        "float16 · max |Δ| inf: 1 cell inf · the rest max |Δ| 0 · max rel 0 vs float64"
    )
    assert error_text(StageError(1.2e-3, 4.9e-4, 0, 3), "float16") == (
        "float16 · max |Δ| 1.2e-03 · max rel 4.9e-04 vs float64 · 3 NaN"
    )
    assert error_text(StageError(None, None, 0, 0), "bfloat16") == (
        "bfloat16 · max |Δ| — · max rel — vs float64"
    )


def test_the_document_fits_80_columns() -> None:
    trace = trace_attention(config=OVERFLOW, dtype="float16")
    out = io.StringIO()
    console = Console(file=out, width=80, no_color=True, color_system=None)
    for part in render_trace(trace):
        console.print(part)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.startswith("float16: values rounded to float16") for line in lines)


def test_a_float64_trace_adds_nothing() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, no_color=True, color_system=None)
    for part in render_trace(trace_attention()):
        console.print(part)
    assert "vs float64" not in out.getvalue()
    assert "rounded" not in out.getvalue()


def test_the_map_draws_no_bar_for_a_nan_row() -> None:
    """A row of NaN weights (an overflow before softmax) is said, not drawn full."""
    from attntrace.forward.views.attention_map import AttentionMap

    weights = Stage(
        "softmax", "softmax", ("a", "b"), ("a", "b"), np.array([[math.nan, math.nan], [0.25, 0.75]])
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", drawn(AttentionMap(weights, top=2)))
    first, second = (line for line in text.splitlines() if "→" in line)
    assert "NaN in every weight" in first
    assert "█" not in first
    assert "0.75" in second
    assert "█" in second


def test_a_stage_body_marks_a_low_traces_overflows_in_any_view() -> None:
    """stage_body, which the tables and step mode both draw, marks on its own: no view
    has to remember to ask for it."""
    from attntrace.forward.views.stage_block import stage_body

    trace = trace_attention(config=OVERFLOW, dtype="float16")
    scores = trace["scores"]
    assert "\x1b[1;7m" in drawn(stage_body(scores, trace))
    plain = trace_attention(config=OVERFLOW)
    assert "\x1b[1;7m" not in drawn(stage_body(plain["scores"], plain))


def test_softmax_caption_holds_in_the_dtype() -> None:
    """Under bfloat16 a row summing to 1.0018 sat under "each row sums to 1"."""
    trace = trace_attention(sample="it-animal", dtype="bfloat16")
    stage = trace["softmax"]
    sums = [sum((Fraction(float(x)) for x in row), Fraction(0)) for row in stage.data]
    assert max(sums) > 1 > min(sums)  # rounded shares: the promise of 1 does not hold
    caption = one_line(stage, trace)
    found = re.search(
        r"each row sums to 1 in exact arithmetic; in bfloat16 these rows sum to "
        r"(\d\.\d+)–(\d\.\d+)",
        caption,
    )
    assert found, caption
    low, high = (Fraction(x) for x in found.groups())
    unit = Fraction(10) ** -len(found.group(1).split(".")[1])
    assert abs(low - min(sums)) <= unit / 2
    assert abs(high - max(sums)) <= unit / 2
    assert "Every row sums to 1 in exact arithmetic; in bfloat16" in paragraph(stage, trace)
    # float64's rows: the caption as it was
    exact = trace_attention(sample="it-animal")
    assert "each row sums to 1; row i" in one_line(exact["softmax"], exact)


def test_softmax_caption_names_rows_of_nan() -> None:
    """float16 rows of NaN sat under "each row sums to 1" too."""
    path = Path(__file__).parents[2] / "docs" / "examples" / "float16-overflow.yaml"
    trace = trace_attention(config=path, dtype="float16")
    stage = trace["softmax"]
    nan_rows = int(np.isnan(np.asarray(stage.data)).any(axis=1).sum())
    assert nan_rows == 2  # 'cat' and 'fish': their scores overflowed
    caption = one_line(stage, trace)
    assert f"but for {nan_rows} rows of NaN: float16 overflowed before softmax" in caption
