"""The pages of decode, flash, grad, check and diff (docs/page.md): each embeds the
command's own JSON exactly, and in the browser walks its steps showing the numbers the
documents hold, checked here against traces computed independently of the page."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import by_css, forward, load, one, severe_logs
from helpers import invoke
from pages import embedded

import attntrace.page.build
from attntrace import trace_attention

STUDENT = Path(__file__).parents[2] / "docs" / "examples" / "student.py"


def exported(tmp_path: Path, *args: str, code: int = 0) -> tuple[Path, str]:
    """``attntrace ARGS --export page.html``: the page, and what stdout got."""
    target = tmp_path / f"{args[0]}.html"
    result = invoke(*args, "--export", str(target))
    assert result.exit_code == code, result.output
    assert result.stderr.endswith(f"attntrace: saved {target}\n")
    return target, result.stdout


def cells(browser: Any, table: Any) -> list[list[float]]:
    """A shown table's cells as numbers, row by row (−∞ as -inf)."""
    rows = table.find_elements("css selector", "tbody tr")
    return [
        [
            -math.inf if td.text == "−∞" else float(td.text)
            for td in row.find_elements("css selector", "td")
        ]
        for row in rows
    ]


def close(shown: list[list[float]], expected: Any) -> bool:
    """Four decimals shown: within half a unit of the fourth (and a hair of rounding)."""
    return bool(np.allclose(np.array(shown), np.asarray(expected), rtol=0, atol=5.01e-5))


# ---------------------------------------------------------------------- the files


