"""The page and the terminal say the same things (issue 30): the heatmap's colours, and
decode's verdict, labels and tables; each checked against the terminal's own output or
its colour function, and against figures worked out here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser import by_css, forward, load, one, severe_logs, walk_to
from helpers import invoke

from attntrace.decode.views.summary import rounded_up
from attntrace.ui.heatmap import weight_style

# Ties of the rounding to 1/1000 (0.0625, 0.4375) and of a channel's (0.125: halfway
# between the first two stops), the stops themselves, the text's switch at 0.55, the ends
# and past them.
WEIGHTS = (0.0, 1e-9, 0.0625, 0.125, 0.25, 0.4375, 0.5, 0.55, 0.5500001, 0.6486, 0.75, 1.0)
WEIGHTS_OUTSIDE = (-0.25, 1.5)


def exported(tmp_path: Path, *args: str) -> tuple[Path, str]:
    target = tmp_path / f"{args[0]}.html"
    result = invoke(*args, "--export", str(target))
    assert result.exit_code == 0, result.output
    return target, result.stdout


def terminal_colour(weight: float) -> tuple[tuple[int, int, int], bool]:
    """The terminal's background for ``weight`` and whether its text is light."""
    style = weight_style(weight)
    assert style.bgcolor is not None
    assert style.color is not None
    background = style.bgcolor.get_truecolor()
    text = style.color.get_truecolor()
    return (background.red, background.green, background.blue), text.red == 255


def rgb(css: str) -> tuple[int, int, int]:
    """``rgb(1, 2, 3)`` or ``rgba(1, 2, 3, 1)`` as a triple."""
    inside = css[css.index("(") + 1 : css.index(")")]
    red, green, blue = (int(float(part)) for part in inside.split(",")[:3])
    return red, green, blue


def test_the_terminals_scale_is_viridis() -> None:
    """Worked by hand from viridis' ends and middle: the page is held to these through
    the terminal's function below."""
    assert terminal_colour(0.0) == ((68, 1, 84), True)
    assert terminal_colour(0.5) == ((33, 145, 140), True)
    assert terminal_colour(1.0) == ((253, 231, 37), False)
    # halfway between (68, 1, 84) and (59, 82, 139): 63.5, 41.5, 111.5, half to even
    assert terminal_colour(0.125) == ((64, 42, 112), True)


def test_the_page_shades_a_weight_as_the_terminal_does(browser: Any, tmp_path: Path) -> None:
    target, _ = exported(tmp_path, "run", "-s", "it-animal")
    load(browser, target)
    for weight in (*WEIGHTS, *WEIGHTS_OUTSIDE):
        shade = browser.execute_script("return window.attntrace.heatShade(arguments[0])", weight)
        assert (tuple(shade["rgb"]), shade["dark"]) == terminal_colour(weight), weight
    # and the cells drawn: each softmax cell's background and text as the terminal's
    walk_to(browser, "softmax")
    cells = by_css(browser, 'table.heat[data-stage="softmax"] td[data-row]')
    assert len(cells) >= 11 * 11
    softmax = next(
        s
        for s in browser.execute_script("return window.attntrace.document.stages")
        if s["name"] == "softmax"
    )
    for td in cells[::7]:
        weight = softmax["data"][int(td.get_attribute("data-row"))][
            int(td.get_attribute("data-col"))
        ]
        background, light = terminal_colour(weight)
        assert rgb(td.value_of_css_property("background-color")) == background, weight
        text = rgb(td.value_of_css_property("color"))
        assert text == ((255, 255, 255) if light else (0, 0, 0)), weight
    assert severe_logs(browser) == []


def decode_page(tmp_path: Path, *args: str) -> tuple[Path, list[str]]:
    """``decode ARGS --export``: the page, and the terminal's lines of the same run."""
    target = tmp_path / "decode.html"
    result = invoke("decode", *args, "--export", str(target), columns=200)
    assert result.exit_code == 0, result.output
    return target, [line.rstrip() for line in result.stdout.splitlines()]


def cache_rows(browser: Any) -> list[str]:
    table = by_css(browser, 'article.current table[data-stage="K cache"]')[0]
    return [th.text for th in table.find_elements("css selector", "tbody th")]


