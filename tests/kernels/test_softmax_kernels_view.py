"""softmax --dtype's and --online's views: an overflowed cell marked so NO_COLOR keeps
it, nothing past 80 columns, the sizes written as the sentence writes them, and the
agreement line as a bound that pins no last bit."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console, RenderableType

from attntrace.forward.softmax_walk import walk
from attntrace.forward.softmax_walk_dtype import walk_in
from attntrace.forward.views.softmax_walk import walkthrough
from attntrace.kernel.overflow_words import amount
from attntrace.kernels.online_softmax import online_softmax
from attntrace.kernels.views.online_softmax import online_view
from attntrace.ui.numbers import difference_bound

ARTICLE = [3.2, 4.0, 1.0, 6.2, 8.0]
REVERSE = re.compile(r"\x1b\[(?:[0-9]+;)*7(?:;[0-9]+)*m")  # an SGR with 7: reverse video


def drawn(renderable: RenderableType, width: int = 80, *, styled: bool = False) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=styled,
        no_color=True,
        color_system="standard" if styled else None,
    )
    console.print(renderable, crop=False)
    return out.getvalue()


def test_an_overflowed_cell_is_reverse_video_without_colour() -> None:
    text = drawn(walkthrough(walk_in([12.0, 1.0], "float16"), 2), styled=True)
    assert REVERSE.search(text), text
    marked = REVERSE.split(text)[1]
    assert marked.lstrip().startswith("inf")


def test_float64s_view_marks_nothing_new() -> None:
    text = drawn(walkthrough(walk([800.0, 1.0]), 2), styled=True)
    assert not REVERSE.search(text)


@pytest.mark.parametrize(
    "renderable",
    [
        walkthrough(walk_in(ARTICLE, "float16"), 2),
        walkthrough(walk_in([12.0, 1.0, 3.0], "float16"), 2),
        walkthrough(walk_in([70000.0, 1.0], "float16"), 2),
        walkthrough(walk_in([11.0, 11.0], "bfloat16"), 4),
        online_view(online_softmax(ARTICLE), 2),
        online_view(online_softmax([1e300, -1e300, 5.0]), 2),
    ],
    ids=["article", "exp", "input", "bfloat16", "online", "online-huge"],
)
def test_nothing_runs_past_80_columns(renderable: RenderableType) -> None:
    lines = drawn(renderable).splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)


def test_the_header_names_the_dtype() -> None:
    assert "in bfloat16: every value and every step rounded to bfloat16" in drawn(
        walkthrough(walk_in(ARTICLE, "bfloat16"), 2)
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (162754.79141900392, "162,755"),
        (65504.0, "65,504"),
        (119744.0, "119,744"),
        (4.4896128191743455e38, "4.49e38"),
        (70000.0, "70,000"),
        (12.5, "12.50"),
    ],
)
def test_sizes_in_a_sentence(value: float, text: str) -> None:
    assert amount(value) == text


@pytest.mark.parametrize(
    ("difference", "bound"),
    [
        (0.0, "≤ 1e-15"),
        (1.1e-16, "≤ 1e-15"),
        (2.2e-16, "≤ 1e-15"),
        (1e-15, "≤ 1e-15"),
        (3.4e-13, "≤ 1e-12"),
        (1e-12, "≤ 1e-12"),
        (2e-12, "≤ 1e-11"),
    ],
)
def test_the_agreement_is_a_power_of_ten_bound(difference: float, bound: str) -> None:
    assert difference_bound(difference) == bound
