"""Two traces compared stage by stage: what changed, by how much, and where first.

``attntrace diff`` answers "what did this edit change?" (one model traced without and
with ``--set`` edits) and "are these two saved traces the same?" (a trace saved on two
machines, before and after a change to the code). Stages are matched by name and head,
in computation order (every head's Q, then every head's K, ...); each
is ``same``, ``changed``, ``only-in-a`` or ``only-in-b``.

A cell is changed when its two values are further apart than two float64 computations
of the same numbers can be (another machine's BLAS kernel sums in another order)::

    |b − a| > ATOL · scale + RTOL · max(|a|, |b|),   scale = max(1, largest |a| or |b| of the stage)

with ``ATOL = RTOL = 1e-9`` (docs/check.md, "attntrace diff A B"). The rule is the same
both ways round (``diff A B`` and ``diff B A`` find the same cells). A value that is not
finite is the same only as the same value (−∞ as −∞, NaN as NaN); against anything else
it is changed, by an infinite |Δ|.

A stage whose shape, labels, formula or K/V head differ is ``changed``, with a note
saying which; where the shapes agree its numbers are still compared cell by cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

from attntrace import arguments
from attntrace.kernel import progress
from attntrace.kernel.stage_names import ORDER
from attntrace.kernel.trace import ModelInfo, Stage, Trace

# The tolerance of the rule above: some 1e7 times float64's rounding of numbers near 1,
# far below any edit a person means (a weight changed in its ninth digit is not seen).
RTOL = 1e-9
ATOL = 1e-9

SAME = "same"
CHANGED = "changed"
ONLY_IN_A = "only-in-a"
ONLY_IN_B = "only-in-b"
STATUSES = (SAME, CHANGED, ONLY_IN_A, ONLY_IN_B)

# The model's fields that change what is computed (its name and description do not).
COMPARED_MODEL_FIELDS = tuple(
    f.name for f in fields(ModelInfo) if f.name not in ("name", "description")
)

Key = tuple[str, int | None, int | None, int]  # name, head, K/V head, occurrence (0 first)


@dataclass(frozen=True)
class Cell:
    """One cell of a stage in both traces: where it is, its two values, ``b − a``."""

    row: int
    col: int
    row_label: str
    col_label: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        """``b − a``; where either is not finite: 0 for the same value, else ±∞ or NaN."""
        return _delta(self.a, self.b)


@dataclass(frozen=True, eq=False)
class StageDiff:
    """One stage (a name and a head) compared.

    ``changed`` is a boolean matrix of the cells that differ, and ``max_abs_delta``,
    ``changed_cells`` and ``largest`` (the cell of the largest |Δ|, the first such in
    row order) are set whenever both traces hold the stage in the same shape; for a
    stage in one trace only, or of another shape, they are None. ``notes`` say what
    else differs (shape, labels, formula, K/V head).
    """

    name: str
    head: int | None
    status: str
    a: Stage | None
    b: Stage | None
    notes: tuple[str, ...] = ()
    changed: npt.NDArray[np.bool_] | None = None
    max_abs_delta: float | None = None
    largest: Cell | None = None

    @property
    def kv_head(self) -> int | None:
        """The K/V head the stage reads (B's, where both hold it)."""
        stage = self.b if self.b is not None else self.a
        return None if stage is None else stage.kv_head

    @property
    def changed_cells(self) -> int | None:
        return None if self.changed is None else int(self.changed.sum())

    @property
    def cells(self) -> int:
        """How many cells the stage has (in B where both hold it, B being the newer)."""
        stage = self.b if self.b is not None else self.a
        assert stage is not None  # a StageDiff is made from at least one stage
        return stage.shape[0] * stage.shape[1]


@dataclass(frozen=True)
class ModelChange:
    """A field of the model that differs: its name and its two values."""

    field: str
    a: object
    b: object


@dataclass(frozen=True, eq=False)
class TraceDiff:
    """Two traces compared: their stages and learned matrices, the model, the tokens.

    ``weights`` is compared only where both traces carry learned matrices (a trace
    saved with ``run --json --stages`` carries none): otherwise it is empty and
    ``weights_compared`` is False.
    """

    a: Trace
    b: Trace
    stages: tuple[StageDiff, ...]
    weights: tuple[StageDiff, ...]
    weights_compared: bool
    model_changes: tuple[ModelChange, ...]

    @property
    def tokens_differ(self) -> bool:
        return self.a.tokens != self.b.tokens

    @property
    def context_differs(self) -> bool:
        return self.a.context_tokens != self.b.context_tokens

    @property
    def changed_stages(self) -> list[StageDiff]:
        return [s for s in self.stages if s.status != SAME]

    @property
    def changed_weights(self) -> list[StageDiff]:
        return [w for w in self.weights if w.status != SAME]

    @property
    def first_changed(self) -> StageDiff | None:
        """The earliest stage, in computation order, that is not the same."""
        return next(iter(self.changed_stages), None)

    @property
    def changed(self) -> bool:
        """Whether anything that is computed differs: a stage, a learned matrix, the
        model's sizes or settings, the tokens (the exit code of ``attntrace diff``)."""
        return bool(
            self.changed_stages
            or self.changed_weights
            or self.model_changes
            or self.tokens_differ
            or self.context_differs
        )


def diff_traces(a: Trace, b: Trace) -> TraceDiff:
    """Compare trace ``a`` with trace ``b``, stage by stage in computation order."""
    if not isinstance(a, Trace):
        raise arguments.wrong_type(a, "a", "a Trace")
    if not isinstance(b, Trace):
        raise arguments.wrong_type(b, "b", "a Trace")
    weights_compared = bool(a.weights) and bool(b.weights)
    return TraceDiff(
        a=a,
        b=b,
        stages=_compare_all(a.stages, b.stages, by_stage=True),
        weights=_compare_all(a.weights, b.weights, by_stage=False) if weights_compared else (),
        weights_compared=weights_compared,
        model_changes=tuple(
            ModelChange(name, getattr(a.model, name), getattr(b.model, name))
            for name in COMPARED_MODEL_FIELDS
            if getattr(a.model, name) != getattr(b.model, name)
        ),
    )


def _key(stage: Stage) -> tuple[str, int | None, int | None]:
    """What a stage is matched by: its name and head, and for a learned matrix of one
    K/V head (WK, WV, their biases) that K/V head."""
    return stage.name, stage.head, stage.kv_head if stage.head is None else None


def _keyed(stages: Sequence[Stage]) -> dict[Key, Stage]:
    """Each stage under its :func:`_key` and occurrence (a trace made in Python may hold
    a name twice for one head; the n-th of A is matched with the n-th of B)."""
    seen: dict[tuple[str, int | None, int | None], int] = {}
    keyed: dict[Key, Stage] = {}
    for stage in stages:
        name, head, kv_head = key = _key(stage)
        count = seen.get(key, 0)
        seen[key] = count + 1
        keyed[name, head, kv_head, count] = stage
    return keyed


def merged_order(a: Sequence[Key], b: Sequence[Key]) -> list[Key]:
    """A's keys in A's order, each key only B has placed right after the key B holds
    before it (or first): the order both traces list them in, where they agree."""
    order = list(a)
    placed = set(order)
    previous: Key | None = None
    for key in b:
        if key not in placed:
            at = 0 if previous is None else order.index(previous) + 1
            order.insert(at, key)
            placed.add(key)
        previous = key
    return order


def computation_order(key: Key) -> tuple[int, int]:
    """Stage by stage, each stage's heads in order (X, Q of every head, K, ...), as
    ``check`` reports: the first change in this order is the earliest in the
    computation. A name outside the contract's list goes last."""
    name, head = key[0], key[1]
    rank = ORDER.index(name) if name in ORDER else len(ORDER)
    return rank, -1 if head is None else head


def _compare_all(
    a: Sequence[Stage], b: Sequence[Stage], *, by_stage: bool
) -> tuple[StageDiff, ...]:
    """Every stage (or learned matrix) of A and B, matched; ``by_stage`` sorts them in
    :func:`computation_order` (learned matrices stay in the order the traces hold)."""
    in_a, in_b = _keyed(a), _keyed(b)
    order = merged_order(list(in_a), list(in_b))
    if by_stage:
        order.sort(key=computation_order)  # stable: within a rank, the traces' order
    result = []
    with progress.task("comparing the stages", len(order), "stages") as comparing:
        for key in order:
            name, head, _, _ = key
            left, right = in_a.get(key), in_b.get(key)
            if right is None:
                result.append(StageDiff(name, head, ONLY_IN_A, left, None))
            elif left is None:
                result.append(StageDiff(name, head, ONLY_IN_B, None, right))
            else:
                result.append(compare_stages(left, right))
            comparing.advance()
    return tuple(result)


def compare_stages(a: Stage, b: Stage) -> StageDiff:
    """One stage of A against the same stage of B (same name and head)."""
    notes = []
    if a.shape != b.shape:
        notes.append(f"shape {a.shape[0]}×{a.shape[1]} in A, {b.shape[0]}×{b.shape[1]} in B")
    else:
        if a.rows != b.rows:
            notes.append("its rows are labelled differently")
        if a.cols != b.cols:
            notes.append("its columns are labelled differently")
    if a.formula != b.formula:
        notes.append("its formula differs")
    if a.kv_head != b.kv_head:
        notes.append(f"it reads K/V head {a.kv_head} in A, {b.kv_head} in B")
    if a.shape != b.shape:
        return StageDiff(a.name, a.head, CHANGED, a, b, tuple(notes))
    changed, delta = cell_changes(a.data, b.data)
    largest = None
    top = float(delta.max()) if delta.size else 0.0
    if changed.any():
        i, j = (int(x) for x in np.unravel_index(int(np.argmax(delta)), delta.shape))
        largest = Cell(i, j, b.rows[i], b.cols[j], float(a.data[i, j]), float(b.data[i, j]))
    status = CHANGED if notes or changed.any() else SAME
    return StageDiff(a.name, a.head, status, a, b, tuple(notes), changed, top, largest)


def cell_changes(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Which cells of two same-shaped matrices differ (the rule of this module's
    docstring), and each cell's |b − a| (0 for two equal non-finite values, ∞ for a
    non-finite value against another)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    same_special = ~finite & ((a == b) | (np.isnan(a) & np.isnan(b)))
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.where(finite, np.abs(b - a), np.where(same_special, 0.0, np.inf))
        sizes = np.where(finite, np.maximum(np.abs(a), np.abs(b)), 0.0)
    scale = max(1.0, float(sizes.max())) if sizes.size else 1.0
    changed = gap > ATOL * scale + RTOL * sizes
    return changed, gap


def _delta(a: float, b: float) -> float:
    if a == b or (np.isnan(a) and np.isnan(b)):
        return 0.0
    return b - a
