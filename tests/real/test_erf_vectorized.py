"""The vectorized erf and the two GELUs, against Python's scalar math, value by value.

attntrace/real/erf.py is FDLIBM's s_erf.c in numpy; math.erf is the C library's erf,
called one float at a time. They are compared in units in the last place (ulps) of
math.erf's value, with hypothesis over all doubles and by hand at each region's edges
(0.84375, 1.25, 1/0.35, 6, 2⁻²⁸), where a wrong bound or coefficient shows first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from tolerances import ERF_ULPS, FLOAT64_APPROX

from attntrace.real.erf import erf
from attntrace.real.forward import gelu, gelu_tanh

EDGES = (
    2.0**-1022,
    2.0**-1015,
    2.0**-28,
    0.25,
    0.84375,
    1.0,
    1.25,
    1 / 0.35,
    2.857142925262451,
    6.0,
    28.0,
)


def ulps(a: float, b: float) -> int:
    """How many doubles lie between ``a`` and ``b`` (0 when equal; -0.0 is 0.0)."""

    def ordered(value: float) -> int:
        bits = int.from_bytes(np.float64(value).tobytes(), "little", signed=True)
        return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)

    return abs(ordered(a) - ordered(b))


def worst(values: Iterable[float]) -> int:
    """The largest distance from math.erf over ``values`` (each also checked for its sign
    and NaN-ness, which ulps alone would not see)."""
    values = list(values)
    got = erf(np.array(values, dtype=np.float64))
    largest = 0
    for value, mine in zip(values, got.tolist(), strict=True):
        expected = math.erf(value)
        if math.isnan(expected):
            assert math.isnan(mine), value
            continue
        assert math.copysign(1.0, mine) == math.copysign(1.0, expected), value
        largest = max(largest, ulps(mine, expected))
    return largest


def around(edge: float, steps: int = 300) -> list[float]:
    """The ``steps`` doubles on each side of ``edge``, and the edge, both signs."""
    below, above = [edge], [edge]
    for _ in range(steps):
        below.append(math.nextafter(below[-1], 0.0))
        above.append(math.nextafter(above[-1], math.inf))
    near = below + above
    return near + [-v for v in near]


@pytest.mark.parametrize("edge", EDGES)
def test_erf_is_within_the_bound_of_math_erf_at_each_region_edge(edge: float) -> None:
    assert worst(around(edge)) <= ERF_ULPS


def test_erf_special_values_are_math_erfs_exactly() -> None:
    special = [
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        1e-310,
        -1e-310,
        1e300,
        -1e300,
        1.7976931348623157e308,
        math.inf,
        -math.inf,
        math.nan,
    ]
    got = erf(np.array(special)).tolist()
    for value, mine in zip(special, got, strict=True):
        expected = math.erf(value)
        if math.isnan(expected):
            assert math.isnan(mine)
        else:  # exactly, sign of zero included: these are no rounding
            assert (mine, math.copysign(1.0, mine)) == (expected, math.copysign(1.0, expected))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=50))
def test_erf_is_within_the_bound_of_math_erf_anywhere(values: list[float]) -> None:
    assert worst(values) <= ERF_ULPS


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-7.0, 7.0), min_size=1, max_size=50))
def test_erf_is_within_the_bound_where_gelu_reads_it(values: list[float]) -> None:
    assert worst(values) <= ERF_ULPS


def test_erf_over_a_dense_sweep_stays_within_the_bound() -> None:
    """Every region, densely: 200,001 values from −7 to 7 (each region thousands)."""
    assert worst(np.linspace(-7.0, 7.0, 200_001).tolist()) <= ERF_ULPS


@given(
    arrays(np.float64, st.tuples(st.integers(0, 3), st.integers(0, 4)), elements=st.floats(-10, 10))
)
def test_erf_keeps_the_shape_and_is_odd(x: npt.NDArray[np.float64]) -> None:
    got = erf(x)
    assert got.shape == x.shape
    assert got.dtype == np.float64
    assert np.array_equal(erf(-x), -got)  # FDLIBM computes on |x| and sets the sign


def test_gelu_tanh_is_pytorchs_tanh_formula() -> None:
    """torch.nn.functional.gelu(x, approximate="tanh"), written out with math.tanh."""
    for x in (-8.0, -3.0, -1.0, -0.25, 0.0, 1e-8, 0.5, 1.0, 2.7, 5.0, 20.0):
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        expected = 0.5 * x * (1 + math.tanh(inner))
        assert gelu_tanh(np.array([[x]]))[0, 0] == pytest.approx(expected, **FLOAT64_APPROX)


def test_gelu_tanh_is_not_the_exact_gelu() -> None:
    """The approximation is off from x·Φ(x) by a few 1e-4 near |x| = 2.7, and nearly
    exact at 0 and far out: the two are different functions, as their names say."""
    x = np.array([[-2.7, 0.0, 2.7, 10.0]])
    gap = np.abs(gelu_tanh(x) - gelu(x))[0]
    assert 1e-4 < gap[0] < 1e-3
    assert 1e-4 < gap[2] < 1e-3
    assert gap[1] == 0.0
    assert gap[3] < 1e-12
