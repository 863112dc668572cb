"""grad --focus's panel: it fits 80 and 160 columns, and every line it writes adds up.

Each line of arithmetic is read back from the text and redone exactly (in fractions):
dSⱼ from its terms (or products), the shortcut from aⱼ, dAⱼ and the inner sum; the
results are compared with the record's numbers, computed independently by the core
tests.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from helpers import raw_controls
from randoms import random_block
from rich.cells import cell_len
from rich.console import Console

from attntrace.api import prepared
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import block_output_name
from attntrace.learning.grad_focus import jacobian_focus
from attntrace.learning.grad_trace import GradTrace, grad_trace
from attntrace.learning.objective import Objective
from attntrace.learning.views.grad_focus import grad_focus_panel
from attntrace.ui.view import DEFAULT_VIEW, View

WIDTHS = (80, 160)
NUMBER = r"-?[0-9.]+(?:e[+-][0-9]+)?"
SUM_LINE = re.compile(rf"^  (\S+):\s+J·dA = (.*) = ({NUMBER})$")
SHORTCUT_LINE = re.compile(
    rf"^  (\S+):\s+({NUMBER}) × \(({NUMBER}) − \(?({NUMBER})\)?\) = ({NUMBER})$"
)


def text_of(grad: GradTrace, row: int, head: int, width: int, view: View = DEFAULT_VIEW) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(grad_focus_panel(grad, row, head, view))
    return console.export_text()


def mse_grad(model: ModelSpec, tokens: list[str], context: list[str] | None = None) -> GradTrace:
    shape = trace_block(model, tokens, context)[block_output_name(model)].shape
    model = replace(model, target=np.random.default_rng(1).normal(size=shape))
    return grad_trace(model, tokens, context, Objective("mse"))


def it_animal(loss: str = "attend") -> GradTrace:
    p = prepared(None, sample="it-animal")
    if loss == "mse":
        return mse_grad(p.spec, list(p.tokens))
    return grad_trace(p.spec, p.tokens, p.key_tokens, Objective("attend", "it", "animal"))


def dense(n: int, seed: int = 2) -> GradTrace:
    """A row whose every dA is non-zero: mse on a random block of ``n`` tokens."""
    model, _, _ = random_block(seed, cross=False, causal=False, heads=1, kv_heads=1)
    return mse_grad(model, [f"t{i % 6}" for i in range(n)])


def joined(text: str) -> list[str]:
    """The panel's lines, a sum broken over lines joined back into one."""
    lines: list[str] = []
    for line in text.splitlines():
        if lines and re.match(r"^\s+[+−=] ", line) and "J·dA" in lines[-1]:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


def redone(terms: str) -> Fraction:
    """A written sum (``0.1 − 0.02 + (-0.3)×2``), exactly."""
    total = Fraction(0)
    for sign, term in re.findall(r"(^|[+−] )(\S+)", terms):
        factors = [Fraction(f.strip("()")) for f in term.split("×")]
        value = factors[0] if len(factors) == 1 else factors[0] * factors[1]
        total += -value if sign.startswith("−") else value
    return total


def unit(precision: int) -> Fraction:
    return Fraction(1, 10**precision)


