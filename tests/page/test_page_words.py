"""The page says what the terminal says (issue 30, item 4): the tokenizer's marks
explained where a real model's tokens show, the sentence as the terminal's header gives
it, and flash's tiles counted and marked as ``flash --step`` does. Each page is held to
the terminal's own lines of the same run, and to words and counts worked out here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from browser import by_css, forward, load, one, severe_logs
from helpers import invoke

from attntrace.real.catalog import SMOLLM2

# Typed here, not read from kernel/labels.py: the words both must say.
BPE = "Ġ = a space before the token (byte-level BPE: GPT-2, SmolLM2)."
SENTENCE = "The cat sat"
LOSS = ("--from", "sat", "--to", "cat")


def exported(tmp_path: Path, *args: str) -> tuple[Path, list[str]]:
    """``attntrace ARGS --export``: the page, and the terminal's lines of the same run."""
    target = tmp_path / f"{args[0]}.html"
    result = invoke(*args, "--export", str(target), columns=200)
    assert result.exit_code == 0, result.output
    return target, [line.rstrip() for line in result.stdout.splitlines()]


def need_smollm2() -> None:
    if not SMOLLM2.installed:
        pytest.skip(f"smollm2's weights are not installed: {SMOLLM2.install}")


def softmax_file(tmp_path: Path) -> Path:
    """Head 0's softmax of layer 0, as ``run --json`` gives it: a file ``check`` passes."""
    out = invoke("run", "-m", "smollm2", "--layer", "0", "--head", "0", "--json", SENTENCE)
    stage = next(s for s in json.loads(out.stdout)["stages"] if s["name"] == "softmax")
    path = tmp_path / "softmax.json"
    path.write_text(json.dumps({"softmax": stage["data"]}))
    return path


@pytest.mark.parametrize(
    "command",
    ["run", "decode", "flash", "grad", "check"],
)
def test_a_real_models_page_explains_its_tokens_marks(
    browser: Any, tmp_path: Path, command: str
) -> None:
    """issue 30: ``Ġ`` showed in the page's every header with no word on what it is,
    where the terminal says it once, under the sentence."""
    need_smollm2()
    model = ("-m", "smollm2", "--layer", "0")
    args = {
        "run": ("run", *model, "--head", "0", SENTENCE),
        "decode": ("decode", *model, SENTENCE),
        "flash": ("flash", *model, SENTENCE),
        "grad": ("grad", *model, *LOSS, SENTENCE),
        "check": ("check", str(softmax_file(tmp_path)), *model, "--head", "0", SENTENCE),
    }[command]
    target, lines = exported(tmp_path, *args)
    assert lines.count(BPE) == 1  # the terminal says it, once
    load(browser, target)
    assert one(browser, "#marks").text == BPE
    assert "Ġcat" in one(browser, "body").text
    assert severe_logs(browser) == []


@pytest.mark.parametrize("command", ["run", "decode", "flash", "grad"])
def test_a_samples_page_has_no_marks_to_explain(browser: Any, tmp_path: Path, command: str) -> None:
    loss = ("--from", "it", "--to", "animal") if command == "grad" else ()
    target, lines = exported(tmp_path, command, "-s", "it-animal", *loss)
    assert not any("byte-level" in line for line in lines)
    load(browser, target)
    assert by_css(browser, "#marks") == []
    assert severe_logs(browser) == []


