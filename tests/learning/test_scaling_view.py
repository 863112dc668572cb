"""`scaling`'s view: the chart's bars say its figures, every line fits, no colour needed."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from attntrace.learning.scaling import Scaling, measure
from attntrace.learning.views.scaling import (
    SCALED_GLYPH,
    UNSCALED_GLYPH,
    figure,
    scaling_view,
    weight,
)


@pytest.fixture(scope="module")
def result() -> Scaling:
    return measure(samples=200)


def drawn(result: Scaling, width: int, *, color: bool = False) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
    )
    console.print(scaling_view(result))
    return out.getvalue()


@pytest.mark.parametrize("width", [60, 80, 160])
def test_every_line_fits_and_nothing_is_escaped(result: Scaling, width: int) -> None:
    text = drawn(result, width)
    assert "\x1b" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    assert all(line == line.rstrip() for line in text.splitlines())


@pytest.mark.parametrize("width", [80, 160])
def test_the_bars_are_the_figures_told_apart_by_glyph(result: Scaling, width: int) -> None:
    lines = drawn(result, width).splitlines()
    for level in result.levels:
        at = next(i for i, line in enumerate(lines) if line.split()[:2] == [str(level.d_k), "q·k"])
        raw, scaled = lines[at], lines[at + 1]
        assert SCALED_GLYPH not in raw
        assert UNSCALED_GLYPH not in scaled
        assert scaled.split()[0] == "÷√d_k"
        bar = len(raw.split()[2])  # the first bar, filled and empty cells
        assert raw.count(UNSCALED_GLYPH) == (
            round(level.unscaled.largest * bar) + round(level.unscaled.jacobian / 0.5 * bar)
        )
        assert scaled.count(SCALED_GLYPH) == (
            round(level.scaled.largest * bar) + round(level.scaled.jacobian / 0.5 * bar)
        )
        assert raw.split()[3] == figure(level.unscaled.largest, 2)


def test_colour_only_adds_to_the_text(result: Scaling) -> None:
    coloured = drawn(result, 80, color=True)
    assert "\x1b[" in coloured
    plain = "".join(part.split("m", 1)[-1] for part in coloured.split("\x1b["))
    assert plain == drawn(result, 80)


def test_the_worked_example_is_shown_as_the_numbers_it_is(result: Scaling) -> None:
    text = " ".join(drawn(result, 80).split())
    assert "scores 180, 210, 95 7.95, 9.28, 4.20" in text
    assert f"1 − {figure(math.exp(-30))}" in text  # the top weight, 1 − 9.36e-14
    assert figure(math.exp(-115)) in text  # 1.14e-50: underflowing, not yet 0
    assert "the softmax collapses" in text
    assert "the gradients vanish" in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1007.5, "1008"),
        (62.93, "62.9"),
        (0.0778, "0.0778"),
        (1.2247e-6, "1.22e-6"),
        (0.0, "0"),
        (1.0, "1.00"),
        (99.96, "100"),
        (2.9e-12, "2.90e-12"),
    ],
)
def test_figures_have_three_significant_digits(value: float, text: str) -> None:
    assert figure(value) == text
    assert float(text) == pytest.approx(value, rel=5e-3, abs=0)


def test_a_weight_next_to_one_says_how_far() -> None:
    assert weight(1 - 9.36e-14, 9.36e-14) == "1 − 9.36e-14"
    assert weight(0.786, 0.214) == "0.786"