CASES: dict[str, tuple[Callable[[], GradTrace], int, int]] = {
    "it-animal, attend": (it_animal, 7, 0),
    "it-animal, mse": (lambda: it_animal("mse"), 7, 0),
    "11 dense keys": (lambda: dense(11), 4, 0),
    "2 keys": (lambda: dense(2), 1, 0),
    "causal": (
        lambda: grad_trace(
            prepared(None, sample="causal").spec,
            prepared(None, sample="causal").tokens,
            None,
            Objective("attend", "cat", "the"),
        ),
        1,
        0,
    ),
    "gqa, head 3": (
        lambda: mse_grad(
            prepared(None, sample="gqa").spec, list(prepared(None, sample="gqa").tokens)
        ),
        2,
        3,
    ),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("width", WIDTHS)
def test_every_line_fits_and_adds_up(case: str, width: int) -> None:
    make, row, head = CASES[case]
    grad = make()
    focus = jacobian_focus(grad, row, head)
    text = text_of(grad, row, head, width)
    assert all(cell_len(line) <= width for line in text.splitlines()), text
    assert f"head {head}" in text.splitlines()[0] + text.splitlines()[1]
    lines = joined(text)
    sums = [m for m in map(SUM_LINE.match, lines) if m]
    shortcuts = [m for m in map(SHORTCUT_LINE.match, lines) if m]
    unmasked = [j for j in range(focus.size) if not focus.masked[j]]
    assert len(sums) == len(shortcuts) == len(unmasked)
    half = unit(4) / 2  # View's precision: 4
    for j, line, short in zip(unmasked, sums, shortcuts, strict=True):
        written = Fraction(line[3])
        # the record's number, at the precision (plus float64's rounding of the check)
        assert abs(written - Fraction(focus.d_scaled[j])) <= half + Fraction(1, 10**15)
        assert abs(Fraction(short[5]) - Fraction(focus.shortcut[j])) <= half + Fraction(1, 10**15)
        assert short[5] == line[3]  # the same number, written the same
        # redone by hand from what is written: within one unit of the written result
        if "…" not in line[2]:
            assert abs(redone(line[2]) - written) <= unit(4), line[0]
        a, d_a, inner = (Fraction(short[i]) for i in (2, 3, 4))
        assert abs(a * (d_a - inner) - Fraction(short[5])) <= unit(4), short[0]
        assert abs(inner - Fraction(focus.inner)) <= unit(5)
    assert "d_scores = d_scaled / √d_k" in text
    assert "✓ the same as the d_scaled stage's row" in text


def test_masked_keys_are_marked() -> None:
    p = prepared(None, sample="causal")
    grad = grad_trace(p.spec, p.tokens, None, Objective("attend", "cat", "the"))
    text = text_of(grad, 1, 0, 80)
    for key in ("sat†", "on†", "the#4†", "mat†"):
        assert re.search(rf"^  {re.escape(key)}:\s+0  \(masked", text, re.M), key
        assert re.search(rf"^{re.escape(key)}\s", text, re.M), key  # a row of J, marked
    assert "the#0:" in text
    assert "the#0†" not in text
    assert "cat†" not in text
    assert "† masked (weight 0 under the causal mask)" in text


def test_a_long_row_elides_the_middle_terms_and_says_so() -> None:
    grad = dense(16)
    text = text_of(grad, 3, 0, 80)
    assert "6 of the 16 terms are written out" in text
    assert all(cell_len(line) <= 80 for line in text.splitlines())
    few = text_of(grad, 3, 0, 80, View(max_rows=5))
    assert "the 5 heaviest of 16 keys are listed" in few
    assert len([m for m in map(SUM_LINE.match, joined(few)) if m]) == 5


def test_a_row_the_loss_does_not_reach_says_so() -> None:
    grad = it_animal()
    text = text_of(grad, 2, 0, 80)  # the attend loss reads row 'it' alone
    assert "this row's dA is all 0" in text
    assert "exactly" in text


def test_hostile_token_text_is_made_safe() -> None:
    model, _, _ = random_block(4, cross=False, causal=False, heads=1, kv_heads=1)
    evil, flip = "\x1b[2J\x1b[31mevil", "ab\u202ecd"
    vocab = {**model.embeddings, evil: model.embeddings["t0"], flip: model.embeddings["t1"]}
    model = replace(model, embeddings=vocab)
    grad = mse_grad(model, ["t2", evil, flip, "t3"])
    for width in WIDTHS:
        text = text_of(grad, 1, 0, width)
        assert raw_controls(text) == []
        assert "\\x1b[2J\\x1b[31mevil" in text
        assert "ab\\u202ecd" in text
        assert all(cell_len(line) <= width for line in text.splitlines())


def test_a_note_and_the_precision() -> None:
    grad = it_animal()
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(grad_focus_panel(grad, 7, 0, View(precision=2), note="'it' is at 7, 9"))
    text = console.export_text()
    assert "'it' is at 7, 9" in text.splitlines()[1]
    line = next(m for m in map(SUM_LINE.match, joined(text)) if m and m[1] == "animal")
    assert line[3] == f"{jacobian_focus(grad, 7, 0).d_scaled[1]:.2f}"
