"""The softmax backward of one row, written out as hand arithmetic (``grad --focus``).

    animal: J·dA = -0.006134 + 0.089021 - 0.000412 = 0.0825

The panel follows :mod:`attntrace.forward.views.focus`: a heading naming the row and head, then
the weights a and their gradient dA with the products aₖ·dAₖ and their sum, the
Jacobian J = diag(a) − a·aᵀ as a table labelled by the keys, each dSⱼ as the sum of
its terms Jⱼₖ·dAₖ, the shortcut aⱼ·(dAⱼ − Σₖ aₖ·dAₖ) giving the same numbers, the check
against the ``d_scaled`` stage and a line on ``d_scores``. A long sum goes on over
lines, its continuation indented under its first term; one of more than
:data:`TERMS_WRAPPED` terms keeps its first and last (``…`` for the middle) and says so. Masked
keys (weight 0) add nothing to any sum: they are marked ``†`` and left out.

Every number is written by one :class:`~attntrace.ui.by_hand.Form`, chosen so that
every line redone by hand (exactly, in fractions) from what is written gives its
written result to within one unit of its last digit: results with ``view.precision``
digits, operands (the terms, a, the inner sum) with two or more digits beyond.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from attntrace.forward.views.focus import heading
from attntrace.forward.views.focus_form import TERMS_SHOWN
from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.learning.grad_focus import JacobianFocus, jacobian_focus
from attntrace.learning.grad_trace import GradTrace
from attntrace.ui.by_hand import FLOAT_SLACK, Form, choose
from attntrace.ui.numbers import significant, visible_indices
from attntrace.ui.shown import labels, pad
from attntrace.ui.split_table import SplitTable
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View
from attntrace.ui.wrap import Term, Wrapped, between_terms

# A sum of at most this many terms is written out whole, over several lines if need be;
# a longer one keeps TERMS_SHOWN, its first and last.
TERMS_WRAPPED = 12
# Marks a masked key (weight 0 under the causal mask) wherever it is named.
MASK_MARK = "†"
# Two computations of one number agree when they differ by float64's rounding alone:
# this part of the sizes summed.
AGREE = 1e-12


def grad_focus_panel(
    grad: GradTrace, row: int, head: int, view: View, note: str = ""
) -> RenderableType:
    """Row ``row`` of head ``head`` through the softmax backward, every number written
    out (``note`` says which of a repeated token it is, under the heading)."""
    focus = jacobian_focus(grad, row, head)
    shown = _Shown.of(focus, grad, view)
    parts: list[RenderableType] = [Wrapped(_title(focus, shown, grad.forward.model.group))]
    if note:
        parts.append(Wrapped(Text(note, style="yellow")))
    parts.append(
        Wrapped(
            Text(
                "dS = J·dA: the gradient of the weights a, dA, reaches "
                f"{_READ.get(focus.landed, 'the scaled scores')} S through the softmax's "
                "Jacobian J",
                style="dim",
            )
        )
    )
    if not any(focus.d_weights):
        parts.append(
            Wrapped(
                Text(
                    "this row's dA is all 0 (the loss does not reach it): every number below is 0",
                    style="yellow",
                )
            )
        )
    for section in (
        _weights_section,
        _jacobian_section,
        _sums_section,
        _shortcut_section,
        _check_section,
    ):
        parts += [Text(""), section(focus, shown)]
    return Group(*parts)


@dataclass(frozen=True)
class _Shown:
    """What the panel writes: the keys' labels as shown, the rows written out, the form."""

    keys: tuple[str, ...]  # visible, told apart, a masked one marked
    label: str  # the query token, visible
    rows: tuple[int, ...]  # the keys j written out: all, or the max_rows heaviest
    form: Form
    view: View

    @classmethod
    def of(cls, focus: JacobianFocus, grad: GradTrace, view: View) -> _Shown:
        trace = grad.forward
        tokens = unique_labels(labels(trace.tokens))
        key_tokens = unique_labels(labels(focus.keys))
        keys = tuple(
            key + MASK_MARK if masked else key
            for key, masked in zip(key_tokens, focus.masked, strict=True)
        )
        rows = tuple(_written_rows(focus, view.max_rows))
        form = choose(
            view.precision, _numbers(focus, rows), lambda form: _adds_up(focus, rows, form)
        )
        return cls(keys, tokens[focus.index], rows, form, view)


# What the softmax read, where a variant stands between it and the scaled scores.
_READ = {"d_capped": "the capped logits", "d_biased": "the biased scores (scaled + ALiBi)"}


