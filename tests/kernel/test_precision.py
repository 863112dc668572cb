"""Rounding to float32, float16 and bfloat16, and the casting rule of matmul and softmax,
against roundings written here independently: exact rational arithmetic (fractions) for
every format, the classic float32-bits rule for bfloat16 (struct), numpy's own float16
and float32 casts, and ml_dtypes where it is installed.

The rounding and the matmul rule are exact (each operation rounded once, as IEEE 754
defines it), so they are compared for equality: the same bits on every IEEE machine. The
softmax uses exp, which is compared within LOW_PRECISION_SPACINGS of the dtype."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import LOW_PRECISION_SPACINGS

from attntrace.errors import InputError
from attntrace.kernel.precision import (
    DTYPES,
    add_in,
    epsilon,
    exp_overflow_threshold,
    largest,
    matmul_in,
    round_to,
    smallest_subnormal,
    softmax_in,
    spacing,
)

# (significant bits, smallest normal exponent, largest exponent), from IEEE 754 and
# Google's bfloat16: written here, not taken from the code.
PARAMETERS = {"float32": (24, -126, 127), "float16": (11, -14, 15), "bfloat16": (8, -126, 127)}
LOW = tuple(PARAMETERS)


def reference(value: float | Fraction, dtype: str) -> float:
    """The nearest value of the format to ``value`` in exact rational arithmetic: ties to
    an even multiple of the quantum, inf from largest + quantum/2 on, zero's sign kept."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return value
    bits, emin, emax = PARAMETERS[dtype]
    exact = Fraction(value)
    sign = -1 if exact < 0 or (isinstance(value, float) and math.copysign(1, value) < 0) else 1
    size = abs(exact)
    if size == 0:
        return math.copysign(0.0, sign)
    e = size.numerator.bit_length() - size.denominator.bit_length()
    while Fraction(2) ** e > size:
        e -= 1
    while Fraction(2) ** (e + 1) <= size:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - bits + 1)
    count = size / quantum
    whole = math.floor(count)
    rest = count - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    rounded = whole * quantum
    if rounded > (2 - Fraction(2) ** (1 - bits)) * Fraction(2) ** emax:
        return sign * math.inf
    return math.copysign(float(rounded), sign)


def bfloat16_by_bits(pattern: int) -> float:
    """bfloat16 of the float32 with these bits: add 0x7FFF plus the kept part's last bit
    and drop the low 16 bits (round to nearest even; carries into the exponent reach inf);
    NaN stays NaN."""
    (value,) = struct.unpack("<f", struct.pack("<I", pattern))
    if math.isnan(value):
        return math.nan
    kept = ((pattern + 0x7FFF + ((pattern >> 16) & 1)) >> 16) & 0xFFFF
    (out,) = struct.unpack("<f", struct.pack("<I", kept << 16))
    return float(out)


