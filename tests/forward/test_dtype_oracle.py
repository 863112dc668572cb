"""The low-precision casting rule (docs/kernels.md) against tests/naive_lowp.py.

naive_lowp is the rule written again from the contract in Python scalars and loops
(struct for float16 and float32, exact fractions for bfloat16), so every cell here is one
implementation held to another. The inputs are random and adversarial: ties of each
format, the float16 edge (65,504, 65,519, 65,520), subnormals, −0, scores past 65,504,
and bfloat16 ties that a float32 step would double-round.

Every rounding and every matrix product is IEEE arithmetic, the same bits on any machine,
so it is compared for **equality**, cell by cell (NaN with NaN, ±inf with itself; −0 and
0 count as equal: the contract says nothing of a zero's sign). The softmax alone is
compared within LOW_PRECISION_SPACINGS of the dtype: its exp is float64's rounded, and
numpy's exp may differ from math's by an ulp of float64, which beside a tie of the dtype
moves a rounded exp, and so a weight, by one spacing (tests/tolerances.py). Each stage of
attention is checked from the product's previous stage, so that one such exp does not
ripple into the stages after it; and end to end where the weights agree exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import naive_lowp as naive
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import LOW_PRECISION_SPACINGS

from attntrace.kernel import precision
from attntrace.kernel.casting import Cast
from attntrace.kernel.ops import rope_frequencies

LOW = ("float32", "float16", "bfloat16")
ACCUMULATE = ("float32", "dtype")
Rows = list[list[float]]


def rows_of(array: Any) -> Rows:
    return [[float(x) for x in row] for row in np.atleast_2d(np.asarray(array, dtype=np.float64))]


def same(x: float, y: float) -> bool:
    """Equal as IEEE values (−0 == 0), or both NaN."""
    return (math.isnan(x) and math.isnan(y)) or x == y


def assert_same(found: Any, expected: Rows, what: str) -> None:
    got = rows_of(found)
    assert len(got) == len(expected), what
    for i, (row, want) in enumerate(zip(got, expected, strict=True)):
        assert len(row) == len(want), what
        for j, (x, y) in enumerate(zip(row, want, strict=True)):
            assert same(x, y), f"{what}[{i}][{j}]: product {x!r}, oracle {y!r}"


def assert_within_spacings(found: Any, expected: Rows, dtype: str, what: str) -> None:
    """Equal, or finite and within LOW_PRECISION_SPACINGS of the dtype at the oracle's
    value (the softmax's exp: see the module docstring)."""
    got = rows_of(found)
    for i, (row, want) in enumerate(zip(got, expected, strict=True)):
        for j, (x, y) in enumerate(zip(row, want, strict=True)):
            if same(x, y):
                continue
            assert math.isfinite(x), f"{what}[{i}][{j}]: product {x!r}, oracle {y!r}"
            assert math.isfinite(y), f"{what}[{i}][{j}]: product {x!r}, oracle {y!r}"
            room = LOW_PRECISION_SPACINGS * naive.spacing(y, dtype)
            assert abs(x - y) <= room, f"{what}[{i}][{j}]: product {x!r}, oracle {y!r}"


# ---------------------------------------------------------------- adversarial values


def neighbours(dtype: str) -> list[float]:
    """Edges of each format: its largest and the overflow boundary, the smallest
    subnormal and normal, −0, and the float16 figures the contract names."""
    bits, emin, _ = naive.FORMATS[dtype]
    top = naive.largest(dtype)
    half_top = math.ldexp(1.0, naive.FORMATS[dtype][2] - bits)  # half the spacing at top
    tiny = math.ldexp(1.0, emin - bits + 1)
    normal = math.ldexp(1.0, emin)
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        top,
        -top,
        top + half_top,  # the boundary: a tie that goes to the even 2^(emax+1), inf
        math.nextafter(top + half_top, 0.0),  # just below it: the largest
        tiny,
        -tiny,
        tiny / 2,  # a tie between 0 and the smallest subnormal: to 0
        math.nextafter(tiny / 2, 1.0),  # just above it: the smallest subnormal
        1.5 * tiny,  # a tie between 1 and 2 quanta: to 2
        normal,
        math.nextafter(normal, 0.0),
        1.0 + naive.spacing(1.0, dtype) / 2,  # a tie at 1: to 1
        1.0 + 1.5 * naive.spacing(1.0, dtype),  # a tie: to 1 + 2 spacings
    ]
    if dtype == "float16":
        values += [65504.0, 65519.0, 65519.99, 65520.0, -65520.0, 65536.0, 70144.0]
    if dtype == "bfloat16":
        # float32 would round these onto a bfloat16 tie and then to even, the wrong way
        values += [
            1 + 2**-8 + 2**-30,
            -(1 + 2**-8 + 2**-30),
            1 + 3 * 2**-8 - 2**-30,
            3 * (1 + 2**-8 + 2**-33),
        ]
    return values


