"""`attntrace flash` on the command line: every refusal (one line, exit 2, no traceback),
the model flags as `run`'s, a real model's layer, and --step scripted through stdin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke, needs_weights, one_line_error
from tolerances import FLASH


def flash_error(args: list[str], *words: str) -> str:
    return one_line_error(invoke("flash", *args), *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-s", "gqa", "--head", "4"], ["--head", "0 to 3", "4"]),
        (["-s", "causal", "--head", "1"], ["--head", "one head"]),
        (["-s", "causal", "--variant", "3"], ["--variant", "1", "2"]),
        (["-s", "causal", "--variant", "0"], ["--variant"]),
        (["-s", "causal", "--sram", "1"], ["--sram", "2 bytes"]),
        (["-s", "causal", "--sram", "-5"], ["--sram"]),
        (["-s", "causal", "--step", "--json"], ["--json", "--step"]),
        (["-s", "causal", "-c", "x.yaml"], ["--config", "--sample"]),
        (["-s", "causal", "--layer", "1"], ["--layer", "--model"]),
        (["-s", "nosuch"], ["nosuch"]),
        (["-s", "causal", "dog"], ["dog"]),
        (["-c", "-", "--step"], ["stdin"]),
        (["-m", "minilm", "--causal"], ["--causal"]),
        (["-m", "minilm", "--set", "WQ[0][0]=1"], ["--set"]),
    ],
)
def test_refusals_are_one_line(args: list[str], words: list[str]) -> None:
    flash_error(args, *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--head", "-1"], ["'--head': -1"]),
        (["--block-q", "0"], ["'--block-q': 0"]),
        (["--block-k", "-3"], ["'--block-k': -3"]),
        (["--block-q", "1.5"], ["'--block-q': '1.5'"]),
        (["--block-k", "two"], ["'--block-k': 'two'"]),
        (["--variant", "two"], ["'--variant': 'two'"]),
        (["--max-tiles", "-1"], ["'--max-tiles': -1"]),
    ],
)
def test_flags_the_parser_refuses_are_one_line(args: list[str], words: list[str]) -> None:
    """Typer's own refusals, shaped into one line by main() (so run as a user does)."""
    result = subprocess.run(
        [sys.executable, "-m", "attntrace", "flash", "-s", "causal", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert result.returncode == 2
    assert result.stdout == ""
    line, newline, rest = result.stderr.partition("\n")
    assert (newline, rest) == ("\n", "")
    assert line.startswith("attntrace: error: Invalid value for ")
    assert line.endswith("(try 'attntrace flash -h')")
    for word in words:
        assert word in line, line


@needs_weights
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-m", "smollm2", "--head", "9"], ["--head", "0 to 8"]),
        (["-m", "minilm", "--layer", "12"], ["--layer"]),
    ],
)
def test_a_real_models_refusals(args: list[str], words: list[str]) -> None:
    flash_error(args, *words)


def test_defaults_are_head_0_blocks_of_2_variant_2_and_the_a100s_sram() -> None:
    result = invoke("flash", "-s", "causal", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["head"], document["block_q"], document["block_k"]) == (0, 2, 2)
    assert document["variant"] == 2
    assert document["memory"]["sram_bytes"] == 196_608


def test_the_model_flags_are_runs() -> None:
    # --causal, --context and --set change a model file as they do for run
    base = json.loads(invoke("flash", "-s", "it-animal", "--json").stdout)
    assert base["causal"] is False
    causal = json.loads(invoke("flash", "-s", "it-animal", "--causal", "--json").stdout)
    assert causal["causal"] is True
    assert any(tile["skipped"] for tile in causal["tiles"])
    cross = json.loads(invoke("flash", "-s", "cross", "--json").stdout)
    assert cross["key_tokens"] != cross["tokens"]
    edited = json.loads(invoke("flash", "-s", "causal", "--set", "WQ[0][0]=3", "--json").stdout)
    assert (
        edited["output"] != json.loads(invoke("flash", "-s", "causal", "--json").stdout)["output"]
    )


def test_a_model_file_from_stdin() -> None:
    model = (
        "embeddings: {a: [1, 0], b: [0, 1]}\nweights: {WQ: [[1, 0], [0, 1]], WK: [[1, 0], "
        "[0, 1]], WV: [[1, 2], [3, 4]]}\nsentence: a b a\n"
    )
    result = invoke("flash", "-c", "-", "--json", input=model)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["tokens"] == ["a", "b", "a"]


