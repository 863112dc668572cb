"""The arithmetic by hand adds up: what --focus and `softmax` write is parsed back and
redone exactly (in fractions), as a reader with pencil and paper would.

The promise (attntrace/ui/by_hand.py): a line redone from its written operands gives
its written result to within one unit of the result's last digit; a line that adds up
written *rounded results* (the output rows, the exp column, a difference in fixed point)
may also be off by half a unit of each of them. Nothing here pins the last bits of a
float: every tolerance is the written digits' own, plus float64's rounding (``EPS`` of
the sizes involved), far below them.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke, whole_runs
from hypothesis import example, given
from hypothesis import strategies as st
from rich.console import Console
from tolerances import HAND_ROUNDING, HAND_UNDERFLOW

from attntrace.forward.attention import trace_block
from attntrace.forward.focus import focus_row
from attntrace.forward.softmax_walk import walk
from attntrace.forward.views.focus import focus_panel
from attntrace.forward.views.softmax_walk import walkthrough
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.ui.view import View

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]\d+)?")
EPS = HAND_ROUNDING


def exactly(text: str) -> Fraction:
    return Fraction(text.strip("()"))


def unit(text: str, zero: Fraction) -> Fraction:
    """The unit of the last digit ``text`` writes: ``0.0008`` -> 1e-4, ``7.0711e+15`` ->
    1e11; a lone ``0`` is ``zero`` (exact in scientific form, rounded in fixed point)."""
    if text == "0":
        return zero
    mantissa, _, exponent = text.partition("e")
    return Fraction(10) ** (int(exponent or 0) - len(mantissa.partition(".")[2]))


def size(values: Iterable[Fraction]) -> Fraction:
    return sum((abs(v) for v in values), Fraction(0))


def identity_model(vectors: dict[str, list[float]], causal: bool = False) -> ModelSpec:
    eye = np.eye(len(next(iter(vectors.values()))))
    embeddings = {token: np.array(v, dtype=np.float64) for token, v in vectors.items()}
    return ModelSpec(embeddings, eye, eye, eye, causal=causal)


def panel_text(trace: Trace, token: str, precision: int, width: int = 2000) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(focus_panel(focus_row(trace, token), trace, View(precision=precision)))
    return console.export_text()


class Panel:
    """A focus panel's text, each line redone; ``checked`` counts the lines."""

    def __init__(self, text: str, precision: int, *, strict: bool = False) -> None:
        # strict: a dot product's written result is its written terms' exact sum, without
        # float64's rounding of the terms' sizes (EPS), or a note under it says why not and
        # gives the exact sum (at precision 15 the operands' shortest decimals need EPS)
        self.text, self.precision, self.checked = text, precision, 0
        self.strict, self.notes = strict, 0
        sections = re.split(r"^(scores|scaled|softmax|output) = .*$", text, flags=re.M)
        self.sections = dict(zip(sections[1::2], sections[2::2], strict=True))
        # the panel's form is its results': a fixed-point panel writes an operand too
        # small for its digits in scientific form too (1e-09), so √d_k says which it is
        root = re.findall(r"√\d+ = (\S+)", text)[0]
        self.scientific = "e" in root
        self.zero = Fraction(0) if self.scientific else Fraction(10) ** -precision

    def unit(self, text: str) -> Fraction:
        return unit(text, self.zero)

    def nominal(self, text: str) -> Fraction:
        """The unit of a result written with its trailing zeros dropped (``= 10``)."""
        if not self.scientific:
            return Fraction(10) ** -self.precision
        exponent = int(text.partition("e")[2] or 0)
        return Fraction(0) if text == "0" else Fraction(10) ** (exponent - self.precision)

    def check(self) -> Panel:
        lines = [line.strip() for line in self.sections["scores"].splitlines()]
        for line, after in zip(lines, [*lines[1:], ""], strict=True):
            self.dot(line, after if "the exact sum is " in after else None)
        for line in self.sections["scaled"].splitlines():
            self.scale(line.strip())
        self.softmax(self.sections["softmax"])
        self.output(self.sections["output"])
        return self

    def dot(self, line: str, note: str | None = None) -> None:
        """``cat·eats = [..]·[..] = a×b + c×d = S``: Σ a×b is S to within a unit; or, where
        a ``note`` under it gives the exact sum (the terms cancel), Σ a×b is that."""
        parts = line.split("  (masked")[0].split(" = ")
        if len(parts) < 3 or "…" in parts[-2]:
            return  # the result alone, or a long sum's largest terms only
        terms = [exactly(a) * exactly(b) for a, b in (t.split("×") for t in parts[-2].split(" + "))]
        result = parts[-1] if note is None else note.rpartition("the exact sum is ")[2]
        rounding = 0 if self.strict else EPS * size(terms)
        allowed = self.nominal(result) + rounding + len(terms) * HAND_UNDERFLOW
        assert abs(sum(terms) - exactly(result)) <= allowed, (line, note)
        self.notes += note is not None
        self.checked += 1

    def scale(self, line: str) -> None:
        """``cat·eats: 28 / 1.414214 = 19.7990``."""
        if " / " not in line:
            return
        left, result = line.split(": ", 1)[1].split("  →")[0].split(" = ")
        score, root = (exactly(x) for x in left.split(" / "))
        allowed = self.unit(result) + EPS * abs(score / root) + HAND_UNDERFLOW
        assert abs(score / root - exactly(result)) <= allowed, line
        self.checked += 1

    def softmax(self, text: str) -> None:
        """Each scaled − max and exp / sum, and the exp column's sum."""
        prose = " ".join(text.split())
        row_max = re.findall(r"the row max (\S+) is subtracted", prose)[0]
        exp_sum = re.findall(r"share = exp / sum = exp / (\S+)", prose)[0]
        lines = [line.replace("◀", "").split() for line in text.splitlines()]
        rows = [c[-5:] for c in lines if len(c) >= 6 and c[-1][-1] == "%" and c[0] != "key"]
        total = next(cells for cells in lines if cells and cells[0] == "sum")
        assert total[-3] == exp_sum, "the sum row's exp is the divisor written below"
        for scaled, shifted, exp, share, _ in rows:
            if scaled != "−∞":
                # fixed point: two rounded results with the difference's digits; scientific
                # form: operands with the digits the difference needs
                difference = exactly(scaled) - exactly(row_max)
                # (a result too small for fixed point has digits of its own: -6.3e-10)
                units = [self.unit(x) for x in (scaled, row_max, shifted)]
                rounding = max(3 * units[2], sum(units)) / 2
                allowed = rounding + EPS * size(map(exactly, (scaled, row_max)))
                assert abs(difference - exactly(shifted)) <= allowed, (scaled, row_max, shifted)
            quotient = exactly(exp) / exactly(exp_sum)
            assert abs(quotient - exactly(share)) <= self.unit(share) + EPS, (exp, share)
        if "largest of" not in text:  # every key is written: the column adds up
            exps = [exactly(row[2]) for row in rows]
            rounding = self.unit(exp_sum) + sum(self.unit(row[2]) for row in rows)
            assert abs(sum(exps) - exactly(exp_sum)) <= rounding / 2 + EPS * size(exps)
        self.checked += 1

    def output(self, text: str) -> None:
        """Each ``w × [v] = [w·v]``, and the rows' sum, the output."""
        products: list[list[str]] = []
        for line in (line.strip() for line in text.splitlines()):
            if " × V[" in line:
                weight, *rest = line.split(" × ", 1)[0], *line.split(" = ")[1:]
                products.append(NUMBER.findall(rest[-1]))
                if len(rest) < 2:
                    continue  # too narrow for the value row
                for v, p in zip(NUMBER.findall(rest[0])[1:], products[-1], strict=True):
                    product = exactly(weight) * exactly(v)
                    allowed = self.unit(p) + EPS * abs(product) + HAND_UNDERFLOW
                    assert abs(product - exactly(p)) <= allowed, (line, v, p)
                self.checked += 1
            elif line.startswith("sum = ") and "largest of" not in text:
                for i, o in enumerate(NUMBER.findall(line.split(" = ")[1])):
                    column = [row[i] for row in products]
                    rounding = self.unit(o) + sum(self.unit(p) for p in column)
                    error = abs(sum(map(exactly, column)) - exactly(o))
                    assert error <= rounding / 2 + EPS * size(map(exactly, column)), (line, i)


