"""Text from files and arguments never reaches the terminal raw, and every script lines up.

A model's name, its tokens, a saved trace's formulas, a typed key: each is shown with the
characters a terminal would act on (ESC, bidirectional overrides, zero-width ones...)
written as escapes, in every view, with colour and without. Tokens of any width (猫,
食べる, 🐟, é spelled with a combining accent) keep the tables' columns straight.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from helpers import invoke, raw_controls, whole_runs
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from typer.testing import CliRunner

from attntrace.cli import app
from attntrace.visible import visible

ESC_RED = "\x1b[31mRED\x1b[0m"
CLEAR = "\x1b[2J"
RTL = "\u202eevil"
ZERO_WIDTH = "a\u200bb"
BELL = "ding\x07"
WIDE = ["猫", "食べる", "🐟", "e\u0301", "é"]

_SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour, which Rich itself writes with colour on


def hostile_model(tmp_path: Path) -> Path:
    """Every string field of a model file holding what a terminal would act on."""
    tokens = [CLEAR, RTL, ZERO_WIDTH, BELL, "cat", *WIDE]
    document = {
        "name": ESC_RED,
        "description": f"a {RTL} description\x1b]0;title\x07 with a bell {BELL}",
        "sentence": " ".join(tokens),
        "embeddings": {token: [float(i + 1), float(i % 3)] for i, token in enumerate(tokens)},
        "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]},
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def views(model: Path, saved: Path) -> list[tuple[list[str], str | None]]:
    config = ["--config", str(model)]
    return [
        (["run", *config], None),
        (["run", *config, "--overview"], None),
        (["run", *config, "--map"], None),
        (["run", *config, "--focus", "4"], None),
        (["run", *config, "--step"], f"\n\nb\n{CLEAR}\n{RTL}\nsoftmax\nq\n"),
        (["run", *config, "--step", "--focus", "0"], "scores\nsoftmax\noutput\nq\n"),
        (["render", str(saved)], None),
        (["render", str(saved), "--focus", "1"], None),
        (["decode", *config], None),
        (["decode", *config, "--step"], "\n\n5\nq\n"),
        (["run", *config, "--no-causal", "--context", f"cat {CLEAR}"], None),
    ]


def saved_trace(model: Path, tmp_path: Path) -> Path:
    """A saved trace whose name, formulas and labels hold control characters too."""
    document = json.loads(invoke("run", "--config", str(model), "--json").stdout)
    for stage in document["stages"]:
        stage["formula"] = stage["formula"] + CLEAR
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_every_view_of_a_hostile_model_shows_its_text_escaped(tmp_path: Path) -> None:
    model = hostile_model(tmp_path)
    saved = saved_trace(model, tmp_path)
    for args, keys in views(model, saved):
        result = invoke(*args, input=keys)
        assert result.exit_code == 0, (args, result.output)
        assert raw_controls(result.output) == [], args
        assert "\\x1b" in result.output, args  # made visible, not dropped


@pytest.mark.parametrize("suffix", [".txt", ".svg", ".html"])
def test_exports_hold_no_raw_control_characters(suffix: str, tmp_path: Path) -> None:
    model = hostile_model(tmp_path)
    target = tmp_path / f"trace{suffix}"
    result = invoke("run", "--config", str(model), "--export", str(target))
    assert result.exit_code == 0, result.output
    text = target.read_text(encoding="utf-8")
    assert raw_controls(text) == []
    # the explorer page holds the JSON, escaped there; its script shows \x1b as the tables do
    assert ("\\u001b[31mRED" if suffix == ".html" else "\\x1b[31mRED") in text


def test_with_colour_on_only_rich_colour_codes_reach_the_terminal(tmp_path: Path) -> None:
    model = hostile_model(tmp_path)
    env = {"COLUMNS": "100", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    for args in (["run", "--config", str(model)], ["decode", "--config", str(model)]):
        result = CliRunner().invoke(app, args, env=env)
        assert result.exit_code == 0, result.output
        assert "\x1b[" in result.output  # colour is on
        assert raw_controls(_SGR.sub("", result.output)) == [], args


def test_an_error_quoting_a_hostile_token_is_one_safe_line(tmp_path: Path) -> None:
    model = hostile_model(tmp_path)
    result = invoke("run", f"dog {CLEAR}\u202e", "--config", str(model))
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert raw_controls(result.stderr) == []
    assert "'dog'" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--precision", f"9{CLEAR}"),
        ("run", f"--{ESC_RED}"),
        ("kv-cache", f"extra{CLEAR}"),
        (f"nope{CLEAR}",),
    ],
    ids=["bad-value", "unknown-option", "extra-argument", "unknown-command"],
)
def test_a_usage_error_quoting_an_argument_is_safe(args: tuple[str, ...]) -> None:
    """typer's messages quote what was typed; typer 0.26's click does not escape it. (The
    one line is the console script's, so it runs as a process.)"""
    result = subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert raw_controls(result.stderr) == []
    assert "\\x1b[" in result.stderr


def test_a_five_megabyte_name_is_cut_on_screen(tmp_path: Path) -> None:
    document = json.loads(hostile_model(tmp_path).read_text(encoding="utf-8"))
    document["name"] = "N" * 5_000_000
    path = tmp_path / "long.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("run", "--config", str(path), "--overview")
    assert result.exit_code == 0
    assert len(result.output) < 20_000
    assert "N" * 79 + "…" in result.output
    # the JSON keeps the whole name
    assert (
        len(json.loads(invoke("run", "--config", str(path), "--json").stdout)["model"]["name"])
        == 5_000_000
    )


def test_an_unknown_token_that_looks_like_a_known_one_says_so(tmp_path: Path) -> None:
    path = tmp_path / "accents.json"
    document = {
        "embeddings": {"\u00e9t\u00e9": [1.0], "cat": [2.0]},
        "weights": {"WQ": [[1]], "WK": [[1]], "WV": [[1]]},
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("run", "cat e\u0301te\u0301", "--config", str(path))
    assert result.exit_code == 2
    assert "(U+0065 U+0301 U+0074 U+0065 U+0301) looks like the vocabulary's" in result.stderr
    assert "(U+00E9 U+0074 U+00E9) but is spelled with other code points" in result.stderr


# Any character but a lone surrogate (which no UTF-8 file can hold).
FIELD_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8)
TOKEN = FIELD_TEXT.filter(lambda text: not any(ch.isspace() for ch in text))
FUZZED_VIEWS = [(), ("--map",), ("--overview",), ("--focus", "0"), ("--step",)]


@given(
    name=FIELD_TEXT,
    description=FIELD_TEXT,
    tokens=st.lists(TOKEN, min_size=1, max_size=4, unique=True),
    view=st.sampled_from(FUZZED_VIEWS),
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@whole_runs
def test_any_text_in_any_string_field_is_shown_safely(
    name: str,
    description: str,
    tokens: list[str],
    view: tuple[str, ...],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Every string field of a model file holding any characters at all (control, format,
    wide, combining): every view, and any error, shows them made visible."""
    document = {
        "name": name,
        "description": description,
        "sentence": " ".join(tokens),
        "embeddings": {token: [float(i), 1.0] for i, token in enumerate(tokens)},
        "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]},
    }
    path = tmp_path_factory.mktemp("fields") / "model.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("run", "--config", str(path), *view, input="\n" * 12)
    assert result.exit_code in (0, 2), result.output
    assert raw_controls(result.output) == [], result.output


# ------------------------------------------------------------------ lining up by cells


def wide_model(tmp_path: Path) -> Path:
    tokens = [*WIDE, "cat", "fish"]
    document = {
        "sentence": " ".join(tokens),
        "embeddings": {token: [float(i + 1), float(i % 3), 1.0] for i, token in enumerate(tokens)},
        "weights": {
            "WQ": [[1, 0], [0, 1], [1, 1]],
            "WK": [[1, 0], [0, 1], [0, 1]],
            "WV": [[0, 1], [1, 0], [1, 1]],
        },
    }
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def table_blocks(output: str) -> list[list[str]]:
    """The tables of the output (equations of three tables too): each block's header
    line, then its rows under the rule (─)."""
    lines = output.splitlines()
    blocks = []
    for index, line in enumerate(lines):
        if line.strip() and set(line.strip()) <= {"─", " "} and index > 0:
            block = [lines[index - 1]]
            for row in lines[index + 1 :]:
                if not re.search(r"\d\.\d+\s*$", row):
                    break
                block.append(row)
            blocks.append(block)
    return blocks


def _ends(line: str, pattern: str) -> set[int]:
    """The cell offsets at which each match of ``pattern`` in ``line`` ends."""
    return {cell_len(line[: match.end()]) for match in re.finditer(pattern, line)}


@pytest.mark.parametrize("columns", [80, 200])
def test_tables_of_wide_tokens_line_up_in_cells(columns: int, tmp_path: Path) -> None:
    result = invoke("run", "--config", str(wide_model(tmp_path)), columns=columns)
    assert result.exit_code == 0, result.output
    blocks = table_blocks(result.output)
    assert len(blocks) >= 8
    for header, *rows in blocks:
        columns_end = _ends(header, r"\S+")  # d0, d1 or a token: right-aligned labels
        for row in rows:
            assert _ends(row, r"-?\d+\.\d+(?:e[+-]\d+)?|−∞") <= columns_end, (header, row)
        assert len({cell_len(row.rstrip()) for row in rows}) == 1, rows


def test_the_map_of_wide_tokens_lines_up(tmp_path: Path) -> None:
    result = invoke("run", "--config", str(wide_model(tmp_path)), "--map", "--top", "1")
    lines = [line for line in result.output.splitlines() if " → " in line]
    assert len(lines) == 7
    arrows = {cell_len(line[: line.index(" → ")]) for line in lines}
    assert len(arrows) == 1, lines


def test_the_focus_panel_of_wide_tokens_lines_up(tmp_path: Path) -> None:
    result = invoke("run", "--config", str(wide_model(tmp_path)), "--focus", "0")
    lines = result.output.splitlines()
    dots = [line for line in lines if line.startswith("  猫·") and " = [" in line]
    scales = [line for line in lines if line.startswith("  猫·") and ": " in line]
    terms = [line for line in lines if " × V[" in line]
    assert (len(dots), len(scales), len(terms)) == (7, 7, 7)
    for group, mark in ((dots, " = "), (scales, ": "), (terms, " = ")):
        assert len({cell_len(line[: line.index(mark, 4)]) for line in group}) == 1, group


def test_decode_costs_of_wide_tokens_line_up(tmp_path: Path) -> None:
    result = invoke("decode", "--config", str(wide_model(tmp_path)))
    start = result.output.index("  t token")
    rows = result.output[start:].splitlines()[1:8]
    ends = set()
    for row in rows:  # "  t token  cached recomp.": where the second count ends
        match = re.match(r"^ *\d+ \S+ +[\d,]+ +[\d,]+", row)
        assert match is not None, row
        ends.add(cell_len(match[0]))
    assert len(ends) == 1, rows


# ------------------------------------------------------------------ visible() itself


@given(st.text())
def test_visible_text_holds_nothing_a_terminal_acts_on(text: str) -> None:
    shown = visible(text)
    assert raw_controls(shown) == []
    assert visible(shown) == shown  # shown twice reads the same
    plain = raw_controls(text) == [] and "\n" not in text  # visible writes a newline as \n
    if plain and not (text and unicodedata.category(text[0]) in ("Mn", "Me")):
        assert shown == text or any(ch in text for ch in "\u115f\u1160\u3164\uffa0")


@given(st.text(), st.integers(1, 50))
def test_visible_text_is_cut_at_its_limit(text: str, limit: int) -> None:
    shown = visible(text, limit)
    assert len(shown) <= limit
    if len(visible(text)) <= limit:
        assert shown == visible(text)
    else:
        assert shown.endswith("…")
        assert visible(text).startswith(shown[:-1])


def test_visible_spells_each_kind_of_character_as_its_escape() -> None:
    assert visible(ESC_RED) == "\\x1b[31mRED\\x1b[0m"
    assert visible("\u202eevil\u2066") == "\\u202eevil\\u2066"
    assert visible("a\u200bb\u00a0c\x7f\x85") == "a\\u200bb\\xa0c\\x7f\\x85"
    assert visible("\u0301x") == "\\u0301x"  # an accent with nothing under it
    assert visible("e\u0301 猫 🐟 ﬁ") == "e\u0301 猫 🐟 ﬁ"
    assert visible("\U000e0041") == "\\U000e0041"  # a tag character (Cf)


@whole_runs
@given(
    st.text(
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
        min_size=1,
        max_size=12,
    )
)
def test_the_heads_next_command_gives_bash_back_the_sentence(sentence: str) -> None:
    """`heads` ends with a command to paste; its sentence, quoted for bash (``$'...'``
    where it holds what a terminal acts on), reads back as exactly the sentence."""
    from attntrace.real.views.models import _quoted

    quoted = _quoted(sentence)
    assert raw_controls(quoted) == []
    echoed = subprocess.run(
        ["bash", "-c", f"printf %s {quoted}"],
        capture_output=True,
        env={"LC_ALL": "C.UTF-8", "PATH": os.environ["PATH"]},
        timeout=10,
        check=True,
    ).stdout
    assert echoed.decode("utf-8") == sentence
