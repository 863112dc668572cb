"""What a table too wide (or tall) for its screen keeps (ui/elide.py, docs/forward.md).

Each table is drawn at a width, read back as text, and checked against the matrix it
was drawn from: the columns kept include the focused token, the first and the last; the
rest are the heaviest keys of the rows shown; every number shown is the stage's number
under that row's and column's labels.
"""

from __future__ import annotations

from io import StringIO

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from attntrace.kernel.trace import Stage
from attntrace.ui.elide import gap_labels, keeping_order, with_gaps
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View

PRECISION = 4


def drawn(table: StageTable, width: int) -> tuple[list[str], dict[str, list[str]]]:
    """The header's labels and each row's cells, as ``table`` prints at ``width``."""
    buffer = StringIO()
    Console(file=buffer, width=width, color_system=None).print(table.table(width))
    lines = buffer.getvalue().splitlines()
    header = lines[0].split()
    assert set(lines[1]) == {"─"}
    rows = {}
    for line in lines[2:]:
        label, *cells = line.split()
        assert len(cells) == len(header), line
        rows[label] = cells
    return header, rows


def weights_stage(rng: np.random.Generator, n_rows: int, n_cols: int) -> Stage:
    """Attention weights over ``n_cols`` keys, each row summing to 1, labelled t0, t1, …
    (queries q0, q1, …)."""
    logits = rng.normal(scale=3.0, size=(n_rows, n_cols))
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    rows = tuple(f"q{i}" for i in range(n_rows))
    cols = tuple(f"t{j}" for j in range(n_cols))
    return Stage("softmax", "softmax", rows, cols, weights)


def shown_values_are_the_stage_s(
    stage: Stage, header: list[str], rows: dict[str, list[str]]
) -> None:
    """Every number under a label is the stage's number there, to the digits shown."""
    row_of = {label: i for i, label in enumerate(stage.rows)}
    col_of = {label: j for j, label in enumerate(stage.cols)}
    for label, cells in rows.items():
        if label.startswith("…"):
            assert set(cells) == {"…"}
            continue
        for name, cell in zip(header, cells, strict=True):
            if name.startswith("…"):
                assert cell == "…"
                continue
            value = stage.data[row_of[label], col_of[name]]
            assert abs(float(cell) - value) <= 0.5 * 10.0**-PRECISION + 1e-12, (label, name)


@given(
    seed=st.integers(0, 2**32 - 1),
    n_rows=st.integers(1, 30),
    n_cols=st.integers(2, 60),
    width=st.integers(50, 160),
    focus=st.integers(0, 59) | st.none(),
)
def test_kept_columns_hold_the_focus_the_ends_and_the_heaviest(
    seed: int, n_rows: int, n_cols: int, width: int, focus: int | None
) -> None:
    rng = np.random.default_rng(seed)
    stage = weights_stage(rng, n_rows, n_cols)
    focused = None if focus is None else stage.cols[focus % n_cols]
    view = View(precision=PRECISION, focus=focused)
    header, rows = drawn(StageTable(stage, view), width)
    kept = [name for name in header if not name.startswith("…")]
    # at 50 columns and more the pinned three fit (6 cells + 3 each, gaps 3 + 3)
    pinned = [name for name in (focused, "t0", f"t{n_cols - 1}") if name is not None]
    assert set(pinned) <= set(kept)
    assert kept == sorted(kept, key=lambda name: int(name[1:]))  # in the sentence's order
    shown_values_are_the_stage_s(stage, header, rows)
    # The others kept are the heaviest keys of the rows shown: no hidden key weighs
    # more in those rows than a kept one, computed here from the data.
    shown_rows = [int(label[1:]) for label in rows if not label.startswith("…")]
    heaviest_kept_below_none_hidden(stage, shown_rows, kept, pinned)