@st.composite
def near_tie(draw: st.DrawFn, dtype: str) -> float:
    """A double at, or a few float64 ulps off, a midpoint of two neighbouring values of
    the dtype, anywhere in its range: where rounding and double rounding go wrong."""
    bits, emin, emax = naive.FORMATS[dtype]
    e = draw(st.integers(emin - 2, emax))
    whole = draw(st.integers(2 ** (bits - 1), 2**bits - 1))  # a significand
    mid = math.ldexp(whole + 0.5, e - bits + 1)
    ulps = draw(st.sampled_from([0, 1, -1, 2, -2, 2**20, -(2**20), 2**28, -(2**28)]))
    x = mid
    for _ in range(min(abs(ulps), 3)):
        x = math.nextafter(x, math.copysign(math.inf, ulps))
    if abs(ulps) > 3:
        x = mid * (1 + math.copysign(2.0**-52, ulps) * abs(ulps) / 2**20)
    return -x if draw(st.booleans()) else x


def any_double(dtype: str) -> st.SearchStrategy[float]:
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(-1e6, 1e6),
        st.sampled_from(neighbours(dtype)),
        near_tie(dtype),
    )


def stored(dtype: str, scale: float) -> st.SearchStrategy[float]:
    """A finite value of the dtype, mostly of the size ``scale``, with the edges."""
    plain = st.floats(-scale, scale, allow_subnormal=True).map(lambda x: naive.round_to(x, dtype))
    edges = st.sampled_from(
        [v for v in neighbours(dtype) if math.isfinite(naive.round_to(v, dtype))]
    )
    return st.one_of(plain, plain, plain, edges.map(lambda x: naive.round_to(x, dtype)))


@st.composite
def matrix(draw: st.DrawFn, dtype: str, rows: int, cols: int, scale: float) -> Rows:
    return [[draw(stored(dtype, scale)) for _ in range(cols)] for _ in range(rows)]


dtypes = st.sampled_from(LOW)
accumulates = st.sampled_from(ACCUMULATE)
scales = st.sampled_from([1.0, 8.0, 300.0, 1e4])


def softmax_dtypes(dtype: str) -> list[str]:
    return ["float32"] if dtype == "float32" else ["float32", dtype]


# ---------------------------------------------------------------- rounding


@pytest.mark.parametrize("dtype", LOW)
def test_struct_rounding_is_the_exact_one(dtype: str) -> None:
    """The oracle's two roundings agree: struct (float16, float32) with fractions."""
    for x in neighbours(dtype) + [v for d in LOW for v in neighbours(d)]:
        assert same(naive.round_to(x, dtype), naive.round_fraction(x, dtype)), x


@given(dtype=dtypes, data=st.data())
def test_round_to_is_the_nearest_value(dtype: str, data: st.DataObject) -> None:
    x = data.draw(any_double(dtype))
    want = naive.round_fraction(x, dtype)
    got = float(precision.round_to(np.array([x]), dtype)[0])
    assert same(got, want), f"round_to({x!r}, {dtype}) = {got!r}, nearest is {want!r}"
    assert math.copysign(1.0, got) == math.copysign(1.0, want) or math.isnan(want), "sign of zero"
    assert same(naive.round_to(x, dtype), want)


