"""Central finite differences and how close a gradient must come to them: the
independent check of every backward pass (tests/learning/test_backward.py, the variants'
tests/variant_cases.py), stated once."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from tolerances import FINITE_DIFFERENCE, FINITE_DIFFERENCE_STEP

Array = npt.NDArray[np.float64]


def finite_difference(shape: tuple[int, ...], value: Callable[[Array], float]) -> Array:
    """dL/dp_i for every cell i of an array of ``shape``, by the five-point central
    difference (8(L(+h) − L(−h)) − (L(+2h) − L(−2h))) / 12h: its truncation error is of
    order h⁴·L⁽⁵⁾, where the plain (L(+h) − L(−h)) / 2h leaves h²·L‴ / 6. A random model
    with large scores (seed 234055 of the variants' test: L‴ near 5·10⁸) put that h² term
    at 9e-5, past the bound, for a right gradient; the rounding grows only by 3/2."""
    h = FINITE_DIFFERENCE_STEP
    estimate = np.zeros(shape)
    for index in np.ndindex(*shape):
        step = np.zeros(shape)
        step[index] = h
        near = value(step) - value(-step)
        far = value(2 * step) - value(-2 * step)
        estimate[index] = (8 * near - far) / (12 * h)
    return estimate


def assert_close_to(estimate: Array, gradient: Array, loss: float, what: str) -> None:
    """Within rtol of the largest entry, plus the rounding of L's differences (atol·|L|)."""
    scale = max(float(np.abs(gradient).max(initial=0)), float(np.abs(estimate).max(initial=0)))
    error = float(np.abs(estimate - gradient).max(initial=0))
    bound = FINITE_DIFFERENCE["rtol"] * scale + FINITE_DIFFERENCE["atol"] * max(1.0, abs(loss))
    assert error <= bound, f"{what}: finite differences differ by {error:.3g} (scale {scale:.3g})"
