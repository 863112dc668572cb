"""`attntrace flash`'s view: each tile's block, skipped tiles one line each, the summary
(matches standard attention within FLASH, the memory story by the paper's formulas
written out here), and a bounded, readable view of many tiles, at 80 and 160 columns."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke
from rich.cells import cell_len
from tolerances import FLASH


def flash_view(*args: str, columns: int = 80) -> str:
    result = invoke("flash", *args, columns=columns)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    out: str = result.stdout
    return out


def widest(text: str) -> int:
    return max(cell_len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, 160])
def test_every_tile_is_drawn_and_nothing_is_wider_than_the_terminal(columns: int) -> None:
    out = flash_view("-s", "causal", columns=columns)
    assert widest(out) <= columns
    headings = re.findall(r"^tile \((\d), (\d)\)(.*)$", out, flags=re.MULTILINE)
    assert [(int(i), int(j)) for i, j, _ in headings] == [
        (i, j) for i in range(3) for j in range(3)
    ]
    skipped = [(i, j) for i, j, rest in headings if "skipped: every key after every query" in rest]
    assert skipped == [("0", "1"), ("0", "2"), ("1", "2")]
    assert "tile (1, 0): queries 'sat' 'on' (2–3) × keys 'the#0' 'cat' (0–1)" in out
    assert out.count("S_ij = Q_i·K_jᵀ / √2") == 6
    assert out.count("O_i after the tile (unnormalised)") == 6
    # a diagonal tile is masked cell by cell: the first query sees only itself
    diagonal = out.split("tile (0, 0)")[1].split("tile (0, 1)")[0]
    assert re.search(r"^the#0 +[0-9.]+ +−∞( |$)", diagonal, flags=re.MULTILINE)


def test_variant_1_says_its_o_is_normalised() -> None:
    out = flash_view("-s", "causal", "--variant", "1")
    assert "variant 1: FlashAttention (v1)" in out
    assert "O_i after the tile (normalised)" in out
    assert "kept normalised" in out


def test_the_summary_matches_standard_attention() -> None:
    out = flash_view("-s", "it-animal", "--block-q", "3", "--block-k", "4")
    assert "tiles: 12 computed, of 12" in out  # 12 tokens, not causal: 4 × 3 blocks
    found = re.search(r"matches standard attention: max \|Δ\| ≤ (\S+)", out)
    assert found is not None  # a power-of-ten bound: no last bits on screen
    assert float(found.group(1)) <= FLASH["atol"]


def traffic(n: int, d: int, sram: int) -> tuple[int, int]:
    """Theorem 2 of arXiv 2205.14135 with M = sram / 2 elements."""
    b_c = math.ceil(sram // 2 / (4 * d))
    return 4 * n * d + 4 * n * n, 2 * n * d + math.ceil(n / b_c) * (3 * n * d + 4 * n)


@pytest.mark.parametrize("sram", [196_608, 4096])
def test_the_memory_story(sram: int) -> None:
    out = flash_view("-s", "causal", "--block-q", "4", "--block-k", "3", "--sram", str(sram))
    assert f"2·6·6·8 = {2 * 6 * 6 * 8:,} bytes at float64" in out
    assert f"one 4 × 3 tile ({4 * 3 * 8} bytes)" in out
    assert f"SRAM {sram:,} bytes: M = {sram // 2:,} elements" in out
    for n, d in ((6, 2), (1024, 64)):
        standard, tiled = traffic(n, d, sram)
        lines = out.split(f"N = {n:,}, d = {d}")[1].splitlines()[1:4]
        assert re.search(rf"standard .* {standard:,} elements +{2 * standard:,} bytes", lines[0])
        assert re.search(rf"tiled .* {tiled:,} elements +{2 * tiled:,} bytes", lines[1])
        assert f"standard / tiled = {standard / tiled:.2f}" in lines[2]


def test_precision_and_columns_cut_the_tables_as_runs_do() -> None:
    out = flash_view(
        "-s",
        "it-animal",
        "--block-q",
        "9",
        "--block-k",
        "9",
        "--precision",
        "2",
        "--max-cols",
        "4",
        "--max-rows",
        "4",
    )
    assert "showing 4 of 9 rows and 4 of 9 columns" in out
    assert not re.search(r"\d\.\d{3}", out.split("tile (0, 0)")[1].split("O_i")[0])


@pytest.fixture(scope="module")
def big_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """512 tokens of a random causal model, d_k = 64."""
    rng = np.random.default_rng(0)
    vocab = {f"w{i}": rng.normal(size=64).round(4).tolist() for i in range(512)}
    weights = {
        name: (rng.normal(size=(64, 64)) / 8).round(4).tolist() for name in ("WQ", "WK", "WV")
    }
    path = tmp_path_factory.mktemp("flash") / "big.json"
    path.write_text(
        json.dumps(
            {"embeddings": vocab, "weights": weights, "causal": True, "sentence": " ".join(vocab)}
        )
    )
    return path


@pytest.mark.parametrize("columns", [80, 160])
def test_many_tiles_stay_bounded_one_line_each(big_model: Path, columns: int) -> None:
    out = flash_view("-c", str(big_model), "--block-q", "64", "--block-k", "64", columns=columns)
    assert widest(out) <= columns
    assert len(out.splitlines()) < 120
    assert "64 tiles, more than --max-tiles 16: one line each" in out
    lines = re.findall(r"^\((\d), (\d)\) +q (\S+) +× k (\S+) +(.*)$", out, flags=re.MULTILINE)
    assert len(lines) == 20  # --max-rows 20: the first and last 10
    assert "… 44 tiles more (--max-rows 0 lists them all)" in out
    assert lines[0][:4] == ("0", "0", "0–63", "0–63")
    assert lines[1][4] == "skipped: every key after every query"
    assert lines[-1][:4] == ("7", "7", "448–511", "448–511")
    assert "2,016 masked" in lines[-1][4]  # 64·63/2 keys after their query
    assert "tiles: 36 computed, 28 skipped" in out  # 8·9/2 on or below the diagonal


def test_max_rows_0_lists_every_tile_and_max_tiles_0_draws_them(big_model: Path) -> None:
    args = ("-c", str(big_model), "--block-q", "128", "--block-k", "128")
    listed = flash_view(*args, "--max-tiles", "4", "--max-rows", "0")
    assert len(re.findall(r"^\(\d, \d\) ", listed, flags=re.MULTILINE)) == 16
    drawn = flash_view(*args, "--max-tiles", "0")
    assert len(re.findall(r"^tile \(\d, \d\)", drawn, flags=re.MULTILINE)) == 16
    assert drawn.count("S_ij = Q_i·K_jᵀ / √64") == 10  # 4·5/2 on or below the diagonal


def test_tokens_never_reach_the_terminal_raw() -> None:
    model = (
        'embeddings: {"a\\e[31mX": [1, 0], b: [0, 1]}\nweights: {WQ: [[1, 0], [0, 1]], '
        'WK: [[1, 0], [0, 1]], WV: [[1, 2], [3, 4]]}\nsentence: "a\\e[31mX b"\n'
    )
    for extra in ((), ("--step",)):
        result = (
            invoke("flash", "-c", "-", *extra, input=model)
            if not extra
            else invoke("flash", "-s", "causal", "--step", input="q\n")
        )
        assert result.exit_code == 0, result.stderr
        assert "\x1b" not in result.stdout
    assert "a\\x1b[31mX" in invoke("flash", "-c", "-", input=model).stdout