@pytest.mark.parametrize("dtype", LOW)
def test_round_to_on_every_edge(dtype: str) -> None:
    values = [v for d in LOW for v in neighbours(d)]
    got = precision.round_to(np.array(values), dtype)
    assert_same([got], [[naive.round_fraction(v, dtype) for v in values]], f"round_to {dtype}")


def test_bfloat16_is_rounded_from_the_double_not_from_float32() -> None:
    """1 + 2⁻⁸ + 2⁻³⁰ is above the bfloat16 tie 1 + 2⁻⁸: its nearest is 1 + 2⁻⁷. Through
    float32 (1 + 2⁻⁸, then ties to even) it would be 1."""
    x = 1 + 2**-8 + 2**-30
    assert np.float32(x) == 1 + 2**-8  # what a float32 step would see
    assert float(precision.round_to(np.array([x]), "bfloat16")[0]) == 1 + 2**-7


@pytest.mark.parametrize("dtype", LOW)
def test_largest_and_spacing(dtype: str) -> None:
    assert precision.largest(dtype) == naive.largest(dtype)
    values = [v for v in neighbours(dtype) if math.isfinite(v) and v != 0]
    got = precision.spacing(np.array(values), dtype)
    assert_same([got], [[naive.spacing(v, dtype) for v in values]], f"spacing {dtype}")


# ---------------------------------------------------------------- add, matmul


@given(dtype=dtypes, data=st.data())
def test_add_in_of_the_dtypes_values(dtype: str, data: st.DataObject) -> None:
    a = data.draw(st.lists(stored(dtype, data.draw(scales)), min_size=1, max_size=6))
    b = data.draw(st.lists(stored(dtype, data.draw(scales)), min_size=len(a), max_size=len(a)))
    got = precision.add_in(np.array(a), np.array(b), dtype)
    assert_same([got], naive.add([a], [b], dtype), f"add_in {dtype}")
    exact = [
        [naive.round_fraction(Fraction(x) + Fraction(y), dtype) for x, y in zip(a, b, strict=True)]
    ]
    assert_same([got], exact, f"add_in {dtype} (exact)")


@given(dtype=dtypes, a=st.floats(-1e30, 1e30), b=st.floats(-1e30, 1e30))
def test_add_in_is_one_rounding_of_the_exact_sum(dtype: str, a: float, b: float) -> None:
    """add_in claims TwoSum: even of doubles that are not the dtype's values, the result
    is the nearest value of the dtype to the exact a + b (not the float64 sum's)."""
    got = float(precision.add_in(np.array([a]), np.array([b]), dtype)[0])
    want = naive.round_fraction(Fraction(a) + Fraction(b), dtype)
    assert same(got, want), f"add_in({a!r}, {b!r}, {dtype}) = {got!r}, exact {want!r}"


@given(
    dtype=dtypes,
    accumulate=accumulates,
    shape=st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 3)),
    scale=scales,
    data=st.data(),
)
def test_matmul_in(
    dtype: str, accumulate: str, shape: tuple[int, int, int], scale: float, data: st.DataObject
) -> None:
    n, k, m = shape
    a = data.draw(matrix(dtype, n, k, scale))
    b = data.draw(matrix(dtype, k, m, scale))
    want = naive.matmul(a, b, dtype, accumulate)
    assert_same(
        precision.matmul_in(np.array(a), np.array(b), dtype, accumulate),
        want,
        f"matmul_in {dtype} {accumulate}",
    )
    cast = Cast.of(dtype, accumulate=accumulate)
    assert_same(cast.matmul(np.array(a), np.array(b)), want, f"Cast.matmul {dtype} {accumulate}")


