"""The softmax of one row of scores, step by step, the naive way and the stable way.

    softmax(x)_i = exp(x_i) / Σ_j exp(x_j) = exp(x_i − m) / Σ_j exp(x_j − m),  m = max(x)

Both ways are computed so a reader can see why the max is subtracted: for scores like
800, exp overflows float64 (its largest value is about 1.8e308) and the naive weights
become inf / inf = NaN, while the stable ones are exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attntrace.errors import InputError
from attntrace.kernel.ops import softmax


@dataclass(frozen=True)
class Overflow:
    """The first value of a low-precision walk that left the dtype's range, in the order
    the row is computed: a score itself (``"input"``: it rounds to ±inf as it is read),
    an exp of the naive way (``"exp"``), or the naive sum with every exp finite
    (``"sum"``). ``value`` is the user's score (input) or the dtype's (exp); ``exact`` is
    the float64 number that did not fit: the score, float64's exp of it, or the exact
    sum of the dtype's exps."""

    kind: str
    index: int  # 0-based position in the row (the sum's: -1)
    value: float
    exact: float
    largest: float


@dataclass(frozen=True)
class SoftmaxWalk:
    """Every intermediate of the softmax of ``values``."""

    values: tuple[float, ...]
    max: float
    shifted: tuple[float, ...]  # value − max
    exp_shifted: tuple[float, ...]  # exp(value − max), each ≤ 1
    sum_exp_shifted: float
    weights: tuple[float, ...]  # the softmax, from the stable formula
    naive_exp: tuple[float, ...]  # exp(value): inf where float64 overflows
    naive_sum: float
    naive_weights: tuple[float, ...]  # exp(value) / Σ exp: NaN (inf / inf) or 0 (x / inf)
    # Where the row was computed (softmax --dtype); values are that dtype's, as float64s.
    dtype: str = "float64"
    # Under a narrower dtype, the first value that became ±inf or NaN, and why.
    overflow: Overflow | None = None

    @property
    def winner(self) -> int:
        return int(np.argmax(self.weights))

    @property
    def overflows(self) -> bool:
        """Σ exp(value) is inf: an exp overflowed (its weight is inf / inf = NaN), or
        only the sum did (every weight is a finite exp / inf = 0)."""
        return not math.isfinite(self.naive_sum)

    @property
    def stable_fails(self) -> bool:
        """A weight of the stable way is NaN: only where a score rounded to ±inf on input
        under a narrow dtype (inf − inf), never in float64 (its input is finite)."""
        return any(math.isnan(w) for w in self.weights)

    @property
    def underflows(self) -> bool:
        """exp of every value rounds to 0 (all below about −745): naive weights 0 / 0 = NaN."""
        return self.naive_sum == 0.0


def walk(values: Sequence[float]) -> SoftmaxWalk:
    """Compute the walkthrough of ``values`` (finite numbers, at least one)."""
    if not values:
        raise InputError(expected="at least one number", found="none")
    row = np.array(values, dtype=np.float64)
    if not np.all(np.isfinite(row)):
        bad = next(v for v in values if not math.isfinite(v))
        raise InputError(expected="finite numbers", found=repr(bad))
    top = float(row.max())
    if not math.isfinite(top - float(row.min())):
        raise InputError(
            expected="values whose range (max − min) fits in float64",
            found=f"max {top!r} and min {float(row.min())!r}",
        )
    shifted = row - top
    exp_shifted = np.exp(shifted)
    with np.errstate(over="ignore", invalid="ignore"):
        naive_exp = np.exp(row)
        naive_sum = float(naive_exp.sum())
        naive_weights = naive_exp / naive_sum
    return SoftmaxWalk(
        values=tuple(float(v) for v in row),
        max=top,
        shifted=tuple(float(v) for v in shifted),
        exp_shifted=tuple(float(v) for v in exp_shifted),
        sum_exp_shifted=float(exp_shifted.sum()),
        weights=tuple(float(v) for v in softmax(row[None, :])[0]),
        naive_exp=tuple(float(v) for v in naive_exp),
        naive_sum=naive_sum,
        naive_weights=tuple(float(v) for v in naive_weights),
    )
