"""A saved ``run --dtype`` trace's ``precision`` and per-stage ``error``, read back and
checked (docs/kernels.md, "JSON"), so ``render`` shows its dtype, error lines and first
overflow as ``run`` did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attntrace.errors import InputError, describe
from attntrace.kernel import fields
from attntrace.kernel.casting import Cast, StageError
from attntrace.kernel.precision import ACCUMULATE, DTYPES
from attntrace.kernel.precision_record import LowPrecision, Overflow
from attntrace.kernel.trace import Stage

_NARROW = DTYPES[1:]  # a saved precision is never float64's: a float64 trace has none


def saved_precision(
    document: Any, raw: Sequence[Any], stages: Sequence[Stage], weights: Sequence[Stage] = ()
) -> LowPrecision:
    """``precision`` and each stage's ``error`` (``raw``: the stages as saved); every
    cell of the stages and ``weights`` must be a value of the dtype."""
    record = fields.mapping(
        document.get("precision"),
        "precision",
        "an object with dtype, softmax_dtype, accumulate, rule",
    )
    names = ", ".join(_NARROW)
    dtype = fields.choice(record.get("dtype"), "precision.dtype", _NARROW, f"one of {names}")
    softmax = fields.choice(
        record.get("softmax_dtype"),
        "precision.softmax_dtype",
        ("float32", dtype),
        f"float32 or {dtype}",
    )
    accumulate = fields.choice(
        record.get("accumulate"), "precision.accumulate", ACCUMULATE, "float32 or dtype"
    )
    fields.text(record.get("rule"), "precision.rule")  # shown from the cast, not the file
    for index, stage in enumerate(stages):
        _held_in(stage, dtype, f"stages[{index}].data")
    for index, weight in enumerate(weights):
        _held_in(weight, dtype, f"weights[{index}].data")
    errors = {
        (stage.name, stage.head): _error(saved, f"stages[{i}].error")
        for i, (saved, stage) in enumerate(zip(raw, stages, strict=True))
        if isinstance(saved, dict) and saved.get("error") is not None
    }
    cast = Cast.of(dtype, softmax, accumulate)
    return LowPrecision(cast, errors, _overflow(record.get("first_overflow")))


def _held_in(stage: Stage, dtype: str, field: str) -> None:
    """Every cell a value of ``dtype``, as a trace computed in it holds: a cell that is
    not (1e9 in a float16 trace) was not written by run --dtype."""
    import numpy as np

    from attntrace.kernel.precision import round_to

    data = stage.data
    finite = np.isfinite(data)
    wrong = finite & (round_to(np.where(finite, data, 0.0), dtype) != data)
    if wrong.any():
        i, j = (int(k[0]) for k in np.nonzero(wrong))
        raise InputError(
            field=f"{field}[{i}][{j}]",
            expected=f"a value of {dtype} (the trace's precision.dtype)",
            found=repr(float(data[i, j])),
        )


def _error(stage: Any, field: str) -> StageError:
    error = fields.mapping(stage.get("error"), field, "an object with max_abs, max_rel, inf, nan")
    return StageError(
        _optional_number(error.get("max_abs"), f"{field}.max_abs"),
        _optional_number(error.get("max_rel"), f"{field}.max_rel"),
        fields.whole(error.get("inf"), f"{field}.inf", least=0),
        fields.whole(error.get("nan"), f"{field}.nan", least=0),
    )


def _optional_number(value: Any, field: str) -> float | None:
    if value is None:
        return None
    number = fields.number(value, field, expected="a number ≥ 0 or null")
    if number < 0:
        raise InputError(field=field, expected="a number ≥ 0 or null", found=describe(value))
    return number


def _overflow(value: Any) -> Overflow | None:
    if value is None:
        return None
    first = fields.mapping(
        value, "precision.first_overflow", "an object with stage, head, explanation, or null"
    )
    return Overflow(
        fields.text(first.get("stage"), "precision.first_overflow.stage"),
        fields.optional_whole(first.get("head"), "precision.first_overflow.head"),
        fields.text(first.get("explanation"), "precision.first_overflow.explanation"),
    )