@given(dtype=dtypes, accumulate=accumulates, data=st.data())
def test_matmul_rounds_its_inputs_first(dtype: str, accumulate: str, data: st.DataObject) -> None:
    """Doubles that are not the dtype's values are rounded to it first (rule 1)."""
    a = data.draw(
        st.lists(st.lists(st.floats(-100, 100), min_size=3, max_size=3), min_size=2, max_size=2)
    )
    b = data.draw(
        st.lists(st.lists(st.floats(-100, 100), min_size=2, max_size=2), min_size=3, max_size=3)
    )
    want = naive.matmul(a, b, dtype, accumulate)
    assert_same(precision.matmul_in(np.array(a), np.array(b), dtype, accumulate), want, "matmul_in")


@pytest.mark.parametrize("accumulate", ACCUMULATE)
def test_float16_sum_past_65504(accumulate: str) -> None:
    """Products of 256 · 256 = 65,536 > 65,504: under float32 accumulation the sum is
    finite until the end and rounds to inf there; in float16 each product is already inf."""
    a, b = [[256.0, 256.0]], [[256.0], [-256.0]]
    want = naive.matmul(a, b, "float16", accumulate)
    assert want == [[0.0]] if accumulate == "float32" else math.isnan(want[0][0])
    assert_same(
        precision.matmul_in(np.array(a), np.array(b), "float16", accumulate), want, "matmul_in"
    )


@given(
    dtype=dtypes,
    accumulate=accumulates,
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3)),
    scale=scales,
    data=st.data(),
)
def test_linear(
    dtype: str, accumulate: str, shape: tuple[int, int, int], scale: float, data: st.DataObject
) -> None:
    n, k, m = shape
    x = data.draw(matrix(dtype, n, k, scale))
    w = data.draw(matrix(dtype, k, m, scale))
    bias = data.draw(st.none() | matrix(dtype, 1, m, scale * scale).map(lambda r: r[0]))
    cast = Cast.of(dtype, accumulate=accumulate)
    got = cast.linear(np.array(x), np.array(w), None if bias is None else np.array(bias))
    assert_same(
        got, naive.linear(x, w, bias, dtype, accumulate), f"Cast.linear {dtype} {accumulate}"
    )
    assert_same(cast.round(np.array(x)), x, "Cast.round of the dtype's values")


# ---------------------------------------------------------------- softmax


def score_value(dtype: str) -> st.SearchStrategy[float]:
    return st.one_of(
        st.floats(-20, 20),
        st.floats(-1e5, 1e5),
        st.sampled_from(
            [-math.inf, 11.08, 11.09, 12.0, 88.7, 88.8, 65504.0, 65520.0, 70144.0, -70144.0, 1e39]
        ),
        near_tie(dtype).filter(lambda x: abs(x) < 1e6),
    )


@given(dtype=dtypes, stable=st.booleans(), data=st.data())
def test_softmax_in(dtype: str, stable: bool, data: st.DataObject) -> None:
    softmax_dtype = data.draw(st.sampled_from(softmax_dtypes(dtype)))
    rows = data.draw(
        st.lists(st.lists(score_value(dtype), min_size=3, max_size=3), min_size=1, max_size=3)
    )
    want = [naive.softmax_row(r, dtype, softmax_dtype, stable=stable) for r in rows]
    got = precision.softmax_in(np.array(rows), dtype, softmax_dtype, stable=stable)
    assert_within_spacings(
        got, want, dtype, f"softmax_in {dtype} in {softmax_dtype} stable={stable}"
    )


