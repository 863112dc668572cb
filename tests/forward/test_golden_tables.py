"""Rendered tables: golden text at fixed widths, and widths that always fit."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from goldens import CASES, table_path, table_run, table_text
from helpers import invoke
from hypothesis import assume, example, given
from hypothesis import strategies as st
from rich.console import Console

from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.ui.numbers import column_widths, format_number, visible_indices
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import DEFAULT_VIEW, View


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_output(name: str) -> None:
    """Compare with tests/golden/NAME.txt (tools/regenerate_goldens.py rewrites them)."""
    result = table_run(name)
    assert result.exit_code == 0, result.output
    assert table_text(result) == table_path(name).read_text(encoding="utf-8")
    assert max(len(line) for line in result.stdout.splitlines()) <= CASES[name][1]


def render(stage: Stage, width: int, view: View = DEFAULT_VIEW) -> list[str]:
    """The table's lines alone, without the note on what it hides."""
    buffer = StringIO()
    Console(file=buffer, width=width, color_system=None).print(StageTable(stage, view).table(width))
    return buffer.getvalue().splitlines()


def test_a_summarized_table_says_what_it_hides() -> None:
    data = np.zeros((30, 40))
    labels = tuple(f"t{i}" for i in range(30)), tuple(f"d{j}" for j in range(40))
    stage = Stage("V", "V = X · WV", *labels, data)
    buffer = StringIO()
    Console(file=buffer, width=80, color_system=None).print(StageTable(stage))
    last = buffer.getvalue().splitlines()[-1]
    assert last == "showing 20 of 30 rows and 8 of 40 columns (--max-rows/--max-cols N, 0 for all)"
    small = Stage("V", "V = X · WV", ("a",), ("d0",), np.zeros((1, 1)))
    buffer = StringIO()
    Console(file=buffer, width=80, color_system=None).print(StageTable(small))
    assert "showing" not in buffer.getvalue()


@example(rows=58, cols=58, width=63, scale=1e12, label=1)  # the width estimate was 3 over
@given(
    rows=st.integers(1, 60),
    cols=st.integers(1, 300),
    width=st.integers(30, 220),
    scale=st.sampled_from([1.0, 1e3, 1e7, 1e12]),
    label=st.integers(1, 14),
)
def test_tables_never_exceed_the_width(
    rows: int, cols: int, width: int, scale: float, label: int
) -> None:
    data = np.random.default_rng(rows * cols).normal(size=(rows, cols)) * scale
    stage = Stage(
        "scores",
        "scores = Q · Kᵀ",
        tuple(f"{'w' * label}{i}" for i in range(rows)),
        tuple(f"{'w' * label}{j}" for j in range(cols)),
        data,
    )
    lines = render(stage, width)
    assert max(len(line) for line in lines) <= width
    label_width = label + len(str(rows - 1))
    column_width = max(label_width, *column_widths(data, 4))
    assume(label_width + column_width + 3 + 4 <= width)  # one column fits
    # Summarized like numpy: the first and last rows are always there, on one line each.
    assert lines[2].startswith(f"{'w' * label}0")
    assert lines[-1].startswith(f"{'w' * label}{rows - 1}")
    summarized = any(line.startswith("…") for line in lines)
    assert summarized == (rows > View().max_rows)
    assert len(lines) - 2 == min(rows, View().max_rows + 1)


def test_summary_keeps_first_and_last_rows_and_columns() -> None:
    data = np.arange(30 * 30, dtype=np.float64).reshape(30, 30)
    labels = tuple(f"t{i}" for i in range(30))
    lines = render(Stage("softmax", "softmax", labels, labels, data), 80, View(precision=0))
    header = lines[0].split()
    # weights: the first and last, then the heaviest keys (here the last ones)
    assert header[:2] == ["t0", "…"]
    assert header[-3:] == ["t27", "t28", "t29"]
    assert lines[-1].split()[0] == "t29"
    assert lines[-1].split()[-1] == "899"
    assert any(line.split()[0] == "…" for line in lines)


def test_uses_the_extra_width_of_a_wide_terminal() -> None:
    data = np.zeros((3, 16))
    stage = Stage("V", "V = X · WV", ("a", "b", "c"), tuple(f"d{j}" for j in range(16)), data)
    assert "…" in render(stage, 80)[0]
    assert "…" not in render(stage, 200)[0]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.995761, "3.9958"),
        # not zero, so never written as zero (issue 30): scientific where 4 digits lose it
        (-1e-17, "-1.0e-17"),
        (-0.00004, "-4.0e-05"),
        (0.0, "0.0000"),
        (-0.0, "0.0000"),
        (-0.00005, "-0.0001"),
        (2.0, "2.0000"),
        (123456789.0, "1.2346e+08"),
        (float("-inf"), "−∞"),
    ],
)
def test_format_number(value: float, text: str) -> None:
    assert format_number(value, 4) == text


def test_repeated_tokens_get_their_position() -> None:
    assert unique_labels(["the", "cat", "the"]) == ["the#0", "cat", "the#2"]
    assert unique_labels(["The", "the"]) == ["The", "the"]


@pytest.mark.parametrize(
    ("count", "limit", "shown"),
    [
        (3, 5, [0, 1, 2]),
        (10, 4, [0, 1, None, 8, 9]),
        (10, 5, [0, 1, 2, None, 8, 9]),
        (10, 1, [0, None]),
    ],
)
def test_visible_indices(count: int, limit: int, shown: list[int | None]) -> None:
    assert visible_indices(count, limit) == shown


def test_brackets_in_tokens_and_explanations_are_text_not_markup(tmp_path: Path) -> None:
    model = tmp_path / "brackets.yaml"
    model.write_text(
        'embeddings: {"[b]": [1, 0], "[/]": [0, 1]}\n'
        "weights: {WQ: [[1, 0], [0, 1]], WK: [[1, 0], [0, 1]], WV: [[1, 0], [0, 1]]}\n"
    )
    result = invoke("run", "[b] [/]", "--config", str(model))
    assert result.exit_code == 0, result.output
    assert "[b]   1.0000   0.0000" in result.stdout
    assert "[/]   0.0000   1.0000" in result.stdout
    assert "[b]      [/]" in result.stdout  # the score table's column headers
    step = invoke("run", "--step", input="scores\nq\n")
    assert "scores[i, j] = Q[i] · K[j]" in step.stdout
