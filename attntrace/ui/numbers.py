"""How a number and a label read in a table, and which rows/columns fit on screen."""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import numpy.typing as npt
from rich.style import Style

# Above this magnitude fixed-point gets too wide to scan; switch to scientific notation.
FIXED_LIMIT = 1e8


def _stdout_takes(text: str) -> bool:
    """Whether stdout's encoding writes ``text``: not under ``PYTHONIOENCODING=ascii`` or
    ``LC_ALL=C``, where the command line writes what it cannot encode as ASCII (cli/
    process.py). A table's cells are spelled in ASCII here instead, so that the table is
    laid out with the widths it is written in (−∞ written as -inf after the widths were
    measured would push its row two cells right)."""
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


ASCII_ONLY = not _stdout_takes("−∞…")
# Shown in place of a masked (−∞) cell, and +∞; where a table's rows or columns are cut.
MASKED, INFINITY, CUT = ("-inf", "inf", "...") if ASCII_ONLY else ("−∞", "∞", "…")
# From one to another (``it → animal``, ``2.37 → 0.02``) where a line's width is counted.
ARROW = "->" if ASCII_ONLY else "→"
# A cell that overflowed (inf, −inf, NaN): red, and reversed, so that it still stands
# out where colour is off (NO_COLOR=1 keeps reverse video, drops the red).
OVERFLOWED = Style(color="red", bold=True, reverse=True)
# Spaces between two columns of a stage's table.
COLUMN_GAP = 3


# The digit rule, in one place (docs/cli.md, "How numbers are written"): numbers side by
# side are written to the same digits; a number is written shorter only where the
# shorter form is the number itself (``2``, ``0.5``, ``9.28``), never by dropping the
# zeros of a rounded one (-0.009100249 is ``-0.009100``, not ``-0.0091``); and a number
# that is not zero is never written as zero: where the digits would round it away, it
# is written in scientific form (``-3.9e-05``), so that ``0.0000`` means an exact zero
# or a rounded one only where that is said.
TINY_DIGITS = 1  # digits after the mantissa's point of a number too small for fixed point


def format_number(value: float, precision: int) -> str:
    """``3.995761`` at precision 4 -> ``3.9958``; never ``-0.0000``; huge values in
    e-notation; a nonzero value too small for the digits in it too: ``-3.9e-05``."""
    if value == -math.inf:
        return MASKED
    if abs(value) >= FIXED_LIMIT:
        return f"{value:.{precision}e}"
    return fixed(value, precision, keep_nonzero=True)


def percent(share: float) -> str:
    """``64.86%``: a share as a percentage with two places, by the same rule (a share of
    1e-9 is ``1.0e-07%``, not ``0.00%``)."""
    return f"{format_number(100 * share, 2)}%"


def rounds_to_zero(text: str, value: float) -> bool:
    """Whether ``text`` writes the nonzero finite ``value`` as zero."""
    return value != 0 and math.isfinite(value) and float(text) == 0


def _short_exactly(value: float) -> bool:
    """Whether ``value``'s shortest decimal (``repr``) is it, to float64's precision: a
    subnormal's is not (``7.9e-320`` reads back as 7.90011…e-320, 1.4e-5 away)."""
    return math.isfinite(value) and (value == 0 or abs(value) >= sys.float_info.min)


