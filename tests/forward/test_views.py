"""--map, --overview, --max-rows/--max-cols, --export and `render` of a saved trace."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import invoke, load_valid_trace

from attntrace import trace_attention
from attntrace.forward.views.attention_map import bar
from attntrace.forward.views.step import help_text, interpret


def test_bars_are_drawn_in_eighths() -> None:
    assert bar(1.0, 4) == "████"
    assert bar(0.5, 4) == "██"
    assert bar(0.0, 4) == ""
    assert bar(1 / 16, 4) == "▎"  # 2 of 8 eighths of a cell
    assert bar(1 / 8, 4) == "▌"


def test_map_names_the_top_keys_of_each_token() -> None:
    out = invoke("run", "--sample", "it-animal", "--map").stdout
    line = next(line for line in out.splitlines() if line.startswith("it "))
    assert line.split()[:9] == [
        "it",
        "→",
        "animal",
        "0.65",
        "█████▉",
        "street",
        "0.20",
        "█▊",
        "tired",
    ]
    top1 = invoke("run", "--sample", "it-animal", "--map", "--top", "1").stdout
    assert "street" not in next(line for line in top1.splitlines() if line.startswith("it "))


def big_model(tmp_path: Path, tokens: int = 200, d_model: int = 256) -> tuple[Path, str]:
    rng = np.random.default_rng(1)
    vocab = {f"w{i}": rng.normal(size=d_model).round(4).tolist() for i in range(tokens)}
    weights = {
        name: (rng.normal(size=(d_model, 64)) / 16).round(4).tolist() for name in ("WQ", "WK", "WV")
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"embeddings": vocab, "weights": weights}))
    return path, " ".join(vocab)


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_200_tokens_fit_every_width(tmp_path: Path, columns: int) -> None:
    path, sentence = big_model(tmp_path)
    result = invoke("run", sentence, "-c", str(path), columns=columns)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "showing 20 of 200 rows" in result.stdout


def test_max_rows_and_max_cols_widen_the_view(tmp_path: Path) -> None:
    path, sentence = big_model(tmp_path, tokens=30, d_model=12)
    out = invoke("run", sentence, "-c", str(path), "--max-rows", "0", "--max-cols", "0").stdout
    x_table = out.split("X = embeddings")[1].split("\n\n")[0]
    assert "w17 " in x_table  # a middle row: all rows shown
    assert " d6 " in x_table.splitlines()[1]  # a middle column: all columns shown
    few = invoke("run", sentence, "-c", str(path), "--max-rows", "4").stdout
    assert "showing 4 of 30 rows" in few


def test_overview_puts_every_stage_on_one_screen() -> None:
    out = invoke("run", "--overview", columns=100).stdout
    lines = out.splitlines()
    assert len(lines) <= 40
    for name in ("X [3×2]", "Q [3×2]", "scores [3×3]", "softmax [3×3]", "output [3×2]", "WQ"):
        assert name in out


def test_export_svg_html_txt(tmp_path: Path) -> None:
    svg, html, txt = tmp_path / "t.svg", tmp_path / "t.html", tmp_path / "t.txt"
    shown = invoke("run", "--export", str(svg))
    assert shown.exit_code == 0
    assert shown.stderr == f"attntrace: saved {svg}\n"
    text = " ".join(ET.parse(svg).getroot().itertext())  # parses as XML
    for name in ("X", "Q", "scores", "scaled", "softmax", "output"):
        assert name in text
    invoke("run", "--map", "--export", str(html))
    assert "fish" in html.read_text()
    assert html.read_text().lstrip().startswith("<!DOCTYPE html>")
    plain = invoke("run", "--export", str(txt))
    assert txt.read_text() == plain.stdout


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("out.pdf", "--export: expected a .svg, .html or .txt file, got 'out.pdf'"),
        ("missing/out.svg", "missing/out.svg: no such folder to save into"),
    ],
)
def test_export_refuses_before_printing(
    target: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "--export", target)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"attntrace: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "flags",
    [[], ["--focus", "cat"], ["--map"], ["--overview"], ["--precision", "2"]],
    ids=["tables", "focus", "map", "overview", "precision"],
)
def test_render_of_a_saved_trace_equals_the_direct_rendering(
    flags: list[str], tmp_path: Path
) -> None:
    saved = tmp_path / "trace.json"
    saved.write_text(invoke("run", "-s", "the-cat-sat", "--json").stdout)
    direct = invoke("run", "-s", "the-cat-sat", *flags)
    replayed = invoke("render", str(saved), *flags)
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == direct.stdout


def test_render_steps_and_stdin(tmp_path: Path) -> None:
    saved = tmp_path / "trace.json"
    saved.write_text(invoke("run", "--json").stdout)
    keys = "5\nb\nq\n"
    assert invoke("render", str(saved), "--step", input=keys).stdout == (
        invoke("run", "--step", input=keys).stdout
    )
    piped = invoke("render", "-", input=saved.read_text())
    assert piped.stdout == invoke("run").stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d.update(schema="attntrace/trace/v9"),
            "t.json: schema: not a trace this version can read: expected 'attntrace/trace/v1', "
            "got a string 'attntrace/trace/v9'",
        ),
        (
            lambda d: d.pop("schema"),
            "t.json: schema: not a trace this version can read: expected 'attntrace/trace/v1', "
            "got no schema field",
        ),
        (
            lambda d: d["stages"][4]["data"][1].pop(),
            "t.json: stages[4].data[1]: expected 3 numbers, got 2",
        ),
        (
            lambda d: d["stages"][0]["data"][0].__setitem__(0, "x"),
            "t.json: stages[0].data[0][0]: expected a number or null, got a string 'x'",
        ),
        (
            lambda d: d["stages"][5]["data"][0].__setitem__(1, None),
            "t.json: stages[5] (scaled).data: expected numbers (null marks a masked cell, only "
            "in the masked stage), got null",
        ),
        # a row of exact weights: the sum the message quotes is exact on every machine
        (
            lambda d: d["stages"][6]["data"].__setitem__(2, [0.25, 0.25, 0.25]),
            "t.json: stages[6] (softmax).data[2]: expected weights in [0, 1] that sum to 1, got a "
            "row summing to 0.75",
        ),
        (
            lambda d: d["tokens"].append("extra"),
            "t.json: stages[0] (X).rows: expected the tokens ['cat', 'eats', 'fish', 'extra'], "
            "got ['cat', 'eats', 'fish']",
        ),
        (
            lambda d: d["stages"][2]["data"][0].__setitem__(0, 10**400),
            "t.json: stages[2].data[0][0]: expected a finite number, got an integer of 1329 "
            "bits (too large for float64)",
        ),
        (
            lambda d: d.__setitem__("stages", d["stages"][:6]),
            "t.json: stages: expected the stages Q, K, V, scores, scaled, softmax, output, "
            "got no softmax, output",
        ),
        (
            lambda d: d["model"].__setitem__("d_k", 0),
            "t.json: model.d_k: expected a whole number ≥ 1, got 0",
        ),
    ],
    ids=[
        "unknown-schema",
        "no-schema",
        "ragged",
        "string-cell",
        "null-outside-masked",
        "softmax-row-sum",
        "more-tokens-than-rows",
        "huge-integer",
        "missing-stages",
        "bad-size",
    ],
)
def test_render_refuses_a_bad_trace(change, message: str, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    document = json.loads(invoke("run", "--json").stdout)
    change(document)
    Path("t.json").write_text(json.dumps(document))
    result = invoke("render", "t.json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"attntrace: error: {message}\n"


def test_render_of_a_missing_or_malformed_file(tmp_path: Path) -> None:
    missing = invoke("render", str(tmp_path / "nope.json"))
    assert missing.stderr == f"attntrace: error: {tmp_path / 'nope.json'}: no such file\n"
    assert invoke("render", "-", input="{").stderr.startswith(
        "attntrace: error: stdin: line 1, column 2: malformed JSON"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--map", "--focus", "cat"], "--focus and --map are different views: choose one"),
        (["--step", "--map"], "--step walks the stage tables: it does not mix with --map"),
        (
            ["--json", "--focus", "cat"],
            "--json writes the whole trace for programs: it does not mix with --focus",
        ),
    ],
)
def test_views_that_do_not_mix(flags: list[str], message: str) -> None:
    result = invoke("run", *flags)
    assert result.exit_code == 2
    assert result.stderr == f"attntrace: error: {message}\n"


@pytest.mark.parametrize("sample", ["two-heads", "gqa", "causal", "cross", "positions"])
@pytest.mark.parametrize(
    "flags",
    [[], ["--focus", "1"], ["--map"], ["--overview"]],
    ids=["tables", "focus", "map", "overview"],
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_render_replays_every_block_kind(sample: str, flags: list[str], tmp_path: Path) -> None:
    saved = tmp_path / "trace.json"
    saved.write_text(invoke("run", "-s", sample, "--json").stdout)
    direct = invoke("run", "-s", sample, *flags, columns=120)
    assert direct.exit_code == 0, direct.output
    assert invoke("render", str(saved), *flags, columns=120).stdout == direct.stdout


def test_masked_cells_are_null_in_json() -> None:
    document = load_valid_trace(invoke("run", "-s", "causal", "--json").stdout)
    masked = next(s for s in document["stages"] if s["name"] == "masked")
    assert masked["data"][0][1:] == [None] * 5
    assert masked["data"][5][5] is not None
    weights = next(s for s in document["stages"] if s["name"] == "softmax")
    assert weights["data"][0][1:] == [0.0] * 5
    assert document["model"]["causal"] is True


def test_gqa_json_names_heads_and_kv_heads() -> None:
    document = load_valid_trace(invoke("run", "-s", "gqa", "--json").stdout)
    keys = [(s["head"], s["kv_head"]) for s in document["stages"] if s["name"] == "K"]
    assert keys == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert [(w["name"], w["head"], w["kv_head"]) for w in document["weights"]] == [
        ("WQ", 0, None),
        ("WQ", 1, None),
        ("WQ", 2, None),
        ("WQ", 3, None),
        ("WK", None, 0),
        ("WK", None, 1),
        ("WV", None, 0),
        ("WV", None, 1),
    ]
    assert document["weights"][5]["cols"] == ["d1"]  # WK's column 1 is K/V head 1's


@pytest.mark.parametrize(
    ("sample", "jq", "message"),
    [
        (
            "two-heads",
            lambda d: d.__setitem__("stages", [s for s in d["stages"] if s["name"] != "concat"]),
            "t.json: stages: expected the stage concat, got none",
        ),
        (
            "cross",
            lambda d: d.__setitem__("stages", [s for s in d["stages"] if s["name"] != "X_context"]),
            "t.json: stages: expected the stage X_context, got none",
        ),
        (
            "gqa",
            lambda d: d["stages"].append(d["stages"][1]),
            "t.json: stages[30]: expected each stage once per head, got a second 'Q' for head 0",
        ),
        (
            "gqa",
            lambda d: d["model"].__setitem__("kv_heads", 3),
            "t.json: model.kv_heads: expected a divisor of heads (4), got 3",
        ),
        (
            "gqa",
            lambda d: d["stages"][2].__setitem__("kv_head", 1),
            "t.json: stages[2].kv_head: expected 0 (head 0 reads K/V head head // 2), got 1",
        ),
        (
            "causal",
            lambda d: d["model"].__setitem__("causal", False),
            "t.json: model.causal: expected true (the trace has masked stages), got false",
        ),
    ],
    ids=[
        "no-concat",
        "no-x-context",
        "duplicate",
        "kv-heads-not-dividing",
        "wrong-kv-head",
        "masked-but-not-causal",
    ],
)
def test_render_refuses_impossible_block_layouts(
    sample: str, jq: Any, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    document = json.loads(invoke("run", "-s", sample, "--json").stdout)
    jq(document)
    Path("t.json").write_text(json.dumps(document))
    for flags in ([], ["--focus", "0"], ["--map"], ["--overview"]):
        result = invoke("render", "t.json", *flags)
        assert result.exit_code == 2, result.output
        assert result.stderr == f"attntrace: error: {message}\n"


def test_json_filters() -> None:
    document = load_valid_trace(invoke("run", "-s", "gqa", "--json", "--heads", "2").stdout)
    assert {s["head"] for s in document["stages"]} == {None, 2}
    # only the slices head 2 reads: its WQ columns, and K/V head 1's WK and WV
    assert [(w["name"], w["head"], w["kv_head"]) for w in document["weights"]] == [
        ("WQ", 2, None),
        ("WK", None, 1),
        ("WV", None, 1),
    ]
    empty = invoke("run", "--json", "--stages", "")
    assert empty.exit_code == 2
    assert "--stages: expected names from X, Q, K" in empty.stderr


@pytest.mark.parametrize("flag", ["--stages", "--heads"])
def test_json_filters_without_json_are_refused_before_loading(flag: str) -> None:
    """The flag mistake is named even when the model file would fail too."""
    result = invoke("run", "--config", "no-such-file.yaml", flag, "0")
    assert result.exit_code == 2
    assert result.stderr == f"attntrace: error: {flag} chooses what --json writes: add --json\n"
    both = invoke("run", "--stages", "X", "--heads", "0")
    assert (
        both.stderr
        == "attntrace: error: --stages and --heads choose what --json writes: add --json\n"
    )


def test_a_trace_cut_to_one_head_keeps_its_number_and_replays() -> None:
    """--json --heads 1 writes heads_traced; render shows head 1 as head 1 of 2."""
    result = invoke("run", "-s", "two-heads", "--json", "--heads", "1")
    document = json.loads(result.output)
    assert document["heads_traced"] == [1]
    shown = invoke("render", "-", "--map", input=result.output)
    assert shown.exit_code == 0, shown.output
    assert "head 1 of 2" in shown.output
    assert "head 1\n" in shown.output
    tables = invoke("render", "-", input=result.output)
    assert tables.exit_code == 0
    assert "concat" not in tables.output  # it needs every head
    # a repeated head is the head once
    assert json.loads(invoke("run", "-s", "two-heads", "--json", "--heads", "1,1").output)[
        "heads_traced"
    ] == [1]
    claimed = dict(document, heads_traced=[0])  # head 1's stages where head 0 is claimed
    refused = invoke("render", "-", input=json.dumps(claimed))
    assert refused.exit_code == 2
    assert "weights: expected K/V heads the traced heads read ([0]), got K/V head 1" in (
        refused.output
    )
    claimed["weights"] = []
    refused = invoke("render", "-", input=json.dumps(claimed))
    assert "stages: expected stages of the heads traced ([0]), got stages of head 1" in (
        refused.output
    )
    stray = dict(document, weights=[*document["weights"], {**document["weights"][0], "head": 0}])
    refused = invoke("render", "-", input=json.dumps(stray))
    assert "got stages of head 0" in refused.output


def test_step_mode_on_a_cut_trace_says_the_other_heads_are_left_out() -> None:
    trace = trace_attention(sample="two-heads").only_heads([1])
    here = trace.names.index("softmax")
    move = interpret("h", here, trace)
    assert move.error == "only head 1 is traced here: the others were left out"
    gqa = trace_attention(sample="gqa").only_heads([0, 3])
    assert "h N: of head N (0, 3)" in help_text(gqa)
    assert interpret("h", gqa.names.index("softmax"), gqa).index == gqa.stages.index(
        gqa.stage("softmax", head=3)
    )


def test_the_header_wraps_between_facts_never_inside_one() -> None:
    result = invoke("run", "-s", "gqa", columns=50)
    header = result.output.split("\n\n")[0].splitlines()
    assert header[0] == "gqa · 4 tokens · d_model 4 · 4 heads · d_k 1"
    assert "2 K/V heads (GQA)" in header[1]
    assert not any(line.endswith(("·", "· ")) for line in header)


def many_heads_model(tmp_path: Path, heads: int, tokens: int = 3) -> tuple[Path, str]:
    """A random model of ``heads`` heads (d_k 2) with WO, as a JSON model file."""
    rng = np.random.default_rng(heads)
    d_model = 2 * heads
    vocab = {f"w{i}": rng.normal(size=d_model).round(3).tolist() for i in range(tokens)}
    weights = {
        name: rng.normal(size=(d_model, d_model)).round(3).tolist()
        for name in ("WQ", "WK", "WV", "WO")
    }
    path = tmp_path / f"heads{heads}.json"
    path.write_text(json.dumps({"embeddings": vocab, "weights": weights, "heads": heads}))
    return path, " ".join(vocab)


def heads_drawn(out: str) -> list[int]:
    """The heads whose softmax table is drawn, in order (titles end in ``head h``)."""
    return [
        int(line.rsplit("head ", 1)[1])
        for line in out.splitlines()
        if line.startswith("softmax = ")
    ]


@pytest.mark.parametrize(
    ("heads", "flags", "drawn", "note"),
    [
        (4, (), [0, 1, 2, 3], None),  # up to 4 heads: every one, as every sample has
        (6, (), [0, 1, 4, 5], "… heads 2 and 3 not shown (4 of 6 heads; --max-heads N, 0 for all)"),
        (12, (), [0, 1, 10, 11], "… heads 2 to 9 not shown (4 of 12 heads;"),
        (6, ("--max-heads", "0"), [0, 1, 2, 3, 4, 5], None),
        (6, ("--max-heads", "3"), [0, 1, 5], "… heads 2 to 4 not shown (3 of 6 heads;"),
        (6, ("--max-heads", "1"), [0], "… heads 1 to 5 not shown (1 of 6 heads;"),
        (5, ("--max-heads", "4"), [0, 1, 3, 4], "… head 2 not shown (4 of 5 heads;"),
    ],
)
def test_max_heads_summarizes_the_middle_heads(
    tmp_path: Path, heads: int, flags: tuple[str, ...], drawn: list[int], note: str | None
) -> None:
    path, sentence = many_heads_model(tmp_path, heads)
    result = invoke("run", sentence, "-c", str(path), *flags)
    assert result.exit_code == 0, result.output
    assert heads_drawn(result.stdout) == drawn
    lines = result.stdout.splitlines()
    notes = [index for index, line in enumerate(lines) if "not shown" in line]
    if note is None:
        assert notes == []
        return
    assert len(notes) == 1
    assert lines[notes[0]].startswith(note)
    # in the hidden heads' place: every earlier head's tables above it, later ones below
    first_hidden = min(set(range(heads)) - set(drawn))
    for index, line in enumerate(lines):
        found = re.search(r"  head (\d+)$", line)
        if found:
            assert (index < notes[0]) == (int(found[1]) < first_hidden)
    # the shared stages that need every head are still drawn, in full
    titles = [line for line in lines if " = " in line and "[" in line]
    assert [t.split(" = ")[0] for t in titles][-2:] == ["concat", "projected"]


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_a_long_sentence_is_summarized_under_the_header(tmp_path: Path) -> None:
    path, sentence = big_model(tmp_path, tokens=100, d_model=8)
    words = sentence.split()
    line = invoke("run", sentence, "-c", str(path), columns=300).stdout.splitlines()[1]
    assert line == " ".join([*words[:16], "… (100 tokens)", *words[-16:]])
    every = invoke("run", sentence, "-c", str(path), "--max-rows", "0", columns=2000).stdout
    assert every.splitlines()[1] == sentence
    path, sentence = big_model(tmp_path, tokens=64, d_model=8)
    assert invoke("run", sentence, "-c", str(path), columns=2000).stdout.splitlines()[1] == sentence


def test_render_summarizes_heads_as_run_does_and_json_keeps_them_all(tmp_path: Path) -> None:
    path, sentence = many_heads_model(tmp_path, 6)
    saved = invoke("run", sentence, "-c", str(path), "--json").stdout
    assert sorted({s["head"] for s in json.loads(saved)["stages"] if s["head"] is not None}) == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(saved)
    assert heads_drawn(invoke("render", str(trace_file)).stdout) == [0, 1, 4, 5]
    assert heads_drawn(invoke("render", str(trace_file), "--max-heads", "0").stdout) == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]
    bad = invoke("run", sentence, "-c", str(path), "--max-heads", "-1")
    assert bad.exit_code == 2


def test_step_mode_names_a_long_sentence_as_the_header_does(tmp_path: Path) -> None:
    path, sentence = big_model(tmp_path, tokens=100, d_model=8)
    out = invoke("run", sentence, "-c", str(path), "--step", input="q\n", columns=400).stdout
    words = sentence.split()
    summary = " ".join([*words[:16], "… (100 tokens)", *words[-16:]])
    assert f"Stage 1 of 8 · X   big: {summary}" in out


def test_print_of_a_trace_shows_every_head(tmp_path: Path) -> None:
    """--max-heads is the command line's; a Python user's print(trace) shows them all."""
    path, sentence = many_heads_model(tmp_path, 6)
    trace = trace_attention(sentence, config=path)
    assert heads_drawn(str(trace)) == [0, 1, 2, 3, 4, 5]
    assert "not shown" not in str(trace)


def test_the_hidden_heads_of_a_cut_trace_are_named_one_by_one(tmp_path: Path) -> None:
    """A trace saved with --json --heads 0,1,3,5,6,7 hides 3 and 5, not '3 to 5'."""
    path, sentence = many_heads_model(tmp_path, 8)
    saved = invoke("run", sentence, "-c", str(path), "--json", "--heads", "0,1,3,5,6,7").stdout
    out = invoke("render", "-", input=saved).stdout
    assert heads_drawn(out) == [0, 1, 6, 7]
    assert "… heads 3 and 5 not shown (4 of 6 heads; --max-heads N, 0 for all)" in out


@pytest.mark.parametrize(
    ("source", "stdin", "message"),
    [
        (
            "empty.json",
            None,
            "empty.json: the file is empty: expected a saved trace (from attntrace run --json)",
        ),
        (
            "-",
            "  \n",
            "stdin: the input is empty: expected a saved trace (from attntrace run --json)",
        ),
        (".", None, ".: is a directory, expected a saved trace (from attntrace run --json)"),
    ],
)
def test_render_says_it_wants_a_saved_trace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    stdin: str | None,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.json").write_text("")
    result = invoke("render", source, input=stdin)
    assert result.exit_code == 2
    assert result.stderr == f"attntrace: error: {message}\n"


def test_a_narrow_title_puts_the_head_on_a_line_of_its_own() -> None:
    """At 40 columns 'Q = X · WQ   [4 × 1]  head 0 · K/V head 0' does not fit; the head
    moves whole to the next line instead of leaving its number alone below."""
    lines = invoke("run", "--sample", "gqa", columns=40).stdout.splitlines()
    at = lines.index("Q = X · WQ   [4 × 1]")
    assert lines[at + 1] == "head 0 · K/V head 0"
    assert "Q = X · WQ   [4 × 1]  head 0 · K/V head 0" in invoke("run", "--sample", "gqa").stdout
