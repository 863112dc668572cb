"""The number spellings the check and diff views share (ui/numbers.py)."""

from __future__ import annotations

import math

import pytest

from attntrace.ui.numbers import MASKED, cell_text, short_float, significant


def test_a_cell_names_what_is_not_a_number() -> None:
    assert [cell_text(v, 4) for v in (math.nan, math.inf, -math.inf, 0.25)] == [
        "NaN",
        "∞",
        MASKED,
        "0.2500",
    ]


@pytest.mark.parametrize(
    ("value", "digits", "said"),
    [
        (5.9123, 2, "5.9"),
        (0.07312, 2, "0.073"),
        (3.2e-8, 2, "3.2e-08"),
        (2.9712, 3, "2.97"),
        (math.inf, 3, "∞"),
        (math.nan, 2, "NaN"),
    ],
)
def test_a_difference_keeps_its_significant_digits(value: float, digits: int, said: str) -> None:
    assert significant(value, digits) == said


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (1e-4, "1e-4"),
        (3e-2, "3e-2"),
        (2.5e-3, "2.5e-3"),
        (0.0, "0"),
        (1e-9, "1e-9"),
        (5.0, "5"),
    ],
)
def test_a_tolerance_reads_as_the_docs_write_it(value: float, said: str) -> None:
    assert short_float(value) == said
