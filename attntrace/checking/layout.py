"""How a saved array's shape is read as a stage's heads (docs/check.md, "Shapes").

People save a head's stage in several layouts: heads first ``[H, r, c]`` (after
PyTorch's ``transpose(1, 2)``), tokens first ``[r, H, c]`` (before it), side by side
``[r, H·c]``, one head ``[r, c]``, any of them inside a batch of one. Each layout that
fits the shape is a *reading*; two readings that put different numbers in a head are
ambiguous, and only ``--layout`` can settle which was meant. A shape that fits none but
fits ``[r, c, H]`` has one more reading, for the diagnosis only (:func:`dims_last`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from attntrace.kernel.stage_names import DIMENSION_COLUMNS, KEY_ROWS

Matrix = npt.NDArray[np.float64]

LAYOUTS = ("heads-first", "tokens-first")


@dataclass(frozen=True)
class Reading:
    """One way of reading an array: which layout, and the matrix of each head."""

    form: str  # heads-first, tokens-first, side-by-side, one-head
    count: int  # how many heads the array holds: 1, the K/V heads or the query heads
    matrices: tuple[Matrix, ...]  # [r, c] each, in head order

    def describe(self, stage: str) -> str:
        """``heads × n × d`` (heads first): the axes this reading gives the shape."""
        rows = "m" if stage in KEY_ROWS else "n"
        cols = "d_v" if stage in ("V", "output") else "d_k" if stage in DIMENSION_COLUMNS else "m"
        heads = "heads"
        axes = {
            "heads-first": f"{heads} × {rows} × {cols}",
            "tokens-first": f"{rows} × {heads} × {cols}",
            "side-by-side": f"{rows} × {heads}·{cols}",
            "one-head": f"{rows} × {cols}",
        }[self.form]
        return f"{axes} ({self.form.replace('-', ' ')})"


def readings(
    data: npt.NDArray[np.float64],
    counts: Sequence[int],
    rows: int,
    cols: int,
    *,
    side_by_side: bool,
    layout: str | None = None,
) -> list[Reading]:
    """Every distinct reading of ``data`` as ``count`` heads of ``[rows, cols]``, for each
    of ``counts`` (the query heads; for K and V the K/V heads too).

    Leading axes of length 1 are a batch of one. Readings that give every head the same
    numbers are one reading (with one head, ``[1, r, c]`` and ``[r, c]`` agree).
    ``layout`` drops the 3-D form it does not name.
    """
    found: list[Reading] = []
    keys: list[bytes] = []
    index = np.arange(data.size).reshape(data.shape)  # which cell each reading takes
    for start in range(data.ndim + 1):
        if any(n != 1 for n in data.shape[:start]):
            break
        core = data.shape[start:]
        for count in dict.fromkeys(counts):
            for form in _forms(core, count, rows, cols, side_by_side=side_by_side):
                if layout is not None and side_by_side and form in LAYOUTS and form != layout:
                    continue  # scores read heads first whatever --layout says
                taken = _split(index.reshape(core), form, count, cols)
                key = np.stack(taken).tobytes()
                if key in keys:
                    continue
                keys.append(key)
                flat = data.reshape(-1)
                found.append(Reading(form, count, tuple(flat[t] for t in taken)))
    return found


def dims_last(
    data: npt.NDArray[np.float64], counts: Sequence[int], rows: int, cols: int
) -> Reading | None:
    """``data`` read as ``[r, c, H]``, head h being ``[..., h]``: what a wrong
    ``.view(B, T, d, H)`` of the heads side by side leaves (``heads-split-wrong``). Asked
    only of a shape that fits no form of :func:`readings`, so it reads one way; the
    stage still differs, and only the diagnosis reads it so."""
    for start in range(data.ndim + 1):
        if any(n != 1 for n in data.shape[:start]):
            break
        core = data.shape[start:]
        for count in dict.fromkeys(counts):
            if count > 1 and core == (rows, cols, count):
                held = data.reshape(core)
                return Reading("dims-then-heads", count, tuple(held[..., h] for h in range(count)))
    return None


def _forms(
    core: tuple[int, ...], count: int, rows: int, cols: int, *, side_by_side: bool
) -> list[str]:
    forms = []
    if core == (count, rows, cols):
        forms.append("heads-first")
    if side_by_side and core == (rows, count, cols):  # dimensions only: never scores
        forms.append("tokens-first")
    if side_by_side and core == (rows, count * cols):
        forms.append("side-by-side")
    if count == 1 and core == (rows, cols):
        forms.append("one-head")
    return forms


def _split(
    index: npt.NDArray[np.int64], form: str, count: int, cols: int
) -> list[npt.NDArray[np.int64]]:
    """Each head's ``[rows, cols]`` of cell numbers, read in ``form``."""
    if form == "heads-first":
        return [index[h] for h in range(count)]
    if form == "tokens-first":
        return [index[:, h, :] for h in range(count)]
    if form == "side-by-side":
        return [index[:, h * cols : (h + 1) * cols] for h in range(count)]
    return [index]
