"""The digit rule (docs/cli.md, "How numbers are written"), held where it is written.

Figures side by side carry the same digits; a number is written shorter only where the
shorter form is the number itself; and a number that is not zero is never written as
zero. Each check reads the written text back as a float and compares it with the value
(an independent reading: Python's own parser), never with the code's own output.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from attntrace.api import prepared
from attntrace.forward.attention import trace_block
from attntrace.forward.focus import focus_row
from attntrace.forward.views.focus import focus_panel
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective
from attntrace.learning.views.grad_focus import grad_focus_panel
from attntrace.ui.numbers import fixed, format_number, scientific
from attntrace.ui.view import View

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e7, max_value=1e7)


def decimals(text: str) -> int:
    return len(text.partition("e")[0].partition(".")[2])


@given(value=finite, places=st.integers(0, 8))
def test_a_shorter_number_is_the_value_itself(value: float, places: int) -> None:
    """-0.009100249 at 6 places was written -0.0091: a rounded number read as exact."""
    text = fixed(value, places, short=True)
    assert decimals(text) == places or float(text) == value, (value, places, text)


@given(value=finite.filter(lambda x: x != 0), places=st.integers(0, 8))
def test_a_shorter_mantissa_is_the_value_itself(value: float, places: int) -> None:
    text = scientific(value, places, short=True)
    assert decimals(text) == places or float(text) == value, (value, places, text)


@given(value=finite, precision=st.integers(0, 8))
def test_a_table_never_writes_a_nonzero_number_as_zero(value: float, precision: int) -> None:
    """grad --focus's J wrote −3.9e-5 as 0.0000, beside exact zeros."""
    text = format_number(value, precision)
    assert (float(text) == 0) == (value == 0), (value, text)
    assert abs(float(text) - value) <= max(10.0**-precision / 2, abs(value) * 0.06), (value, text)


def panel(model: ModelSpec, tokens: list[str], token: str, precision: int = 4) -> str:
    trace = trace_block(model, tokens)
    console = Console(width=2000, record=True, color_system=None, file=io.StringIO())
    console.print(focus_panel(focus_row(trace, token), trace, View(precision=precision)))
    return console.export_text()


def test_the_focus_panel_keeps_the_digits_of_rounded_numbers() -> None:
    """`= 22.081` beside `= 11.4827`, `V[[CLS]] = [0.090979, -0.0091, …]` for −0.009100249."""
    eye = np.eye(2)
    embeddings = {"q": np.array([1.0, 0.0]), "k": np.array([2.285991, -0.009100249])}
    text = panel(ModelSpec(embeddings, eye, eye, eye), ["q", "k"], "q")
    assert "q·k = [1, 0]·[2.285991, -0.009100] = 1×2.285991 + 0×(-0.009100) = 2.2860" in text
    assert "[2.285991, -0.009100]" in text.split("output = ")[1]
    # every result of the scores and scaled lines: 4 places, or the value exactly
    for line in re.findall(r"^  q·.*$", text, flags=re.M):
        result = line.split(" = ")[-1].split()[0]
        assert decimals(result) == 4 or result in ("0", "1"), line


def test_grad_focus_writes_a_tiny_jacobian_entry_as_not_zero() -> None:
    """it-animal, row 'it': Jⱼₖ = −aⱼ·aₖ = −0.006264² ≈ −3.9e-5 was written 0.0000."""
    p = prepared(None, sample="it-animal")
    grad = grad_trace(p.spec, p.tokens, p.key_tokens, Objective("attend", "it", "animal"))
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(grad_focus_panel(grad, 7, 0, View()))
    text = console.export_text()
    table = text.split("J = diag(a)")[1].split("row j, column k")[0]
    row = next(line.split() for line in table.splitlines() if line.startswith("The "))
    weight = math.exp(0 - 4.64) / (1 + 8 * math.exp(-4.64) + math.exp(-1.17) + math.exp(-1.87))
    assert abs(float(row[3]) + weight * weight) <= 0.05 * weight * weight, row
    assert "0.0000" not in row, row


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]\d+)?")


def wide_values_model() -> tuple[ModelSpec, list[str]]:
    """Value rows of 32 entries, of both signs and two sizes: vectors wider than 80."""
    rng = np.random.default_rng(7)
    tokens = ["the", "animal", "was", "tired"]
    embeddings = {t: rng.normal(size=32) * rng.choice([0.01, 1.0], size=32) for t in tokens}
    eye = np.eye(32)
    return ModelSpec(embeddings, eye, eye, eye), tokens


@pytest.mark.parametrize("width", [80, 40])
def test_the_focus_panel_breaks_long_lines_between_terms_never_in_a_number(width: int) -> None:
    """At 80 columns the output lines wrapped with `0.009788, …` and `-0.0712]` at the
    left edge: a continued line now starts indented, under its `=` or its vector."""
    model, tokens = wide_values_model()
    trace = trace_block(model, tokens)
    texts = {}
    for columns in (width, 2000):
        console = Console(width=columns, record=True, color_system=None, file=io.StringIO())
        console.print(focus_panel(focus_row(trace, "was"), trace, View()))
        texts[columns] = console.export_text().split("output = ")[1]
    narrow = texts[width].splitlines()[1:]
    assert len(narrow) > len(texts[2000].splitlines()[1:])  # it did have to wrap
    # every number whole: the same numbers, in the same order, as on one wide line each
    assert NUMBER.findall(texts[width]) == NUMBER.findall(texts[2000])
    for line in narrow:
        assert len(line) <= width, line
        assert line.startswith("  "), line
        if width == 80 and not re.match(r"  \S+ × V\[|  sum = ", line):  # a continued line
            stripped = line.strip()
            assert stripped.startswith("= ") or len(NUMBER.findall(line)) >= 2, line


def test_the_map_never_writes_a_weight_that_is_not_0_as_0(tmp_path: Path) -> None:
    """--map wrote exp(−32)/… as 0.00 beside its empty bar."""
    path = tmp_path / "peaked.yaml"
    path.write_text(
        "embeddings: {a: [9, 0], b: [0, 9], c: [4, 4]}\n"
        "weights: {WQ: [[1, 0], [0, 1]], WK: [[1, 0], [0, 1]], WV: [[1, 0], [0, 1]]}\n"
    )
    result = invoke("run", "-c", str(path), "a b c", "--map", columns=100)
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("a → "))
    # a's scores: a·a = 81, a·c = 36, a·b = 0, over √2; softmax by hand
    scaled = [81 / math.sqrt(2), 36 / math.sqrt(2), 0.0]
    exps = [math.exp(x - scaled[0]) for x in scaled]
    weights = [e / math.fsum(exps) for e in exps]
    written = [float(x) for x in re.findall(r"\d\.\d+(?:e[+-]\d+)?", line)]
    assert len(written) == 3, line
    for value, weight in zip(written, weights, strict=True):
        assert abs(value - weight) <= max(0.005, 0.06 * weight), line
        assert value != 0, line
