"""Hypothesis invariants of the stable softmax and of attention."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from naive import naive_softmax_row
from tolerances import FLOAT64, OFFSET

from attntrace.forward.attention import trace_block
from attntrace.kernel.ops import softmax
from attntrace.kernel.spec import ModelSpec

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def matrices(max_rows: int = 6, max_cols: int = 8) -> st.SearchStrategy[npt.NDArray[Any]]:
    shapes = st.tuples(st.integers(1, max_rows), st.integers(1, max_cols))
    return shapes.flatmap(lambda shape: arrays(np.float64, shape, elements=finite))


@given(matrices())
def test_rows_sum_to_one_and_weights_are_probabilities(scores: npt.NDArray[Any]) -> None:
    weights = softmax(scores)
    assert np.all(np.isfinite(weights))
    assert np.all((weights >= 0) & (weights <= 1))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, **FLOAT64)


@given(matrices(), st.floats(min_value=-1e4, max_value=1e4, allow_nan=False))
def test_adding_a_constant_to_a_row_changes_nothing(scores: npt.NDArray[Any], shift: float) -> None:
    np.testing.assert_allclose(softmax(scores + shift), softmax(scores), **OFFSET)


@given(matrices())
def test_matches_the_loop_softmax(scores: npt.NDArray[Any]) -> None:
    expected = [naive_softmax_row(row) for row in scores.tolist()]
    np.testing.assert_allclose(softmax(scores), expected, **FLOAT64)


@given(matrices())
def test_order_is_kept(scores: npt.NDArray[Any]) -> None:
    """A larger score never gets a smaller weight."""
    weights = softmax(scores)
    for s_row, w_row in zip(scores, weights, strict=True):
        order = np.argsort(s_row, kind="stable")
        assert np.all(np.diff(w_row[order]) >= -1e-15)


def test_no_overflow_for_scores_like_800_or_1e5() -> None:
    with np.errstate(over="raise", invalid="raise"):
        weights = softmax(np.array([[800.0, 799.0, 1.0], [1e5, 1e5, -1e5], [1e300, 0.0, -1e300]]))
    # 800 vs 799: weights e/(1+e) and 1/(1+e); the naive exp(800) would be inf.
    assert math.isclose(weights[0, 0], math.e / (1 + math.e), rel_tol=1e-15)
    assert math.isclose(weights[0, 1], 1 / (1 + math.e), rel_tol=1e-15)
    np.testing.assert_allclose(weights[1], [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(weights[2], [1.0, 0.0, 0.0])


@given(
    st.integers(1, 5).flatmap(
        lambda d: st.tuples(
            arrays(np.float64, (4, d), elements=st.floats(-10, 10)),
            arrays(np.float64, (d, 3), elements=st.floats(-10, 10)),
            arrays(np.float64, (d, 3), elements=st.floats(-10, 10)),
            arrays(np.float64, (d, 2), elements=st.floats(-10, 10)),
        )
    )
)
def test_attention_output_rows_are_convex_combinations_of_values(
    parts: tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]],
) -> None:
    x, wq, wk, wv = parts
    model = ModelSpec({f"t{i}": row for i, row in enumerate(x)}, wq, wk, wv)
    trace = trace_block(model, ["t0", "t1", "t2", "t3"])
    v, out = trace["V"].data, trace["output"].data
    assert np.all(out <= v.max(axis=0) + 1e-9)
    assert np.all(out >= v.min(axis=0) - 1e-9)


def test_integer_scores_are_taken_as_floats() -> None:
    from attntrace.kernel.ops import softmax

    weights = softmax(np.array([[1, 2, 3]]))
    e = np.exp([-2.0, -1.0, 0.0])
    np.testing.assert_allclose(weights, [e / e.sum()], **FLOAT64)