@pytest.mark.parametrize("dtype", LOW)
def test_softmax_of_rows_with_no_finite_max(dtype: str) -> None:
    """A row of −∞ (every score overflowed to −∞) has max −∞ and −∞ − (−∞) = NaN; a row
    with +∞ has inf − inf = NaN at the max and 0 elsewhere, before the division by NaN."""
    rows = [[-math.inf, -math.inf], [math.inf, 1.0], [math.nan, 1.0]]
    for sd in softmax_dtypes(dtype):
        want = [naive.softmax_row(r, dtype, sd) for r in rows]
        assert all(math.isnan(w) for row in want for w in row)
        assert_same(precision.softmax_in(np.array(rows), dtype, sd), want, f"softmax {dtype} {sd}")


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@given(dtype=dtypes, data=st.data())
def test_cast_add(dtype: str, data: st.DataObject) -> None:
    a = data.draw(matrix(dtype, 2, 3, data.draw(scales)))
    b = data.draw(matrix(dtype, 2, 3, data.draw(scales)))
    assert_same(Cast.of(dtype).add(np.array(a), np.array(b)), naive.add(a, b, dtype), "Cast.add")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_naive_softmax_overflows_where_stable_does_not(dtype: str) -> None:
    row = [3.2, 4.0, 12.0]
    naive_row = naive.softmax_row(row, dtype, dtype, stable=False)
    stable_row = naive.softmax_row(row, dtype, dtype)
    got_naive = precision.softmax_in(np.array([row]), dtype, dtype, stable=False)
    got_stable = precision.softmax_in(np.array([row]), dtype, dtype)
    assert_within_spacings(got_naive, [naive_row], dtype, "naive")
    assert_within_spacings(got_stable, [stable_row], dtype, "stable")
    if dtype == "float16":  # exp(12) = 162,755 > 65,504
        assert math.isnan(naive_row[2])
        assert naive_row[0] == 0.0
    assert all(math.isfinite(w) for w in stable_row)


# ---------------------------------------------------------------- attention


@st.composite
def heads(draw: st.DrawFn, dtype: str) -> tuple[Rows, Rows, Rows, bool]:
    n = draw(st.integers(1, 4))
    m = draw(st.integers(n, 5))
    d = draw(st.sampled_from([1, 2, 3, 4]))
    scale = draw(st.sampled_from([1.0, 4.0, 300.0]))  # 300² · 4 = 360,000: past 65,504
    causal = draw(st.booleans())
    return (
        draw(matrix(dtype, n, d, scale)),
        draw(matrix(dtype, m, d, scale)),
        draw(matrix(dtype, m, draw(st.integers(1, 3)), scale)),
        causal,
    )


def check_attention(cast: Cast, Q: Rows, K: Rows, V: Rows, causal: bool) -> None:
    dtype, sd, acc = cast.dtype, cast.softmax_dtype, cast.accumulate
    what = f"{dtype} softmax {sd} accumulate {acc} causal={causal}"
    got = cast.attention(np.array(Q), np.array(K), np.array(V), causal=causal)
    want = naive.attention(Q, K, V, dtype, sd, acc, causal=causal)
    # each stage from the product's stage before it
    assert_same(got.scores, want["scores"], f"scores {what}")
    root = math.sqrt(len(Q[0]))
    assert_same(
        got.scaled,
        [[naive.round_to(s / root, dtype) for s in row] for row in rows_of(got.scores)],
        f"scaled {what}",
    )
    scaled = rows_of(got.scaled)
    n, m = len(scaled), len(scaled[0])
    masked = [
        [-math.inf if causal and naive.causal_hidden(i, j, n, m) else s for j, s in enumerate(r)]
        for i, r in enumerate(scaled)
    ]
    if causal:
        assert got.masked is not None
        assert_same(got.masked, masked, f"masked {what}")
    else:
        assert got.masked is None
    weights = [naive.softmax_row(r, dtype, sd) for r in masked]
    assert_within_spacings(got.softmax, weights, dtype, f"softmax {what}")
    assert_same(got.output, naive.matmul(rows_of(got.softmax), V, dtype, acc), f"output {what}")
    # end to end, where no exp differed
    if all(
        same(x, y)
        for r, w in zip(rows_of(got.softmax), want["softmax"], strict=True)
        for x, y in zip(r, w, strict=True)
    ):
        assert_same(got.output, want["output"], f"output end to end {what}")


