"""What a focus panel writes out, and the one form that makes every written line add up.

The keys written out (all, or the ``max_rows`` heaviest) and the terms of a long sum
(its largest) are chosen here, so that the panel and the check of its arithmetic agree
on what is written.

Every number is written by one :class:`~attntrace.ui.by_hand.Form` for the whole
panel (the rule is in that module), chosen from the numbers of the keys written out
(:func:`hand_form`), so step mode's screens agree. Results (scores, scaled scores,
shares, weighted rows, the output) have the tables' digits; operands (the Q, K and V
entries, √d_k, the score divided, the weights, the exps) two more, or as many more as
it takes for every line redone by hand from what is written to give its written result
to within one unit of the last digit. Numbers that are exactly shorter are written as
people write them (``2×1``). Where the magnitudes differ too much for fixed point
(``1e8 × 2.5e-7``, 1e150), the whole panel is in scientific form; there, softmax's
inputs and the row max are written as operands too, so that ``scaled − max`` checks.

No choice of digits helps where float64's own sum is not the exact one: ``1e16 + 1 −
1e16`` is 0 in float64 and 1 exactly (the terms cancel, and the 1 was lost before they
did). There :func:`sum_note` says so under the line, with the exact sum, so that what
is written stays true.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from fractions import Fraction
from functools import lru_cache

from attntrace.forward.focus import Focus
from attntrace.ui.by_hand import (
    FLOAT_SLACK,
    Form,
    choose,
    difference_error,
    product_error,
    quotient_error,
    relative_error,
    within,
)
from attntrace.ui.numbers import visible_indices
from attntrace.ui.view import View

# How many terms of a long sum are written out (the largest ones).
TERMS_SHOWN = 6


def shown_keys(focus: Focus, view: View, keep: int | None = None) -> list[int]:
    """The keys written out: all of them, or the ``max_rows`` largest weights, in order;
    ``keep`` (the key a quiz asks about) among them, in place of the lightest."""
    count = len(focus.softmax)
    if count <= view.max_rows:
        return list(range(count))
    by_weight = sorted(range(count), key=lambda j: -focus.softmax[j].weight)
    chosen = by_weight[: view.max_rows]
    if keep is not None and keep not in chosen:
        chosen = [*chosen[:-1], keep]
    return sorted(chosen)


def largest_terms(terms: Sequence[float], shown: int) -> list[int | None]:
    """Indices of the ``shown`` largest terms by size, in order, ``None`` for each gap."""
    if len(terms) <= shown:
        return list(range(len(terms)))
    keep = sorted(sorted(range(len(terms)), key=lambda i: -abs(terms[i]))[:shown])
    out: list[int | None] = []
    for position, index in enumerate(keep):
        if (index > 0 and position == 0) or (position > 0 and index > keep[position - 1] + 1):
            out.append(None)
        out.append(index)
    if keep[-1] < len(terms) - 1:
        out.append(None)
    return out


def sum_note(result: float, pairs: Sequence[tuple[float, float]], form: Form) -> str | None:
    """What to say under a line whose written ``result``, float64's sum of the products
    of ``pairs``, is not their exact sum to its digits: more than half a unit of its last
    digit off, and more than float64's rounding of the result's own size (at precision
    15 a sum of a few terms may be off by that and needs no note). None where it is the
    exact sum, or where a number is not finite."""
    numbers = [result, *(x for pair in pairs for x in pair)]
    if not all(math.isfinite(x) for x in numbers):
        return None
    terms = [Fraction(a) * Fraction(b) for a, b in pairs]
    exact, computed = sum(terms, Fraction(0)), Fraction(result)
    slack = Fraction(form.unit(result)) / 2 + Fraction(FLOAT_SLACK) * (abs(exact) + abs(computed))
    if abs(computed - exact) <= slack:
        return None
    written = form.short(float(exact))
    if sum(abs(t) for t in terms) > 2 * abs(exact):  # terms of both signs, far larger
        return (
            f"the terms cancel (catastrophic cancellation): float64's sum is shown; "
            f"the exact sum is {written}"
        )
    return f"float64's rounding: the exact sum is {written}"


def hand_form(focus: Focus, view: View, keep: int | None = None) -> Form:
    """The form every section of ``focus``'s panel writes its numbers in (``keep``: the
    key a quiz asks about, written out whatever its weight)."""
    return _hand_form(focus, view.precision, view.max_rows, keep)


@lru_cache(maxsize=64)
def _hand_form(focus: Focus, precision: int, max_rows: int, keep: int | None = None) -> Form:
    keys = tuple(shown_keys(focus, View(precision=precision, max_rows=max_rows), keep))
    return choose(precision, _written(focus, keys), lambda form: _adds_up(focus, keys, form))


def _written(focus: Focus, keys: Sequence[int]) -> Iterator[float]:
    """Every number the panel writes for ``keys`` (the masked −∞ too: it is skipped)."""
    yield from focus.dots[0].query_row
    yield from (focus.sqrt_dk, focus.row_max, focus.exp_sum, *focus.output)
    for j in keys:
        dot, row, term = focus.dots[j], focus.softmax[j], focus.terms[j]
        yield from dot.key_row
        yield from (dot.score, dot.score / focus.sqrt_dk, row.scaled, row.shifted, row.exp)
        yield from (row.weight, *term.value_row, *term.product)


def _adds_up(focus: Focus, keys: Sequence[int], form: Form) -> bool:
    """Whether every line of the panel, redone from what ``form`` writes, gives what it
    writes for the result: each operand's rounding moves a result by at most half a unit
    of its last digit (all the terms of a sum together, where every term is written)."""
    errors: dict[tuple[float, bool], float] = {}

    def off(value: float, *, carried: bool = False) -> float:
        """How far, relatively, the operand ``value`` is written from itself."""
        if (value, carried) not in errors:
            text = form.carried(value) if carried else form.given(value)
            errors[value, carried] = relative_error(text, value)
        return errors[value, carried]

    root, exp_sum, row_max = focus.sqrt_dk, focus.exp_sum, focus.row_max
    for j in keys:
        dot, row, term = focus.dots[j], focus.softmax[j], focus.terms[j]
        terms = dot.products
        written = [i for i in largest_terms(terms, TERMS_SHOWN) if i is not None]
        moves = [
            product_error(terms[i], off(dot.query_row[i]), off(dot.key_row[i])) for i in written
        ]
        error = math.fsum(moves) if len(written) == len(terms) else max(moves, default=0.0)
        size = math.fsum(abs(t) for t in terms) + abs(dot.score)
        if not within(error, form.unit(dot.score), size):
            return False
        scaled = dot.score / root
        error = quotient_error(scaled, off(dot.score), off(root))
        if not within(error, form.unit(scaled), abs(scaled)):
            return False
        for i in (i for i in visible_indices(len(term.value_row), TERMS_SHOWN) if i is not None):
            product = term.product[i]
            error = product_error(product, off(term.weight, carried=True), off(term.value_row[i]))
            if not within(error, form.unit(product), abs(product)):
                return False
        share = row.exp / exp_sum
        error = quotient_error(share, off(row.exp, carried=True), off(exp_sum, carried=True))
        if not within(error, form.unit(share), share):
            return False
        if form.scientific and not row.masked:  # there the inputs are operands, too
            error = difference_error(form.carried, row.scaled, row_max)
            if not within(error, form.unit(row.shifted), abs(row.scaled) + abs(row_max)):
                return False
    return True
