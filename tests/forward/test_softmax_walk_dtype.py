"""`softmax --dtype`'s core: every column of the walkthrough computed in float16,
bfloat16 or float32, against an independent computation written here (float16 by
struct.pack('e'), float32 by numpy's float32 cast, bfloat16 by rounding the binary
significand to 8 bits), and the first overflow found with the numbers its line states."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import FLOAT64_APPROX, LOW_PRECISION_SPACINGS

from attntrace.errors import InputError
from attntrace.forward.softmax_walk import walk
from attntrace.forward.softmax_walk_dtype import walk_in
from attntrace.kernel.precision import exp_overflow_threshold

ARTICLE = [3.2, 4.0, 1.0, 6.2, 8.0]
FLOAT16_MAX = 65504.0  # (2 − 2⁻¹⁰) · 2¹⁵


def f16(value: float) -> float:
    """The float16 nearest ``value`` (IEEE, ties to even), by Python's own half packing;
    past 65,504 plus half its spacing (65,520 on), ±inf."""
    if not math.isfinite(value):
        return value
    try:
        held: float = struct.unpack("<e", struct.pack("<e", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return held


def f32(value: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def bf16(value: float) -> float:
    """The bfloat16 nearest a normal ``value``: its significand rounded to 8 bits, ties to
    even (Python's round), and ±inf past 3.39e38's rounding boundary."""
    if value == 0.0 or not math.isfinite(value):
        return value
    mantissa, exponent = math.frexp(value)  # value = mantissa · 2**exponent, ½ ≤ |m| < 1
    held = math.ldexp(round(math.ldexp(mantissa, 8)), exponent - 8)
    return held if abs(held) <= math.ldexp(2 - 2**-7, 127) else math.copysign(math.inf, value)


ROUNDERS: dict[str, Callable[[float], float]] = {"float16": f16, "float32": f32, "bfloat16": bf16}


def exp_or_inf(x: float) -> float:
    if x == -math.inf:
        return 0.0
    return math.inf if x > 709.78 else math.exp(x)


def by_hand(values: list[float], rounded: Callable[[float], float]) -> dict[str, list[float]]:
    """The walkthrough by the rule, in plain loops: each value and step rounded once
    (the sum of two float16 values, a difference, a quotient, each exact or rounded once
    in float64 before the last rounding: 53 ≥ 2·24 + 2 bits, so no double rounding)."""
    x = [rounded(v) for v in values]
    naive = [rounded(exp_or_inf(v)) for v in x]
    naive_sum = 0.0
    for term in naive:
        naive_sum = rounded(naive_sum + term)
    top = max(x)
    shifted = [rounded(v - top) for v in x]
    exps = [rounded(exp_or_inf(z)) for z in shifted]
    total = 0.0
    for term in exps:
        total = rounded(total + term)
    weights = [rounded(e / total) for e in exps]
    return {
        "x": x,
        "naive": naive,
        "naive_sum": [naive_sum],
        "shifted": shifted,
        "exps": exps,
        "total": [total],
        "weights": weights,
    }


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_every_column_is_the_dtypes_by_the_rule(dtype: str) -> None:
    want = by_hand(ARTICLE, ROUNDERS[dtype])
    got = walk_in(ARTICLE, dtype)
    assert got.dtype == dtype
    assert list(got.values) == want["x"]
    assert list(got.naive_exp) == want["naive"]
    assert got.naive_sum == want["naive_sum"][0]
    assert list(got.shifted) == want["shifted"]
    assert list(got.exp_shifted) == want["exps"]
    assert got.sum_exp_shifted == want["total"][0]
    assert list(got.weights) == want["weights"]
    assert got.overflow is None


def test_float16_holds_the_articles_row_coarsely() -> None:
    """3.2 is 3.19921875 in float16 (2⁻⁸ apart near 3), and the shares sum to 1.0004."""
    got = walk_in(ARTICLE, "float16")
    assert got.values[0] == 3.19921875
    assert got.naive_sum == 3554.0  # 3555.56 in float64: float16's spacing there is 2
    assert math.fsum(got.weights) != pytest.approx(1.0, abs=1e-4)
    assert math.fsum(got.weights) == pytest.approx(1.0, abs=1e-3)


def test_float64_is_the_plain_walk() -> None:
    assert walk_in(ARTICLE, "float64") == walk(ARTICLE)


@pytest.mark.parametrize(
    ("below", "above", "dtype"), [(11.08, 11.09, "float16"), (88.72, 88.73, "float32")]
)
def test_the_naive_exp_overflows_exactly_past_the_threshold(
    below: float, above: float, dtype: str
) -> None:
    """In float16, 11.08 is held as 11.078125 and 11.09 as 11.09375, either side of
    ln 65,520 = 11.0901: the first's exp rounds to 64,736, the second's to inf."""
    rounded = ROUNDERS[dtype]
    assert rounded(below) < exp_overflow_threshold(dtype) < rounded(above)
    assert math.isfinite(rounded(math.exp(rounded(below))))
    assert math.isinf(rounded(math.exp(rounded(above))))
    got = walk_in([below, above], dtype)
    assert math.isfinite(got.naive_exp[0])
    assert math.isinf(got.naive_exp[1])
    assert all(math.isfinite(w) for w in got.weights)  # the stable way never sees exp > 1


def test_an_exp_past_float16s_largest_is_found_with_float64s_exact_value() -> None:
    got = walk_in([12.0, 1.0, 3.0], "float16")
    assert got.overflow is not None
    assert (got.overflow.kind, got.overflow.index, got.overflow.value) == ("exp", 0, 12.0)
    assert got.overflow.exact == pytest.approx(162754.791419, **FLOAT64_APPROX)
    assert got.overflow.largest == FLOAT16_MAX
    assert got.overflows
    assert math.isnan(got.naive_weights[0])
    assert got.naive_weights[1:] == (0.0, 0.0)  # a finite exp / inf
    assert got.weights[0] == 1.0  # 1 / (1 + 1.7e-5 + 1.2e-4) rounds to 1 in float16


def test_a_sum_past_the_largest_with_every_exp_finite() -> None:
    """exp(11) = 59,874 → 59,872 in float16; twice that is 119,744 > 65,504."""
    got = walk_in([11.0, 11.0], "float16")
    assert got.naive_exp == (59872.0, 59872.0)
    assert got.overflow is not None
    assert got.overflow.kind == "sum"
    assert got.overflow.exact == 119744.0
    assert got.naive_weights == (0.0, 0.0)
    assert got.weights == (0.5, 0.5)


def test_a_score_past_the_largest_rounds_to_inf_and_even_the_stable_way_fails() -> None:
    got = walk_in([70000.0, 1.0], "float16")
    assert got.values == (math.inf, 1.0)
    assert got.overflow is not None
    assert (got.overflow.kind, got.overflow.value) == ("input", 70000.0)
    assert math.isnan(got.shifted[0])  # inf − inf
    assert got.shifted[1] == -math.inf
    assert got.stable_fails
    assert all(math.isnan(w) for w in got.weights)


def test_a_score_below_minus_the_largest_weighs_nothing() -> None:
    got = walk_in([-70000.0, 1.0], "float16")
    assert got.values[0] == -math.inf
    assert got.overflow is not None
    assert got.overflow.kind == "input"
    assert got.weights == (0.0, 1.0)
    assert not got.stable_fails


def test_every_score_at_minus_inf_is_nan_both_ways() -> None:
    got = walk_in([-70000.0, -80000.0], "float16")
    assert got.stable_fails


def test_the_largest_float16_itself_is_held() -> None:
    """65,519 rounds to 65,504 (below the boundary 65,520): no input overflow."""
    got = walk_in([65519.0, 0.0], "float16")
    assert got.values[0] == FLOAT16_MAX
    assert got.overflow is not None
    assert got.overflow.kind == "exp"


def test_a_bad_dtype_is_refused() -> None:
    with pytest.raises(InputError, match="float16"):
        walk_in([1.0], "float8")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-10.0, 10.0), min_size=1, max_size=12))
def test_float16_rows_match_the_rule_and_stay_finite(values: list[float]) -> None:
    """|x| ≤ 10 < 11.09: no exp overflows (their sum may: 3 × exp(10) = 66,079 > 65,504);
    each weight is the rule's, within LOW_PRECISION_SPACINGS of float16 where numpy's
    exp and math.exp differ by an ulp at a float16 tie (never seen, allowed)."""
    want = by_hand(values, f16)
    got = walk_in(values, "float16")
    assert got.overflow is None or got.overflow.kind == "sum"
    assert (got.overflow is not None) == math.isinf(want["naive_sum"][0])
    for w, v in zip(got.weights, want["weights"], strict=True):
        assert 0.0 <= w <= 1.0
        assert abs(w - v) <= LOW_PRECISION_SPACINGS * 2**-11
