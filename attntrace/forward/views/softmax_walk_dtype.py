"""What a narrow dtype does to the softmax walkthrough, in words: the header naming it,
and the one line that explains the first value that left its range, in numbers.

The table itself is :mod:`attntrace.forward.views.softmax_walk`'s; under ``--dtype`` its cells
are the dtype's values, and an inf or NaN is marked there. This module says why, with
the exact number that did not fit (``exp(12.00) = 162,755 > 65,504, the largest
float16``): float64's, which holds it, beside the dtype's largest value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text

from attntrace.forward.softmax_walk import Overflow, SoftmaxWalk
from attntrace.kernel.overflow_words import amount
from attntrace.kernel.precision import exp_overflow_threshold, smallest_subnormal
from attntrace.ui.numbers import format_number

FLOAT64_MAX = "1.8e308"


def dtype_header(steps: SoftmaxWalk) -> Text:
    """The dtype and the rule, under the formula."""
    return Text(
        f"in {steps.dtype}: every value and every step rounded to {steps.dtype}, sums left "
        "to right",
        style="dim",
    )


def dtype_story(
    steps: SoftmaxWalk,
    precision: int,
    x_text: Callable[[float], str],
    exp_text: Callable[[float], str],
) -> Text:
    """Under the table: the first overflow explained, or why nothing overflowed; and
    why the shares do not sum to 1 (100%) where they do not."""
    text = _story(steps, precision, x_text, exp_text)
    return text.append(_rounding_note(steps, precision)) if text.plain else text


def _rounding_note(steps: SoftmaxWalk, precision: int) -> str:
    """`` The shares sum to 0.996002, not 1: ...``, where the dtype's shares, each
    rounded on its own, do not sum to 1 (the sum row's 99.60% said without a word)."""
    total = math.fsum(steps.weights)
    if not math.isfinite(total) or total == 1:
        return ""
    # As many places as it takes to tell the sum from 1 (1.0000 would say "not 1" of 1).
    places = precision + 2
    while places < 17 and float(f"{total:.{places}f}") == 1:
        places += 1
    return (
        f" The shares sum to {total:.{places}f} ({100 * total:.{max(places - 2, 2)}f}%), "
        f"not 1: each share is rounded to {steps.dtype} on its own, "
        "and the roundings do not cancel."
    )


def _story(
    steps: SoftmaxWalk,
    precision: int,
    x_text: Callable[[float], str],
    exp_text: Callable[[float], str],
) -> Text:
    dtype = steps.dtype
    top = x_text(steps.max)
    total = format_number(steps.sum_exp_shifted, precision + 2)
    stable = (
        f" Subtracting the max ({top}) first keeps every exp at most 1, so the stable "
        f"columns stay finite: share = exp(x − max) / {total}, rounded to {dtype}."
    )
    found = steps.overflow
    if found is not None and found.kind == "input":
        return Text(_input_overflow(steps, found))
    if found is not None and found.kind == "exp":
        return Text(_exp_overflow(steps, found, x_text) + stable)
    if found is not None:
        return Text(
            f"Each exp(x) fits in {dtype}, but their sum {amount(found.exact)} > "
            f"{amount(found.largest)}, the largest {dtype}: without subtracting the max this "
            f"row overflows, and every naive share is exp(x) / inf = 0." + stable
        )
    if steps.underflows:
        below = math.log(smallest_subnormal(dtype) / 2)
        return Text(
            f"exp of every value rounds to 0 in {dtype} (exp(x) is 0 below about "
            f"{below:.2f}), so the naive formula gives 0 / 0 = NaN." + stable
        )
    threshold = exp_overflow_threshold(dtype)
    return Text(
        f"share = exp(x − max) / {total}, rounded to {dtype}. The naive exp(x) / "
        f"{exp_text(steps.naive_sum)} gives the same shares up to {dtype}'s "
        f"rounding here, as no score reaches {threshold:.2f}: past it exp overflows {dtype}, "
        "and only the stable way stays finite."
    )


def _exp_overflow(steps: SoftmaxWalk, found: Overflow, x_text: Callable[[float], str]) -> str:
    dtype = steps.dtype
    exact = (
        f"exp({x_text(found.value)}) = {amount(found.exact)}"
        if math.isfinite(found.exact)
        else f"exp({x_text(found.value)}) > {FLOAT64_MAX}"
    )
    infinite = sum(math.isinf(e) for e in steps.naive_exp)
    if infinite == len(steps.naive_exp):
        shares = "every naive share is inf / inf = NaN"
    else:
        shares = (
            "its naive shares are inf / inf = NaN where exp(x) is inf and "
            "exp(x) / inf = 0 elsewhere"
        )
    return (
        f"{exact} > {amount(found.largest)}, the largest {dtype}: without subtracting "
        f"the max this row overflows, and {shares}."
    )


def _input_overflow(steps: SoftmaxWalk, found: Overflow) -> str:
    dtype = steps.dtype
    if found.value > 0:
        start = (
            f"{amount(found.value)} is past {amount(found.largest)}, the largest {dtype}: "
            "it rounds to inf as it is read"
        )
    else:
        start = (
            f"{amount(found.value)} is past −{amount(found.largest)}, the lowest {dtype}: "
            "it rounds to −inf as it is read"
        )
    if not steps.stable_fails:
        return start + ", so its exp is 0 both ways and its share 0."
    if any(v == math.inf for v in steps.values):
        return (
            start + ", so even the stable way fails: x − max = inf − inf = NaN, and no "
            f"share is a number. A score that large needs a wider dtype "
            f"({_wide_enough(found.value)})."
        )
    return (
        start + ", as does every score, so even the stable way fails: x − max = −inf − "
        "(−inf) = NaN."
    )


def _wide_enough(value: float) -> str:
    """The narrowest dtype wider than half precision that holds ``value``: float32
    below its largest (3.40e38), else float64."""
    from attntrace.kernel.precision import largest

    return "float32" if abs(value) < largest("float32") else "float64"
