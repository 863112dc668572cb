"""How a learner's answer is read and judged: the numbers it takes, and the tolerance's
edges (half a unit of the last shown digit, or 1e-3 relative, the wider)."""

from __future__ import annotations

import math

import pytest

from attntrace.quiz.answers import is_correct, last_digit, parse_answer, tolerance


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("0.9983", 0.9983),
        ("  0.9983  ", 0.9983),
        ("-1.5", -1.5),
        ("−1.5", -1.5),  # the tables' own minus sign, pasted
        ("+2", 2.0),
        (".5", 0.5),
        ("2e-3", 0.002),
        ("1E3", 1000.0),
        ("-inf", -math.inf),
        ("−∞", -math.inf),
        ("-Infinity", -math.inf),
    ],
)
def test_numbers_as_a_learner_types_them(line: str, value: float) -> None:
    assert parse_answer(line) == value


@pytest.mark.parametrize("line", ["", "abc", "0,9983", "1/3", "nan", "inf", "1e999", "0x10", "--1"])
def test_what_is_not_a_number(line: str) -> None:
    assert parse_answer(line) is None


@pytest.mark.parametrize(
    ("shown", "unit"),
    [
        ("0.9983", 1e-4),
        ("10.0000", 1e-4),
        ("10", 1.0),
        ("3.9e-05", 1e-6),
        ("1.2345e+08", 1e4),
        ("−∞", 0.0),
        ("-inf", 0.0),
    ],
)
def test_the_unit_of_the_last_shown_digit(shown: str, unit: float) -> None:
    assert last_digit(shown) == pytest.approx(unit, rel=1e-12)


def test_a_small_value_is_judged_by_its_digits() -> None:
    # 0.000848: half a unit of 0.0008's last digit (5e-5) is wider than 1e-3 of it
    expected, shown = 0.000847885, "0.0008"
    assert tolerance(expected, shown) == pytest.approx(5e-5)
    assert is_correct(expected + 4.9e-5, expected, shown)
    assert is_correct(expected - 4.9e-5, expected, shown)
    assert not is_correct(expected + 5.1e-5, expected, shown)
    assert not is_correct(expected - 5.1e-5, expected, shown)
    assert is_correct(0.0008, expected, shown)  # the table's own figure


def test_a_large_value_is_judged_relatively() -> None:
    # 20 shown as 20.0000: 1e-3 of it (0.02) is wider than half its last digit
    expected, shown = 20.0, "20.0000"
    assert tolerance(expected, shown) == pytest.approx(0.02)
    assert is_correct(20.0199, expected, shown)
    assert is_correct(19.9801, expected, shown)
    assert not is_correct(20.0201, expected, shown)
    assert not is_correct(19.9799, expected, shown)


def test_more_digits_shown_means_a_tighter_answer() -> None:
    expected = 0.0007645166707980769
    assert is_correct(0.0008, expected, "0.0008")
    assert not is_correct(0.0008, expected, "0.000765")  # --precision 6
    assert is_correct(0.000765, expected, "0.000765")


def test_a_masked_cell_takes_minus_infinity_only() -> None:
    assert is_correct(-math.inf, -math.inf, "−∞")
    assert not is_correct(-1e300, -math.inf, "−∞")
    assert not is_correct(-math.inf, 0.0, "0.0000")