@needs_weights
def test_a_real_models_gqa_head() -> None:
    # smollm2: 9 query heads over 3 K/V heads, causal, RoPE
    result = invoke(
        "flash",
        "-m",
        "smollm2",
        "--layer",
        "2",
        "--head",
        "5",
        "the cat sat on the mat",
        "--block-q",
        "3",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["kv_head"] == 1  # 5 // 3
    assert document["model"]["positions"] == "rope"
    assert document["max_abs_difference"] <= FLASH["atol"]
    assert any(tile["skipped"] for tile in document["tiles"])


@needs_weights
def test_a_real_models_view() -> None:
    result = invoke("flash", "-m", "minilm", "--layer", "1", "--head", "2", "the animal was tired")
    assert result.exit_code == 0, result.stderr
    assert "matches standard attention" in result.stdout


SCREEN = re.compile(r"Tile (\d+) of (\d+) computed · \((\d+), (\d+)\)")


def test_step_walks_the_computed_tiles_then_the_summary() -> None:
    # causal, 6 tokens, blocks of 2: 6 computed tiles (and 3 skipped), then the summary
    result = invoke("flash", "-s", "causal", "--step", input="\n" * 10)
    assert result.exit_code == 0, result.stderr
    screens = [(int(i), int(j)) for _, _, i, j in SCREEN.findall(result.stdout)]
    assert screens == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    assert result.stdout.count("matches standard attention") == 1
    assert result.stdout.rstrip().endswith(">")  # the last page's prompt, answered by Enter


def test_step_keys_back_jump_quit_and_help() -> None:
    result = invoke("flash", "-s", "causal", "--step", input="n\nb\n4\nzz\n?\nq\n")
    assert result.exit_code == 0, result.stderr
    screens = [(int(n), int(i), int(j)) for n, _, i, j in SCREEN.findall(result.stdout)]
    assert screens == [(1, 0, 0), (2, 1, 0), (1, 0, 0), (4, 2, 0)]
    assert "unknown key 'zz'" in result.stdout
    assert "Enter or n: next tile · b: back · 1-6: jump to a tile" in result.stdout
    assert "matches standard attention" not in result.stdout  # quit before the summary


def test_step_grid_marks_done_current_skipped_and_ahead() -> None:
    result = invoke("flash", "-s", "causal", "--step", input="n\nn\nq\n")

    def grid(screen: str) -> list[list[str]]:
        page = result.stdout.split(f"Tile {screen} of 6")[1]
        return [line.split()[-3:] for line in page.splitlines()[1:5] if "(" in line]

    # rows: query blocks 0, 1, 2; columns: key blocks 0, 1, 2
    assert grid("1") == [["■", "·", "·"], ["□", "□", "·"], ["□", "□", "□"]]  # at (0, 0)
    assert grid("2") == [["✓", "·", "·"], ["■", "□", "·"], ["□", "□", "□"]]  # at (1, 0)
    assert grid("3") == [["✓", "·", "·"], ["✓", "■", "·"], ["□", "□", "□"]]  # at (1, 1)


def test_step_shows_the_running_state_of_every_row() -> None:
    result = invoke("flash", "-s", "causal", "--step", input="q\n")
    out = result.stdout
    assert "running m and ℓ of every query row so far" in out
    state = out.split("running m and ℓ of every query row so far")[1].splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in state[3:9]}
    # after tile (0, 0) only the first block's rows have seen keys
    assert rows["sat"] == ["−∞", "0.0000"]
    assert rows["mat"] == ["−∞", "0.0000"]
    assert rows["cat"][0] != "−∞"


def test_help_lists_the_flags() -> None:
    out = invoke("flash", "--help", columns=120).stdout
    for flag in (
        "--head",
        "--block-q",
        "--block-k",
        "--variant",
        "--sram",
        "--step",
        "--json",
        "--model",
        "--layer",
        "--config",
        "--sample",
        "--causal",
        "--context",
        "--set",
        "--precision",
        "--max-rows",
        "--max-cols",
        "--max-tiles",
    ):
        assert flag in out, flag
    assert "flash" in invoke("--help", columns=120).stdout


def test_step_on_many_blocks_shows_a_window_of_the_grid(tmp_path: Path) -> None:
    # 512 tokens in blocks of 16: a 32 × 32 grid, cut to 12 query blocks around the tile
    rng = np.random.default_rng(1)
    vocab = {f"w{i}": rng.normal(size=8).round(3).tolist() for i in range(512)}
    weights = {name: rng.normal(size=(8, 8)).round(3).tolist() for name in ("WQ", "WK", "WV")}
    path = tmp_path / "long.json"
    path.write_text(
        json.dumps(
            {"embeddings": vocab, "weights": weights, "causal": True, "sentence": " ".join(vocab)}
        )
    )
    result = invoke(
        "flash",
        "-c",
        str(path),
        "--block-q",
        "16",
        "--block-k",
        "16",
        "--step",
        input="300\nq\n",
        columns=160,
    )
    assert result.exit_code == 0, result.stderr
    # 32·33/2 = 528 tiles on or below the diagonal; the 300th, in order, is (23, 23)
    screen = result.stdout.split("Tile 300 of 528 computed · (23, 23)")[1]
    rows = re.findall(r"^(\d+) (\d+)–(\d+) 'w\d+' …", screen, flags=re.MULTILINE)
    assert [int(i) for i, _, _ in rows] == list(range(17, 29))
    assert rows[0][1:] == ("272", "287")
    assert "key block j: keys 16·j to 16·j + 15" in screen
    assert "(query blocks 17–28 of 32, key blocks" in screen


def test_a_long_input_defaults_to_8_blocks_each_way(tmp_path: Path) -> None:
    """40 tokens: blocks of ⌈40 / 8⌉ = 5 (not 2, which would make 400 tiles)."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    weights = {name: rng.normal(size=(4, 2)).tolist() for name in ("WQ", "WK", "WV")}
    model = {"embeddings": {w: rng.normal(size=4).tolist() for w in words}, "weights": weights}
    path = tmp_path / "long.json"
    path.write_text(json.dumps(model))
    result = invoke("flash", "-c", str(path), "--json", " ".join(words))
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert (document["block_q"], document["block_k"], len(document["tiles"])) == (5, 5, 64)
