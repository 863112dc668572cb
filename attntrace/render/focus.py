"""The focus panel: one token's row of attention, written out as hand arithmetic.

    fish·cat = [2, 4]·[1, 2] = 2×1 + 4×2 = 10

Each section explains one stage, so step mode can show the section under its stage.
A long sum keeps its largest terms (``4.64×2 + … + 2.77×2``), so what is written out
explains the result; a result is never cut.

Every number is written by one :class:`~attntrace.render.by_hand.Form` for the whole
panel (the rule is in that module), chosen from the numbers of the keys written out
(:func:`hand_form`), so step mode's screens agree. Results (scores, scaled scores,
shares, weighted rows, the output) have the tables' digits; operands (the Q, K and V
entries, √d_k, the score divided, the weights, the exps) two more, or as many more as
it takes for every line redone by hand from what is written to give its written result
to within one unit of the last digit. Numbers that are exactly shorter are written as
people write them (``2×1``). Where the magnitudes differ too much for fixed point
(``1e8 × 2.5e-7``, 1e150), the whole panel is in scientific form; there, softmax's
inputs and the row max are written as operands too, so that ``scaled − max`` checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text

from attntrace.core.focus import Focus
from attntrace.core.trace import Trace
from attntrace.render.by_hand import (
    Form,
    choose,
    difference_error,
    product_error,
    quotient_error,
    relative_error,
    within,
)
from attntrace.render.fitted import Fitted
from attntrace.render.numbers import visible_indices
from attntrace.render.shown import pad
from attntrace.render.split_table import SplitTable
from attntrace.render.view import View
from attntrace.render.wrap import Wrapped

# How many terms of a long sum are written out (the largest ones).
TERMS_SHOWN = 6


def result_vector(values: Sequence[float], form: Form) -> str:
    """A computed vector, digits as in the tables: ``[3.9958, 2.0000]``."""
    shown = visible_indices(len(values), TERMS_SHOWN)
    return "[" + ", ".join("…" if i is None else form.result(values[i]) for i in shown) + "]"


def vector(values: Sequence[float], form: Form) -> str:
    """``[2, 4]``; a long vector keeps its first and last entries around ``…``."""
    shown = visible_indices(len(values), TERMS_SHOWN)
    return "[" + ", ".join("…" if i is None else form.given(values[i]) for i in shown) + "]"


def _factor(value: float, form: Form) -> str:
    text = form.given(value)
    return f"({text})" if text.startswith("-") else text


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


def products(
    left: Sequence[float], right: Sequence[float], form: Form, shown: int = TERMS_SHOWN
) -> str:
    """``2×1 + 4×2``: the terms of a dot product; a long one keeps its largest terms."""
    terms = [a * b for a, b in zip(left, right, strict=True)]
    return " + ".join(
        "…" if i is None else f"{_factor(left[i], form)}×{_factor(right[i], form)}"
        for i in largest_terms(terms, shown)
    )


def hand_form(focus: Focus, view: View) -> Form:
    """The form every section of ``focus``'s panel writes its numbers in."""
    return _hand_form(focus, view.precision, view.max_rows)


@lru_cache(maxsize=64)
def _hand_form(focus: Focus, precision: int, max_rows: int) -> Form:
    keys = tuple(shown_keys(focus, View(precision=precision, max_rows=max_rows)))
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
        moves = [product_error(terms[i], off(dot.query_row[i]), off(dot.key_row[i]))
                 for i in written]  # fmt: skip
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


def heading(number: str, text: str) -> Text:
    return Text.assemble((number, "bold cyan"), " ", (text, "bold"))


def dot_section(focus: Focus, view: View) -> Group:
    """scores: one dot product of the query row with each key row."""
    form, keys = hand_form(focus, view), shown_keys(focus, view)
    width = max(cell_len(focus.dots[j].key) for j in keys)
    q, k = focus.score_inputs
    turned = " turned" if q != "Q" else ""
    about = f"the{turned} query of '{focus.label}' times each{turned} key"
    lines: list[RenderableType] = [heading("scores", f"= {q} · {k}ᵀ: {about}")]
    for j in keys:
        dot = focus.dots[j]
        name = f"  {focus.label}·{pad(dot.key, width)} = "
        vectors = f"{vector(dot.query_row, form)}·{vector(dot.key_row, form)} = "
        masked = "  (masked: comes later)" if focus.softmax[j].masked else ""
        result = f" = {form.short(dot.score)}{masked}"
        # the largest terms that fit: six, two, or at least the one that weighs most
        terms = [products(dot.query_row, dot.key_row, form, n) for n in (TERMS_SHOWN, 2, 1)]
        lines.append(
            Fitted(
                (
                    name + vectors + terms[0] + result,
                    *(name + written + result for written in terms),
                    name + form.short(dot.score) + masked,
                )
            )
        )
    return Group(*lines)


def scale_section(focus: Focus, view: View) -> Group:
    """scaled: each score divided by √d_k."""
    form, keys = hand_form(focus, view), shown_keys(focus, view)
    root = form.given(focus.sqrt_dk)
    lines: list[RenderableType] = [
        heading("scaled", f"= scores / √d_k, with √{focus.d_k} = {root}")
    ]
    width = max(cell_len(focus.dots[j].key) for j in keys)
    for dot, row in ((focus.dots[j], focus.softmax[j]) for j in keys):
        scaled = dot.score / focus.sqrt_dk
        masked = "  → masked: −∞" if row.masked else ""
        lines.append(
            Text(
                f"  {focus.label}·{pad(dot.key, width)}: {form.given(dot.score)} / {root}"
                f" = {form.result(scaled)}{masked}"
            )
        )
    return Group(*lines)