@given(dtype=dtypes, accumulate=accumulates, data=st.data())
def test_attention(dtype: str, accumulate: str, data: st.DataObject) -> None:
    Q, K, V, causal = data.draw(heads(dtype))
    softmax_dtype = data.draw(st.sampled_from(softmax_dtypes(dtype)))
    check_attention(Cast.of(dtype, softmax_dtype, accumulate), Q, K, V, causal)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("accumulate", ACCUMULATE)
def test_attention_scores_past_65504(dtype: str, accumulate: str) -> None:
    """A score of 2 · 256 · 256 = 131,072 is inf in float16; its row's softmax NaN."""
    Q = [[256.0, 256.0], [1.0, 0.5]]
    K = [[256.0, 256.0], [0.25, -1.0]]
    V = [[1.0, 2.0], [3.0, 4.0]]
    for sd in softmax_dtypes(dtype):
        for causal in (False, True):
            check_attention(Cast.of(dtype, sd, accumulate), Q, K, V, causal)


# ---------------------------------------------------------------- RoPE


@given(
    dtype=dtypes,
    pairing=st.sampled_from(["half", "interleaved"]),
    base=st.sampled_from([10000.0, 500000.0, 10.0]),
    data=st.data(),
)
def test_rope(dtype: str, pairing: str, base: float, data: st.DataObject) -> None:
    """Each turned value is the nearest value of the dtype to the exact x·cos − y·sin,
    on rows whose values lie up to 2⁶⁰ apart: two products more than 2⁵³ apart are the
    double rounding test_rope_far_apart_terms pins (found by this test with −2⁻⁵²
    beside 15, and 2⁻¹³³ beside 440, before Cast.rope rounded once)."""
    n = data.draw(st.integers(1, 4))
    width = data.draw(st.sampled_from([2, 4, 6]))
    scale = data.draw(scales)
    size = st.floats(scale * 2.0**-60, scale) | st.just(0.0)
    signed = st.tuples(size, st.booleans()).map(lambda t: -t[0] if t[1] else t[0])
    values = signed.map(lambda x: naive.round_to(x, dtype))
    rows = [[data.draw(values) for _ in range(width)] for _ in range(n)]
    positions = data.draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n))
    at = np.array(positions, dtype=np.int64)
    got = Cast.of(dtype).rope(np.array(rows), at, rope_frequencies(width, base), pairing)
    assert_same(got, naive.rope(rows, positions, base, dtype, pairing), f"rope {dtype} {pairing}")


@pytest.mark.parametrize(
    ("dtype", "row", "position", "pairing", "base"),
    [
        # 3·2¹⁰⁰ · round(cos 25) = 3·2¹⁰⁰ · 127/128 is a bfloat16 tie; −2⁻¹³³ · sin 25 > 0
        ("bfloat16", [3 * 2.0**100, 2.0**-133], 25, "half", 10000.0),
        (
            "float32",
            [3 * 2.0**90, 2.0**-149],
            3,
            "half",
            10000.0,
        ),  # 3 · round(cos 3): a float32 tie
        # found by hypothesis (test_rope), base 10: θ = 212 / √10; 440 · round(sin θ) =
        # −385, a tie of bfloat16 (spacing 2 there), and the subnormal 2⁻¹³³ · round(cos θ)
        # < 0 puts the exact value below it: −386, not the even −384
        ("bfloat16", [0.0, 0.0, 440.0, 2.0**-133], 212, "interleaved", 10.0),
        # and with no subnormal: 15 · round(sin θ) a tie, −2⁻⁵² beside it
        ("bfloat16", [0.0, 0.0, -(2.0**-52), 15.0], 1714, "interleaved", 500000.0),
    ],
)
def test_rope_far_apart_terms(
    dtype: str, row: list[float], position: int, pairing: str, base: float
) -> None:
    want = naive.rope([row], [position], base, dtype, pairing)
    at = np.array([position], dtype=np.int64)
    got = Cast.of(dtype).rope(np.array([row]), at, rope_frequencies(len(row), base), pairing)
    assert_same(got, want, f"rope {dtype}")
