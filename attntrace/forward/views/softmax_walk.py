"""The softmax walkthrough as a table: exp of each score, the sum, each share.

When nothing overflows, the article's way (exp of each value, divided by their sum) is
shown first; the stable way (the row max subtracted) always, with the reason.

The cells follow the tables' rule (fixed point, scientific from 1e8), and the columns
a reader does arithmetic with carry the digits it needs (the rule of
:mod:`attntrace.ui.by_hand`): x, and the max in the text, have the digits that
make each x − max check (``1.00000005e+08`` beside ``1.00000000e+08`` for ``-5.00``,
where ``1.00e+08`` twice would not); where the naive shares are shown, exp(x) and its
sum have the digits that make exp(x) / sum give the share column to its last digit
(more than ``precision`` only where needed: exp(−5) is 0.0067 in a sum of 1.0071, as
0.01 / 1.01 would not give 0.0067).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.console import Group, JustifyMethod, RenderableType
from rich.text import Text

from attntrace.forward.softmax_walk import SoftmaxWalk
from attntrace.ui.by_hand import (
    FIXED_EXTRA,
    FLOAT_SLACK,
    exact_mantissa,
    first_that,
    scientific_digits,
    within,
)
from attntrace.ui.numbers import FIXED_LIMIT, OVERFLOWED, fixed, format_number, scientific
from attntrace.ui.split_table import SplitTable

FLOAT64_MAX = "1.8e308"

Writer = Callable[[float], str]


def _number(value: float, precision: int) -> str:
    if math.isinf(value):  # −inf only under a narrow dtype: a score that rounded to it
        return "inf" if value > 0 else "−inf"
    if math.isnan(value):
        return "NaN"  # as run's tables write it
    return format_number(value, precision)


def _percent(share: float) -> str:
    """``83.84%``; ``NaN%`` written as the cells write NaN."""
    return f"{_number(100 * share, 2)}%"


def _cells(decimals: int, mantissa: int, limit: float = FIXED_LIMIT) -> Writer:
    """Fixed point with ``decimals`` below ``limit`` in size, else ``mantissa`` digits."""

    def write(value: float) -> str:
        if not math.isfinite(value):
            return _number(value, decimals)
        if abs(value) < limit:
            return fixed(value, decimals, keep_nonzero=True)
        return scientific(value, mantissa) if value else fixed(value, decimals)

    return write


def _unit(text: str) -> float:
    """The unit of the last digit of a written number: ``-5.00`` -> 0.01."""
    mantissa, _, exponent = text.partition("e")
    return 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))


def _x_writer(steps: SoftmaxWalk, precision: int) -> Writer:
    """x and the max with the fewest digits (``precision`` at least) for which each
    x − max, redone from them, is within a unit of its written last digit."""

    # In a narrow dtype, x − max is itself rounded: by up to half its spacing there.
    rounding = _half_spacing(steps)

    def adds_up(write: Writer) -> bool:
        if not math.isfinite(steps.max):  # every score rounded to −inf: nothing to redo
            return True
        top = float(write(steps.max))
        return all(
            abs(float(write(x)) - top - shifted)
            <= _unit(_number(shifted, precision))
            + FLOAT_SLACK * (abs(x) + abs(steps.max))
            + rounding(shifted)
            for x, shifted in zip(steps.values, steps.shifted, strict=True)
            if math.isfinite(shifted)  # a score that rounded to ±inf: no arithmetic to check
        )

    mantissas = range(precision, exact_mantissa(precision) + 1)
    return first_that(adds_up, [_cells(precision, mantissa) for mantissa in mantissas])


def _half_spacing(steps: SoftmaxWalk) -> Callable[[float], float]:
    """Half the spacing of the walk's dtype at a value: 0 in float64 (nothing rounded)."""
    if steps.dtype == "float64":
        return lambda value: 0.0
    from attntrace.kernel.precision import spacing

    return lambda value: float(spacing(value, steps.dtype)) / 2


def _exp_writer(steps: SoftmaxWalk, precision: int) -> Writer:
    """exp(x) and its sum: where the naive shares are claimed, with the digits that make
    exp(x) / sum give each share to within half a unit of its last digit."""
    if steps.overflows or steps.underflows:
        return _cells(precision, precision)
    unit = 10.0 ** -(precision + 2)  # the share column's

    def adds_up(write: Writer) -> bool:
        total = float(write(steps.naive_sum))
        return total > 0 and all(
            within(abs(float(write(e)) / total - e / steps.naive_sum), unit, 1.0)
            for e in steps.naive_exp
        )

    exact = exact_mantissa(precision)
    extras = range(FIXED_EXTRA[-1] + 1)  # as many more digits as needed, from none
    writers = [_cells(precision + extra, min(precision + extra, exact)) for extra in extras]
    writers += [_cells(0, digits, limit=0.0) for digits in scientific_digits(precision)]
    return first_that(adds_up, writers)


