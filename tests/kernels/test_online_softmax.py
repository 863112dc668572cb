"""The one-pass online softmax (Milakov & Gimelshein 2018): its steps by the recurrence,
its end state the row's max and sum, its weights the two-pass ones, and no NaN where a
score is masked, alone, repeated or huge."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import FLOAT64_APPROX

from attntrace.errors import InputError
from attntrace.kernels.online_softmax import online_softmax

ARTICLE = [3.2, 4.0, 1.0, 6.2, 8.0]


def closed_form(values: list[float]) -> list[float]:
    """exp(x − max) / Σ exp(x − max), summed exactly (fsum); −inf weighs 0."""
    top = max(values)
    terms = [0.0 if v == -math.inf else math.exp(v - top) for v in values]
    total = math.fsum(terms)
    return [t / total for t in terms]


def test_the_articles_row_step_by_step() -> None:
    """The max climbs 3.2 → 4.0 → 6.2 → 8.0, and each climb rescales the sum."""
    result = online_softmax(ARTICLE)
    assert [s.m_new for s in result.steps] == [3.2, 4.0, 4.0, 6.2, 8.0]
    assert result.steps[0].m_old == -math.inf
    assert result.steps[0].d_old == 0.0
    assert result.steps[2].rescale == 1.0  # 1.0 leaves the max at 4.0
    assert result.steps[1].rescale == pytest.approx(math.exp(3.2 - 4.0), **FLOAT64_APPROX)
    assert result.steps[1].d_new == pytest.approx(math.exp(3.2 - 4.0) + 1.0, **FLOAT64_APPROX)
    for got, want in zip(result.weights, closed_form(ARTICLE), strict=True):
        assert got == pytest.approx(want, **FLOAT64_APPROX)
    assert result.weights[4] == pytest.approx(0.8384, abs=1e-4)


rows = st.lists(
    st.one_of(st.floats(-1e300, 1e300), st.just(-math.inf)), min_size=1, max_size=12
).filter(lambda row: any(v != -math.inf for v in row))


@given(rows)
def test_online_equals_two_pass_and_ends_at_max_and_sum(row: list[float]) -> None:
    result = online_softmax(row)
    top = max(row)
    assert result.max == top == result.two_pass_max
    terms = [0.0 if v == -math.inf else math.exp(v - top) for v in row]
    assert result.sum == pytest.approx(math.fsum(terms), **FLOAT64_APPROX)
    want = closed_form(row)
    for online, two_pass, exact in zip(result.weights, result.two_pass_weights, want, strict=True):
        assert not math.isnan(online)
        assert online == pytest.approx(exact, **FLOAT64_APPROX)
        assert two_pass == pytest.approx(exact, **FLOAT64_APPROX)
    assert result.max_difference <= FLOAT64_APPROX["rel"]


@given(rows)
def test_every_step_is_the_recurrence(row: list[float]) -> None:
    """m_new = max(m_old, x); d_new = d_old · exp(m_old − m_new) + exp(x − m_new);
    each step starts where the last ended."""
    result = online_softmax(row)
    m, d = -math.inf, 0.0
    for x, step in zip(row, result.steps, strict=True):
        assert (step.x, step.m_old, step.d_old) == (x, m, d)
        assert step.m_new == max(m, x)
        factor = 1.0 if step.m_new == m else math.exp(m - step.m_new)
        assert step.rescale == pytest.approx(factor, **FLOAT64_APPROX)
        added = 0.0 if x == -math.inf else math.exp(x - step.m_new)
        assert step.d_new == pytest.approx(d * factor + added, **FLOAT64_APPROX)
        assert 0.0 <= step.rescale <= 1.0
        m, d = step.m_new, step.d_new


@pytest.mark.parametrize(
    ("row", "weights"),
    [
        ([5.0], [1.0]),
        ([2.0, 2.0, 2.0, 2.0], [0.25] * 4),
        ([-math.inf, 0.0, -math.inf], [0.0, 1.0, 0.0]),
        ([-math.inf, -math.inf, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]),
        ([1e308, -1e308, 1e308], [0.5, 0.0, 0.5]),
    ],
    ids=["single", "all-equal", "masked", "masked-first", "huge"],
)
def test_edge_rows(row: list[float], weights: list[float]) -> None:
    result = online_softmax(row)
    assert list(result.weights) == pytest.approx(weights, **FLOAT64_APPROX)
    assert list(result.two_pass_weights) == pytest.approx(weights, **FLOAT64_APPROX)
    assert all(not math.isnan(s.rescale) and not math.isnan(s.d_new) for s in result.steps)


@pytest.mark.parametrize(
    "row",
    [[], [1.0, math.nan], [math.inf, 1.0], [-math.inf, -math.inf]],
    ids=["empty", "nan", "inf", "all-masked"],
)
def test_refuses_rows_without_a_softmax(row: list[float]) -> None:
    with pytest.raises(InputError):
        online_softmax(row)
