"""The two losses the backward pass starts from, each with its value and its gradient.

``attend``: L = −log softmax[from, to], "make this token look at that one", for one head
or summed over the heads. It depends on the softmax alone, so its gradient enters the
backward pass there (dL/dA), not at the block's output. ``mse``: L = mean((out − target)²)
against a target shaped as the block's output, entering at the output.
:func:`attntrace.learning.backward.grad_block` takes either gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attntrace.errors import InputError
from attntrace.kernel import fields
from attntrace.kernel.fields import shape_text
from attntrace.kernel.frozen import computed
from attntrace.kernel.ops import Matrix
from attntrace.kernel.trace import Trace


@dataclass(frozen=True, eq=False)
class Loss:
    """A loss's value and where its gradient enters: ``d_output`` (dL/d block output) or
    ``d_softmax`` (per query head, dL/dA; None for a head the loss does not read)."""

    name: str
    value: float
    d_output: Matrix | None = None
    d_softmax: tuple[Matrix | None, ...] | None = None


def attend_loss(trace: Trace, from_row: int, to_col: int, head: int | None = None) -> Loss:
    """L = −log softmax[from_row, to_col] of ``head``, or summed over every head when
    ``head`` is None. dL/dA is −1/A at that one cell and 0 elsewhere.

    Raises :class:`InputError` for a row, column or head out of range, a cell the causal
    mask hides, or a weight of exactly 0 (an infinite loss).
    """
    heads = trace.model.heads
    n = len(trace.tokens)
    m = n if trace.context_tokens is None else len(trace.context_tokens)
    fields.index(from_row, "from", n, "a row: a query token's position")
    fields.index(to_col, "to", m, "a column: a key token's position")
    if head is not None:
        fields.index(head, "head", heads, "a head")
    chosen = range(heads) if head is None else (head,)
    if trace.model.causal and to_col > from_row + (m - n):
        raise InputError(
            "the causal mask hides a later token: its weight is 0 whatever the weights",
            field="to",
            expected=f"a position ≤ {from_row + (m - n)} (at or before the from-token)",
            found=str(to_col),
        )
    value = 0.0
    d_softmax: list[Matrix | None] = [None] * heads
    for h in chosen:
        weight = float(trace.stage("softmax", head=h).data[from_row, to_col])
        if weight <= 0.0:
            raise InputError(
                "that weight is exactly 0 in float64: −log 0 is infinite, with no gradient",
                field="to",
                expected="a cell whose softmax weight is above 0",
                found=f"0 (head {h})" if heads > 1 else "0",
            )
        value -= float(np.log(weight))
        d = np.zeros((n, m))
        d[from_row, to_col] = -1.0 / weight
        d_softmax[h] = computed(d)
    return Loss("attend", value, d_softmax=tuple(d_softmax))


def mse_loss(block_output: Matrix, target: Matrix) -> Loss:
    """L = mean((out − target)²), over every cell; dL/d out = 2·(out − target) / size.

    Raises :class:`InputError` when ``target`` is not shaped as the block's output or
    holds a non-finite number.
    """
    out = np.asarray(block_output, dtype=np.float64)
    goal = np.asarray(target)
    if goal.dtype.kind not in "fiu" or goal.shape != out.shape:
        raise InputError(
            field="target",
            expected=f"a {' × '.join(map(str, out.shape))} matrix of numbers "
            "(the block output's shape)",
            found=shape_text(goal.shape) or "a scalar",
        )
    goal = goal.astype(np.float64)
    if not np.isfinite(goal).all():
        raise InputError(field="target", expected="finite numbers", found="inf or NaN")
    with np.errstate(over="ignore", invalid="ignore"):
        difference = out - goal
        value = float(np.mean(difference**2))
    if not np.isfinite(value):
        raise InputError(
            "the mse loss overflows float64: the output and the target are too far apart",
            field="target",
            expected="a finite loss",
            found=repr(value),
        )
    return Loss("mse", value, d_output=computed(2.0 * difference / difference.size))
