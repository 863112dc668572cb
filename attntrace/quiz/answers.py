"""A learner's answer read and judged: what counts as a number, and how close is right.

An answer is right within half a unit of the table's last shown digit (``0.9983``
shown: ±0.00005). At the default precision (4 places) it is also right within 1e-3 of
the expected value, relatively, where that is wider: a learner who carries the tables'
rounded figures through a softmax lands there. A precision asked for (``--precision
6``) asks for those digits: ``2.4809`` is not ``2.478457`` (docs/teaching.md). The
table's text is given, as the view writes it, so the unit is the one the learner saw:
``3.9e-05`` is read to ±0.05e-05, ``10.0000`` to ±0.00005. No Rich here: the text
comes from the view.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

# The tables' default precision (attntrace.ui.view's DEFAULT_PRECISION: the core
# imports no ui; a test holds them equal).
DEFAULT_PRECISION = 4
RELATIVE = 1e-3  # at the default precision, an answer this close, relatively, is right
# A float's own rounding at the edge (0.99835 is not exactly 0.99835): never decides.
SLACK = 1e-12

# −∞ as a learner may type it: a masked cell's value.
_MINUS_INFINITY = re.compile(r"^[-−](?:∞|inf|infinity)$", re.IGNORECASE)
# ∞ of either sign, however written: a number, but no finite one.
_INFINITY = re.compile(r"^[+-]?(?:∞|inf|infinity)$", re.IGNORECASE)
# Digits as a learner writes them: no underscores (float() takes 1_0 as 10; a learner
# who types it meant something else), no hex, no NaN.
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


def parse_answer(line: str) -> float | None:
    """The number ``line`` writes (``0.9983``, ``-1.5``, ``−1.5``, ``1e-3``, ``-inf``
    or ``−∞`` for a masked cell), or None where it is not one (:func:`why_not` says
    why): a learner's typo is re-asked, never an error."""
    text = line.strip().replace("−", "-")
    if _MINUS_INFINITY.match(text):
        return -math.inf
    if not _NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def why_not(line: str) -> str:
    """Why ``line`` is no answer: ``not a finite number`` (``inf``, ``1e400``: only −∞
    is taken, for a masked cell) or ``not a number``."""
    text = line.strip().replace("−", "-")
    if _INFINITY.match(text) or (_NUMBER.match(text) and not math.isfinite(float(text))):
        return "not a finite number"
    return "not a number"


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


def widened(precision: int) -> bool:
    """Whether 1e-3 relative counts too: only at the default precision."""
    return precision == DEFAULT_PRECISION


def tolerance(expected: float, shown: str, precision: int = DEFAULT_PRECISION) -> float:
    """How far from ``expected`` an answer may be: half the last shown digit's unit; at
    the default precision, :data:`RELATIVE` of the value where that is wider."""
    if not math.isfinite(expected):
        return 0.0
    digit = 0.5 * last_digit(shown)
    return max(digit, RELATIVE * abs(expected)) if widened(precision) else digit


def is_correct(
    answer: float, expected: float, shown: str, precision: int = DEFAULT_PRECISION
) -> bool:
    """Whether ``answer`` is right for a cell holding ``expected``, shown as ``shown``
    at ``precision`` places."""
    if not math.isfinite(expected) or not math.isfinite(answer):
        return answer == expected
    allowed = tolerance(expected, shown, precision)
    return abs(answer - expected) <= allowed + SLACK * max(1.0, abs(expected))


def asked(shown: str, precision: int = DEFAULT_PRECISION) -> str:
    """What the answer was held to, in words: ``to 6 places``, ``to 4 places or 1e-3
    of it``; ``±0.5e-06`` for a cell the table writes in
    scientific form; ``exactly`` for −∞."""
    unit = last_digit(shown)
    if unit == 0:
        return "exactly"
    places = -round(math.log10(unit))
    if "e" in shown.lower() or places < 0:
        held = f"to ±{0.5 * unit:g}"
    else:
        held = f"to {places} place{'' if places == 1 else 's'}"
    return f"{held} or 1e-3 of it" if widened(precision) else held
