"""Which cell a quiz hides: a stage of the trace, a head, a row and a column.

``--stage`` and ``--cell`` name it (tokens or 0-based indices, read as run's --cols
reads a token); what is not named is chosen by ``--seed`` from the stages a learner
computes by hand (:data:`QUIZ_STAGES`), never a cell a mask hides or an overflow. The
same seed asks the same question of the same trace, on any machine (Python's own
``random.Random``, seeded, not numpy's).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from attntrace.errors import InputError
from attntrace.forward.focus import resolve_position
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.stage_names import ALIASES
from attntrace.kernel.trace import Stage, Trace
from attntrace.visible import visible

DEFAULT_SEED = 0
# The stages a seed chooses from, in the order the article computes them.
QUIZ_STAGES = ("Q", "K", "V", "scores", "scaled", "softmax", "output")
# The stages whose cells a mask hides (its weight 0, its logit −∞ by rule, not by
# arithmetic): the seed does not choose those cells.
MASKED_BY = frozenset(("scores", "scaled", "alibi", "biased", "capped", "softmax"))


@dataclass(frozen=True)
class Question:
    """One hidden cell: ``stage[row, col]`` of ``head`` (None: a shared stage).

    ``hints``: the teacher's own, where an exercise gives them (None: the defaults);
    ``points``: what a right answer scores."""

    stage: str
    head: int | None
    row: int
    col: int
    row_label: str
    col_label: str
    expected: float
    hints: tuple[str, ...] | None = None
    points: int = 1

    @property
    def cell(self) -> str:
        """``softmax[fish, fish]``, with the head where the trace has several."""
        return f"{self.stage}[{self.row_label}, {self.col_label}]"


def stage_of(trace: Trace, question: Question) -> Stage:
    """The trace's stage the question hides a cell of."""
    return trace.stage(question.stage, head=question.head)


def quiz_stages(trace: Trace) -> list[str]:
    """The stages a seed chooses from, of those this trace holds."""
    return [name for name in QUIZ_STAGES if name in trace.names]


def choose(
    trace: Trace,
    stage: str | None = None,
    cell: str | None = None,
    *,
    seed: int = DEFAULT_SEED,
    head: int | None = None,
    field: str = "--cell",
    stage_field: str = "--stage",
    head_field: str = "head",
) -> Question:
    """The question ``stage``, ``cell`` and ``seed`` name in ``trace``: what is not
    given is chosen by the seed. A stage, head or cell the trace does not hold is an
    :class:`InputError` naming ``stage_field``, ``head_field`` or ``field``."""
    rng = random.Random(seed)
    names = list(dict.fromkeys(trace.names))
    if stage is None:
        choices = quiz_stages(trace)
        stage = rng.choice(choices) if choices else names[-1]
    elif stage not in names and ALIASES.get(stage) in names:
        stage = ALIASES[stage]  # weights, attn, S, ...: the names people give a stage
    elif stage not in names:
        raise InputError(
            field=stage_field, expected=f"a stage of the trace ({', '.join(names)})", found=stage
        )
    heads = [s.head for s in trace.stages if s.name == stage]
    if head is None:
        picked = rng.choice(heads)
    elif head in heads:
        picked = head
    else:
        known = ", ".join(str(h) for h in heads if h is not None) or "none: a shared stage"
        raise InputError(field=head_field, expected=f"a head of {stage} ({known})", found=str(head))
    found = trace.stage(stage, head=picked)
    if cell is None:
        row, col = _seeded_cell(trace, found, rng)
    else:
        row, col = resolve_cell(found, cell, field)
    return Question(
        stage=stage,
        head=picked,
        row=row,
        col=col,
        row_label=unique_labels(found.rows)[row],
        col_label=unique_labels(found.cols)[col],
        expected=float(found.data[row, col]),
    )


def _seeded_cell(trace: Trace, stage: Stage, rng: random.Random) -> tuple[int, int]:
    """A cell worth computing: finite, and not one a mask hides (its weight is 0 by
    rule, not by arithmetic); any cell where every one is."""
    rows, cols = stage.shape
    hidden = None
    if stage.head is not None and stage.name in MASKED_BY:
        source = trace.softmax_input(stage.head).data
        if source.shape == stage.shape:
            hidden = source
    cells = [
        (i, j)
        for i in range(rows)
        for j in range(cols)
        if math.isfinite(float(stage.data[i, j])) and (hidden is None or hidden[i, j] != -math.inf)
    ]
    return rng.choice(cells) if cells else (rng.randrange(rows), rng.randrange(cols))


def resolve_cell(stage: Stage, cell: str, field: str = "--cell") -> tuple[int, int]:
    """``ROW,COL`` among ``stage``'s labels: each a token (``it``, ``the#4``), a label
    (``d1``) or a 0-based index, read as --focus reads a token (as typed, or as the
    tables show it). A token that is itself a comma is named by its index."""
    parts = cell.split(",")
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise InputError(
            field=field, expected="ROW,COL: two tokens or indices (it,animal or 6,1)", found=cell
        )
    return (
        _position(stage.rows, parts[0].strip(), f"{field} row"),
        _position(stage.cols, parts[1].strip(), f"{field} column"),
    )


def _position(labels: tuple[str, ...], which: str, field: str) -> int:
    """``which`` among ``labels``, as typed or as the tables show it. A token that
    repeats, named without its position, is refused with the labels that name each
    occurrence (a quiz asks one cell: which ``the`` is the teacher's to say); an axis
    of dimensions is named as one."""
    try:
        return _one(labels, which, field)
    except InputError as error:
        shown = tuple(visible(label) for label in labels)
        if shown != labels:
            try:
                return _one(shown, which, field)
            except InputError:
                pass
        if _dimensions(labels) and error.expected is not None:
            raise InputError(
                field=error.field,
                expected=f"a dimension, d0 to d{len(labels) - 1}, or its 0-based index",
                found=repr(which),
            ) from None
        raise


def _one(labels: tuple[str, ...], which: str, field: str) -> int:
    index, note = resolve_position(labels, which, field)
    if not note:
        return index
    names = unique_labels(labels)
    same = [names[i] for i, label in enumerate(labels) if label == labels[index]]
    if len(same) < 2:
        return index  # spelled otherwise (THE for The): the first, as --focus takes it
    raise InputError(
        f"{which!r} is in the sentence {len(same)} times",
        field=field,
        expected=f"one of them: {' or '.join(same)}",
        found=repr(which),
    )


def _dimensions(labels: tuple[str, ...]) -> bool:
    """Whether an axis runs over dimensions (d0, d1, ...), not tokens."""
    return bool(labels) and all(label == f"d{i}" for i, label in enumerate(labels))