def _written_rows(focus: JacobianFocus, max_rows: int) -> list[int]:
    """Every key, or the ``max_rows`` (at least one) heaviest, in key order."""
    count = focus.size
    if count <= max_rows:
        return list(range(count))
    heaviest = sorted(range(count), key=lambda j: -focus.weights[j])
    return sorted(heaviest[: max(1, max_rows)])


def _unmasked(focus: JacobianFocus) -> list[int]:
    return [k for k in range(focus.size) if not focus.masked[k]]


def _sum_terms(focus: JacobianFocus, j: int) -> list[int | None]:
    """The keys k whose terms Jⱼₖ·dAₖ dSⱼ's line writes (``None`` for a gap): every one
    that is not 0 for want of a weight or a gradient (a masked key, dAₖ = 0); where
    there are more than :data:`TERMS_WRAPPED`, the first and last, the middle elided."""
    keys = _adding(focus)
    if len(keys) <= TERMS_WRAPPED:
        return list(keys)
    return [None if i is None else keys[i] for i in visible_indices(len(keys), TERMS_SHOWN)]


def _adding(focus: JacobianFocus) -> list[int]:
    """The keys whose terms can be other than 0: unmasked, with dAₖ not 0."""
    return [k for k in _unmasked(focus) if focus.d_weights[k] != 0]


def _operand(form: Form, value: float) -> str:
    """A computed operand with all its digits, an exact 0 as ``0``."""
    return "0" if value == 0 else form.carried(value)


def _factor(form: Form, value: float) -> str:
    text = form.given(value)
    return f"({text})" if text.startswith("-") else text


def _numbers(focus: JacobianFocus, rows: Sequence[int]) -> Iterator[float]:
    """Every number the panel writes (for choosing fixed point or scientific form)."""
    yield from (focus.inner, *focus.weights, *focus.d_weights, *focus.inner_terms)
    for j in rows:
        yield from (focus.d_scaled[j], focus.shortcut[j], *focus.jacobian[j])
        yield from (focus.terms[j][k] for k in _sum_terms(focus, j) if k is not None)


def _adds_up(focus: JacobianFocus, rows: Sequence[int], form: Form) -> bool:
    """Whether every line, redone exactly from what ``form`` writes, gives its written
    result to within one unit of its last digit (the rounding of the result itself is
    the other half unit): each dSⱼ from its terms, each shortcut from aⱼ, dAⱼ and the
    inner sum, and the inner sum from the products aₖ·dAₖ."""

    def read(text: str) -> Fraction:
        return Fraction(text)

    def close(redone: Fraction, value: float, size: float) -> bool:
        error = float(abs(redone - Fraction(value)))
        return error <= form.unit(value) / 2 + FLOAT_SLACK * size

    keys = _adding(focus)
    inner = read(form.carried(focus.inner))
    products = [focus.inner_terms[k] for k in keys]
    size = math.fsum(abs(p) for p in products)
    if not close(sum((read(_operand(form, p)) for p in products), Fraction(0)), focus.inner, size):
        return False
    for j in rows:
        if focus.masked[j]:
            continue
        terms = [focus.terms[j][k] for k in keys]
        size = math.fsum(abs(t) for t in terms)
        if None not in _sum_terms(focus, j):  # every term written: the sum redone
            redone = sum((read(_operand(form, t)) for t in terms), Fraction(0))
            if not close(redone, focus.d_scaled[j], size):
                return False
            # and written as products, Jⱼₖ×dAₖ, where the line is short enough for them
            redone = sum(
                (
                    read(form.given(focus.jacobian[j][k])) * read(form.given(focus.d_weights[k]))
                    for k in keys
                ),
                Fraction(0),
            )
            if not close(redone, focus.d_scaled[j], size):
                return False
        a, d_a = focus.weights[j], focus.d_weights[j]
        redone = read(form.carried(a)) * (read(form.given(d_a)) - inner)
        size = abs(a) * (abs(d_a) + abs(focus.inner))
        if not close(redone, focus.shortcut[j], size):
            return False
    return True


def _title(focus: JacobianFocus, shown: _Shown, group: int) -> Text:
    title = Text.assemble(
        ("Softmax backward by hand: ", "bold magenta"),
        (shown.label, "bold"),
        f", row {focus.index} (counting from 0), its {focus.size} "
        f"key{'' if focus.size == 1 else 's'}",
    )
    kv = f" (reads K/V head {focus.kv_head})" if group > 1 else ""
    title.append(f" · head {focus.head}{kv}", style="bold yellow")
    return title


