"""What `grad` and `train` minimize, as a user names it: the attend loss between two
tokens (``--from it --to animal``) or mse against the model's ``target``; resolved
against a trace to a :class:`attntrace.learning.losses.Loss` (docs/learning.md#the-losses).

The names are resolved here, once, so both commands accept the same spellings of a
token (``it``, ``it#7``, ``7``: :func:`attntrace.forward.focus.resolve_position`) and say
the same things about a bad one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attntrace.errors import InputError
from attntrace.forward.focus import resolve_position
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.ops import Matrix
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.learning.backward import block_output_name
from attntrace.learning.losses import Loss, attend_loss, mse_loss

LOSS_KINDS = ("attend", "mse")


@dataclass(frozen=True)
class Objective:
    """A loss as named: ``kind`` ``attend`` (``from_token`` row, ``to_token`` column,
    ``head`` or None for the sum over every head) or ``mse`` (the model's target)."""

    kind: str
    from_token: str | None = None
    to_token: str | None = None
    head: int | None = None


@dataclass(frozen=True)
class Resolved:
    """An objective resolved against a trace: the loss, and what it reads, for a view.

    ``cell`` is the (row, column) of the attend loss, ``heads`` the heads it sums over;
    ``notes`` say which of a repeated token was meant. ``formula`` is the loss as written.
    """

    loss: Loss
    formula: str
    cell: tuple[int, int] | None
    heads: tuple[int, ...]
    notes: tuple[str, ...] = ()


def resolve(objective: Objective, model: ModelSpec, trace: Trace) -> Resolved:
    """The loss ``objective`` names, on ``trace`` of ``model``.

    Raises :class:`InputError` for an unknown loss, a token that is not in the sentence
    (the from-token) or the keys (the to-token), a head out of range, a hidden or zero
    weight, and for mse without a ``target`` or with one of the wrong shape.
    """
    if objective.kind == "attend":
        return _attend(objective, trace)
    if objective.kind == "mse":
        return _mse(model, trace)
    raise InputError(field="--loss", expected=" or ".join(LOSS_KINDS), found=repr(objective.kind))


def _attend(objective: Objective, trace: Trace) -> Resolved:
    if objective.from_token is None or objective.to_token is None:
        missing = "--from" if objective.from_token is None else "--to"
        raise InputError(
            "the attend loss needs both tokens: --from TOKEN --to TOKEN",
            field=missing,
            expected="a token",
            found="nothing",
        )
    cross = trace.context_tokens is not None
    keys = trace.context_tokens if trace.context_tokens is not None else trace.tokens
    row, from_note = resolve_position(trace.tokens, objective.from_token, "--from")
    try:
        col, to_note = resolve_position(keys, objective.to_token, "--to")
    except InputError as error:
        if not cross:
            raise
        raise InputError(
            field="--to",
            found=error.found,
            expected="a token of the context (the keys, under cross-attention) "
            "or its 0-based index",
        ) from None
    heads = tuple(range(trace.model.heads)) if objective.head is None else (objective.head,)
    try:
        loss = attend_loss(trace, row, col, objective.head)
    except InputError as error:  # the kernel's argument names, said as the flags are
        raise InputError(
            error.message, field=f"--{error.field}", expected=error.expected, found=error.found
        ) from None
    # the tables' labels: a repeated token is told apart (the#4), as in every table
    cell = f"softmax[{unique_labels(trace.tokens)[row]}, {unique_labels(keys)[col]}]"
    if objective.head is not None or trace.model.heads == 1:
        formula = f"L = −log {cell}"
    else:
        formula = f"L = Σ over heads 0…{trace.model.heads - 1} of −log {cell}"
    notes = tuple(note for note in (from_note, to_note) if note)
    return Resolved(loss, formula, (row, col), heads, notes)


def _mse(model: ModelSpec, trace: Trace) -> Resolved:
    name = block_output_name(model)
    if model.target is None:
        raise InputError(
            "--loss mse pulls the block's output toward the model file's "
            "target, and this model has none",
            field="target",
            expected=f"a matrix shaped as {name} (one row per token)",
            found="no target",
        )
    output: Matrix = trace.stage(name).data
    target = np.asarray(model.target)
    rows = target.shape[0]
    if rows != output.shape[0]:
        raise InputError(
            field="target",
            expected=f"{output.shape[0]} rows (one per token of the sentence)",
            found=f"{rows} row{'s' if rows != 1 else ''}",
        )
    loss = mse_loss(output, target)
    return Resolved(loss, f"L = mean(({name} − target)²)", None, tuple(range(model.heads)))
