"""The page and the terminal say the same things (issue 30): the heatmap's colours, and
decode's verdict, labels and tables; each checked against the terminal's own output or
its colour function, and against figures worked out here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser import by_css, load, severe_logs, walk_to
from helpers import invoke

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
