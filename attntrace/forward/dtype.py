"""``run --dtype``: the whole trace by the casting rule, beside its float64 twin.

:func:`attntrace.forward.attention.computed_block` makes the stages (their order, formulas,
labels, heads) for both; here they are made by a :class:`~attntrace.kernel.casting.Cast`
without refusing an overflow, each stage is measured against float64
(:func:`~attntrace.kernel.casting.stage_error`), and the first stage holding a new ±inf
or NaN is explained in numbers (docs/kernels.md, "What the views show").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from attntrace.forward.attention import computed_block
from attntrace.forward.weight_stages import weight_stages
from attntrace.kernel import precision
from attntrace.kernel.budget import FLOAT, also_counted, model_bytes, trace_bytes
from attntrace.kernel.casting import Cast, fresh_cells, stage_error
from attntrace.kernel.overflow_words import amount, why_infinite
from attntrace.kernel.precision_record import LowPrecision, Overflow
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Stage, Trace
from attntrace.visible import quoted

# Stages before softmax, whose overflow reaches softmax's rows (inf − inf is NaN).
_BEFORE_SOFTMAX = (
    "Q",
    "Q_norm",
    "Q_rope",
    "K",
    "K_norm",
    "K_rope",
    "scores",
    "scaled",
    "alibi",
    "biased",
    "capped",
    "masked",
)


def trace_low(
    model: ModelSpec, tokens: Sequence[str], cast: Cast, context: Sequence[str] | None = None
) -> Trace:
    """The trace of ``model`` over ``tokens`` computed by ``cast``, never refusing inf or
    NaN, with its ``precision`` record: each stage's error against float64's trace of
    the same input (computed unrefused, so the error is measured even where float64
    itself would overflow) and the first overflow. float64's cast is the plain trace."""
    if cast.exact:
        return computed_block(model, tokens, context, refuse=False)
    # both traces are held at once, and the weights once more as the dtype holds them:
    # counted against one budget before the first is computed
    with also_counted(_twin):
        reference = computed_block(model, tokens, context, refuse=False)
        low = computed_block(model, tokens, context, arithmetic=cast, refuse=False)
    errors = {
        (s.name, s.head): stage_error(s.data, r.data)
        for s, r in zip(low.stages, reference.stages, strict=True)
    }
    overflowed = any(error.overflowed for error in errors.values())  # else nothing to find
    first = first_overflow(low, reference, cast) if overflowed else None
    record = LowPrecision(cast, errors, first)
    weights = tuple(_rounded(w, cast) for w in weight_stages(model))
    return replace(low, weights=weights, precision=record)


def _twin(model: ModelSpec, n: int, m: int) -> dict[str, int]:
    """What ``--dtype`` holds besides one trace: the other trace (float64's, to measure
    the error against), the learned matrices as the dtype holds them, and the casting
    rule's temporaries beyond float64's (a product's accumulator, its rounding, the
    softmax in float32)."""
    return {
        "float64's trace": trace_bytes(model, n, m),
        "the rounded weights": model_bytes(model),
        "the dtype's arithmetic": LOW_WORK_SQUARES * FLOAT * n * m,
    }


LOW_WORK_SQUARES = 6  # n × m matrices a head's dtype arithmetic holds beyond float64's


def _rounded(stage: Stage, cast: Cast) -> Stage:
    """A learned matrix as the dtype holds it (a checkpoint cast to it)."""
    return Stage(
        stage.name,
        stage.formula,
        stage.rows,
        stage.cols,
        cast.round(stage.data),
        head=stage.head,
        kv_head=stage.kv_head,
    )


def first_overflow(low: Trace, reference: Trace, cast: Cast) -> Overflow | None:
    """The first stage, in trace order, with a new ±inf or NaN, said in numbers."""
    for stage, exact in zip(low.stages, reference.stages, strict=True):
        fresh = fresh_cells(stage.data, exact.data)
        if fresh.any():
            i, j = (int(k[0]) for k in np.nonzero(fresh))
            sentence = _explained(stage, i, j, float(exact.data[i, j]), low, cast)
            return Overflow(stage.name, stage.head, sentence)
    return None


# The stages that are a matrix product: where a partial sum can overflow on the way.
_PRODUCTS = ("Q", "K", "V", "scores", "output", "projected")


def _explained(stage: Stage, i: int, j: int, exact: float, trace: Trace, cast: Cast) -> str:
    """``scores: Q · Kᵀ = 70,144 at row "cat", column "fish" is past 65,504, the largest
    float16: it rounds to inf, and softmax of that row is NaN (inf − inf)``."""
    many = trace.model.heads > 1 and stage.head is not None
    where = f"{stage.name} (head {stage.head})" if many else stage.name
    rhs = stage.formula.split(" = ", 1)[1] if " = " in stage.formula else stage.formula
    cell = f"at row {quoted(stage.rows[i])}, column {quoted(stage.cols[j])}"
    value = float(stage.data[i, j])
    shown = amount(exact) if np.isfinite(exact) else "past float64's range"
    if np.isnan(value):
        top = amount(precision.largest(cast.accumulates_in))
        why = (
            f"is NaN in {cast.dtype}: a running sum passed {top} and met an infinity "
            "of the other sign (inf − inf)"
        )
    else:
        into = cast.accumulates_in if stage.name in _PRODUCTS else None
        why = why_infinite(value, exact, cast.dtype, into)
    return f"{where}: {rhs} = {shown} {cell} {why}, {_follows(stage, i, trace)}"


def _follows(stage: Stage, row: int, trace: Trace) -> str:
    """What the overflow leads to: softmax's row, or the block's last stage."""
    if stage.name in _BEFORE_SOFTMAX and stage.head is not None:
        weights = trace.stage("softmax", head=stage.head).data
        query_side = stage.name not in ("K", "K_norm", "K_rope")
        if query_side and np.isnan(weights[row]).any():
            return "and softmax of that row is NaN (inf − inf)"
        rows = int(np.count_nonzero(np.isnan(weights).any(axis=1)))
        if rows:
            return f"and softmax is NaN in {rows} of its {weights.shape[0]} rows (inf − inf)"
    last = trace.stages[-1]
    bad = int(np.count_nonzero(~np.isfinite(last.data)))
    if bad == 0:
        return f"and {last.name} stays finite"
    return f"and {bad} of the {last.data.size} cells of {last.name} are inf or NaN"