@pytest.mark.parametrize(
    "args",
    [
        ("run", "-s", "cat-eats-fish"),
        ("run", "-s", "it-animal"),
        ("grad", "-s", "it-animal", "--from", "it", "--to", "animal"),
    ],
    ids=["cat-eats-fish", "it-animal", "grad"],
)
def test_the_page_shows_the_sentence_as_the_terminals_header(
    browser: Any, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The tester read ``cateatsfish`` on the page where the terminal's header says
    ``cat eats fish``: the tokens are chips, and now words apart."""
    target, lines = exported(tmp_path, *args)
    load(browser, target)
    tokens = browser.execute_script("return window.attntrace.document.tokens")
    sentence = " ".join(tokens)
    if args[2] == "cat-eats-fish":
        assert sentence == "cat eats fish"
    assert sentence in lines  # the terminal's header line, whole
    assert one(browser, "header .sentence").text == sentence
    assert severe_logs(browser) == []


def test_a_real_models_sentence_reads_as_the_terminals(browser: Any, tmp_path: Path) -> None:
    need_smollm2()
    target, lines = exported(tmp_path, "run", "-m", "smollm2", "--layer", "0", SENTENCE)
    assert "The Ġcat Ġsat" in lines
    load(browser, target)
    assert one(browser, "header .sentence").text == "The Ġcat Ġsat"
    assert severe_logs(browser) == []


# ------------------------------------------------------------------------ flash's tiles

# The terminal's grid line: a query block's number, its label, then one mark a key block.
GRID_LINE = re.compile(r"^(\d+) .*?((?:  [■✓·□])+)$")


def terminal_screens(*args: str) -> list[tuple[str, list[list[str]]]]:
    """``flash ARGS --step`` walked to the end: each tile screen's pinned line (up to
    the head) and its grid of marks, then the summary's count of tiles as a last
    ``(line, [])``."""
    result = invoke("flash", *args, "--step", input="n\n" * 200, columns=120)
    assert result.exit_code == 0, result.output
    screens: list[tuple[str, list[list[str]]]] = []
    for line in result.stdout.splitlines():
        if line.startswith("Tile "):
            screens.append((line.split(" · head ")[0], []))
        elif (found := GRID_LINE.match(line)) and screens:
            screens[-1][1].append(found.group(2).split())
        elif line.startswith("tiles: "):
            screens.append((line, []))
    return screens


def page_grid(browser: Any) -> list[list[str]]:
    buttons = by_css(browser, "#tile-grid .tile")
    rows: dict[int, list[str]] = {}
    for button in buttons:
        rows.setdefault(int(button.get_attribute("data-i")), []).append(button.text)
    return [rows[i] for i in sorted(rows)]


@pytest.mark.parametrize("sample", ["causal", "window"])
def test_flash_counts_and_marks_tiles_as_flash_step(
    browser: Any, tmp_path: Path, sample: str
) -> None:
    """issue 30: the page said ``Tile 1 of 9`` and marked no tile skipped at the start,
    where ``flash --step`` says ``Tile 1 of 6 computed`` and marks the skipped ``·``
    from the first screen: skipped tiles are no step of their own on either."""
    screens = terminal_screens("-s", sample)
    *tiles, (count, _) = screens
    if sample == "causal":  # 6 tokens in blocks of 2: 3 × 3 tiles, the 3 above the diagonal
        assert [line for line, _ in tiles] == [
            f"Tile {k} of 6 computed · {at}"
            for k, at in enumerate(["(0, 0)", "(1, 0)", "(1, 1)", "(2, 0)", "(2, 1)", "(2, 2)"], 1)
        ]
        assert tiles[0][1] == [["■", "·", "·"], ["□", "□", "·"], ["□", "□", "□"]]
        assert count == "tiles: 6 computed, 3 skipped (every key after every query), of 9"
    target, lines = exported(tmp_path, "flash", "-s", sample)
    load(browser, target)
    queries = next(line for line in lines if line.startswith("queries: "))
    if sample == "causal":
        assert queries == "queries: the#0 cat sat on the#4 mat"
    assert one(browser, "header .sentence").text == queries  # the terminal's labels
    for line, grid in tiles:
        assert one(browser, "#position").text == line
        assert page_grid(browser) == grid
        forward(browser)
    assert one(browser, "#position").text == "The result"
    assert one(browser, "#tile-count").text == count
    assert one(browser, "#next").get_attribute("disabled") is not None
    assert severe_logs(browser) == []