def test_decode_says_the_terminals_verdict_and_bound(browser: Any, tmp_path: Path) -> None:
    """issue 30: the terminal said ``|Δ| ≤ 3.2e-13``, the page ``(|Δ| ≤ 1e-12)``; now both
    give the bound that was checked, to two digits rounded up, and the same words."""
    target, lines = decode_page(tmp_path, "-s", "it-animal")
    load(browser, target)
    shown = [p.text for p in by_css(browser, "#verdict, #bound, #measured")]
    assert shown[0] == "decode matches full causal attention: 11 steps × 1 head"
    assert shown[1].startswith("every output within float64 rounding of it: |Δ| ≤ ")
    assert shown[2].startswith("measured here: max |Δ| = ")
    for text in shown:
        assert text in lines  # word for word, figure for figure
    bound = browser.execute_script("return window.attntrace.documents.decode.comparison")[
        "rounding_bound"
    ]
    figure = float(shown[1].split("≤ ")[1].split()[0])
    assert bound <= figure <= bound * 1.1  # two digits, never below what was checked
    assert severe_logs(browser) == []


@pytest.mark.parametrize(
    ("bound", "text"),
    [(3.14e-13, "3.2e-13"), (3.1e-13, "3.1e-13"), (9.96e-14, "1.0e-13"), (2.0**-50, "8.9e-16")],
)
def test_the_pages_bound_rounds_up_as_the_terminals(
    browser: Any, tmp_path: Path, bound: float, text: str
) -> None:
    """Worked by hand: 3.14e-13 to two digits is 3.1e-13, below it, so 3.2e-13; 9.96e-14
    rounds to 1.0e-13, above it; 2⁻⁵⁰ = 8.88…e-16 rounds to 8.9e-16, above it."""
    target, _ = decode_page(tmp_path, "-s", "causal")
    load(browser, target)
    assert rounded_up(bound) == text
    assert browser.execute_script("return roundedUp(arguments[0])", bound) == text


def test_decode_labels_and_marks_the_cache_as_the_terminal(browser: Any, tmp_path: Path) -> None:
    """The terminal's ``the#4 ◀ new``, not ``the (4)``; no q, k, v the terminal does not
    show (the new k and v are the cache's marked row)."""
    target, lines = decode_page(tmp_path, "-s", "causal")
    load(browser, target)
    for _ in range(4):
        forward(browser)  # step 5: 'the' at position 4
    assert cache_rows(browser) == ["the#0", "cat", "sat", "on", "the#4 ◀ new"]
    assert any(line.startswith("the#4 ◀ new ") for line in lines)
    marked = by_css(browser, 'article.current table[data-stage="K cache"] td.new')
    assert [td.get_attribute("data-row") for td in marked] == ["4", "4"]
    for name in ("q", "k", "v", "scores"):
        assert by_css(browser, f'article.current table[data-stage="{name}"]') == []
    scaled = one(browser, 'article.current table[data-stage="scaled"]')
    keys = [th.text for th in scaled.find_elements("css selector", "thead th")][1:]
    assert keys == ["the#0", "cat", "sat", "on", "the#4"]
    heading = by_css(browser, "article.current h3")[2].text  # K cache, V cache, scaled
    assert heading.startswith("scaled = q·Kᵀ / √2 for 'the' over the cache")
    words = {" ".join(line.split()) for line in lines}  # the page's spaces collapse
    assert heading in words  # and its shape, [1 × 5]
    assert severe_logs(browser) == []


def test_decode_with_a_window_labels_rows_by_position(browser: Any, tmp_path: Path) -> None:
    target, lines = decode_page(tmp_path, "-s", "window")
    load(browser, target)
    for _ in range(6):
        forward(browser)  # the last step: 'today' at 6, the window holding the sink and 4–6
    assert cache_rows(browser) == ["the @0", "the @4", "mat @5", "today @6 ◀ new"]
    assert any(line.startswith("today @6 ◀ new ") for line in lines)
    assert severe_logs(browser) == []


def test_decode_names_a_heads_kv_head_as_the_terminal(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    target, lines = decode_page(tmp_path, "-s", "gqa")
    load(browser, target)
    Select(one(browser, "select#head")).select_by_value("1")
    scaled = one(browser, 'article.current table[data-stage="scaled"]')
    row = scaled.find_element("css selector", "tbody th").text
    assert row == "head 1 (K/V 0)"
    assert any(line.startswith(f"{row}   ") for line in lines)
    assert severe_logs(browser) == []
