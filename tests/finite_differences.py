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
    """(L(+h·e_i) − L(−h·e_i)) / 2h for every cell i of an array of ``shape``."""
    h = FINITE_DIFFERENCE_STEP
    estimate = np.zeros(shape)
    for index in np.ndindex(*shape):
        step = np.zeros(shape)
        step[index] = h
        estimate[index] = (value(step) - value(-step)) / (2 * h)
    return estimate


def assert_close_to(estimate: Array, gradient: Array, loss: float, what: str) -> None:
    """Within rtol of the largest entry, plus the rounding of L's differences (atol·|L|)."""
    scale = max(float(np.abs(gradient).max(initial=0)), float(np.abs(estimate).max(initial=0)))
    error = float(np.abs(estimate - gradient).max(initial=0))
    bound = FINITE_DIFFERENCE["rtol"] * scale + FINITE_DIFFERENCE["atol"] * max(1.0, abs(loss))
    assert error <= bound, f"{what}: finite differences differ by {error:.3g} (scale {scale:.3g})"