def test_the_issues_example_adds_up() -> None:
    """cat [1e8, 3] · eats [2.5e-7, 1] was written 100000000×0 + 3×1 = 28."""
    trace = trace_block(identity_model({"cat": [1e8, 3], "eats": [2.5e-7, 1]}), ["cat", "eats"])
    text = panel_text(trace, "cat", 4)
    line = next(line for line in text.splitlines() if "cat·eats =" in line)
    assert "1e+08×2.5e-07 + 3e+00×1e+00 = 2.8e+01" in line
    assert Panel(text, 4).check().checked == 2 + 2 + 1 + 2


@pytest.mark.parametrize("columns", [40, 80])
def test_huge_values_are_short_and_never_split(columns: int, tmp_path: Path) -> None:
    """Near 1e150 a dot product was a 300-digit integer over four lines."""
    path = tmp_path / "huge.json"
    vectors = {"cat": [1.234e150, 3.3e150], "eats": [2.5e150, -1e150], "fish": [2e150, 4.1e150]}
    eye = [[1, 0], [0, 1]]
    path.write_text(
        json.dumps({"embeddings": vectors, "weights": dict.fromkeys(("WQ", "WK", "WV"), eye)})
    )
    narrow = invoke("run", "cat eats fish", "-c", str(path), "--focus", "cat", columns=columns)
    wide = invoke("run", "cat eats fish", "-c", str(path), "--focus", "cat", columns=400)
    assert narrow.exit_code == 0, narrow.output
    assert max(len(line) for line in narrow.stdout.splitlines()) <= columns
    assert max(len(n) for n in NUMBER.findall(narrow.stdout)) <= 24
    # a number folded over two lines leaves pieces that the wide output does not have
    assert set(NUMBER.findall(narrow.stdout)) <= set(NUMBER.findall(wide.stdout))
    panel = wide.stdout[wide.stdout.index("Focus: ") :]
    assert Panel(panel, 4).check().checked == 3 + 3 + 1 + 3


