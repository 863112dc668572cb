"""A learner's answer read and judged: what counts as a number, and how close is right.

An answer is right within half a unit of the table's last shown digit (``0.9983``
shown: ±0.00005) or within 1e-3 of the expected value, relatively, whichever is wider
(docs/teaching.md). The table's text is given, as the view writes it, so the unit is
the one the learner saw: ``3.9e-05`` is read to ±0.05e-05, ``10.0000`` to ±0.00005.
No Rich here: the text comes from the view.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

RELATIVE = 1e-3  # an answer this close, relatively, is right whatever the digits shown
# A float's own rounding at the edge (0.99835 is not exactly 0.99835): never decides.
SLACK = 1e-12

# −∞ as a learner may type it: a masked cell's value.
_MINUS_INFINITY = re.compile(r"^[-−](?:∞|inf|infinity)$", re.IGNORECASE)
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


def parse_answer(line: str) -> float | None:
    """The number ``line`` writes (``0.9983``, ``-1.5``, ``−1.5``, ``1e-3``, ``-inf``
    or ``−∞`` for a masked cell), or None where it is not one: a learner's typo is
    re-asked, never an error."""
    text = line.strip().replace("−", "-").replace("_", "")
    if _MINUS_INFINITY.match(text):
        return -math.inf
    if not _NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def last_digit(shown: str) -> float:
    """The unit of the last digit of a table's cell as written: ``0.9983`` -> 1e-4,
    ``10`` -> 1, ``3.9e-05`` -> 1e-6, ``1.2345e+08`` -> 1e4; 0 for ``−∞`` (no digits:
    only −∞ itself is right)."""
    text = shown.strip().replace("−", "-")
    try:
        exponent = Decimal(text).as_tuple().exponent
    except InvalidOperation:
        return 0.0
    if not isinstance(exponent, int):  # Infinity, NaN
        return 0.0
    return float(Decimal(1).scaleb(exponent))


def tolerance(expected: float, shown: str) -> float:
    """How far from ``expected`` an answer may be: half the last shown digit's unit, or
    :data:`RELATIVE` of the value, the wider."""
    if not math.isfinite(expected):
        return 0.0
    return max(0.5 * last_digit(shown), RELATIVE * abs(expected))


def is_correct(answer: float, expected: float, shown: str) -> bool:
    """Whether ``answer`` is right for a cell holding ``expected``, shown as ``shown``."""
    if not math.isfinite(expected) or not math.isfinite(answer):
        return answer == expected
    allowed = tolerance(expected, shown)
    return abs(answer - expected) <= allowed + SLACK * max(1.0, abs(expected))