def walkthrough(steps: SoftmaxWalk, precision: int) -> Group:
    """Table of x, exp(x), x − max, exp(x − max), share and %, then what it shows."""
    heaviest = max(steps.weights)
    cell = _marker(steps.dtype)
    x_text, exp_text = _x_writer(steps, precision), _exp_writer(steps, precision)
    rows: list[tuple[RenderableType, ...]] = []
    for i, x in enumerate(steps.values):
        mark = steps.weights[i] == heaviest
        rows.append(
            (
                Text(f"◀ {i + 1}" if mark else str(i + 1), style="bold" if mark else ""),
                cell(x, x_text(x)),
                cell(steps.naive_exp[i], exp_text(steps.naive_exp[i])),
                cell(steps.shifted[i], _number(steps.shifted[i], precision)),
                cell(steps.exp_shifted[i], _number(steps.exp_shifted[i], precision + 2)),
                cell(steps.weights[i], _number(steps.weights[i], precision + 2)),
                cell(
                    steps.weights[i], Text(_percent(steps.weights[i]), style="bold" if mark else "")
                ),
            )
        )
    shares = math.fsum(steps.weights)
    rows.append(
        (
            Text("sum", style="dim"),
            "",
            cell(steps.naive_sum, exp_text(steps.naive_sum)),
            "",
            cell(steps.sum_exp_shifted, _number(steps.sum_exp_shifted, precision + 2)),
            cell(shares, _number(shares, precision + 2)),
            cell(shares, _percent(shares)),
        )
    )
    # Too narrow for every column: drawn in parts, never a number folded over two lines.
    headers = ("", "x", "exp(x)", "x − max", "exp(x − max)", "share", "%")
    right: JustifyMethod = "right"
    table = SplitTable(headers, [right] * len(headers), rows)
    parts: list[RenderableType] = [Text("softmax(x)ᵢ = exp(xᵢ) / Σ exp(xⱼ)", style="bold")]
    if steps.dtype != "float64":
        from attntrace.forward.views.softmax_walk_dtype import dtype_header, dtype_story

        parts += [
            dtype_header(steps),
            table,
            Text(""),
            dtype_story(steps, precision, x_text, exp_text),
        ]
        return Group(*parts)
    parts += [table, Text("")]
    top = x_text(steps.max)
    if steps.overflows:
        parts.append(
            Text(
                f"{_what_overflows(steps, x_text)} Subtracting the "
                f"max ({top}) first gives the same weights in exact arithmetic with every exp "
                f"at most 1, so nothing overflows: share = exp(x − max) / "
                f"{_number(steps.sum_exp_shifted, precision + 2)}.",
            )
        )
    elif steps.underflows:
        parts.append(
            Text(
                f"exp of every value rounds to 0 in float64 (exp(x) is 0 below about -745), so "
                f"the naive formula gives 0 / 0 = nan. Subtracting the max ({top}) first "
                f"makes the largest exp exactly 1, so the sum is at least 1: share = "
                f"exp(x − max) / {_number(steps.sum_exp_shifted, precision + 2)}.",
            )
        )
    else:
        parts.append(
            Text(
                f"share = exp(x) / {exp_text(steps.naive_sum)}. Subtracting the max "
                f"({top}) first divides top and bottom by exp({top}): the same shares, and "
                "every exp is at most 1, so large scores (like 800) cannot overflow.",
            )
        )
    return Group(*parts)


def _marker(dtype: str) -> Callable[[float, str | Text], str | Text]:
    """A cell's text, marked where a narrow dtype made it ±inf or NaN (float64's own
    view is left as it always was: its inf is the naive formula's, explained below)."""

    def mark(value: float, text: str | Text) -> str | Text:
        if dtype == "float64" or math.isfinite(value):
            return text
        return Text(str(text), style=OVERFLOWED)

    return mark


def _what_overflows(steps: SoftmaxWalk, x_text: Writer) -> str:
    """Which float64 overflow breaks the naive formula: one exp (inf / inf), or only
    their sum, each exp finite (a finite exp / inf is 0 for every share)."""
    big = [x for x, e in zip(steps.values, steps.naive_exp, strict=True) if math.isinf(e)]
    if big:
        return (
            f"exp({x_text(big[0])}) overflows float64 (its largest value is about "
            f"{FLOAT64_MAX}), so the naive formula gives inf / inf = nan."
        )
    return (
        f"Each exp(x) fits in float64, but their sum overflows it (its largest value is "
        f"about {FLOAT64_MAX}), so the naive formula gives exp(x) / inf = 0 for every "
        f"share."
    )
