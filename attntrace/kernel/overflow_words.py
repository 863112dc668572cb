"""Why a low-precision cell became infinite, in one phrase with its numbers.

`run --dtype`, `decode --dtype` and `softmax --dtype` each explain their first overflow
(docs/kernels.md). The numbers and the reason are worded here once, so the three say
the same thing the same way:

- a value whose exact result is past the dtype's rounding boundary (largest + half a
  spacing: 65,520 for float16) rounds to ±inf;
- a matrix product whose exact result *fits* can still be inf: a partial sum of the
  accumulation passed the largest value of the dtype it is kept in (``--accumulate
  dtype``, or float32's for huge values), and an infinity is never undone.
"""

from __future__ import annotations

import math

from attntrace.kernel import precision


def amount(value: float) -> str:
    """A number in a sentence: ``162,755``, ``65,504``, ``3.40e38``, ``11.09``, ``−70,000``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "−inf"
    if abs(value) >= 1e8:
        mantissa, _, exponent = f"{value:.2e}".partition("e")
        text = f"{mantissa}e{int(exponent)}"
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.2f}"
    return text.replace("-", "−")


def rounds_to_infinity(value: float, dtype: str) -> bool:
    """Whether ``value`` (finite) is past the dtype's rounding boundary: held as ±inf."""
    return math.isinf(float(precision.round_to(value, dtype)))


def why_infinite(held: float, exact: float, dtype: str, accumulated_in: str | None) -> str:
    """Why a cell the dtype holds as ``held`` (±inf) is infinite, when float64 computed
    ``exact`` from the unrounded inputs.

    - ``exact`` itself past the boundary: ``is past 65,504, the largest float16: it
      rounds to inf``.
    - ``exact`` fits, so the inputs as the dtype holds them took it over. For a product
      summed in the dtype itself (``accumulated_in`` is ``dtype``), its running sum
      passed the largest value, at the last term or before it (an infinity is never
      undone). Otherwise (summed in float32, or an element-wise stage) the result from
      those inputs is past it and rounds to inf: float32 cannot overflow on the way from
      float16's values, and the wording claims no more than the result."""
    sign, word = ("", "inf") if held > 0 else ("−", "−inf")
    top = amount(precision.largest(dtype))
    if not math.isfinite(exact) or rounds_to_infinity(exact, dtype):
        past = "is past" if held > 0 else "is below"
        largest = "the largest" if held > 0 else "the most negative"
        return f"{past} {sign}{top}, {largest} {dtype}: it rounds to {word}"
    inputs = f"from its inputs as {dtype} holds them"
    if accumulated_in == dtype:
        return (
            f"fits {dtype}, but summed in {dtype} {inputs}, its running sum passed "
            f"{sign}{top} and became {word}"
        )
    kept = f" (summed in {accumulated_in})" if accumulated_in is not None else ""
    return f"fits {dtype}, but {inputs}{kept} the result is past {sign}{top}: it rounds to {word}"
