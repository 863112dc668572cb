"""The explorer page in a real browser (headless Chromium): it draws every stage without a
console error, walks them with the keys and buttons, switches heads, and the arithmetic
behind a cell holds the trace's own numbers (docs/page.md).

Each number read off the page is compared with the trace (the page's figure is the trace's
value rounded as the terminal rounds it) or with an independent computation in Python,
within a rounding of the last digit shown; the formatter itself is held to the terminal's
``format_number`` exactly. Skips, saying why, where no browser can be had (browser.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from browser import by_css, hover, load, one, press, screenshot_ink, severe_logs, walk_to
from helpers import invoke, needs_weights
from hypothesis import given
from hypothesis import strategies as st
from pages import HOSTILE, SAMPLES, hostile_trace

from attntrace import trace_attention
from attntrace.page.build import trace_page
from attntrace.page.notebook import notebook_html
from attntrace.ui.numbers import format_number, significant
from attntrace.visible import visible


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pages")
    made = {}
    for sample in SAMPLES:
        target = folder / f"{sample}.html"
        result = invoke("run", "-s", sample, "--export", str(target))
        assert result.exit_code == 0, result.output
        made[sample] = target
    return made


def document_of(browser: Any) -> dict[str, Any]:
    document: dict[str, Any] = browser.execute_script("return window.attntrace.document")
    return document


def stage(document: dict[str, Any], name: str, head: int | None) -> dict[str, Any]:
    return next(s for s in document["stages"] if s["name"] == name and s["head"] == head)


def near(shown: str, value: float, decimals: int) -> bool:
    """``shown`` is ``value`` rounded to ``decimals`` decimals: within half a unit of the
    last (and a hair for a value computed a last bit apart, in JavaScript and here)."""
    return abs(float(shown.replace("−", "-")) - value) <= 0.5 * 10.0**-decimals + 1e-12


def start(browser: Any, page: Path) -> None:
    load(browser, page)
    assert severe_logs(browser) == []


@pytest.mark.parametrize("sample", SAMPLES)
def test_every_stage_is_walked_with_the_arrow_keys(
    browser: Any, pages: dict[str, Path], sample: str
) -> None:
    from selenium.webdriver.common.keys import Keys

    start(browser, pages[sample])
    document = document_of(browser)
    head = next((s["head"] for s in document["stages"] if s["head"] is not None), None)
    names = [s["name"] for s in document["stages"] if s["head"] in (None, head)]
    seen = []
    for at in range(len(names)):
        assert one(browser, "#position").text == f"Stage {at + 1} of {len(names)}: {names[at]}"
        card = one(browser, "article.stage.current")
        assert card.get_attribute("data-stage") == names[at]
        seen.append(card.get_attribute("data-stage"))
        press(browser, Keys.ARROW_RIGHT)
    assert seen == names
    press(browser, Keys.ARROW_LEFT)
    assert one(browser, "#position").text.endswith(f": {names[-2]}")
    one(browser, "#prev").click()
    assert one(browser, "#position").text.endswith(f": {names[-3]}")
    assert severe_logs(browser) == []


def test_the_header_and_the_tables_hold_the_trace(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["it-animal"])
    assert one(browser, "h1").text == "attntrace · it-animal"
    assert [t.text for t in by_css(browser, "header .sentence .token")] == [
        "The",
        "animal",
        "didn't",
        "cross",
        "the",
        "street",
        "because",
        "it",
        "was",
        "tired",
        ".",
    ]
    assert "11 tokens · d_model 6 · d_k 4 · d_v 3 · 1 head" in one(browser, ".facts").text
    walk_to(browser, "softmax")
    document = document_of(browser)
    softmax = stage(document, "softmax", 0)
    cells = by_css(browser, "article.current td[data-row]")
    assert len(cells) == 11 * 11
    for cell in cells:
        r, c = int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))
        assert cell.text == format_number(softmax["data"][r][c], 4)
    assert "Attention weights: each row sums to 1" in one(browser, "article.current").text


def test_hovering_a_softmax_cell_shows_its_arithmetic(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["it-animal"])
    walk_to(browser, "softmax")
    document = document_of(browser)
    it, animal = 7, 1
    hover(browser, one(browser, f'article.current td[data-row="{it}"][data-col="{animal}"]'))
    panel = one(browser, "#arithmetic")
    assert panel.get_attribute("data-stage") == "softmax"
    assert panel.text.startswith("softmax[it, animal]")
    scaled = stage(document, "scaled", 0)["data"][it]
    top = max(scaled)
    exps = [math.exp(x - top) for x in scaled]
    expected = stage(document, "softmax", 0)["data"][it][animal]
    terms = {t.get_attribute("data-term"): t.text for t in by_css(panel, ".term")}
    assert near(terms["max"], top, 4)
    assert near(terms["x"], scaled[animal], 4)
    assert near(terms["exp"], exps[animal], 6)
    assert near(terms["sum"], math.fsum(exps), 6)
    assert one(browser, "#arithmetic .result").text == format_number(expected, 4)
    assert float(one(browser, "#arithmetic .exact").text) == expected  # every digit
    assert math.isclose(exps[animal] / math.fsum(exps), expected, rel_tol=1e-12)


def test_scores_and_output_cells_show_their_terms(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["cat-eats-fish"])
    document = document_of(browser)
    q, k, v = (stage(document, n, 0)["data"] for n in ("Q", "K", "V"))
    walk_to(browser, "scores")
    hover(browser, one(browser, 'article.current td[data-row="1"][data-col="2"]'))
    panel = one(browser, "#arithmetic")
    products = [float(t.text) for t in by_css(panel, '.term[data-term="product"]')]
    assert products == [q[1][0] * k[2][0], q[1][1] * k[2][1]]  # 3·2, 1·4: exact here
    assert one(browser, "#arithmetic .result").text == format_number(
        q[1][0] * k[2][0] + q[1][1] * k[2][1], 4
    )

    walk_to(browser, "scaled")
    hover(browser, one(browser, 'article.current td[data-row="0"][data-col="2"]'))
    text = one(browser, "#arithmetic").text
    assert "÷ √2" in text
    assert one(browser, "#arithmetic .result").text == format_number(10 / math.sqrt(2), 4)

    walk_to(browser, "output")
    weights = stage(document, "softmax", 0)["data"][2]
    hover(browser, one(browser, 'article.current td[data-row="2"][data-col="0"]'))
    panel = one(browser, "#arithmetic")
    shown_weights = [t.text for t in by_css(panel, '.term[data-term="weight"]')]
    assert all(near(s, w, 6) for s, w in zip(shown_weights, weights, strict=True))
    values = [t.text for t in by_css(panel, '.term[data-term="value"]')]
    assert values == [format_number(v[j][0], 4) for j in range(3)]
    total = math.fsum(w * v[j][0] for j, w in enumerate(weights))
    assert near(one(browser, "#arithmetic .result").text, total, 4)


def test_a_cell_reached_by_the_keyboard_is_explained(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["cat-eats-fish"])
    walk_to(browser, "scaled")
    browser.execute_script("document.querySelector('article.current td[data-explain]').focus()")
    assert one(browser, "#arithmetic").get_attribute("data-stage") == "scaled"


def test_switching_heads_shows_that_heads_numbers(browser: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.support.ui import Select

    start(browser, pages["gqa"])
    walk_to(browser, "softmax")
    options = [o.text for o in Select(one(browser, "#head")).options]
    assert options == [
        "head 0 (K/V head 0)",
        "head 1 (K/V head 0)",
        "head 2 (K/V head 1)",
        "head 3 (K/V head 1)",
    ]
    Select(one(browser, "#head")).select_by_value("2")
    assert one(browser, "#position").text.endswith(": softmax")  # the same stage, head 2
    card = one(browser, "article.current")
    assert "head 2 (K/V head 1)" in card.find_element("css selector", "h2").text
    softmax = stage(document_of(browser), "softmax", 2)
    for cell in by_css(browser, "article.current td[data-row]"):
        r, c = int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))
        assert cell.text == format_number(softmax["data"][r][c], 4)
    assert one(browser, "#head-view h2").text == "Head view · head 2 (K/V head 1)"


def test_the_head_view_draws_a_line_per_weight(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["it-animal"])
    softmax = stage(document_of(browser), "softmax", 0)
    lines = by_css(browser, "#head-view line")
    drawn = {
        (int(x.get_attribute("data-q")), int(x.get_attribute("data-k"))): float(
            x.get_attribute("stroke-opacity")
        )
        for x in lines
    }
    assert len(drawn) == 11 * 11  # every weight here is above the 0.001 not drawn
    for (i, j), opacity in drawn.items():
        assert abs(opacity - softmax["data"][i][j]) <= 0.0005
    hover(browser, one(browser, '#head-view .token-label[data-side="q"][data-at="7"]'))
    isolated = by_css(browser, "#head-view line")
    assert {x.get_attribute("data-q") for x in isolated} == {"7"}
    assert len(isolated) == 11


def test_masked_cells_and_the_window(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["window"])
    walk_to(browser, "masked")
    masked = by_css(browser, "article.current td.masked")
    document = document_of(browser)
    hidden = sum(x is None for row in stage(document, "masked", 0)["data"] for x in row)
    assert len(masked) == hidden > 0
    assert all(x.text == "−∞" for x in masked)
    walk_to(browser, "softmax")
    hover(browser, one(browser, 'article.current td[data-row="6"][data-col="2"]'))
    text = one(browser, "#arithmetic").text
    assert "hidden" in text
    assert one(browser, "#arithmetic .result").text == "0.0000"


def test_a_sink_logit_is_in_the_denominator(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["sink-logit"])
    walk_to(browser, "softmax")
    document = document_of(browser)
    sink = document["model"]["sink_logits"][0]
    row = stage(document, "scaled", 0)["data"][0]
    top = max(*row, sink)
    total = math.fsum(math.exp(x - top) for x in row) + math.exp(sink - top)
    hover(browser, one(browser, 'article.current td[data-row="0"][data-col="0"]'))
    terms = {t.get_attribute("data-term"): t.text for t in by_css(browser, "#arithmetic .term")}
    assert near(terms["max"], top, 4)
    assert near(terms["sum"], total, 6)
    assert near(one(browser, "#arithmetic .result").text, math.exp(row[0] - top) / total, 4)


def test_a_big_stage_is_summarized_and_expands(browser: Any, tmp_path: Path) -> None:
    sentence = " ".join(["the", "cat", "sat", "on", "the", "mat"] * 4)  # 24 tokens
    target = tmp_path / "long.html"
    assert invoke("run", "-s", "causal", sentence, "--export", str(target)).exit_code == 0
    start(browser, target)
    walk_to(browser, "softmax")
    rows = by_css(browser, "article.current tbody tr")
    assert len(rows) == 8 + 1 + 8  # first 8, a gap, last 8
    one(browser, "article.current button.expand").click()
    assert len(by_css(browser, "article.current tbody tr")) == 24
    assert len(by_css(browser, "article.current td[data-row]")) == 24 * 24


def test_hostile_text_stays_text(browser: Any, tmp_path: Path) -> None:
    target = tmp_path / "hostile.html"
    target.write_text(trace_page(hostile_trace()), encoding="utf-8")
    start(browser, target)  # an alert() would fail here: an open alert blocks the driver
    shown = [t.text for t in by_css(browser, "header .sentence .token")]
    assert shown == [visible(token) for token in HOSTILE]
    assert by_css(browser, "img") == []
    assert browser.execute_script("return document.scripts.length") == 3
    assert one(browser, "h1 .model-name").text == 'evil"><script>alert(2)</script>'


def test_print_lays_out_every_stage(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["two-heads"])
    document = document_of(browser)
    head0 = [s for s in document["stages"] if s["head"] in (None, 0)]

    def shown() -> int:
        return sum(card.is_displayed() for card in by_css(browser, "article.stage"))

    assert shown() == 1  # on screen, one stage at a time
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:  # print media alone (as a PDF printer sees it, with no print event): every stage
        assert shown() == len(head0)
        assert not one(browser, "nav.controls").is_displayed()
        assert not one(browser, "#arithmetic").is_displayed()
        browser.execute_script("window.dispatchEvent(new Event('beforeprint'))")
        assert all(d.get_attribute("open") is not None for d in by_css(browser, "details"))
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    browser.execute_script("window.dispatchEvent(new Event('afterprint'))")
    assert shown() == 1


@pytest.mark.parametrize("width", [390, 1280])
def test_a_screenshot_has_content(browser: Any, pages: dict[str, Path], width: int) -> None:
    browser.set_window_size(width, 900)
    try:
        start(browser, pages["it-animal"])
        walk_to(browser, "softmax")
        shot_width, _, share, colours = screenshot_ink(browser)
        assert shot_width == width
        assert share > 0.03, share  # text, tables and a heatmap, not a blank page
        assert colours > 50, colours  # the heatmap's shades, text's anti-aliasing
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
        assert scroll <= width + 1  # no sideways scrolling of the page itself
    finally:
        browser.set_window_size(1280, 900)


def test_the_notebook_frame_runs_the_explorer(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    target = tmp_path / "notebook.html"
    frame = notebook_html(trace_attention("cat eats fish"))
    target.write_text(
        f"<!DOCTYPE html><html><body><h1>a notebook</h1>{frame}</body></html>", encoding="utf-8"
    )
    browser.get(target.resolve().as_uri())
    browser.switch_to.frame(one(browser, "iframe"))
    try:
        WebDriverWait(browser, 10).until(
            lambda b: b.execute_script("return document.body.dataset.ready === 'true'")
        )
        assert one(browser, "h1").text == "attntrace · cat-eats-fish"
    finally:
        browser.switch_to.default_content()
    assert severe_logs(browser) == []


@needs_weights
def test_a_real_models_page(browser: Any, tmp_path: Path) -> None:
    target = tmp_path / "minilm.html"
    result = invoke(
        "run",
        "--model",
        "minilm",
        "The cat sat on the mat.",
        "--layer",
        "2",
        "--export",
        str(target),
    )
    assert result.exit_code == 0, result.output
    start(browser, target)
    document = document_of(browser)
    assert document == json.loads(
        invoke(
            "run", "--model", "minilm", "The cat sat on the mat.", "--layer", "2", "--json"
        ).stdout
    )
    assert len(by_css(browser, "#head option")) == 12
    walk_to(browser, "scores")
    hover(browser, one(browser, 'article.current td[data-row="2"][data-col="1"]'))
    q, k = stage(document, "Q", 0)["data"][2], stage(document, "K", 0)["data"][1]
    shown = by_css(browser, '#arithmetic .term[data-term="product"]')
    assert len(shown) == 16  # 32 dimensions: the first and last 8
    products = [q[d] * k[d] for d in (*range(8), *range(24, 32))]
    assert all(near(s.text, p, 4) for s, p in zip(shown, products, strict=True))
    assert near(
        one(browser, "#arithmetic .result").text,
        math.fsum(a * b for a, b in zip(q, k, strict=True)),
        4,
    )


VALUES = st.floats(allow_nan=False, allow_infinity=False)  # every finite double
TIES = [
    0.03125,
    -0.03125,
    0.00005,
    0.00015,
    2.5e-05,
    1.00005,
    0.5,
    99999999.99995,
    99999999.999949,
    1e8,
    -1e8,
    123456789.5,
    1.5e20,
    0.0,
    -0.0,
    5e-324,
    1e-5,
    1e21,
    -1.2345e22,
    2.0**70,
    1.7976931348623157e308,
    2.2250738585072014e-308,
]


def test_numbers_read_as_the_terminal_writes_them(browser: Any, pages: dict[str, Path]) -> None:
    start(browser, pages["cat-eats-fish"])
    for precision in (4, 6):
        shown = browser.execute_script(
            "return arguments[0].map((x) => window.attntrace.fmt(x, arguments[1]))", TIES, precision
        )
        assert shown == [format_number(x, precision) for x in TIES]
    specials = browser.execute_script(
        "return [null, 'inf', '-inf', 'nan', 'Infinity', '-Infinity', 'NaN', undefined]"
        ".map((x) => window.attntrace.fmt(x))"
    )
    assert specials == ["−∞", "inf", "−inf", "NaN", "inf", "−inf", "NaN", "–"]
    for digits in (2, 3):
        shown = browser.execute_script(
            "return arguments[0].map((x) => window.attntrace.significant(x, arguments[1]))",
            TIES,
            digits,
        )
        assert shown == [significant(x, digits) for x in TIES]


@given(values=st.lists(VALUES, min_size=1, max_size=50))
def test_any_number_reads_as_the_terminal_writes_it(
    browser: Any, pages: dict[str, Path], values: list[float]
) -> None:
    if not browser.execute_script("return Boolean(window.attntrace)"):
        start(browser, pages["cat-eats-fish"])
    shown = browser.execute_script(
        "return arguments[0].map((x) => [window.attntrace.fmt(x, 4), window.attntrace.fmt(x, 6),"
        " window.attntrace.significant(x, 3)])",
        values,
    )
    assert shown == [[format_number(x, 4), format_number(x, 6), significant(x, 3)] for x in values]


TEXTS = [
    "cat",
    "\x1b[2J",
    "\u202e",
    "a\u200bb",
    "\u0301e",
    "e\u0301",
    "\t\n\r",
    "\x7f\x85",
    "猫",
    "🐟",
    "\u3164",
    "\u00a0",
    "\ue000",
    "\U0010ffff",
    "\u2028",
]


def test_invisible_characters_are_shown_as_the_terminal_shows_them(
    browser: Any, pages: dict[str, Path]
) -> None:
    start(browser, pages["cat-eats-fish"])
    shown = browser.execute_script(
        "return arguments[0].map((x) => window.attntrace.visible(x))", TEXTS
    )
    assert shown == [visible(text) for text in TEXTS]
    long = [
        "x" * 45,
        "\x1b" * 12,
        "猫" * 39 + "\x07",
        "a" * 39 + "\u200b",
    ]  # cut at 40, escapes whole
    cut = browser.execute_script(
        "return arguments[0].map((x) => window.attntrace.visible(x, 40))", long
    )
    assert cut == [visible(text, 40) for text in long]
