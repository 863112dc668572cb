"""``softmax --online``: the one-pass online softmax as a table, one row per element,
then its weights beside the two-pass ones and how closely they agree.

Each row shows what the pass keeps after reading xᵢ: the running max m (old → new),
the factor exp(m_old − m_new) the running sum was scaled by (exactly 1 where the max
did not change), the term exp(xᵢ − m_new) added, and the running sum d (old → new).

The agreement is written as a power-of-ten bound (``max |Δ| ≤ 1e-15``), not the
difference itself: the difference is rounding alone, its last bits (0, 1.1e-16 or
2.2e-16) depend on the machine's exp, and a view, a golden file or the README must not
pin them. The JSON's ``max_difference`` carries the number.
"""

from __future__ import annotations

import math

from rich.console import Group, JustifyMethod, RenderableType
from rich.text import Text

from attntrace.kernels.online_softmax import OnlineSoftmax
from attntrace.ui.numbers import MASKED, difference_bound, format_number, percent
from attntrace.ui.split_table import SplitTable

# A difference past this is not rounding: the line says the two differ.
AGREEMENT = 1e-9


def _number(value: float, precision: int) -> str:
    return MASKED if value == -math.inf else format_number(value, precision)


def _exp_shifted(x: float, m: float) -> float:
    """The term step i added: exp(xᵢ − m_new), 0 for a masked score."""
    return 0.0 if x == -math.inf else math.exp(x - m)


def online_view(result: OnlineSoftmax, precision: int) -> Group:
    """The pass's table, the weights both ways, the agreement line."""
    right: JustifyMethod = "right"
    steps_rows: list[tuple[RenderableType, ...]] = []
    for i, step in enumerate(result.steps):
        climbed = step.m_new != step.m_old
        steps_rows.append(
            (
                str(i + 1),
                _number(step.x, precision),
                Text(
                    f"{_number(step.m_old, precision)} → {_number(step.m_new, precision)}",
                    style="bold" if climbed else "",
                ),
                format_number(step.rescale, precision + 2),
                format_number(_exp_shifted(step.x, step.m_new), precision + 2),
                f"{format_number(step.d_old, precision + 2)} → "
                f"{format_number(step.d_new, precision + 2)}",
            )
        )
    steps_headers = (
        "i",
        "xᵢ",
        "m: old → new",
        "exp(m_old − m_new)",
        "exp(xᵢ − m_new)",
        "d: old → new",
    )
    pass_table = SplitTable(steps_headers, [right] * len(steps_headers), steps_rows)
    weight_rows: list[tuple[RenderableType, ...]] = [
        (
            str(i + 1),
            _number(x, precision),
            format_number(online, precision + 2),
            format_number(two, precision + 2),
            percent(online),
        )
        for i, (x, online, two) in enumerate(
            zip(result.values, result.weights, result.two_pass_weights, strict=True)
        )
    ]
    weight_headers = ("i", "xᵢ", "online yᵢ", "two-pass", "%")
    weight_table = SplitTable(weight_headers, [right] * len(weight_headers), weight_rows)
    top = _number(result.max, precision)
    total = format_number(result.sum, precision + 2)
    difference = result.max_difference
    verdict = "agree" if difference <= AGREEMENT else "differ"
    return Group(
        Text(
            "online softmax: mᵢ = max(mᵢ₋₁, xᵢ); dᵢ = dᵢ₋₁·exp(mᵢ₋₁ − mᵢ) + exp(xᵢ − mᵢ)",
            style="bold",
        ),
        Text(
            "m₀ = −∞, d₀ = 0, yᵢ = exp(xᵢ − m_N) / d_N: one pass (Milakov & Gimelshein 2018)",
            style="dim",
        ),
        pass_table,
        Text(""),
        Text(
            f"After one pass m = {top}, the row's max, and d = {total}, its Σ exp(x − max): "
            "each term was rescaled from the max it was added under to the last one. The "
            "two-pass softmax reads the row once for the max and again for the sum."
        ),
        Text(""),
        weight_table,
        Text(""),
        Text(
            f"online and two-pass {verdict}: max |Δ| {difference_bound(difference)}", style="bold"
        ),
    )
