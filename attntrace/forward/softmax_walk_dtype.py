"""The softmax walkthrough of one row computed in float32, float16 or bfloat16.

``softmax --dtype D`` shows what the article's stability tip means where it matters:
in float16, exp overflows past 11.09 (exp(11.09) ≈ 65,612 > 65,504, its largest), so a
row of scores float64 handles with ease breaks the naive formula, while the stable one
(the max subtracted) stays finite. Every value is D's, held as the float64 number it
equals (:mod:`attntrace.kernel.precision`):

- the scores are rounded to D (a score past D's largest becomes ±inf, as a cast does);
- the naive way: e = exp(x) rounded to D (a correctly rounded exp: float64's, rounded),
  their sum left to right with each partial sum rounded to D, and e / sum rounded;
- the stable way: m = the row max, x − m rounded to D, exp of it rounded, the sum left
  to right rounded at each step, and each share rounded to D: the steps of
  ``softmax_in(x, D, softmax_dtype=D)``, each kept.

Overflow is not refused (a framework does not refuse it either): it goes on as IEEE
arithmetic takes it, and :class:`~attntrace.forward.softmax_walk.Overflow` names the first
value that left D's range, for the one line that explains it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attntrace.errors import InputError
from attntrace.forward.softmax_walk import Overflow, SoftmaxWalk, walk
from attntrace.kernel.precision import DTYPES, Array, add_in, format_of, largest, round_to


def _sum_in(terms: Array, dtype: str) -> float:
    """Σ terms left to right, each partial sum rounded to ``dtype`` (from 0)."""
    total = 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        for term in terms:
            total = float(add_in(total, term, dtype))
    return total


def _first_overflow(
    raw: Sequence[float], row: Array, naive_exp: Array, naive_sum: float, dtype: str
) -> Overflow | None:
    """The first value that left the dtype's range, in the order the row is computed."""
    top = largest(dtype)
    for i, (given, held) in enumerate(zip(raw, row, strict=True)):
        if math.isinf(held):
            return Overflow("input", i, float(given), float(given), top)
    for i, (x, e) in enumerate(zip(row, naive_exp, strict=True)):
        if math.isinf(e):
            with np.errstate(over="ignore"):  # inf where even float64's exp overflows
                exact = float(np.exp(x))
            return Overflow("exp", i, float(x), exact, top)
    if math.isinf(naive_sum):
        exact = math.fsum(float(e) for e in naive_exp)
        return Overflow("sum", -1, naive_sum, exact, top)
    return None


def walk_in(values: Sequence[float], dtype: str) -> SoftmaxWalk:
    """The walkthrough of ``values`` (finite float64 numbers, at least one) with every
    value and step in ``dtype``; float64 is :func:`~attntrace.forward.softmax_walk.walk`."""
    if dtype not in DTYPES:
        format_of(dtype)  # the InputError that names the choices
    if dtype == "float64":
        return walk(values)
    if not values:
        raise InputError(expected="at least one number", found="none")
    raw = [float(v) for v in values]
    if not all(math.isfinite(v) for v in raw):
        bad = next(v for v in raw if not math.isfinite(v))
        raise InputError(expected="finite numbers", found=repr(bad))
    row = round_to(raw, dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        naive_exp = round_to(np.exp(row), dtype)
        naive_sum = _sum_in(naive_exp, dtype)
        naive_weights = round_to(naive_exp / naive_sum, dtype)
        top = float(row.max())
        shifted = add_in(row, -top, dtype)
        exp_shifted = round_to(np.exp(shifted), dtype)
        total = _sum_in(exp_shifted, dtype)
        weights = round_to(exp_shifted / total, dtype)
    return SoftmaxWalk(
        values=tuple(float(v) for v in row),
        max=top,
        shifted=tuple(float(v) for v in shifted),
        exp_shifted=tuple(float(v) for v in exp_shifted),
        sum_exp_shifted=total,
        weights=tuple(float(v) for v in weights),
        naive_exp=tuple(float(v) for v in naive_exp),
        naive_sum=naive_sum,
        naive_weights=tuple(float(v) for v in naive_weights),
        dtype=dtype,
        overflow=_first_overflow(raw, row, naive_exp, naive_sum, dtype),
    )