def test_a_factor_far_smaller_than_its_partner_is_not_written_as_0() -> None:
    """1e-150 × 1e150 is 1: in fixed point the first factor would be 0."""
    vectors = {"a": [1e-150, 2.0], "b": [1e150, 1.0], "c": [3.0, -4.0]}
    trace = trace_block(identity_model(vectors), ["a", "b", "c"])
    text = panel_text(trace, "a", 4)
    assert "a·b = [1e-150, 2e+00]·[1e+150, 1e+00] = 1e-150×1e+150 + 2e+00×1e+00 = 3e+00" in text
    assert Panel(text, 4).check().checked == 3 + 3 + 1 + 3


def test_the_worked_example_is_written_as_people_write_it() -> None:
    text = invoke("run", "cat eats fish", "--focus", "fish").stdout
    assert "fish·cat  = [2, 4]·[1, 2] = 2×1 + 4×2 = 10" in text
    panel = Panel(text, 4).check()
    assert not panel.scientific
    assert panel.checked == 3 + 3 + 1 + 3


def test_step_mode_writes_every_section_in_the_panels_form(tmp_path: Path) -> None:
    """The scores screen and the output screen agree on the form (scientific here)."""
    path = tmp_path / "mixed.json"
    path.write_text(
        json.dumps(
            {
                "embeddings": {"cat": [1e8, 3], "eats": [2.5e-7, 1]},
                "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
            }
        )
    )
    out = invoke(
        "run", "cat eats", "-c", str(path), "--step", "--focus", "eats", input="scores\n\n\n\nq\n"
    ).stdout
    screens = out.split("Stage ")
    scores = next(s for s in screens if s.startswith("5 of 8"))
    output = next(s for s in screens if s.startswith("8 of 8"))
    assert "eats·cat  = 2.5e-07×1e+08 + 1e+00×3e+00 = 2.8e+01" in scores
    # (the line may go on under its '=': read as one)
    said = " ".join(output.split())
    assert "1.000000e+00 × V[cat] = 1.000000e+00 × [1e+08, 3e+00] = [1.0000e+08," in said


