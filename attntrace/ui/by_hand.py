"""How hand arithmetic writes its numbers, so that what is written adds up.

A line of hand arithmetic (``2×1 + 4×2 = 10``, ``20 / 1.414214 = 14.1421``,
``0.998304 × [4, 2] = [3.9932, 1.9966]``) has *operands*, the numbers it multiplies,
divides or subtracts, and a *result*. One :class:`Form` writes every line of a panel:

- A result is written as the tables write it: ``precision`` digits after the point, or
  in scientific form after the mantissa's point (``7.0711e+15``).
- An operand carries more digits than the results: enough that its rounding moves the
  result of every line by at most half a unit of the result's last digit (all the
  written terms of a sum together). Redone by hand from what is written, a line then
  gives its written result to within one unit of its last digit. (A sum of results
  that were rounded themselves, like the rows of an output sum, can be off by half a
  unit more for each.) The panel uses one digit count for all its operands: two more
  than the results, or as many more as its worst line needs.
- An operand whose shortest decimal reads back as it, in no more digits than an
  operand's, is written that way, as people write it: ``2``, ``0.5``, ``4.64``,
  ``2.5e-07``; zero is ``0`` in either form. Any other keeps all its digits, trailing
  zeros too (``-0.009100`` for −0.009100249, never ``-0.0091``, which reads as exact).
  (Not a subnormal's: ``7.9e-320`` reads back as 7.90011…e-320, 1.4e-5 away.)
- Fixed point when every number written is below 1e8 in size (the tables' limit) and
  the operands need at most four digits more than the results. An operand too small for
  the digits is written in scientific form (``1e-09``, a subnormal ``4.940656e-324``),
  never ``0``: a line ``[0, 0]·[0, 2]`` for a query of [1e-9, 1e-12] would say the query
  is zero. A result too small for the digits is written as the tables write it,
  ``2.0e-12`` (ui/numbers.py's rule: a nonzero number is never written as zero), and a
  rounded number keeps its trailing zeros (``2.2860``). Otherwise the magnitudes differ too
  much for fixed point (``1e8 × 2.5e-7``, values from 1e8 up, a tiny factor beside a
  huge one) and every number of the panel is scientific, operands with as many digits
  as the lines need: at most 17 significant ones, which write any float64 exactly.

So no number is longer than 8 digits before the point and ``precision`` + 4 after it,
or 17 significant digits with sign, point and exponent: none is folded over lines. Only
float64's own rounding (about 1e-16 of the sizes involved, which matters at precision 15
or below the smallest normal float64, 2.2e-308) is below the digits written and not
counted; where it is not below them (terms that cancel: ``1e16 + 1 − 1e16`` is 0 in
float64), the focus panel says so under the line, with the exact sum.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar

from attntrace.ui.numbers import FIXED_LIMIT, TINY_DIGITS, fixed, rounds_to_zero, scientific

# How many more digits than the results an operand may carry in fixed point.
FIXED_EXTRA = (2, 3, 4)
# 17 significant digits write any float64 exactly: 16 after the mantissa's point.
EXACT_MANTISSA = 16
# float64's rounding of the check itself, relative to the sizes in a line (two units in
# the last place): below every digit written, save at precision 15.
FLOAT_SLACK = 2.0**-52

Choice = TypeVar("Choice")


@dataclass(frozen=True)
class Form:
    """How one panel writes its results and operands (see the module's rule)."""

    precision: int  # digits of a result, after the point or the mantissa's point
    operand_digits: int  # digits of an operand
    scientific: bool = False

    def _write(self, value: float, digits: int, short: bool) -> str:
        if self.scientific:
            return scientific(value, digits, short=short)
        return fixed(value, digits, short=short)

    def _operand(self, value: float, short: bool) -> str:
        """An operand: in fixed point where it shows there, else in scientific form
        (never a nonzero written ``0``, whatever the panel's form)."""
        text = self._write(value, self.operand_digits, short)
        if self.scientific or not rounds_to_zero(text, value):
            return text
        return scientific(value, self.operand_digits, short=True)

    def result(self, value: float) -> str:
        """A computed result, all its digits: ``7.0711``, ``7.0711e+15``; one too small
        for the digits as the tables write it, ``-3.9e-05``, never ``0.0000``."""
        if self.scientific:
            return scientific(value, self.precision)
        return fixed(value, self.precision, keep_nonzero=True)

    def short(self, value: float) -> str:
        """A result as a person writes a sum: ``10``, ``9.28``, ``2.8e+01`` where that
        is the value exactly; else :meth:`result`'s digits."""
        text = self._write(value, self.precision, short=True)
        return self.result(value) if rounds_to_zero(text, value) else text

    def given(self, value: float) -> str:
        """An operand as people write it: ``2``, ``0.5``, ``1.414214``, ``2.5e-07``;
        one too small for the digits ``1e-09``."""
        return self._operand(value, short=True)

    def carried(self, value: float) -> str:
        """A computed operand, all its digits: a weight ``0.998304``, an exp; one too
        small for the digits ``3.720076e-44``."""
        return self._operand(value, short=False)

    def unit(self, value: float) -> float:
        """The unit of the last digit ``value`` is written to as a result (0 for an
        exact zero in scientific form, which is written ``0``)."""
        digits = self.precision
        if not self.scientific:
            if not rounds_to_zero(f"{value:.{digits}f}", value):
                return 10.0**-digits
            digits = TINY_DIGITS  # written as the tables write it, -3.9e-05
        if value == 0 or not math.isfinite(value):
            return 0.0
        exponent = int(f"{value:.{digits}e}".partition("e")[2])
        return 10.0 ** (exponent - digits)


def relative_error(text: str, value: float) -> float:
    """How far ``text`` is from ``value``, relative to it (relative, since an error far
    below 1e-308, times a partner near 1e300, still counts): at most this much."""
    if value == 0:
        return 0.0 if Fraction(text) == 0 else math.inf
    read, normal = float(text), sys.float_info.min
    if abs(value) >= normal and (read == 0 or abs(read) >= normal):
        # a decimal reads back within half a unit in the last place of itself
        return (abs(read - value) + abs(read) * 2.0**-53) / abs(value)
    return float(abs(Fraction(text) - Fraction(value)) / abs(Fraction(value)))


def product_error(product: float, a: float, b: float) -> float:
    """How far a product can be moved by its factors' relative errors ``a`` and ``b``."""
    return abs(product) * (a + b + a * b)


def quotient_error(quotient: float, top: float, bottom: float) -> float:
    """How far a quotient can be moved by relative errors ``top`` and ``bottom`` (< 1)."""
    return abs(quotient) * (top + bottom) / (1 - bottom)


def difference_error(write: Callable[[float], str], a: float, b: float) -> float:
    """How far a − b, from what ``write`` writes of them, is from a − b (exactly: two
    equal numbers are written alike, and their difference is 0)."""
    written = Fraction(write(a)) - Fraction(write(b))
    return float(abs(written - (Fraction(a) - Fraction(b))))


def within(error: float, unit: float, size: float) -> bool:
    """``error`` at most half of ``unit``, float64's rounding of ``size`` aside."""
    return error <= unit / 2 + FLOAT_SLACK * size


def exact_mantissa(precision: int) -> int:
    """The mantissa digits that write any float64 exactly (more would write no other),
    or a result's own, where those are more."""
    return max(precision, EXACT_MANTISSA)


def scientific_digits(precision: int) -> range:
    """The mantissa digits an operand may carry in scientific form, fewest first: two
    more than a result's, up to :func:`exact_mantissa`."""
    exact = exact_mantissa(precision)
    return range(min(precision + FIXED_EXTRA[0], exact), exact + 1)


def first_that(adds_up: Callable[[Choice], bool], choices: Sequence[Choice]) -> Choice:
    """The first of ``choices`` (fewest digits first) for which ``adds_up``, else the
    last, which is not tried: it carries every digit a float64 has, so only float64's
    own rounding is left."""
    return next((choice for choice in choices[:-1] if adds_up(choice)), choices[-1])


def choose(precision: int, numbers: Iterable[float], adds_up: Callable[[Form], bool]) -> Form:
    """The first form in the rule's order for which ``adds_up``: fixed point with two,
    three or four more digits for operands if every finite number is below 1e8, then
    scientific with two or more, up to 17 significant digits (which always add up: they
    write each float64 exactly, so only float64's own rounding is left)."""
    largest = max((abs(x) for x in numbers if math.isfinite(x)), default=0.0)
    fixed_forms = [Form(precision, precision + extra) for extra in FIXED_EXTRA]
    forms = fixed_forms if largest < FIXED_LIMIT else []
    forms += [Form(precision, digits, scientific=True) for digits in scientific_digits(precision)]
    return first_that(adds_up, forms)