def float32_of(pattern: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", pattern))[0])


def same(a: float, b: float) -> bool:
    """Equal as values and in the sign of zero, NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


# Every class of float32 pattern: +/− zero, subnormals, normals, the largest, inf, NaN,
# and the ties of bfloat16 (low 16 bits exactly 0x8000, kept part odd and even).
CLASSES = [
    0x00000000,
    0x80000000,
    0x00000001,
    0x00008000,
    0x00018000,
    0x007FFFFF,
    0x00800000,
    0x3F800000,
    0x3F808000,
    0x3F818000,
    0x3F808001,
    0x3F807FFF,
    0x7F7F7FFF,
    0x7F7F8000,
    0x7F7FFFFF,
    0xFF7FFFFF,
    0x7F800000,
    0xFF800000,
    0x7FC00000,
    0xFFC00001,
    0x7F800001,
]


@pytest.mark.parametrize("pattern", CLASSES, ids=[f"{p:08x}" for p in CLASSES])
def test_bfloat16_of_each_float32_class(pattern: int) -> None:
    value = float32_of(pattern)
    got = float(round_to(value, "bfloat16"))
    assert same(got, bfloat16_by_bits(pattern))
    assert same(got, reference(value, "bfloat16"))


@given(st.integers(0, 2**32 - 1))
def test_bfloat16_of_float32_patterns(pattern: int) -> None:
    value = float32_of(pattern)
    got = float(round_to(value, "bfloat16"))
    assert same(got, bfloat16_by_bits(pattern))
    assert same(got, reference(value, "bfloat16"))


@given(st.integers(0, 2**32 - 1))
def test_float16_and_float32_of_float32_patterns(pattern: int) -> None:
    value = float32_of(pattern)
    for dtype in ("float16", "float32"):
        assert same(float(round_to(value, dtype)), reference(value, dtype))


@given(st.floats(width=64, allow_nan=True, allow_infinity=True))
def test_every_format_of_float64_values(value: float) -> None:
    with np.errstate(over="ignore"):
        numpy_casts: dict[str, float] = {
            "float16": float(np.float16(value)),
            "float32": float(np.float32(value)),
        }
    for dtype in LOW:
        got = float(round_to(value, dtype))
        assert same(got, reference(value, dtype))
        if dtype in numpy_casts:  # numpy rounds a float64 once to these
            assert same(got, numpy_casts[dtype])


@st.composite
def ties(draw: st.DrawFn) -> tuple[float, str]:
    """A value exactly halfway between two neighbours of a format, or one float64 step
    beside such a halfway point: the cases a rounding gets wrong first."""
    dtype = draw(st.sampled_from(LOW))
    bits, emin, emax = PARAMETERS[dtype]
    e = draw(st.integers(emin - 1, emax))
    kept = draw(st.integers(0, 2**bits - 1))
    value = math.ldexp(2 * kept + 1, max(e, emin) - bits)
    if draw(st.booleans()):
        value = math.nextafter(value, draw(st.sampled_from([math.inf, -math.inf])))
    return (-value if draw(st.booleans()) else value), dtype


@given(ties())
def test_ties_and_their_neighbours(case: tuple[float, str]) -> None:
    value, dtype = case
    assert same(float(round_to(value, dtype)), reference(value, dtype))


def test_float16_overflows_past_its_largest_plus_half_a_spacing() -> None:
    assert largest("float16") == 65504.0
    got = round_to([65519.0, 65519.999, 65520.0, -65520.0, 1e6], "float16")
    assert got.tolist() == [65504.0, 65504.0, math.inf, -math.inf, math.inf]


def test_the_formats_figures() -> None:
    assert largest("bfloat16") == float((2 - Fraction(2) ** -7) * Fraction(2) ** 127)
    assert largest("float32") == float(np.finfo(np.float32).max)
    assert epsilon("float16") == 2.0**-10 == float(np.finfo(np.float16).eps)
    assert epsilon("bfloat16") == 2.0**-7
    assert epsilon("float32") == float(np.finfo(np.float32).eps)
    assert smallest_subnormal("float16") == 2.0**-24
    assert smallest_subnormal("bfloat16") == 2.0**-133
    assert spacing([1.0, 1.5, 2.0, 1e-40], "bfloat16").tolist() == [2**-7, 2**-7, 2**-6, 2**-133]
    assert math.isnan(float(spacing(math.inf, "float16")))
    assert DTYPES[0] == "float64"


@pytest.mark.parametrize("dtype", LOW)
def test_exp_overflows_at_the_threshold(dtype: str) -> None:
    """exp(x) stays finite just below the threshold and is inf just above it."""
    t = exp_overflow_threshold(dtype)
    below, above = t - 1e-9, t + 1e-9
    assert math.isfinite(reference(Fraction(math.exp(below)), dtype))
    assert reference(Fraction(math.exp(above)), dtype) == math.inf
    expected = {"float16": 11.0901, "bfloat16": 88.7209, "float32": 88.7228}[dtype]
    assert t == pytest.approx(expected, abs=1e-4)


def test_a_bad_dtype_is_one_input_error() -> None:
    with pytest.raises(InputError, match="float16"):
        round_to([1.0], "float8")
    with pytest.raises(InputError, match="accumulate"):
        matmul_in([[1.0]], [[1.0]], "float16", accumulate="float64")
    with pytest.raises(InputError, match="k × n"):
        matmul_in([[1.0, 2.0]], [[1.0, 2.0]], "float16")


@given(st.floats(-1e6, 1e6, width=32), st.floats(-1e6, 1e6, width=32), st.sampled_from(LOW))
def test_add_in_rounds_the_exact_sum_once(a: float, b: float, dtype: str) -> None:
    x, y = reference(a, dtype), reference(b, dtype)
    if math.isinf(x) or math.isinf(y):
        return
    got = float(add_in(x, y, dtype))
    assert same(got, reference(Fraction(x) + Fraction(y), dtype)) or (got == 0.0 == x + y)


def loop_matmul(
    a: list[list[float]], b: list[list[float]], dtype: str, into: str
) -> list[list[float]]:
    """The stated rule by hand: inputs rounded to dtype, each product and each partial
    sum (k in turn) rounded to ``into``, the sum rounded to dtype."""
    x = [[reference(v, dtype) for v in row] for row in a]
    y = [[reference(v, dtype) for v in row] for row in b]
    out = []
    for i in range(len(x)):
        row = []
        for j in range(len(y[0])):
            acc = 0.0
            for k in range(len(y)):
                term = reference(Fraction(x[i][k]) * Fraction(y[k][j]), into)
                acc = reference(Fraction(acc) + Fraction(term), into)
            row.append(reference(acc, dtype))
        out.append(row)
    return out


def matrix(rows: int, columns: int) -> st.SearchStrategy[list[list[float]]]:
    """Entries small enough that no float16 sum of 6 products overflows."""
    row = st.lists(st.floats(-100, 100), min_size=columns, max_size=columns)
    return st.lists(row, min_size=rows, max_size=rows)


matrices = st.tuples(st.integers(1, 4), st.integers(1, 6)).flatmap(
    lambda mk: st.tuples(matrix(mk[0], mk[1]), matrix(mk[1], 2))
)


@given(matrices, st.sampled_from(LOW), st.sampled_from(["float32", "dtype"]))
def test_matmul_follows_the_stated_rule(
    pair: tuple[list[list[float]], list[list[float]]], dtype: str, accumulate: str
) -> None:
    a, b = pair
    into = "float32" if accumulate == "float32" else dtype
    got = matmul_in(np.array(a), np.array(b), dtype, accumulate)
    np.testing.assert_array_equal(got, np.array(loop_matmul(a, b, dtype, into)))


def test_float16_accumulation_loses_what_float32_keeps() -> None:
    """1 + 2⁻¹¹ is a tie in float16 and rounds back to 1, four times over; float32 keeps
    every 2⁻¹¹ and the sum 1 + 2⁻⁹ is a float16 value."""
    a = [[1.0, 2.0**-11, 2.0**-11, 2.0**-11, 2.0**-11]]
    b = [[1.0]] * 5
    assert matmul_in(a, b, "float16", "float32").tolist() == [[1.0 + 2.0**-9]]
    assert matmul_in(a, b, "float16", "dtype").tolist() == [[1.0]]
    assert matmul_in(a, b, "float64").tolist() == [[1.0 + 2.0**-9]]


def test_the_naive_float16_softmax_overflows_at_a_score_of_12() -> None:
    """exp(12) = 162754.8 > 65504: naive in float16 that weight is inf / inf = NaN and the
    others 0; stable, exp(12 − 12) = 1 and every weight is finite."""
    scores = [[12.0, 1.0, 0.0]]
    naive = softmax_in(scores, "float16", softmax_dtype="float16", stable=False)
    assert math.isnan(naive[0, 0])
    assert naive[0, 1:].tolist() == [0.0, 0.0]
    stable = softmax_in(scores, "float16", softmax_dtype="float16", stable=True)
    assert np.all(np.isfinite(stable))
    # in float32 (PyTorch's upcast) even the naive one survives: exp(12) fits
    assert np.all(np.isfinite(softmax_in(scores, "float16", "float32", stable=False)))


def loop_softmax(row: list[float], dtype: str, inner: str, stable: bool) -> list[float]:
    """The stated softmax rule by hand, in fractions: round to dtype, then in ``inner``
    each of x − m, exp, the running sum and the quotient rounded once, then to dtype."""
    x = [reference(reference(v, dtype), inner) for v in row]
    m = max(x) if stable else 0.0
    e = [
        reference(Fraction(math.exp(reference(Fraction(v) - Fraction(m), inner))), inner) for v in x
    ]
    total = 0.0
    for v in e:
        total = reference(Fraction(total) + Fraction(v), inner)
    return [reference(reference(Fraction(v) / Fraction(total), inner), dtype) for v in e]


@given(
    st.lists(st.floats(-8, 8), min_size=1, max_size=6),
    st.sampled_from(LOW),
    st.sampled_from(["float32", "same"]),
    st.booleans(),
)
def test_softmax_follows_the_stated_rule(
    row: list[float], dtype: str, inner: str, stable: bool
) -> None:
    inner = dtype if inner == "same" else inner
    got = softmax_in([row], dtype, softmax_dtype=inner, stable=stable)[0]
    want = np.array(loop_softmax(row, dtype, inner, stable))
    slack = LOW_PRECISION_SPACINGS * spacing(want, dtype)
    assert np.all(np.abs(got - want) <= slack)


def test_ml_dtypes_agrees_on_float32_values() -> None:
    """ml_dtypes (where installed) casts float32 to bfloat16 as round_to does."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    patterns = np.random.default_rng(16).integers(0, 2**32, size=200_000, dtype=np.uint64)
    patterns = np.concatenate([patterns.astype(np.uint32), np.array(CLASSES, dtype=np.uint32)])
    values = patterns.view(np.float32)
    with np.errstate(invalid="ignore"):  # NaN patterns cast to NaN, with a warning
        theirs = values.astype(ml_dtypes.bfloat16).astype(np.float64)
        wide = values.astype(np.float64)
    ours = round_to(wide, "bfloat16")
    np.testing.assert_array_equal(ours, theirs)


@given(st.one_of(st.floats(width=64), ties().map(lambda case: case[0])))
def test_ml_dtypes_agrees_on_float64_values(value: float) -> None:
    """ml_dtypes (where installed) rounds a float64 to bfloat16 once, as round_to does."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with np.errstate(over="ignore", invalid="ignore"):
        theirs = float(np.array([value]).astype(ml_dtypes.bfloat16).astype(np.float64)[0])
    assert same(float(round_to(value, "bfloat16")), theirs)