def test_an_operand_carries_the_digits_its_line_needs() -> None:
    """Scores near 500 over √2: 1.414214 would put 500 / √2 two units off in the 4th
    decimal, so this panel's operands carry three more digits than its results."""
    trace = trace_block(identity_model({"cat": [10, 20], "eats": [20, 10]}), ["cat", "eats"])
    text = panel_text(trace, "cat", 4)
    assert "√2 = 1.4142136" in text
    assert "500 / 1.4142136 = 353.5534" in text
    # a weight: an operand, with the panel's digits; e^(−100/√2) / (1 + e^(−100/√2)) is
    # too small for them, so it is written in scientific form (issue 29), never 0.0000000
    assert "1.9531819e-31 × V[eats]" in text
    assert Panel(text, 4).check().checked == 2 + 2 + 1 + 2


values = st.one_of(
    st.integers(-9, 9).map(float),
    st.builds(lambda m, e: m * 10.0**e, st.floats(-9.99, 9.99), st.integers(-150, 150)),
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)


@given(
    d=st.integers(1, 6),
    n=st.integers(1, 4),
    data=st.data(),
    precision=st.integers(0, 15),
    causal=st.booleans(),
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@whole_runs
def test_every_written_line_adds_up(
    d: int, n: int, data: st.DataObject, precision: int, causal: bool
) -> None:
    """Random magnitudes from 1e-150 to 1e150 mixed in one dot product, zeros, negative
    numbers, masked keys, precision 0 to 15: every line checks, no number is long."""
    vectors = {f"t{i}": data.draw(st.lists(values, min_size=d, max_size=d)) for i in range(n)}
    trace = trace_block(identity_model(vectors, causal), list(vectors))
    for token in vectors:
        text = panel_text(trace, token, precision)
        assert Panel(text, precision).check().checked == 3 * n + 1  # every line written
        assert max(len(x) for x in NUMBER.findall(text)) <= 32


def walk_text(xs: list[float], precision: int, width: int = 400) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(walkthrough(walk(xs), precision))
    return console.export_text()


def check_walk(xs: list[float], precision: int) -> list[list[str]]:
    """Each x − max, exp(x − max) / sum and (where shown) exp(x) / sum, redone."""
    text = walk_text(xs, precision)
    rows = [line.replace("◀", "").split() for line in text.splitlines()]
    rows, total = (
        [r for r in rows if r and r[0].isdigit()],
        next(r for r in rows if r[:1] == ["sum"]),
    )
    prose = " ".join(text.split())
    row_max = re.findall(r"Subtracting the max \((\S+)\) first", prose)[0]

    def unit_of(text: str) -> Fraction:
        return unit(text, Fraction(10) ** -precision)

    for _, x, _, shifted, exp, share, _ in rows:
        # x and the max have the digits the difference needs (a difference too small
        # for fixed point has digits of its own, -5.0e-01 at precision 0)
        difference = exactly(x) - exactly(row_max)
        units = [unit_of(t) for t in (x, row_max, shifted)]
        rounding = max(3 * units[2], sum(units)) / 2
        allowed = rounding + EPS * size(map(exactly, (x, row_max)))
        assert abs(difference - exactly(shifted)) <= allowed, (x, row_max, shifted)
        # exp(x − max) and its sum are rounded results with the share's digits
        top, bottom = exactly(exp), exactly(total[-3])
        rounding = (unit_of(exp) + top / bottom * unit_of(total[-3])) / bottom / 2
        assert abs(top / bottom - exactly(share)) <= unit_of(share) / 2 + rounding + EPS
    steps = walk(xs)
    if not steps.overflows and not steps.underflows:
        divisor = re.findall(r"share = exp\(x\) / (\S+)\. Subtracting", prose)[0]
        assert divisor == total[1]
        assert exactly(divisor) != 0, f"share = exp(x) / {divisor}"
        for row in rows:
            quotient = exactly(row[2]) / exactly(divisor)
            # exp(x) and the divisor are rounded results themselves: half a unit each
            # (a share too small for fixed point is written with its own digits, 5.6e-09)
            # The bound is the quotient's over every corner of the two roundings, not
            # its first-order estimate: at precision 0, 2e+09 may be 1.5e9 (a quarter
            # off), and 7 / 1.5e9 is 4.7e-09 where 7 / 2e9 is 3.5e-09.
            top, bottom = exactly(row[2]), exactly(divisor)
            half_top, half_bottom = unit_of(row[2]) / 2, unit_of(divisor) / 2
            corners = [
                (top + t) / (bottom + b)
                for t in (-half_top, half_top)
                for b in (-half_bottom, half_bottom)
                if bottom + b > 0
            ]
            rounded = max(abs(corner - quotient) for corner in corners)
            allowed = unit_of(row[5]) + rounded + EPS
            assert abs(quotient - exactly(row[5])) <= allowed, (row, divisor)
    return rows


def test_the_walk_subtracts_what_it_writes() -> None:
    """1.00e+08 − 1.00e+08 was written as -5.00."""
    rows = check_walk([1e8, 1e8 + 5, 1.0], 2)
    assert [row[1] for row in rows] == ["1.00000000e+08", "1.00000005e+08", "1.00"]


def test_the_walks_naive_shares_divide_out() -> None:
    """exp(-5) was written 0.01, so 0.01 / 1.01 gave 0.0099 for a share of 0.0067."""
    rows = check_walk([-5.0, 0.0, -8.0], 2)
    assert [row[2] for row in rows] == ["0.0067", "1.0000", "0.0003"]
    rows = check_walk([-20.0, -21.0], 2)  # was "share = exp(x) / 0.00"
    assert [row[2] for row in rows] == ["2.0612e-09", "7.5826e-10"]
    rows = check_walk([3.2, 4.0, 1.0, 6.2, 8.0], 2)  # the article's: 2 digits are enough
    assert [row[2] for row in rows] == ["24.53", "54.60", "2.72", "492.75", "2980.96"]


walk_values = st.one_of(
    st.floats(-50, 50, allow_nan=False),
    st.builds(lambda m, e: m * 10.0**e, st.floats(-9.99, 9.99), st.integers(-300, 300)),
)


@given(xs=st.lists(walk_values, min_size=1, max_size=6), precision=st.integers(0, 15))
@example(xs=[2.0, 21.15625], precision=0)  # 2e+09 may be 1.5e9: the bound's corners
@whole_runs
def test_every_walk_adds_up(xs: list[float], precision: int) -> None:
    if math.isfinite(max(xs) - min(xs)):
        check_walk(xs, precision)


# --- issue 29: tiny operands, and sums that cancel


def dot_line(text: str, name: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(name))


def test_tiny_operands_are_written_in_scientific_form_never_as_0() -> None:
    """cat [1e-9, 1e-12] was written [0, 0]·[0, 2] = 0: a query of zeros."""
    trace = trace_block(identity_model({"cat": [1e-9, 1e-12], "eats": [0.0, 2.0]}), ["cat", "eats"])
    text = panel_text(trace, "cat", 4)
    line = dot_line(text, "cat·eats =")
    assert line == "cat·eats = [1e-09, 1e-12]·[0, 2] = 1e-09×0 + 1e-12×2 = 2.0e-12"
    assert "0.500000 × V[cat]  = 0.500000 × [1e-09, 1e-12]" in text
    assert Panel(text, 4, strict=True).check().checked == 2 + 2 + 1 + 2


def test_subnormal_operands_are_written_with_their_digits() -> None:
    trace = trace_block(identity_model({"a": [5e-324, 1e-310], "b": [1.0, 3.0]}), ["a", "b"])
    text = panel_text(trace, "b", 4)
    line = dot_line(text, "b·a =")
    # a subnormal's shortest decimal is not it: 1e-310 rounded, its zeros kept
    assert line.startswith("b·a = [1, 3]·[4.940656e-324, 1.000000e-310] = ")
    assert Panel(text, 4, strict=True).check().checked == 2 + 2 + 1 + 2


def test_a_sum_that_cancels_says_so_with_the_exact_sum() -> None:
    """1e16 + 1 − 1e16 is 0 in float64: it was written = 0 with nothing said."""
    vectors = {"a": [1e16, 1.0, -1e16], "b": [1.0, 1.0, 1.0]}
    trace = trace_block(identity_model(vectors), ["a", "b"])
    text = panel_text(trace, "b", 4)
    lines = [line.strip() for line in text.splitlines()]
    at = lines.index(dot_line(text, "b·a ="))
    assert lines[at].endswith(" = 0")  # float64's sum, as the trace holds it
    assert lines[at + 1] == (
        "the terms cancel (catastrophic cancellation): float64's sum is shown; "
        "the exact sum is 1e+00"
    )
    panel = Panel(text, 4, strict=True).check()
    assert panel.notes == 1
    # without the note, the line does not add up: so the check can fail
    with pytest.raises(AssertionError):
        Panel(text.replace("the exact sum is", "the sum is"), 4, strict=True).check()


tiny = st.one_of(
    st.just(0.0),
    st.sampled_from([5e-324, -1e-310, 2.2250738585072014e-308]),
    st.builds(lambda m, e: m * 10.0**e, st.floats(-9.99, 9.99), st.integers(-320, -5)),
    st.integers(-9, 9).map(float),
)


@given(d=st.integers(1, 4), data=st.data(), precision=st.integers(0, 8))
@whole_runs
def test_no_operand_but_zero_is_written_as_zero(
    d: int, data: st.DataObject, precision: int
) -> None:
    vectors = {f"t{i}": data.draw(st.lists(tiny, min_size=d, max_size=d)) for i in range(2)}
    trace = trace_block(identity_model(vectors), list(vectors))
    text = panel_text(trace, "t0", precision)
    for key, row in vectors.items():
        line = dot_line(text, f"t0·{key} =")
        written = line.split(" = ")[1].split("·")[1]
        assert [exactly(x) == 0 for x in NUMBER.findall(written)] == [v == 0 for v in row], line
    Panel(text, precision, strict=True).check()


@given(
    big=st.floats(1e10, 1e150),  # a·a stays finite
    small=st.floats(-9.99, 9.99).filter(lambda x: x != 0),
    precision=st.integers(0, 8),
)
@whole_runs
def test_a_sum_that_cancels_is_redone_by_its_note(big: float, small: float, precision: int) -> None:
    vectors = {"a": [big, small, -big], "b": [1.0, 1.0, 1.0]}
    trace = trace_block(identity_model(vectors), ["a", "b"])
    text = panel_text(trace, "b", precision)
    Panel(text, precision, strict=True).check()
