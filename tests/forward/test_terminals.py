"""Odd terminals and closed pipes: any COLUMNS, exports that do not depend on stdout,
and lines that wrap between words, never inside a shape such as [3 × 2]."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import invoke
from typer.testing import CliRunner

from attntrace.cli import app


def run_with_columns(columns: str | None, *args: str) -> str:
    env = {"NO_COLOR": "1", "TERM": "dumb"}
    if columns is not None:
        env["COLUMNS"] = columns
    runner = CliRunner()
    if columns is None:  # no COLUMNS at all: what Rich does without a terminal (80)
        os.environ.pop("COLUMNS", None)
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("columns", ["0", "-1", "-80", "abc", "", " 80x", "3.5"])
def test_columns_that_are_no_width_are_ignored(columns: str) -> None:
    assert run_with_columns(columns, "run") == run_with_columns("80", "run")


@pytest.mark.parametrize(("columns", "drawn"), [("5", "20"), ("100000000", "1000")])
def test_columns_out_of_reason_are_taken_to_the_nearest_sane_width(
    columns: str, drawn: str
) -> None:
    assert run_with_columns(columns, "run", "-s", "two-heads") == run_with_columns(
        drawn, "run", "-s", "two-heads"
    )


def test_columns_zero_exports_the_whole_view(tmp_path: Path) -> None:
    target = tmp_path / "z.txt"
    env = {"COLUMNS": "0", "NO_COLOR": "1"}
    result = CliRunner().invoke(app, ["run", "--export", str(target)], env=env)
    assert result.exit_code == 0
    text = target.read_text(encoding="utf-8")
    assert text == result.stdout  # what was shown, whole
    assert "output = softmax · V   [3 × 2]" in text


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("suffix", [".svg", ".html", ".txt"])
def test_an_export_is_written_whole_when_the_reader_stops_early(
    suffix: str, tmp_path: Path
) -> None:
    """``run --export x.svg | head -1``: the reader leaves after a line; the file is
    written all the same, and the command ends quietly. The tables (400 tokens, every
    row) are some 200 KB, far more than a pipe holds, so the writer does meet the closed
    end: that takes no luck of timing."""
    tokens = [f"t{i}" for i in range(400)]
    model = tmp_path / "long.json"
    model.write_text(
        json.dumps(
            {
                "sentence": " ".join(tokens),
                "embeddings": {t: [float(i % 7), float(i % 5), 1.0] for i, t in enumerate(tokens)},
                "weights": {
                    "WQ": [[1, 0], [0, 1], [1, 1]],
                    "WK": [[1, 0], [0, 1], [0, 1]],
                    "WV": [[0, 1], [1, 0], [1, 1]],
                },
            }
        ),
        encoding="utf-8",
    )
    target = tmp_path / f"x{suffix}"
    command = (
        f"{sys.executable} -m attntrace run -c {model} --max-rows 0 --export {target} | head -1"
    )
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("long")
    text = target.read_text(encoding="utf-8")
    if suffix == ".txt":
        assert len(text) > 150_000  # far more than a pipe's 64 KB
    ending = {".svg": "</svg>\n", ".html": "</html>\n", ".txt": "token i's new vector.\n"}
    assert text.endswith(ending[suffix])
    assert f"attntrace: saved {target}" in result.stderr


def test_an_export_into_a_missing_folder_fails_before_anything_is_drawn(tmp_path: Path) -> None:
    result = invoke("run", "--export", str(tmp_path / "nowhere" / "x.svg"))
    assert result.exit_code == 2
    assert result.stdout == ""


# ------------------------------------------------------------------ lines that wrap

VIEWS = [
    ("run",),
    ("run", "-s", "gqa"),
    ("run", "-s", "rope"),
    ("run", "-s", "cross"),
    ("run", "-s", "it-animal", "--focus", "it"),
    ("run", "-s", "two-heads", "--overview"),
    ("decode", "-s", "gqa"),
    ("decode", "-s", "rope"),
    ("kv-cache", "--preset", "llama2-70b"),
]
# a shape [3 × 2] or [n × d_k] left open at a line's end, or closed alone at the next's start
SPLIT_SHAPE = re.compile(r"\[[\w·]+(?: ×)?\s*$|^\s*(?:× )?[\w·]+\]")


@pytest.mark.parametrize("columns", [30, 40, 52])
@pytest.mark.parametrize("args", VIEWS, ids=lambda args: "-".join(args))
def test_no_shape_is_split_across_lines(args: tuple[str, ...], columns: int) -> None:
    result = invoke(*args, columns=columns)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip(), "nothing was drawn, so nothing could be split"
    for line in result.stdout.splitlines():
        assert not SPLIT_SHAPE.search(line), line


@pytest.mark.parametrize("columns", [30, 40])
def test_step_mode_paragraphs_keep_their_shapes_whole(columns: int) -> None:
    output = invoke("run", "-s", "gqa", "--step", input="\n" * 30, columns=columns).stdout
    assert len(re.findall(r"\[\d+ × \d+\]", output)) > 30  # the paragraphs name shapes
    for line in output.splitlines():
        assert not SPLIT_SHAPE.search(line), line


@pytest.mark.parametrize("columns", [20, 24, 30, 40, 80])
def test_a_map_never_cuts_a_weight(columns: int, tmp_path: Path) -> None:
    """However narrow, or however long the tokens: each query's line shows its top key's
    weight whole (the bars go first, then the labels give up their middles)."""
    long = tmp_path / "long.json"
    long.write_text(
        json.dumps(
            {
                "sentence": f"{'x' * 100} {'y' * 100} cat",
                "embeddings": {"x" * 100: [1, 0], "y" * 100: [0, 1], "cat": [1, 1]},
                "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
            }
        ),
        encoding="utf-8",
    )
    for args in (("-s", "it-animal"), ("--config", str(long))):
        output = invoke("run", *args, "--map", columns=columns).stdout
        lines = [line for line in output.splitlines() if " → " in line]
        assert lines, output
        for line in lines:
            assert re.search(r" → .* [01]\.\d\d\b", line), line
            assert len(line) <= max(columns, 20), line


@pytest.mark.parametrize("columns", [40, 60, 80])
def test_the_head_ranking_fits_the_terminal(columns: int) -> None:
    """Its bars as wide as the width leaves them (none where too narrow), every line
    but the next: command (which pastes as one line) within the width."""
    from attntrace.real.catalog import find_model

    if not find_model("minilm").installed:
        pytest.skip("MiniLM's weights are not installed")
    output = invoke("heads", "-m", "minilm", "--top", "5", columns=columns).stdout
    lines = output.splitlines()
    table = [line for line in lines if re.match(r"^ +\d+ +\d+ +\d+  0\.\d{4}", line)]
    assert len(table) == 5
    for line in lines:
        if not line.startswith("next: "):
            assert len(line) <= columns, line


@pytest.mark.parametrize("columns", [30, 36, 40, 60])
def test_decode_costs_fit_the_terminal(columns: int) -> None:
    """The cost table's rows never wrap: its bars as wide as the width leaves (none
    under 4 cells), its heading shortened to fit."""
    output = invoke("decode", "-s", "gqa", columns=columns).stdout
    rows = output[output.index("  t token") :].splitlines()
    table = rows[: 1 + 4]  # the heading and the four steps
    assert all(len(line) <= columns for line in table), table
    assert all(re.match(r"^ +\d+ \S+ +[\d,]+ +[\d,]+", line) for line in table[1:]), table


def test_an_export_that_cannot_be_written_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under the export: one line and exit 2, as for ``train --save`` (issue
    29; it was exit 1), and no half file left behind."""
    import errno

    def full(self: Path, *args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    target = tmp_path / "x.svg"
    result = invoke("run", "--export", str(target))
    assert result.exit_code == 2
    assert result.stderr == (
        f"attntrace: error: {target}: cannot write the file: No space left on device\n"
    )
    assert list(tmp_path.iterdir()) == []
