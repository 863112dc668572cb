"""When a person's number matches attntrace's: the tolerance rule of docs/check.md.

A cell matches when ``|found − expected| ≤ atol · scale + rtol · |expected|``, with
``scale = max(1, max |expected|)`` over the stage's finite cells: the absolute part grows
with the stage's size, so scores in the hundreds are held to as many significant digits
as weights near 1. The tolerance follows the dtype the array was saved in: a float16
implementation is right to about three digits, a float64 one to far more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]

#: dtype -> (rtol, atol), docs/check.md's table.
TOLERANCES = {
    "float64": (1e-6, 1e-8),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (3e-2, 1e-2),
}

#: In ``masked``, a hidden cell may hold −∞ or any value at most this (-1e4, -1e9,
#: ``torch.finfo(dtype).min``): what people fill a mask with.
MASK_FILL_AT_MOST = -1e4


@dataclass(frozen=True)
class Tolerance:
    """The rtol and atol one array is compared with, and the dtype they came from."""

    rtol: float
    atol: float
    dtype: str


def tolerance_for(dtype: str, rtol: float | None = None, atol: float | None = None) -> Tolerance:
    """The table's tolerance for ``dtype``, with ``--rtol`` / ``--atol`` replacing it."""
    table_rtol, table_atol = TOLERANCES[dtype]
    return Tolerance(
        table_rtol if rtol is None else rtol, table_atol if atol is None else atol, dtype
    )


@dataclass(frozen=True)
class Comparison:
    """One found matrix against the expected one, cell by cell."""

    wrong: npt.NDArray[np.bool_]  # True where the cell does not match
    max_abs_delta: float | None  # over cells finite on both sides; None if there are none
    worst: tuple[int, int] | None  # the wrong cell to show: non-finite first, then largest |Δ|

    @property
    def matches(self) -> bool:
        return self.worst is None


def compare(
    expected: Matrix, found: Matrix, tolerance: Tolerance, *, masked: bool = False
) -> Comparison:
    """``found`` against ``expected`` (same shape) under ``tolerance``.

    Non-finite cells match only the same value (NaN with NaN, ∞ with ∞); with
    ``masked``, an expected −∞ also matches a found value ≤ ``MASK_FILL_AT_MOST``.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        finite_e, finite_f = np.isfinite(expected), np.isfinite(found)
        both = finite_e & finite_f
        delta = np.where(both, np.abs(found - expected), 0.0)
        finite_expected = np.abs(expected[finite_e])
        scale = max(1.0, float(finite_expected.max())) if finite_expected.size else 1.0
        bound = tolerance.atol * scale + tolerance.rtol * np.where(finite_e, np.abs(expected), 0)
        ok = both & (delta <= bound)
        same_nonfinite = (
            ~finite_e & ~finite_f & ((np.isnan(expected) & np.isnan(found)) | (expected == found))
        )
        ok |= same_nonfinite
        if masked:
            ok |= np.isneginf(expected) & ~np.isnan(found) & (found <= MASK_FILL_AT_MOST)
    wrong = ~ok
    max_delta = float(delta[both].max()) if both.any() else None
    worst = None
    if wrong.any():
        nonfinite_wrong = wrong & ~both
        pick = nonfinite_wrong if nonfinite_wrong.any() else wrong
        ranked = np.where(pick, np.where(both, delta, np.inf), -1.0)
        i, j = np.unravel_index(int(np.argmax(ranked)), ranked.shape)
        worst = (int(i), int(j))
    return Comparison(wrong, max_delta, worst)