def _weights_section(focus: JacobianFocus, shown: _Shown) -> Group:
    """a, dA and their products, summed: the Σₖ aₖ·dAₖ the shortcut uses."""
    form = shown.form
    rows: list[Sequence[RenderableType]] = []
    for k in shown.rows:
        masked = focus.masked[k]
        rows.append(
            (
                Text(shown.keys[k], style="dim" if masked else ""),
                _operand(form, focus.weights[k]),
                form.given(focus.d_weights[k]),
                "" if masked else _operand(form, focus.inner_terms[k]),
            )
        )
    rows.append(
        (
            Text("sum", style="dim"),
            form.carried(math.fsum(focus.weights)),
            "",
            Text(form.carried(focus.inner), style="bold"),
        )
    )
    table = SplitTable(("key", "a", "dA", "a·dA"), ("left", "right", "right", "right"), rows)
    lines: list[RenderableType] = [
        heading("a, dA", f"= row '{shown.label}' of softmax, and of d_softmax (dL/da)"),
        table,
    ]
    if len(shown.rows) < focus.size:
        lines.append(
            _dim(
                f"  the {len(shown.rows)} heaviest of {focus.size} keys are listed;"
                " the sums are over them all"
            )
        )
    if any(focus.masked):
        lines.append(
            _dim(
                f"  {MASK_MARK} masked (weight 0 under the causal mask): it adds "
                "nothing, here or below"
            )
        )
    return Group(*lines)


def _jacobian_section(focus: JacobianFocus, shown: _Shown) -> Group:
    """J = diag(a) − a·aᵀ as a table, the keys labelling its rows and columns."""
    stage = Stage(
        "J",
        "J = diag(a) − a·aᵀ",
        shown.keys,
        shown.keys,
        np.array(focus.jacobian, dtype=np.float64).reshape(focus.size, focus.size),
    )
    lines: list[RenderableType] = [
        heading("J", "= diag(a) − a·aᵀ: Jⱼₖ = aⱼ·(1 − aⱼ) on the diagonal, −aⱼ·aₖ off it"),
        StageTable(stage, shown.view),
        _dim("  row j, column k: how much weight j moves when scaled score k does"),
    ]
    if any(focus.masked):
        lines.append(
            _dim(
                f"  a masked key's row and column ({MASK_MARK}) are 0: its weight "
                "is 0 whatever the score"
            )
        )
    return Group(*lines)


def _sums_section(focus: JacobianFocus, shown: _Shown) -> Group:
    """Each dSⱼ = Σₖ Jⱼₖ·dAₖ, its terms written out (as products where they fit)."""
    form = shown.form
    width = max(cell_len(shown.keys[j]) for j in shown.rows)
    lines: list[RenderableType] = [
        heading(focus.landed, "= J·dA: dSⱼ = Σₖ Jⱼₖ·dAₖ, row j of J times dA, term by term")
    ]
    elided = False
    for j in shown.rows:
        name = f"  {pad(shown.keys[j] + ':', width + 1)} "
        if focus.masked[j]:
            lines.append(Text(f"{name}0  (masked: its row of J is 0)", style="dim"))
            continue
        written = _sum_terms(focus, j)
        elided = elided or None in written
        total = form.result(focus.d_scaled[j])
        terms = tuple("…" if k is None else _operand(form, focus.terms[j][k]) for k in written)
        variants = [terms]
        every = [k for k in written if k is not None]
        if len(every) == len(written) and every:  # short enough for its products too
            products = tuple(
                f"{_factor(form, focus.jacobian[j][k])}×{_factor(form, focus.d_weights[k])}"
                for k in every
            )
            variants.insert(0, products)
        lines.append(_Sum(name + "J·dA = ", tuple(variants), total))
    adding, count = len(_adding(focus)), len(_unmasked(focus))
    if elided:
        lines.append(
            _dim(
                f"  {TERMS_SHOWN} of the {adding} terms are written out, the first "
                "and the last; … stands for the rest"
            )
        )
    if adding < focus.size:
        which = {
            (True, False): f"{MASK_MARK} masked keys' terms",
            (False, True): "the terms where dAₖ = 0",
            (True, True): f"the terms of {MASK_MARK} masked keys, and where dAₖ = 0,",
        }
        key = (count < focus.size, adding < count)
        lines.append(_dim(f"  {which[key]} are 0 and left out"))
    return Group(*lines)


