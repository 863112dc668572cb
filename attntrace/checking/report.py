"""What `check` found, as a record: each stage and head compared, where the person's
arrays first go wrong, and the mistake that explains it (docs/check.md, "What it
reports"). :mod:`attntrace.checking.compare` computes it; the renderers and the JSON writer
read it, as they read a Trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.checking.tolerance import Tolerance
from attntrace.kernel import display
from attntrace.kernel.ops import Matrix
from attntrace.kernel.trace import ModelInfo


@dataclass(frozen=True)
class StageResult:
    """One stage of one head (or of one K/V head, or shared) compared."""

    name: str
    head: int | None  # the query head; None for a shared stage or one given per K/V head
    kv_head: int | None  # the K/V head, for K, V, K_rope given per K/V head
    status: str  # match, differs, missing
    given_as: str | None = None  # the array's name in the file (None: missing)
    max_abs_delta: float | None = None  # over the cells finite on both sides
    cells_differing: int = 0
    cells: int = 0
    cells_nonfinite: int = 0  # of the differing cells, those NaN or ±∞ on one side only
    tolerance: Tolerance | None = None
    shape_found: tuple[int, ...] | None = None  # set when the shape fits no reading
    shape_expected: str | None = None


@dataclass(frozen=True)
class Region:
    """The part of the first differing matrix the report shows: rows × columns around
    the worst cell, expected and found, and which cells are wrong."""

    rows: tuple[str, ...]
    cols: tuple[str, ...]
    expected: Matrix
    found: Matrix
    wrong: npt.NDArray[np.bool_]
    row_start: int = 0  # the index of the region's first row in its stage
    col_start: int = 0


@dataclass(frozen=True)
class Spot:
    """One differing cell: where, and expected and found."""

    row: int
    column: int
    row_label: str
    column_label: str
    expected: float
    found: float


@dataclass(frozen=True)
class Divergence:
    """Where the person's arrays first go wrong: the stage, the head, the worst cell
    (``row``, ``column``: a non-finite mismatch first, else the largest |Δ|), and
    ``first_cell``, the first differing cell in reading order (row by row)."""

    stage: str
    head: int | None
    kv_head: int | None
    given_as: str
    row: int | None  # None when the shape is wrong (no cell to point at)
    column: int | None
    row_label: str | None
    column_label: str | None
    expected: float | None
    found: float | None
    region: Region | None
    shape_found: tuple[int, ...] | None = None
    shape_expected: str | None = None
    first_cell: Spot | None = None  # None where the shape is wrong


@dataclass(frozen=True)
class Diagnosis:
    """The mistake that reproduces the first differing stage."""

    cause: str
    message: str
    also: tuple[str, ...] = ()  # other ids that reproduce it as well


@dataclass(frozen=True, eq=False)
class CheckReport:
    """The whole comparison: per stage and head, the first divergence, the diagnosis."""

    model: ModelInfo
    tokens: tuple[str, ...]
    context_tokens: tuple[str, ...] | None
    results: tuple[StageResult, ...]
    first_divergent: Divergence | None
    diagnosis: Diagnosis | None
    head: int | None = None  # --head: only this head was compared

    @property
    def ok(self) -> bool:
        return self.first_divergent is None

    @property
    def exit_code(self) -> int:
        """0 when every given stage matches, 1 when one differs (as cmp and diff)."""
        return 0 if self.ok else 1

    # print and Rich: drawn by the renderer, through attntrace.kernel.display (as a Trace)
    def __str__(self) -> str:
        """The report as `attntrace check` prints it, 80 columns, no colour."""
        text: str = display.show(self, "text")
        return text

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from display.show(self, "rich")
