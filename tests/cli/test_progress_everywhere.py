"""Every command that can run long shows its progress on a terminal, and nothing on a pipe
(issue 29, item 5): decode on a model file, run, render, check, diff, grad, train,
flash, the JSON, the page and the pictures --export draws, the tables going to a file.

Each command runs on a small model with ATTNTRACE_PROGRESS_AFTER=0, so the display is
drawn from the first report: what a long run shows after a second, a short one shows at
once. stderr is a pseudo-terminal, stdout a pipe (``--json | jq``, ``> tables.txt``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from terminals import ESCAPE, Terminal, environment

import attntrace

# Each case a process on a pseudo-terminal: a long run (pytest -m long).
pytestmark = pytest.mark.long

IT = ("-s", "it-animal", "--from", "it", "--to", "animal")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A model file, its saved trace, and its softmax as a check's arrays."""
    folder = tmp_path_factory.mktemp("progress")
    model = folder / "tiny.json"
    model.write_text(
        json.dumps(
            {
                "name": "tiny",
                "sentence": "a b a b",
                "embeddings": {"a": [1, 0], "b": [0, 1]},
                "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]},
            }
        ),
        encoding="utf-8",
    )
    trace = attntrace.trace_attention(config=str(model))
    saved = folder / "tiny-trace.json"
    written = subprocess.run(
        [sys.executable, "-m", "attntrace", "run", "--config", str(model), "--json"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    saved.write_bytes(written.stdout)
    arrays = folder / "softmax.npz"
    np.savez(arrays, attn=trace["softmax"].data)
    return {"model": model, "saved": saved, "arrays": arrays, "folder": folder}


def commands(files: dict[str, Path]) -> dict[str, tuple[list[str], list[str]]]:
    """Each long path: its arguments, and what its display must say."""
    model, saved, arrays = str(files["model"]), str(files["saved"]), str(files["arrays"])
    svg = str(files["folder"] / "tables.svg")
    return {
        "decode a model file": (
            ["decode", "--config", model, "--json"],
            [
                f"reading {model}",
                f"checking {model}",
                "decoding tiny",
                "4/4 tokens",
                "writing the JSON",
            ],
        ),
        "decode's tables into a file": (
            ["decode", "--config", model],
            ["decoding tiny", "drawing decode's steps", "5/5 pages"],
        ),
        "run --json": (
            ["run", "--config", model, "--json"],
            [f"reading {model}", "tracing tiny", "1/1 heads", "building the JSON"],
        ),
        "run's tables into a file": (["run", "--config", model], ["drawing the tables"]),
        "run --map": (["run", "--config", model, "--map"], ["tracing tiny", "drawing the tables"]),
        "run --export": (["run", "--config", model, "--export", svg], ["drawing tables.svg"]),
        "render": (["render", saved], [f"reading {saved}", "drawing the tables"]),
        "check": (
            ["check", arrays, "--config", model, "--json"],
            [f"reading {arrays}", "checking against tiny"],
        ),
        "diff": (
            ["diff", "--config", model, "--set", "name=other", "--json"],
            ["tracing tiny", "tracing other", "comparing the stages"],
        ),
        "diff of saved traces": (["diff", saved, saved], [f"reading {saved}", "comparing"]),
        "grad": (["grad", *IT, "--json"], ["tracing it-animal", "the backward pass of it-animal"]),
        "train": (["train", *IT, "--steps", "3", "--json"], ["training it-animal", "4/4 steps"]),
        "flash": (["flash", "--config", model, "--json"], ["tracing tiny"]),
    }


NAMES = list(commands({"model": Path(), "saved": Path(), "arrays": Path(), "folder": Path()}))


@pytest.mark.parametrize("name", NAMES)
def test_a_terminal_on_stderr_shows_the_work(name: str, files: dict[str, Path]) -> None:
    args, said = commands(files)[name]
    terminal = Terminal(columns=200)  # wide: no description is shortened
    done = subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal.slave,
        env=environment(ATTNTRACE_PROGRESS_AFTER="0"),
        timeout=120,
        check=False,
    )
    shown = ESCAPE.sub("", terminal.closed())
    assert done.returncode in (0, 1), shown  # check and diff: 1 for "different"
    for words in said:
        assert words in shown, (words, shown[-400:])
    assert b"\x1b" not in done.stdout  # the display never reaches the pipe
    if "--json" in args:
        json.loads(done.stdout)


@pytest.mark.parametrize("name", NAMES)
def test_stderr_into_a_pipe_shows_nothing(name: str, files: dict[str, Path]) -> None:
    args, _ = commands(files)[name]
    done = subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=environment(ATTNTRACE_PROGRESS_AFTER="0"),
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    lines = done.stderr.decode().splitlines()
    assert all(line.startswith("attntrace: saved ") for line in lines), lines


def test_the_tables_on_the_terminal_are_not_torn_by_a_display(files: dict[str, Path]) -> None:
    # stdout and stderr one terminal: the tables show their own progress, so nothing is
    # drawn while they print; the reading and tracing before them are erased first
    screen = Terminal(columns=120)
    process = subprocess.Popen(
        [sys.executable, "-m", "attntrace", "decode", "--config", str(files["model"])],
        stdin=subprocess.DEVNULL,
        stdout=screen.slave,
        stderr=screen.slave,
        env=environment(ATTNTRACE_PROGRESS_AFTER="0"),
    )
    assert process.wait(timeout=120) == 0
    text = ESCAPE.sub("", screen.closed())
    assert "decoding tiny" in text  # the work was shown, so the next lines can fail
    assert "drawing decode" not in text
    assert text.rindex("decoding tiny") < text.index("tiny · decoding 4 tokens")


def test_train_on_a_terminal_shows_its_own_live_display_alone() -> None:
    # train draws its steps live on stdout; a second display on stderr would tear it
    screen = Terminal(columns=120)
    process = subprocess.Popen(
        [sys.executable, "-m", "attntrace", "train", *IT, "--steps", "3"],
        stdin=subprocess.DEVNULL,
        stdout=screen.slave,
        stderr=screen.slave,
        env=environment(ATTNTRACE_PROGRESS_AFTER="0"),
    )
    assert process.wait(timeout=120) == 0
    text = ESCAPE.sub("", screen.closed())
    assert "animal" in text  # the training was shown, so the next line can fail
    assert "tracing it-animal" not in text
    assert "training it-animal" not in text
