"""The command line's arguments: the sentence, flags that do not go together, usage errors.

The bad-input catalogue's room for the CLI's own checks (the contract and the tools are
in ``tests/catalogue.py``), named before (or instead of) a model file being read. Usage
errors (an unknown flag, a missing argument) come from click and run as a real process,
since ``main`` shapes them into the same one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from catalogue import EMB, GOOD, Case, W, case, check_rejected, plain_file, with_file

REJECTED = [
    # --- --config's name
    case(
        "config-empty-name-message",
        None,
        "--config: expected a file name, got ''",
        args=("cat", "--config", ""),
    ),
    case(
        "config-blank-name-contract",
        None,
        None,
        args=("cat", "--config", "   "),
        contains=("--config: expected a file name, got ",),
    ),
    case(
        "config-blank-name-shows-it",
        None,
        "--config: expected a file name, got '   '",
        args=("cat", "--config", "   "),
    ),
    # --- the sentence: given, from the model file, or none
    case(
        "empty-sentence",
        None,
        "SENTENCE: empty sentence: expected at least one token, got ''",
        args=("",),
    ),
    case(
        "blank-sentence",
        None,
        "SENTENCE: empty sentence: expected at least one token, got '   '",
        args=("   ",),
    ),
    case(
        "blank-sentence-with-file",
        GOOD,
        "SENTENCE: empty sentence: expected at least one token, got '   '",
        args=with_file(sentence="   "),
    ),
    case(
        "no-sentence-anywhere",
        GOOD,
        "model.yaml: no sentence: give one, or set `sentence` in the model file",
        args=with_file(sentence=None),
    ),
    case(
        "unknown-token-default-model",
        None,
        "sample cat-eats-fish: embeddings: unknown token 'dog' (vocabulary: cat, eats, fish)",
        args=("dog",),
    ),
    # --- flags
    case(
        "config-and-sample",
        GOOD,
        "--config and --sample both name a model: give one of them",
        args=with_file("--sample", "cat-eats-fish"),
    ),
    case(
        "unknown-sample",
        None,
        None,
        args=("cat", "--sample", "no-such-sample"),
        contains=("unknown sample 'no-such-sample' (samples: ", "cat-eats-fish"),
    ),
    case(
        "step-with-json",
        None,
        "--json writes the whole trace for programs: it does not mix with --step",
        args=("cat", "--step", "--json"),
    ),
    case(
        "config-stdin-with-step",
        None,
        "--step reads its keys from stdin, so the model cannot come from stdin too",
        args=("cat", "--config", "-", "--step"),
        stdin=GOOD.encode(),
    ),
    case(
        "decode-config-stdin-with-step",
        None,
        "--step reads its keys from stdin, so the model cannot come from stdin too",
        command="decode",
        args=("cat", "--config", "-", "--step"),
        stdin=GOOD.encode(),
    ),
    case(
        "causal-flag-with-context",
        EMB + "  le: [1, 0]\n" + W + "context: le\n",
        "--causal: a causal mask hides later tokens of the same sequence, but this model "
        "cross-attends to a context: expected --no-causal (or no context), got --causal",
        args=with_file("--causal"),
    ),
    case(
        "context-flag-on-a-causal-model",
        GOOD + "causal: true\n",
        "--context: cross-attention lets every query see every context token, but the model "
        "is causal (a decoder): expected --no-causal with --context, got --context 'cat'",
        args=with_file("--context", "cat"),
    ),
    case(
        "context-flag-unknown-token",
        GOOD,
        "--context: unknown token 'wolf' (vocabulary: cat, eats, fish)",
        args=with_file("--context", "cat wolf"),
    ),
    case(
        "context-flag-empty",
        GOOD,
        "--context: empty context: expected at least one token, got '  '",
        args=with_file("--context", "  "),
    ),
    # --- flags that do not go together, named before the model file is read
    case(
        "export-a-folder-name",
        plain_file,
        "--export: expected a .svg, .html or .txt file, got 'x.svg/'",
        args=with_file("--export", "x.svg/"),
    ),
    case(
        "export-no-name",
        plain_file,
        "--export: expected a .svg, .html or .txt file, got ''",
        args=with_file("--export", ""),
    ),
    case(
        "heads-without-json",
        plain_file,
        "--heads chooses what --json writes: add --json",
        args=with_file("--heads", "0"),
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_a_bad_argument_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An argument or flag the CLI refuses, with the same one line."""
    check_rejected(case, tmp_path, monkeypatch)


def run_entry_point(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command as a user runs it (usage errors are shaped in ``main``)."""
    return subprocess.run(
        [sys.executable, "-m", "attntrace", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )


@pytest.mark.parametrize(
    ("args", "says", "hint"),
    [
        (("run", "--precision", "-1"), "Invalid value for '--precision': -1 ", "run"),
        (("run", "--precision", "99"), "Invalid value for '--precision': 99 ", "run"),
        (("run", "--precision", "four"), "Invalid value for '--precision': 'four' ", "run"),
        (("run", "--no-such-flag"), "No such option: --no-such-flag", "run"),
        (("frob",), "No such command 'frob'.", ""),
        (("softmax",), "Missing argument 'V1 V2 ...'.", "softmax"),
        (("heads", "--from"), "Option '--from' requires an argument.", "heads"),
        (("run", "--layer", "-1", "-m", "minilm"), "Invalid value for '--layer': -1 ", "run"),
        (("run", "--max-heads", "-1"), "Invalid value for '--max-heads': -1 ", "run"),
        (
            ("render", "t.json", "--max-heads", "two"),
            "Invalid value for '--max-heads': 'two' ",
            "render",
        ),
    ],
    ids=[
        "precision--1",
        "precision-99",
        "precision-not-a-number",
        "unknown-flag",
        "unknown-command",
        "missing-argument",
        "option-without-value",
        "negative-layer",
        "negative-max-heads",
        "max-heads-not-a-number",
    ],
)
def test_usage_error_is_one_line(args: tuple[str, ...], says: str, hint: str) -> None:
    """A usage error is one ``attntrace: error:`` line like every other bad input, with
    click's wording (which varies a little between Typer versions) and where to get help."""
    result = run_entry_point(*args)

    assert result.returncode == 2
    assert result.stdout == ""
    line, newline, rest = result.stderr.partition("\n")
    assert (newline, rest) == ("\n", "")
    assert line.startswith("attntrace: error: " + says)
    assert line.endswith(f"(try '{' '.join(['attntrace', hint]).strip()} -h')")
    if "precision" in args and "four" not in args:
        assert "0<=x<=15" in line or "equal to 15" in line


def test_no_arguments_prints_the_help() -> None:
    result = run_entry_point()

    assert result.returncode == 2
    assert "Usage: attntrace [OPTIONS] COMMAND [ARGS]..." in result.stdout


def test_run_and_render_take_every_display_flag_alike() -> None:
    """`run` and `render` each list the display flags; Presentation.from_flags takes them
    by keyword with defaults, so a flag added to one command only would be ignored by the
    other without a word. (run's signature is the one its model flags are spliced into,
    its annotations evaluated: render's are compared evaluated too.)"""
    import inspect

    from attntrace.cli.run import render, run
    from attntrace.forward.views.present import Presentation

    display = set(inspect.signature(Presentation.from_flags).parameters)
    of_render = inspect.signature(render, eval_str=True).parameters
    of_run = inspect.signature(run, eval_str=True).parameters
    assert set(of_render) - {"source"} == display
    for name in display:
        assert of_run[name].annotation == of_render[name].annotation, name
        assert of_run[name].default == of_render[name].default, name