@pytest.mark.parametrize(
    ("args", "blocks"),
    [
        (("decode", "-s", "window"), {"decode": ("decode", "-s", "window")}),
        (("flash", "-s", "window"), {"flash": ("flash", "-s", "window")}),
        (
            ("grad", "-s", "it-animal", "--from", "it", "--to", "animal"),
            {
                "grad": ("grad", "-s", "it-animal", "--from", "it", "--to", "animal"),
                "trace": ("run", "-s", "it-animal"),
            },
        ),
        (
            ("diff", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5"),
            {
                "diff": ("diff", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5"),
                "trace": ("run", "-s", "cat-eats-fish"),
                "trace_b": ("run", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5"),
            },
        ),
    ],
    ids=["decode", "flash", "grad", "diff"],
)
def test_each_page_embeds_the_json_its_command_writes(
    args: tuple[str, ...], blocks: dict[str, tuple[str, ...]], tmp_path: Path
) -> None:
    code = 1 if args[0] == "diff" else 0  # diff: something changed
    target, stdout = exported(tmp_path, *args, code=code)
    assert stdout == invoke(*args).stdout  # the view is printed as without --export
    page = target.read_text(encoding="utf-8")
    for name, command in blocks.items():
        assert embedded(page, name) == json.loads(invoke(*command, "--json").stdout), name


def test_diff_marks_the_cells_diff_found(tmp_path: Path) -> None:
    target, _ = exported(tmp_path, "diff", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5", code=1)
    page = target.read_text(encoding="utf-8")
    document = embedded(page, "diff")
    a, b = embedded(page, "trace"), embedded(page, "trace_b")
    changed = embedded(page, "changed")
    assert len(changed) == len(document["stages"]) + len(document["weights"])
    for at, stage in enumerate(document["stages"]):
        key = (stage["name"], stage["head"])
        da = next(s for s in a["stages"] if (s["name"], s["head"]) == key)
        db = next(s for s in b["stages"] if (s["name"], s["head"]) == key)
        differ = np.abs(np.array(da["data"]) - np.array(db["data"])) > 1e-6
        assert sorted(map(tuple, changed[at])) == sorted(zip(*np.nonzero(differ), strict=True))
        assert len(changed[at]) == stage["changed_cells"]


def test_an_export_other_than_html_is_refused_before_any_work(tmp_path: Path) -> None:
    for command in (
        ["decode"],
        ["flash"],
        ["grad", "--from", "cat", "--to", "fish"],
        ["diff", "--set", "WQ[0][1]=0.5"],
    ):
        result = invoke(*command, "--export", str(tmp_path / "x.txt"))
        assert result.exit_code == 2, command
        assert result.stdout == ""
        assert result.stderr == (
            "attntrace: error: --export: expected a .html file (the "
            f"explorer page), got '{tmp_path / 'x.txt'}'\n"
        )
        missing = invoke(*command, "--export", str(tmp_path / "nowhere" / "x.html"))
        assert missing.exit_code == 2
        assert "no such folder to save into" in missing.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_page_too_big_is_refused_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attntrace.page.build, "PAGE_BYTES", 1000)
    target = tmp_path / "d.html"
    result = invoke("decode", "-s", "window", "--export", str(target))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "attntrace: error: --export: expected a page of at most 0 MB, "
        "got 0 MB of numbers: trace fewer tokens\n"
    )
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- in a browser


def test_decode_grows_the_cache_and_drops_the_windows_oldest_row(
    browser: Any, tmp_path: Path
) -> None:
    target, _ = exported(tmp_path, "decode", "-s", "window")
    trace = trace_attention(sample="window")  # computed apart from decode, all at once
    K, weights = trace["K"].data, trace["softmax"].data
    load(browser, target)
    steps = browser.execute_script("return window.attntrace.documents.decode.steps")
    assert len(by_css(browser, "#cache-growth rect")) == len(steps) == 7
    for t, step in enumerate(steps):
        assert one(browser, "#position").text == f"Step {t + 1} of 7: '{step['token']}'"
        assert one(browser, "#cache-growth rect.now").get_attribute("data-step") == str(t)
        positions = step["cache_positions"]
        k_table = by_css(browser, "article.current table.matrix")[0]  # K cache, then V
        labels = [th.text for th in k_table.find_elements("css selector", "tbody th")]
        # as the terminal writes them with a window: where each sits, the new row marked
        new = [" ◀ new" if p == t else "" for p in positions]
        assert labels == [f"{trace.tokens[p]} @{p}{n}" for p, n in zip(positions, new, strict=True)]
        assert close(cells(browser, k_table), K[positions])
        marked = k_table.find_elements("css selector", "tbody tr td.new")
        assert len(marked) == K.shape[1]  # the row just appended, every column
        weights_table = one(browser, 'article.current table[data-stage="weights"]')
        assert close(cells(browser, weights_table), [weights[t][positions]])
        dropped = by_css(browser, "#dropped")
        if step["dropped"] is None:
            assert dropped == []
        else:
            assert f"dropped position {step['dropped']} (" in dropped[0].text
        forward(browser)
    assert len(positions) == 4  # a window of 3 and 1 sink: the cache stopped growing
    assert "matches full causal attention" in one(browser, "#verdict").text
    assert severe_logs(browser) == []


def test_flash_fills_the_grid_and_ends_at_standard_attention(browser: Any, tmp_path: Path) -> None:
    target, _ = exported(tmp_path, "flash", "-s", "window")
    trace = trace_attention(sample="window")
    load(browser, target)
    flash = browser.execute_script("return window.attntrace.documents.flash")
    tiles = flash["tiles"]
    assert len(by_css(browser, "#tile-grid .tile")) == 4 * 4  # 7 tokens in blocks of 2
    skipped = [t for t in tiles if t["skipped"]]
    assert len(by_css(browser, ".tile.skip")) == len(skipped) > 0  # from the first step
    for tile in skipped:
        button = one(browser, f'.tile[data-i="{tile["i"]}"][data-j="{tile["j"]}"]')
        assert tile["why"] in button.get_attribute("title")
    computed = [t for t in tiles if not t["skipped"]]  # the steps: skipped tiles are none
    for at, tile in enumerate(computed):
        assert one(browser, ".tile.now").get_attribute("data-i") == str(tile["i"])
        assert one(browser, ".tile.now").get_attribute("data-j") == str(tile["j"])
        assert len(by_css(browser, "#tile-grid .tile.done")) == at
        shown = cells(browser, one(browser, 'article.current table[data-stage="S"]'))
        r0, r1 = tile["rows"]
        c0, c1 = tile["cols"]
        assert close(shown, trace["masked"].data[r0:r1, c0:c1])  # S is the masked scores
        forward(browser)
    assert one(browser, "#position").text == "The result"
    out = cells(browser, one(browser, 'article.current table[data-stage="output"]'))
    assert close(out, trace["output"].data)
    assert severe_logs(browser) == []


def test_grad_walks_the_forward_stages_then_the_gradients(browser: Any, tmp_path: Path) -> None:
    target, _ = exported(tmp_path, "grad", "-s", "it-animal", "--from", "it", "--to", "animal")
    load(browser, target)
    names = []
    for _ in range(19):
        names.append(one(browser, "article.stage.current").get_attribute("data-stage"))
        forward(browser)
    assert names[:8] == ["X", "Q", "K", "V", "scores", "scaled", "softmax", "output"]
    assert names[8:] == [
        "d_output",
        "d_V",
        "d_softmax",
        "d_scaled",
        "d_scores",
        "d_Q",
        "d_K",
        "d_WQ",
        "d_WK",
        "d_WV",
        "d_X",
    ]
    # d_softmax[it, animal] = −1/a (output is not read by the loss): a, the trace's weight
    a = trace_attention(sample="it-animal")["softmax"].data[7, 1]
    while one(browser, "article.stage.current").get_attribute("data-stage") != "d_softmax":
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        ActionChains(browser).send_keys(Keys.ARROW_LEFT).perform()
    cell = one(browser, 'article.current td[data-row="7"][data-col="1"]')
    assert abs(float(cell.text) - (-1 / a)) <= 5.01e-5
    assert "L = −log softmax[it, animal]" in one(browser, "#loss").text
    assert severe_logs(browser) == []


def test_check_shows_the_verdicts_and_the_first_difference(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    model = tmp_path / "model.yaml"
    model.write_text(invoke("samples", "two-heads").stdout, encoding="utf-8")
    subprocess.run([sys.executable, str(STUDENT), str(model)], check=True, cwd=tmp_path)
    target, stdout = exported(tmp_path, "check", "student.npz", "--config", str(model), code=1)
    load(browser, target)
    # the verdict counts as the terminal's report does
    last = stdout.strip().splitlines()[-1]
    assert last == "✗ 3 of 7 given stages differ; the first is scaled"
    assert one(browser, "#verdict").text == last
    region = browser.execute_script(
        "return window.attntrace.documents.check.first_divergent.region"
    )
    wrong = sum(map(sum, region["wrong"]))
    assert len(by_css(browser, "td.wrong")) == wrong == 9
    found = cells(browser, by_css(browser, "table.matrix")[0])
    assert found == [[5.0, 5.0, 10.0], [5.0, 10.0, 10.0], [10.0, 10.0, 20.0]]  # scores, unscaled
    expected = cells(browser, by_css(browser, "table.matrix")[1])
    assert close(expected, np.array(found) / math.sqrt(2))
    assert "no-scaling" in one(browser, "#diagnosis").text
    assert severe_logs(browser) == []


def test_diff_marks_changed_cells_in_the_browser(browser: Any, tmp_path: Path) -> None:
    target, _ = exported(tmp_path, "diff", "-s", "cat-eats-fish", "--set", "WQ[0][1]=0.5", code=1)
    a = trace_attention(sample="cat-eats-fish")
    b = trace_attention(sample="cat-eats-fish", edits=["WQ[0][1]=0.5"])
    load(browser, target)
    lines = by_css(browser, "#report tbody tr")
    assert [x.get_attribute("data-stage") for x in lines] == [
        "X",
        "Q",
        "K",
        "V",
        "scores",
        "scaled",
        "softmax",
        "output",
        "WQ",
        "WK",
        "WV",
    ]
    forward(browser)  # Q
    assert one(browser, "article.current").get_attribute("data-stage") == "Q"
    marked = {
        (int(td.get_attribute("data-row")), int(td.get_attribute("data-col")))
        for td in by_css(browser, "article.current td.changed")
    }
    differ = np.abs(a["Q"].data - b["Q"].data) > 1e-9
    assert marked == set(zip(*map(list, np.nonzero(differ)), strict=True))
    shown_b = cells(browser, by_css(browser, "article.current table.matrix")[0])
    assert close(shown_b, b["Q"].data)
    assert severe_logs(browser) == []


def test_flash_with_a_sink_logit_shows_each_rows_weight_on_it(browser: Any, tmp_path: Path) -> None:
    target, _ = exported(tmp_path, "flash", "-s", "sink-logit")
    trace = trace_attention(sample="sink-logit")
    load(browser, target)
    browser.execute_script("for (let i = 0; i < 20; i++) document.getElementById('next').click()")
    assert one(browser, "#position").text == "The result"
    shown = cells(browser, one(browser, 'article.current table[data-stage="sink"]'))
    assert close(shown, [trace.stage("sink", head=0).data[:, 0]])  # the trace's own sink stage
    assert severe_logs(browser) == []


def test_flash_labels_repeated_tokens_as_the_terminal_does(browser: Any, tmp_path: Path) -> None:
    """issue 30: the page said ``the``/``the`` where the terminal says ``the#0``/``the#4``.
    A tile holds a slice of the tokens: its labels are the whole sentence's."""
    target, stdout = exported(tmp_path, "flash", "-s", "causal", "--block-q", "4", "--block-k", "4")
    assert "'the#4' 'mat' (4–5) × keys 'the#0'" in stdout  # the terminal's own words
    load(browser, target)
    forward(browser)  # tile (1, 0): queries 4–5 (the, mat) × keys 0–3 (the, cat, sat, on)
    scores = one(browser, 'article.current table[data-stage="S"]')
    rows = [th.text for th in scores.find_elements("css selector", "tbody th")]
    cols = [th.text for th in scores.find_elements("css selector", "thead th")][1:]
    assert (rows, cols) == (["the#4", "mat"], ["the#0", "cat", "sat", "on"])
    running = one(browser, 'article.current table[data-stage="running"]')
    assert [th.text for th in running.find_elements("css selector", "tbody th")] == rows
    heading = one(browser, "article.current h2").text
    assert "queries 'the#4' to 'mat' (4–5) × keys 'the#0' to 'on' (0–3)" in heading
    assert severe_logs(browser) == []
