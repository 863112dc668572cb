"""The rules of docs/variants.md that the core's masks and the new attention stages
follow, each against a closed form or a loop written here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace.kernel import masks, ops


@given(st.integers(1, 12), st.integers(1, 14), st.integers(0, 4))
def test_a_window_hides_what_the_contract_says(n: int, window: int, sinks: int) -> None:
    shut = masks.hidden(range(n), range(n), causal=True, window=window, sinks=sinks)
    for i in range(n):
        for j in range(n):
            visible = j <= i and (i - j < window or j < sinks)
            assert shut[i, j] == (not visible)
            reason = masks.why_hidden(i, j, causal=True, window=window, sinks=sinks)
            assert (reason is None) == visible


def test_a_query_sees_itself_and_the_window_minus_one_before_it() -> None:
    # transformers' convention (sliding_window_overlay): query 600 of a 512-window sees 89 … 600
    shut = masks.hidden([600], range(601), causal=True, window=512)
    assert np.flatnonzero(~shut[0]).tolist() == list(range(89, 601))


def test_a_long_rows_hidden_keys_are_counted_by_reason() -> None:
    # query 600 of 601 tokens, a 512 window: keys 0 … 88 are out of it, none is later
    assert masks.hidden_counts(600, 601, causal=True, window=512) == (
        "89 keys hidden: out of the window (a query sees itself and the 511 before it)",
    )
    # query 300 of 601: 300 later keys, none out of the window (300 − 0 < 512)
    assert masks.hidden_counts(300, 601, causal=True, window=512) == (
        "300 later keys hidden: the future",
    )
    # query 30 of 36, window 3, one sink: keys 1 … 27 far, 31 … 35 later, key 0 kept
    assert masks.hidden_counts(30, 36, causal=True, window=3, sinks=1) == (
        "27 keys hidden: out of the window (a query sees itself and the 2 before it)",
        "5 later keys hidden: the future",
        "1 key kept: a sink, visible however far back",
    )


@given(st.integers(0, 20), st.integers(1, 22), st.integers(1, 6), st.integers(0, 3))
def test_the_counts_add_up_to_the_hidden_keys(
    query: int, keys: int, window: int, sinks: int
) -> None:
    query = min(query, keys - 1)
    far = sum(query - j >= window and j >= sinks for j in range(query + 1))
    later = keys - query - 1
    kept = sum(query - j >= window and j < sinks for j in range(query + 1))
    lines = masks.hidden_counts(query, keys, causal=True, window=window, sinks=sinks)
    plural = {count: "key" if count == 1 else "keys" for count in (far, later, kept)}
    expected = [
        *([f"{far} {plural[far]} hidden: out of the window"] if far else []),
        *([f"{later} later {plural[later]} hidden: the future"] if later else []),
        *([f"{kept} {plural[kept]} kept: a sink"] if kept else []),
    ]
    assert len(lines) == len(expected)
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)


def test_alibi_slopes_of_eight_heads_are_the_papers() -> None:
    assert masks.alibi_slopes(8) == [2.0**-k for k in range(1, 9)]


def test_alibi_slopes_of_a_non_power_of_two_follow_get_slopes() -> None:
    # ofirpress/attention_with_linear_biases get_slopes(6): the 4 slopes of 4 heads, then
    # every other one of 8 heads' slopes: 2^-1, 2^-3
    four = [2.0 ** (-8 * (k + 1) / 4) for k in range(4)]
    assert masks.alibi_slopes(6) == pytest.approx([*four, 2.0**-1, 2.0**-3], rel=1e-15)


def test_alibi_bias_is_minus_slope_times_distance() -> None:
    bias = masks.alibi_bias(range(3), range(3), 0.25)
    assert bias.tolist() == [[0, -0.25, -0.5], [-0.25, 0, -0.25], [-0.5, -0.25, 0]]


@given(st.lists(st.floats(-30, 30), min_size=1, max_size=8), st.floats(-10, 10))
def test_a_sink_takes_weight_and_the_rest_sums_to_one_minus_it(row: list[float], s: float) -> None:
    weights, sink = ops.softmax_with_sink(np.array([row]), s)
    total = sum(math.exp(x) for x in row) + math.exp(s)
    assert sink[0, 0] == pytest.approx(math.exp(s) / total, **FLOAT64_APPROX)
    for j, x in enumerate(row):
        assert weights[0, j] == pytest.approx(math.exp(x) / total, **FLOAT64_APPROX)


def test_softcap_bounds_every_logit() -> None:
    # tanh of 1131 is 1.0 in float64: a cap is reached, never passed
    Q = np.array([[40.0, 0.0], [0.0, -40.0]])
    head = ops.attention(Q, Q, np.eye(2), softcap=5.0)
    assert head.capped is not None
    assert np.all(np.abs(head.capped) <= 5.0)
    assert head.capped[0, 0] == 5.0
    expected = [[5 * math.tanh(q @ k / math.sqrt(2) / 5) for k in Q] for q in Q]
    np.testing.assert_allclose(head.capped, expected, **FLOAT64)