def heaviest_kept_below_none_hidden(
    stage: Stage, ranking_rows: list[int], kept: list[str], pinned: list[str]
) -> None:
    weight = stage.data[ranking_rows].max(axis=0)
    ranked = [int(name[1:]) for name in kept if name not in pinned]
    hidden = [j for j in range(len(stage.cols)) if f"t{j}" not in kept]
    if ranked and hidden:
        assert weight[hidden].max() <= weight[ranked].min()


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    width=st.integers(50, 160),
    focus=st.integers(0, 39),
)
def test_a_focused_token_s_heaviest_keys_are_kept(
    seed: int, n: int, width: int, focus: int
) -> None:
    """Self-attention, focused: the focused row's own heaviest keys come first."""
    stage = weights_stage(np.random.default_rng(seed), n, n)
    stage = Stage("softmax", "softmax", stage.cols, stage.cols, stage.data)
    focused = f"t{focus % n}"
    header, rows = drawn(StageTable(stage, View(precision=PRECISION, focus=focused)), width)
    kept = [name for name in header if not name.startswith("…")]
    pinned = [focused, "t0", f"t{n - 1}"]
    assert set(pinned) <= set(kept)
    assert focused in rows
    shown_values_are_the_stage_s(stage, header, rows)
    heaviest_kept_below_none_hidden(stage, [focus % n], kept, pinned)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    width=st.integers(40, 160),
)
def test_scores_keep_the_keys_softmax_keeps(seed: int, n: int, width: int) -> None:
    """scores (ranked by its head's softmax) shows the keys the softmax table shows, or
    the first of them where its numbers are wider."""
    rng = np.random.default_rng(seed)
    weights = weights_stage(rng, n, n)
    scores = Stage("scores", "scores", weights.rows, weights.cols, np.log(weights.data) * 7.0)
    view = View(precision=PRECISION)
    softmax_header, _ = drawn(StageTable(weights, view), width)
    scores_header, scores_rows = drawn(StageTable(scores, view, weights), width)
    kept = {name for name in scores_header if not name.startswith("…")}
    assert kept <= {name for name in softmax_header if not name.startswith("…")}
    assert {"t0", f"t{n - 1}"} <= kept
    shown_values_are_the_stage_s(scores, scores_header, scores_rows)


@given(
    seed=st.integers(0, 2**32 - 1),
    n_rows=st.integers(21, 80),
    focus=st.integers(0, 79),
)
def test_kept_rows_hold_the_focus_and_the_ends(seed: int, n_rows: int, focus: int) -> None:
    rng = np.random.default_rng(seed)
    stage = weights_stage(rng, n_rows, 3)
    focused = f"q{focus % n_rows}"
    _, rows = drawn(StageTable(stage, View(precision=PRECISION, focus=focused)), 80)
    kept = [label for label in rows if not label.startswith("…")]
    assert {"q0", f"q{n_rows - 1}", focused} <= set(kept)
    assert len(kept) == View().max_rows
    shown_values_are_the_stage_s(stage, ["t0", "t1", "t2"], rows)


def test_chosen_tokens_are_exactly_the_columns_and_rows_shown() -> None:
    stage = weights_stage(np.random.default_rng(3), 12, 12)
    view = View(precision=PRECISION, cols=("t5", "t2"), rows=("q7",))
    header, rows = drawn(StageTable(stage, view), 80)
    assert header == ["…2", "t2", "…2", "t5", "…6"]
    assert list(rows) == ["…7", "q7", "…4"]
    shown_values_are_the_stage_s(stage, header, rows)


def test_dimensions_keep_numpy_s_first_and_last_halves() -> None:
    """Over d0, d1, … there are no keys to weigh: the ends, as before."""
    data = np.arange(3 * 40, dtype=np.float64).reshape(3, 40)
    stage = Stage("V", "V", ("a", "b", "c"), tuple(f"d{j}" for j in range(40)), data)
    header, rows = drawn(StageTable(stage, View(precision=PRECISION)), 80)
    assert header == ["d0", "d1", "d2", "d3", "…", "d37", "d38", "d39"]
    shown_values_are_the_stage_s(stage, header, rows)


def test_the_order_and_the_gaps() -> None:
    assert list(keeping_order(7, pinned=[3], ranked=[5, 1])) == [3, 0, 6, 5, 1, 2, 4]
    assert list(keeping_order(5)) == [0, 4, 1, 3, 2]
    shown = with_gaps([6, 2], 10)
    assert shown == [None, 2, None, 6, None]
    assert gap_labels(shown, 10) == ["…2", "", "…3", "", "…3"]
    assert gap_labels(with_gaps([0, 9], 10), 10) == ["", "…", ""]
