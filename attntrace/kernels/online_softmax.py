"""The one-pass online softmax, element by element, next to the two-pass one.

The stable softmax reads its row twice before it can write a weight: once for the max
m, once for d = Σ exp(x_j − m). Milakov & Gimelshein (2018, "Online normalizer
calculation for softmax", arXiv 1805.02867) compute m and d in ONE pass, keeping a
running max and a running sum that is rescaled whenever the max grows:

    m_0 = −∞,  d_0 = 0
    m_i = max(m_{i−1}, x_i)
    d_i = d_{i−1} · exp(m_{i−1} − m_i) + exp(x_i − m_i)
    y_i = exp(x_i − m_N) / d_N

At the end m_N is the row's max and d_N = Σ exp(x_j − m_N), the two-pass sum (up to
rounding): every term was scaled from the max it was added under to the final one. This
is the step FlashAttention repeats block by block. A masked score (−∞) adds exp(−∞) = 0;
the first rescale, from m_0 = −∞, is exp(−∞) = 0 times d_0 = 0; where the max does not
change (−∞ to −∞ included) the factor is 1, never exp(−∞ − (−∞)) = NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from attntrace.errors import InputError


@dataclass(frozen=True)
class OnlineStep:
    """Step i of the pass: x_i read, the max m and sum d before and after, and the factor
    exp(m_old − m_new) d_old was scaled by."""

    x: float
    m_old: float
    m_new: float
    d_old: float
    d_new: float
    rescale: float


@dataclass(frozen=True)
class OnlineSoftmax:
    """Both ways of one row: the online pass's steps and weights, and the two-pass
    max, sum and weights."""

    values: tuple[float, ...]
    steps: tuple[OnlineStep, ...]
    weights: tuple[float, ...]  # exp(x_i − m_N) / d_N
    two_pass_max: float
    two_pass_sum: float  # Σ exp(x_j − max), left to right
    two_pass_weights: tuple[float, ...]

    @property
    def max(self) -> float:
        return self.steps[-1].m_new

    @property
    def sum(self) -> float:
        return self.steps[-1].d_new

    @property
    def max_difference(self) -> float:
        """max |online − two-pass| over the weights: rounding alone."""
        return max(abs(a - b) for a, b in zip(self.weights, self.two_pass_weights, strict=True))


def _exp_shifted(x: float, m: float) -> float:
    """exp(x − m) for x ≤ m, m finite or both −∞ (a masked score under an all-masked
    prefix adds nothing)."""
    if x == -math.inf:
        return 0.0
    return math.exp(x - m)


def _checked(values: Sequence[float]) -> tuple[float, ...]:
    if len(values) == 0:
        raise InputError(field="values", expected="at least one number", found="none")
    row = tuple(float(v) for v in values)
    for v in row:
        if math.isnan(v) or v == math.inf:
            raise InputError(
                field="values", expected="finite numbers or −inf (masked)", found=repr(v)
            )
    if all(v == -math.inf for v in row):
        raise InputError(
            field="values",
            expected="at least one score not masked",
            found="every value −inf (softmax of a fully masked row is 0 / 0)",
        )
    return row


def online_softmax(values: Sequence[float]) -> OnlineSoftmax:
    """The online softmax of ``values`` (finite numbers or −inf for masked; at least one
    finite), every step recorded, with the two-pass result beside it. No step overflows in
    float64: every exponent is x − m ≤ 0 or m_old − m_new ≤ 0."""
    row = _checked(values)
    steps: list[OnlineStep] = []
    m, d = -math.inf, 0.0
    for x in row:
        m_new = max(m, x)
        rescale = 1.0 if m_new == m else math.exp(m - m_new)  # exp(−∞) = 0.0
        d_new = d * rescale + _exp_shifted(x, m_new)
        steps.append(OnlineStep(x=x, m_old=m, m_new=m_new, d_old=d, d_new=d_new, rescale=rescale))
        m, d = m_new, d_new
    weights = tuple(_exp_shifted(x, m) / d for x in row)

    top = max(row)
    total = 0.0
    for x in row:
        total += _exp_shifted(x, top)
    two_pass = tuple(_exp_shifted(x, top) / total for x in row)
    return OnlineSoftmax(
        values=row,
        steps=tuple(steps),
        weights=weights,
        two_pass_max=top,
        two_pass_sum=total,
        two_pass_weights=two_pass,
    )