def shortest_decimals(value: float) -> int:
    """Digits after the point of the shortest decimal that reads back as ``value``."""
    exponent = Decimal(repr(float(value))).as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def shortest_mantissa(value: float) -> int:
    """Digits after the mantissa's point of the shortest scientific form of ``value``."""
    digits = list(Decimal(repr(float(value))).as_tuple().digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
    return len(digits) - 1


def fixed(value: float, decimals: int, *, short: bool = False, keep_nonzero: bool = False) -> str:
    """``value`` with ``decimals`` digits after the point (never ``-0.00``). ``short``
    writes fewer only where they write the value exactly (``2``, ``0.5``): a rounded
    value keeps every digit, trailing zeros too (2.285991 is ``2.2860``, not ``2.286``).
    ``keep_nonzero``: a nonzero value the digits round to zero in scientific form."""
    if value == -math.inf:
        return MASKED
    exact = short and _short_exactly(value) and shortest_decimals(value) <= decimals
    if exact:
        decimals = shortest_decimals(value)
    text = f"{value:.{decimals}f}"
    if keep_nonzero and rounds_to_zero(text, value):
        return scientific(value, TINY_DIGITS)
    if exact and "." in text:
        text = text.rstrip("0").rstrip(".")
    return unsigned_zero(text)


def scientific(value: float, decimals: int, *, short: bool = False) -> str:
    """``7.0711e+15``: ``decimals`` digits after the mantissa's point; ``short`` writes
    fewer only where they write the value exactly: ``1e+08``, ``2.5e-07``. Zero is ``0``."""
    if value == -math.inf:
        return MASKED
    if value == 0:
        return "0"
    exact = short and _short_exactly(value) and shortest_mantissa(value) <= decimals
    if exact:
        decimals = shortest_mantissa(value)
    text = f"{value:.{decimals}e}"
    if exact:
        mantissa, _, exponent = text.partition("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        text = f"{mantissa}e{exponent}"
    return text


def unsigned_zero(text: str) -> str:
    """``-0.0000`` -> ``0.0000``: a number written as zero has no sign to show."""
    if text.startswith("-") and not any(ch in "123456789" for ch in text):
        return text[1:]
    return text


def stage_cell(value: float, precision: int, *, masked_stage: bool) -> str:
    """A stage's cell: :func:`format_number`, and where a --dtype overflowed, ``inf``,
    ``−inf`` or ``NaN`` (−∞ is a masked cell only in the masked stage)."""
    if math.isfinite(value) or (value == -math.inf and masked_stage):
        return format_number(value, precision)
    if math.isnan(value):
        return "NaN"
    return "inf" if value > 0 else OVERFLOW_NEGATIVE


OVERFLOW_NEGATIVE = "−inf"  # a cell that overflowed to −∞ (not a mask)


def column_widths(
    data: npt.NDArray[np.float64], precision: int, *, masked_stage: bool = True
) -> list[int]:
    """Each column's widest formatted cell, computed from its extremes without formatting.

    An estimate good to a cell (rounding at the last digit may differ): the table is
    drawn from the formatted cells and re-fitted if the estimate fell short. Outside the
    masked stage (``masked_stage`` False), −∞ is an overflow, ``−inf``.
    """
    if data.size == 0:
        return [1] * data.shape[1]
    finite_cells = np.isfinite(data)
    finite = np.where(finite_cells, data, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-masked column has no extremes
        extremes = np.stack([np.nanmin(finite, axis=0), np.nanmax(finite, axis=0)])
    widths = np.where(np.isnan(extremes), 1, _widths(np.nan_to_num(extremes), precision))
    best = widths.max(axis=0)
    masked = (~finite_cells).any(axis=0)
    result: list[int] = np.where(masked, np.maximum(best, len(MASKED)), best).astype(int).tolist()
    if masked.any():  # a --dtype's overflow: inf and NaN are 3 cells, −inf 4
        wide = (np.isnan(data) | (data == np.inf)).any(axis=0) * 3
        if not masked_stage:
            wide = np.maximum(wide, np.isneginf(data).any(axis=0) * len(OVERFLOW_NEGATIVE))
        result = np.maximum(result, wide).astype(int).tolist()
    return result


def _widths(values: npt.NDArray[np.float64], precision: int) -> npt.NDArray[np.int64]:
    """len(format_number(x)) for every x, by arithmetic on the digits."""
    magnitude = np.abs(values)
    fraction = 1 + precision if precision > 0 else 0
    rounded = np.round(magnitude, precision)
    sign = (values < 0) & (rounded > 0)  # format_number drops the sign of -0.0000
    whole = np.floor(np.log10(np.maximum(rounded, 1))) + 1
    fixed = sign + whole + fraction
    exponent = np.floor(np.log10(np.maximum(magnitude, 1)))
    scientific = (
        sign + 1 + fraction + 2 + np.maximum(2, np.floor(np.log10(np.maximum(exponent, 1))) + 1)
    )
    # a nonzero value the digits round away: -3.9e-05, its exponent two digits or three
    tiny = (magnitude > 0) & (rounded == 0)
    tiny_width = (values < 0) + 2 + TINY_DIGITS + 2 + np.where(magnitude < 9.95e-100, 3, 2)
    fixed = np.where(tiny, tiny_width, fixed)
    widths: npt.NDArray[np.int64] = np.where(magnitude >= FIXED_LIMIT, scientific, fixed).astype(
        np.int64
    )
    return widths


def visible_indices(count: int, limit: int) -> list[int | None]:
    """Indices to show for an axis of ``count`` items, ``None`` where an ellipsis goes.

    Like numpy's summarized printing: all of them when they fit, else the first and last
    halves of ``limit`` around one ellipsis.
    """
    if count <= limit:
        return list(range(count))
    head = max(1, (limit + 1) // 2)
    tail = limit // 2
    return [*range(head), None, *range(count - tail, count)]


def columns_that_fit(widths: Sequence[int], budget: int) -> int:
    """How many columns (each ``width + 3`` cells with padding and rule) fit in ``budget``."""
    used = 0
    for count, width in enumerate(widths):
        used += width + COLUMN_GAP
        if used > budget:
            return count
    return len(widths)


def cell_text(value: float, precision: int) -> str:
    """A cell as the tables write it, not finite ones too: ``NaN``, ``∞``, and ``−∞``
    (which in a trace is a masked cell)."""
    if math.isnan(value):
        return "NaN"
    if value == math.inf:
        return INFINITY
    if value == -math.inf:
        return MASKED
    return format_number(value, precision)


def significant(value: float, digits: int) -> str:
    """A difference to ``digits`` significant digits: ``5.9``, ``0.073``, ``3.2e-08``,
    ``∞``, ``NaN`` (the lines above the tables: how large, not every digit)."""
    if not math.isfinite(value):
        return cell_text(value, 0)
    return f"{value:.{digits}g}"


def short_float(value: float) -> str:
    """A tolerance as the docs write it: ``1e-4``, ``3e-2``, ``2.5e-3``, ``0`` (Python
    writes ``1e-04``)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else cell_text(value, 0)
    for places in range(17):
        text = f"{value:.{places}e}"
        if float(text) == value:
            break
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if int(exponent) else mantissa


# Rounding alone stays below this for the rows and tiles shown (each rescale can cost
# an ulp of the sum, and weights are at most 1): the bound an agreement line states at
# least, so that no line pins a float's last bits, which depend on the machine's exp.
ROUNDING_BOUND_EXPONENT = -15


def difference_bound(difference: float) -> str:
    """``≤ 1e-15`` for any difference up to it (0 included), else the power of ten
    just above it (``≤ 1e-12`` for 3.4e-13): how `softmax --online` and `flash` state
    an agreement that is rounding alone."""
    if difference <= 10.0**ROUNDING_BOUND_EXPONENT:
        exponent = ROUNDING_BOUND_EXPONENT
    else:
        exponent = math.ceil(math.log10(difference))
        if 10.0**exponent < difference:  # log10's own rounding at an exact power
            exponent += 1
    return f"≤ 1e{exponent}"
