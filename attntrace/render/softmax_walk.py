"""The softmax walkthrough as a table: exp of each score, the sum, each share.

When nothing overflows, the article's way (exp of each value, divided by their sum) is
shown first; the stable way (the row max subtracted) always, with the reason.
"""

from __future__ import annotations

import math

from rich.console import Group, JustifyMethod, RenderableType
from rich.text import Text

from attntrace.render.numbers import format_number
from attntrace.render.split_table import SplitTable
from attntrace.softmax_walk import SoftmaxWalk

FLOAT64_MAX = "1.8e308"


def _number(value: float, precision: int) -> str:
    if math.isinf(value):
        return "inf"
    if math.isnan(value):
        return "nan"
    return format_number(value, precision)


def walkthrough(steps: SoftmaxWalk, precision: int) -> Group:
    """Table of x, exp(x), x − max, exp(x − max), share and %, then what it shows."""
    heaviest = max(steps.weights)
    rows: list[tuple[RenderableType, ...]] = []
    for i, x in enumerate(steps.values):
        mark = steps.weights[i] == heaviest
        rows.append((
            Text(f"◀ {i + 1}" if mark else str(i + 1), style="bold" if mark else ""),
            _number(x, precision),
            _number(steps.naive_exp[i], precision),
            _number(steps.shifted[i], precision),
            _number(steps.exp_shifted[i], precision + 2),
            _number(steps.weights[i], precision + 2),
            Text(f"{100 * steps.weights[i]:.2f}%", style="bold" if mark else ""),
        ))  # fmt: skip
    rows.append((
        Text("sum", style="dim"),
        "",
        _number(steps.naive_sum, precision),
        "",
        _number(steps.sum_exp_shifted, precision + 2),
        _number(math.fsum(steps.weights), precision + 2),
        f"{100 * math.fsum(steps.weights):.2f}%",
    ))  # fmt: skip
    # Too narrow for every column: drawn in parts, never a number folded over two lines.
    headers = ("", "x", "exp(x)", "x − max", "exp(x − max)", "share", "%")
    right: JustifyMethod = "right"
    table = SplitTable(headers, [right] * len(headers), rows)
    parts: list[RenderableType] = [
        Text("softmax(x)ᵢ = exp(xᵢ) / Σ exp(xⱼ)", style="bold"),
        table,
        Text(""),
    ]
    top = _number(steps.max, precision)
    if steps.overflows:
        big = next(x for x, e in zip(steps.values, steps.naive_exp, strict=True) if math.isinf(e))
        parts.append(
            Text(
                f"exp({_number(big, precision)}) overflows float64 (its largest value is about "
                f"{FLOAT64_MAX}), so the naive formula gives inf / inf = nan. Subtracting the "
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
                f"share = exp(x) / {_number(steps.naive_sum, precision)}. Subtracting the max "
                f"({top}) first divides top and bottom by exp({top}): the same shares, and "
                "every exp is at most 1, so large scores (like 800) cannot overflow.",
            )
        )
    return Group(*parts)
