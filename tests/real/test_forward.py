"""The pieces around attention in a real layer, against their closed forms.

The golden tests (test_real_models) hold whole forward passes to transformers; these
check each piece on its own, with math's scalar functions, so a failure says which.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from tolerances import FLOAT64, FLOAT64_APPROX, OFFSET_APPROX

from attntrace.kernel.ops import rms_norm
from attntrace.real.forward import gelu, layer_norm, silu

ROWS = arrays(np.float64, (3, 5), elements=st.floats(-50, 50))


def test_gelu_is_x_times_the_normal_cdf() -> None:
    for x in (-6.0, -1.0, -0.1, 0.0, 0.5, 1.0, 3.0):
        expected = x * 0.5 * (1 + math.erf(x / math.sqrt(2)))
        assert gelu(np.array([[x]]))[0, 0] == pytest.approx(expected, **FLOAT64_APPROX)


def test_silu_is_x_times_the_sigmoid_and_never_warns() -> None:
    for x in (-800.0, -3.0, 0.0, 2.0, 40.0):
        expected = x / (1 + math.exp(-x)) if x > -700 else -0.0
        assert silu(np.array([[x]]))[0, 0] == pytest.approx(expected, **FLOAT64_APPROX)


@given(ROWS)
def test_layer_norm_gives_mean_0_and_variance_1_before_its_scale(rows: npt.NDArray[Any]) -> None:
    normed = layer_norm(rows, np.ones(5), np.zeros(5), 1e-12)
    spread = rows.std(axis=1)
    for row, original, sd in zip(normed, rows, spread, strict=True):
        if sd > 1e-3:  # a constant row has no spread to normalize
            assert row.mean() == pytest.approx(0.0, **OFFSET_APPROX)  # values to 50 / 1e-3
            # closed form: var = sd² / (sd² + 1e-12) ≥ 1 − 1e-6 where sd > 1e-3
            assert 1 - 1e-12 / sd**2 - FLOAT64["atol"] <= row.var() <= 1 + FLOAT64["atol"]
        expected = [(v - original.mean()) / math.sqrt(sd**2 + 1e-12) for v in original]
        np.testing.assert_allclose(row, expected, **FLOAT64)
    shifted = layer_norm(rows, np.full(5, 2.0), np.full(5, 3.0), 1e-12)
    np.testing.assert_allclose(shifted, 2 * normed + 3, **FLOAT64)


@given(ROWS)
def test_rms_norm_divides_by_the_root_mean_square(rows: npt.NDArray[Any]) -> None:
    normed = rms_norm(rows, np.full(5, 0.5), 1e-5)
    for row, original in zip(normed, rows, strict=True):
        rms = math.sqrt(sum(v * v for v in original) / 5 + 1e-5)
        np.testing.assert_allclose(row, [0.5 * v / rms for v in original], **FLOAT64)