def softmax_section(focus: Focus, view: View) -> Group:
    """softmax: the exp / sum / share table, the row max subtracted first."""
    form, keys = hand_form(focus, view), shown_keys(focus, view)
    # In fixed point the inputs are the scale lines' results; in scientific form,
    # operands, with the digits the differences need.
    softmax_input = form.carried if form.scientific else form.result
    source = focus.softmax_source
    heaviest = max(row.weight for row in focus.softmax)
    rows: list[tuple[RenderableType, ...]] = []
    for row in (focus.softmax[j] for j in keys):
        mark = " ◀" if row.weight == heaviest else ""
        rows.append((
            Text(row.key + mark, style="bold" if mark else ""),
            softmax_input(row.scaled),
            form.result(row.shifted),
            form.carried(row.exp),
            form.result(row.weight),
            f"{100 * row.weight:.2f}%",
        ))  # fmt: skip
    total = sum(row.weight for row in focus.softmax)
    rows.append((
        Text("sum", style="dim"), "", "", form.carried(focus.exp_sum),
        form.result(total), f"{100 * total:.2f}%",
    ))  # fmt: skip
    # Too narrow for every column: drawn in parts, never a number folded over two lines.
    table = SplitTable(("key", source, "− max", "exp", "share", "%"),
                       ("left", "right", "right", "right", "right", "right"), rows)  # fmt: skip
    explain = Text(
        f"  the row max {softmax_input(focus.row_max)} is subtracted first: every "
        f"exp ≤ 1, nothing overflows\n  share = exp / sum = exp / "
        f"{form.carried(focus.exp_sum)}",
        style="dim",
    )
    title = heading("softmax", f"= exp({source} − max) / sum, for '{focus.label}'")
    return Group(title, table, explain, *_hidden(focus, keys))


def output_section(focus: Focus, view: View) -> Group:
    """output: the value rows, weighted by the softmax row, added up."""
    form, keys = hand_form(focus, view), shown_keys(focus, view)
    width = max(cell_len(focus.terms[j].key) for j in keys)
    lines: list[RenderableType] = [
        heading("output", f"= Σ softmax × V: the value rows mixed by '{focus.label}'")
    ]
    # an operand's digits, so that weight × value reproduces the product shown; in
    # scientific form an exact 0 is shorter than the others, so they are lined up
    weights = [form.carried(focus.terms[j].weight) for j in keys]
    column = max(len(weight) for weight in weights)
    for term, weight in zip((focus.terms[j] for j in keys), weights, strict=True):
        name = f"  {weight:>{column}} × V[{pad(term.key + ']', width + 1)}"
        # never without the V row it multiplies: a line too long wraps, between numbers
        lines.append(Wrapped(Text(f"{name} = {weight} × {vector(term.value_row, form)}"
                                  f" = {result_vector(term.product, form)}")))  # fmt: skip
    lines.append(
        Text.assemble(
            "  sum = ", (result_vector(focus.output, form), "bold"),
            f" = output[{focus.label}]",
        )
    )  # fmt: skip
    return Group(*lines, *_hidden(focus, keys))


def shown_keys(focus: Focus, view: View) -> list[int]:
    """The keys written out: all of them, or the ``max_rows`` largest weights, in order."""
    count = len(focus.softmax)
    if count <= view.max_rows:
        return list(range(count))
    by_weight = sorted(range(count), key=lambda j: -focus.softmax[j].weight)
    return sorted(by_weight[: view.max_rows])


def _hidden(focus: Focus, keys: list[int]) -> list[Text]:
    count = len(focus.softmax)
    if len(keys) == count:
        return []
    return [Text(f"  the {len(keys)} largest of {count} weights are written out", style="dim")]


SectionMaker = Callable[[Focus, View], Group]
# Which section explains which stage, for step mode.
SECTION_OF_STAGE: dict[str, SectionMaker] = {
    "scores": dot_section,
    "scaled": scale_section,
    "softmax": softmax_section,
    "output": output_section,
}


def focus_panel(focus: Focus, trace: Trace, view: View) -> Group:
    """Every section, in stage order, under a line naming the row (and head)."""
    count = len(trace.tokens)
    title = Text.assemble(
        ("Focus: ", "bold magenta"),
        (focus.label, "bold"),
        f", position {focus.index} (counting from 0) of the {count} "
        f"token{'' if count == 1 else 's'} of {trace.model.name}",
    )
    if focus.head is not None:
        kv = (f" (reads K/V head {trace.model.kv_head_of(focus.head)})"
              if trace.model.group > 1 else "")  # fmt: skip
        title.append(f" · head {focus.head}{kv}", style="bold yellow")
    parts: list[RenderableType] = [title]
    if focus.note:
        parts.append(Text(focus.note, style="yellow"))
    for make in SECTION_OF_STAGE.values():
        parts += [Text(""), make(focus, view)]
    return Group(*parts)