def _shortcut_section(focus: JacobianFocus, shown: _Shown) -> Group:
    """aⱼ·(dAⱼ − Σₖ aₖ·dAₖ): the same numbers without J."""
    form = shown.form
    inner = form.carried(focus.inner)
    width = max(cell_len(shown.keys[j]) for j in shown.rows)
    lines: list[RenderableType] = [
        heading("shortcut", f"dSⱼ = aⱼ·(dAⱼ − Σₖ aₖ·dAₖ), with Σₖ aₖ·dAₖ = {inner}")
    ]
    for j in shown.rows:
        name = f"  {pad(shown.keys[j] + ':', width + 1)} "
        if focus.masked[j]:
            lines.append(Text(f"{name}0  (masked: a = 0)", style="dim"))
            continue
        a, d_a = form.carried(focus.weights[j]), form.given(focus.d_weights[j])
        lines.append(
            Wrapped(
                Text(
                    f"{name}{a} × ({d_a} − {_parenthesized(inner)}) = "
                    f"{form.result(focus.shortcut[j])}"
                )
            )
        )
    lines.append(_dim("  the same numbers: J·dA = a∘dA − a·(aᵀ·dA), row by row"))
    return Group(*lines)


def _check_section(focus: JacobianFocus, shown: _Shown) -> Group:
    """The sums against the backward pass's own d_scaled row, and what d_scores is."""
    stage = focus.stage_d_scaled
    apart = max(
        max(abs(x - s) for x, s in zip(focus.d_scaled, stage, strict=True)),
        max(abs(x - s) for x, s in zip(focus.shortcut, stage, strict=True)),
    )
    size = max(max(abs(t) for line in focus.terms for t in line), *map(abs, stage), 1e-300)
    landed = focus.landed
    where = f"{landed}[{shown.label}, ·]"
    if apart == 0:
        verdict = Text(f"✓ the same as the {landed} stage's row, {where}, exactly")
    elif apart <= AGREE * size * focus.size:
        verdict = Text(
            f"✓ the same as the {landed} stage's row, {where} (apart by "
            f"{significant(apart, 2)}: float64's rounding)"
        )
    else:
        verdict = Text(
            f"✗ the {landed} stage's row, {where}, is {significant(apart, 2)} away",
            style="bold red",
        )
    root = shown.form.given(focus.sqrt_dk)
    heaviest = max(range(focus.size), key=lambda k: abs(focus.stage_d_scores[k]))
    example = (
        f"d_scores[{shown.label}, {shown.keys[heaviest]}] = "
        f"{shown.form.result(focus.stage_d_scores[heaviest])}"
    )
    between = {
        "d_capped": "back through the cap (× (1 − (capped / C)²)), then ",
        "d_biased": "to d_scaled unchanged (ALiBi's bias is a constant), then ",
    }.get(landed, "")
    scores = Text(
        f"next, {between}d_scores = d_scaled / √d_k: each divided by √{focus.d_k} = {root}, "
        f"as the scores were on the way forward ({example})",
        style="dim",
    )
    return Group(Wrapped(verdict), Wrapped(scores))


def _parenthesized(text: str) -> str:
    return f"({text})" if text.startswith("-") else text


def _dim(text: str) -> Wrapped:
    return Wrapped(Text(text, style="dim"))


@dataclass(frozen=True)
class _Sum:
    """``prefix t₀ + t₁ − t₂ … = total``: the first of ``variants`` (the terms as
    written, fullest first) that fits on one line, else the last, broken between terms
    where the width ends, each continued line starting under the first term (or
    indented, where the prefix is more than half the width)."""

    prefix: str
    variants: tuple[tuple[str, ...], ...]  # each: the terms, "0.012", "-0.0031", "…"
    total: str

    def lines(self, width: int) -> list[Text]:
        for terms in self.variants[:-1]:
            lines = self._lines(terms, width)
            if len(lines) == 1:
                return lines
        return self._lines(self.variants[-1], width)

    def _lines(self, terms: tuple[str, ...], width: int) -> list[Text]:
        indent = " " * (cell_len(self.prefix) if cell_len(self.prefix) <= width // 2 else 4)
        pieces: list[Term] = []
        for term in terms[1:]:
            sign, body = ("−", term[1:]) if term.startswith("-") else ("+", term)
            pieces.append(Term(Text(f" {sign} {body}"), Text(f"{indent}{sign} {body}")))
        pieces.append(
            Term(
                Text(f" = {self.total}", style="bold"),
                Text(f"{indent}= {self.total}", style="bold"),
            )
        )
        first = Text(self.prefix + (terms[0] if terms else "0"))
        return [line for text in between_terms(first, pieces, width) for line in _fold(text, width)]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max(cell_len(line.plain) for line in self.lines(options.max_width))
        return Measurement(min(widest, options.max_width), min(widest, options.max_width))


def _fold(text: Text, width: int) -> Iterator[Text]:
    """A line still too wide (a long label at a narrow width) broken between words."""
    if cell_len(text.plain) <= width:
        yield text
        return
    from attntrace.ui.wrap import wrap

    yield from wrap(text, width)
