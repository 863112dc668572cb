"""The small renderables that fit text to a width: SplitTable, Fitted, RightTrimmed."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console, RenderableType
from rich.text import Text

from attntrace.ui.fitted import Fitted, RightTrimmed
from attntrace.ui.split_table import SplitTable


def drawn(renderable: RenderableType, width: int) -> list[str]:
    console = Console(file=StringIO(), width=width, color_system=None, highlight=False)
    console.print(renderable, crop=False)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined, no-any-return]


NUMBERS = SplitTable(
    ("", "alpha", "beta", "gamma"),
    ("right", "right", "right", "right"),
    [("1", "1234.5678", "2.5", "-0.0001"), ("sum", "1237.0000", "", "")],
)


@pytest.mark.parametrize(
    ("width", "parts"),
    [
        (80, [["alpha", "beta", "gamma"]]),
        (30, [["alpha", "beta"], ["gamma"]]),
        (21, [["alpha"], ["beta", "gamma"]]),
        (15, [["alpha"], ["beta"], ["gamma"]]),
        (5, [["alpha"], ["beta"], ["gamma"]]),
    ],
)
def test_split_table_packs_columns_into_parts_and_keeps_every_number(
    width: int, parts: list[list[str]]
) -> None:
    lines = drawn(NUMBERS, width)
    headers = [
        line.split() for line in lines if line.strip().startswith(("alpha", "beta", "gamma"))
    ]
    assert headers == parts
    cells = {cell for line in lines for cell in line.split()}
    assert {"1234.5678", "2.5", "-0.0001", "1237.0000"} <= cells
    if width >= 15:  # every part fits; below one column's width a part runs past the edge
        assert max(len(line.rstrip()) for line in lines) <= width


def test_split_table_of_labels_alone_and_of_no_rows() -> None:
    labels = SplitTable(("key",), ("left",), [("a",), ("b",)])
    assert [line.strip() for line in drawn(labels, 40)] == ["key", "───", "a", "b"]
    empty = SplitTable(("", "x"), ("left", "right"), [])
    assert "x" in drawn(empty, 40)[0]


def test_fitted_takes_the_first_variant_that_fits_ignoring_trailing_pad() -> None:
    wide, narrow = Text("abc def ghi   "), Text("abc\ndef ghi")
    assert drawn(Fitted((wide, narrow)), 11) == ["abc def ghi"]  # the pad does not count
    assert drawn(Fitted((wide, narrow)), 10) == ["abc", "def ghi"]
    assert drawn(Fitted(("too long for this", "short")), 5) == ["short"]  # the last, at worst


def test_right_trimmed_drops_the_pad_and_keeps_blank_lines() -> None:
    text = Text("ab   \n\n  cd  ")
    assert drawn(RightTrimmed(text), 20) == ["ab", "", "  cd"]
