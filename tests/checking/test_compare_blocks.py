"""``check``'s comparison, made a block at a time (bounded memory, a large stage in
seconds), against the tolerance rule of docs/check.md applied cell by cell in plain
Python.

The blocks are made tiny here, so every matrix crosses many of them, rows longer than a
block included; the naive rule sees the whole matrix at once.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntrace.checking import tolerance as tolerance_module
from attntrace.checking.tolerance import Tolerance, compare, matches

TOLERANCE = Tolerance(1e-3, 1e-4, "float32")
CELLS = [0.0, 1.0, -2.5, 1e3, 1.0005, -1e5, math.nan, math.inf, -math.inf]


def _naive(
    expected: list[list[float]], found: list[list[float]], masked: bool
) -> tuple[list[list[bool]], float | None, tuple[int, int] | None]:
    """(wrong, max |Δ| over cells finite on both sides, worst cell): the worst is the
    first non-finite wrong cell in reading order, else the first largest |Δ|."""
    finite = [abs(x) for row in expected for x in row if math.isfinite(x)]
    scale = max([1.0, *finite])
    wrong: list[list[bool]] = []
    deltas: list[float] = []
    strange: list[tuple[int, int]] = []
    ranked: list[tuple[float, int, int]] = []
    for i, (e_row, f_row) in enumerate(zip(expected, found, strict=True)):
        wrong.append([])
        for j, (e, f) in enumerate(zip(e_row, f_row, strict=True)):
            if math.isfinite(e) and math.isfinite(f):
                delta = abs(f - e)
                deltas.append(delta)
                ok = delta <= TOLERANCE.atol * scale + TOLERANCE.rtol * abs(e)
            else:
                ok = (math.isnan(e) and math.isnan(f)) or (
                    not math.isfinite(e) and not math.isfinite(f) and e == f
                )
            if masked and e == -math.inf and not math.isnan(f) and f <= -1e4:
                ok = True
            wrong[i].append(not ok)
            if not ok and math.isfinite(e) and math.isfinite(f):
                ranked.append((-abs(f - e), i, j))
            elif not ok:
                strange.append((i, j))
    worst = strange[0] if strange else ((min(ranked)[1], min(ranked)[2]) if ranked else None)
    return wrong, (max(deltas) if deltas else None), worst


def _matrix(draw: st.DrawFn, rows: int, cols: int) -> list[list[float]]:
    return [[draw(st.sampled_from(CELLS)) for _ in range(cols)] for _ in range(rows)]


@st.composite
def pairs(draw: st.DrawFn) -> tuple[list[list[float]], list[list[float]]]:
    rows, cols = draw(st.integers(1, 5)), draw(st.integers(1, 9))
    expected = _matrix(draw, rows, cols)
    # mostly the expected numbers, some changed: matches and near misses both come up
    found = [[draw(st.sampled_from([e, e, e, *CELLS])) for e in row] for row in expected]
    return expected, found


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@settings(max_examples=300, deadline=None)
@given(pair=pairs(), masked=st.booleans(), block=st.sampled_from([1, 2, 3, 4, 7, 1 << 20]))
def test_the_blocks_give_what_the_rule_gives_cell_by_cell(
    pair: tuple[list[list[float]], list[list[float]]], masked: bool, block: int
) -> None:
    expected, found = pair
    want_wrong, want_max, want_worst = _naive(expected, found, masked)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tolerance_module, "BLOCK_CELLS", block)
        e, f = np.array(expected), np.array(found)
        got = compare(e, f, TOLERANCE, masked=masked)
        quick = matches(e, f, TOLERANCE, masked=masked)
    assert got.wrong.tolist() == want_wrong
    assert got.max_abs_delta == want_max
    assert got.worst == want_worst
    assert got.nonfinite_wrong == sum(
        w and not (math.isfinite(x) and math.isfinite(y))
        for w_row, e_row, f_row in zip(want_wrong, expected, found, strict=True)
        for w, x, y in zip(w_row, e_row, f_row, strict=True)
    )
    assert quick == (want_worst is None)


def test_the_worst_of_a_long_row_is_found_in_a_later_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One row of 10 cells in blocks of 3: the largest miss, in the fourth block, wins
    over an earlier smaller one; the first of two equal ones is named."""
    monkeypatch.setattr(tolerance_module, "BLOCK_CELLS", 3)
    expected: npt.NDArray[np.float64] = np.zeros((1, 10))
    found = expected.copy()
    found[0, 1], found[0, 9], found[0, 6] = 2.0, 5.0, 5.0
    result = compare(expected, found, TOLERANCE)
    assert result.worst == (0, 6)
    assert result.max_abs_delta == 5.0
    assert result.wrong.sum() == 3
