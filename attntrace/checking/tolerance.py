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
    nonfinite_wrong: int = 0  # wrong cells where a side is NaN or infinite

    @property
    def matches(self) -> bool:
        return self.worst is None


#: Cells compared at once: the comparison's temporaries (a dozen arrays of this many
#: cells) stay near 25 MB whatever the stage's size, where whole-stage temporaries of a
#: 5000 × 5000 stage took 2.7 GB and 3 s a comparison.
BLOCK_CELLS = 1 << 18


def _blocks(matrix: Matrix) -> list[tuple[slice, slice]]:
    """The matrix in blocks of about BLOCK_CELLS cells, in row-major order: whole rows
    together, or one row in pieces where a row is longer than a block."""
    rows, cols = matrix.shape
    if cols <= BLOCK_CELLS:
        step = max(1, BLOCK_CELLS // max(cols, 1))
        return [(slice(r, min(rows, r + step)), slice(0, cols)) for r in range(0, rows, step)]
    return [
        (slice(r, r + 1), slice(c, min(cols, c + BLOCK_CELLS)))
        for r in range(rows)
        for c in range(0, cols, BLOCK_CELLS)
    ]


def _scale(expected: Matrix) -> float:
    """``max(1, max |expected|)`` over the finite cells, a block at a time."""
    scale = 1.0
    for rows, cols in _blocks(expected):
        block = np.abs(expected[rows, cols])
        scale = max(scale, float(np.max(block, where=np.isfinite(block), initial=0.0)))
    return scale


def _block_ok(
    expected: Matrix, found: Matrix, tolerance: Tolerance, scale: float, masked: bool
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], Matrix]:
    """(ok, both finite, |Δ| where both finite else 0) for one block."""
    finite_e, finite_f = np.isfinite(expected), np.isfinite(found)
    both = finite_e & finite_f
    delta = np.where(both, np.abs(found - expected), 0.0)
    bound = tolerance.atol * scale + tolerance.rtol * np.where(finite_e, np.abs(expected), 0)
    ok = both & (delta <= bound)
    ok |= ~finite_e & ~finite_f & ((np.isnan(expected) & np.isnan(found)) | (expected == found))
    if masked:
        ok |= np.isneginf(expected) & ~np.isnan(found) & (found <= MASK_FILL_AT_MOST)
    return ok, both, delta


def matches(expected: Matrix, found: Matrix, tolerance: Tolerance, *, masked: bool = False) -> bool:
    """Whether every cell matches (:func:`compare`'s ``matches``), stopping at the first
    block that holds a wrong cell: the diagnosis tries a dozen mistakes, and a mistake
    that does not reproduce the stage usually differs in its first block."""
    scale = _scale(expected)
    with np.errstate(invalid="ignore", over="ignore"):
        for rows, cols in _blocks(expected):
            ok, _, _ = _block_ok(expected[rows, cols], found[rows, cols], tolerance, scale, masked)
            if not ok.all():
                return False
    return True


def compare(
    expected: Matrix, found: Matrix, tolerance: Tolerance, *, masked: bool = False
) -> Comparison:
    """``found`` against ``expected`` (same shape, two axes) under ``tolerance``.

    Non-finite cells match only the same value (NaN with NaN, ∞ with ∞); with
    ``masked``, an expected −∞ also matches a found value ≤ ``MASK_FILL_AT_MOST``.
    Computed a block at a time (:data:`BLOCK_CELLS`): only ``wrong`` is as large as the
    stage, and the worst cell is the first non-finite wrong one, else the first of the
    largest |Δ|, as over the whole matrix at once.
    """
    scale = _scale(expected)
    wrong = np.empty(expected.shape, dtype=bool)
    max_delta: float | None = None
    first_nonfinite: tuple[int, int] | None = None
    largest: tuple[float, tuple[int, int]] | None = None
    nonfinite_wrong = 0
    with np.errstate(invalid="ignore", over="ignore"):
        for rows, cols in _blocks(expected):
            ok, both, delta = _block_ok(
                expected[rows, cols], found[rows, cols], tolerance, scale, masked
            )
            bad = ~ok
            wrong[rows, cols] = bad
            if both.any():
                top = float(delta[both].max())
                max_delta = top if max_delta is None else max(max_delta, top)
            if not bad.any():
                continue
            at = (rows.start, cols.start)
            strange = bad & ~both
            nonfinite_wrong += int(strange.sum())
            if first_nonfinite is None and strange.any():
                i, j = np.unravel_index(int(np.argmax(strange)), strange.shape)
                first_nonfinite = (at[0] + int(i), at[1] + int(j))
            ranked = np.where(bad & both, delta, -1.0)
            k = int(np.argmax(ranked))
            if ranked.flat[k] >= 0 and (largest is None or ranked.flat[k] > largest[0]):
                i, j = np.unravel_index(k, ranked.shape)
                largest = (float(ranked.flat[k]), (at[0] + int(i), at[1] + int(j)))
    worst = first_nonfinite or (largest[1] if largest is not None else None)
    return Comparison(wrong, max_delta, worst, nonfinite_wrong)
