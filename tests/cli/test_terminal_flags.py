"""--color, --width and shell completion: the conventions of issue 30.

Each runs in process (typer's CliRunner): the flags are read by every console through
the variables Rich reads, so the tests also hold that those are put back afterwards.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from helpers import invoke
from typer.testing import CliRunner, Result  # type: ignore[attr-defined, unused-ignore]

from attntrace.cli import app
from attntrace.cli.process import run_app

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def drawn(*args: str, input: str | None = None, **env: str) -> Result:
    """``attntrace ARGS`` with exactly the terminal variables ``env`` (none else)."""
    base = {"NO_COLOR": None, "FORCE_COLOR": None, "COLUMNS": "80", "TERM": "xterm"}
    result = CliRunner().invoke(app, list(args), input=input, env={**base, **env})
    assert result.exit_code == 0, result.output
    return result


def test_color_never_is_no_color_whatever_the_environment_says() -> None:
    plain = drawn("run", "-s", "it-animal", NO_COLOR="1").stdout
    assert ANSI.search(plain) is None
    for where in (["run", "-s", "it-animal", "--color", "never"], ["--color", "never", "run"]):
        args = where if "-s" in where else [*where, "-s", "it-animal"]
        assert drawn(*args, FORCE_COLOR="1").stdout == plain, args
    assert ANSI.search(drawn("run", "-s", "it-animal", FORCE_COLOR="1").stdout)  # Rich's rule


def test_color_always_colours_a_pipe_and_changes_nothing_else() -> None:
    plain = drawn("run", "-s", "it-animal", "--color", "never").stdout
    for env in ({}, {"NO_COLOR": "1"}, {"TERM": "dumb"}):
        coloured = drawn("run", "-s", "it-animal", "--color", "always", **env).stdout
        assert ANSI.search(coloured), env
        assert ANSI.sub("", coloured) == plain, env
    # a pipe stays a transcript: a rule between step mode's screens, no screen clearing
    step = drawn("run", "--step", "--color", "always", input="n\nq\n").stdout
    assert ANSI.search(step)
    assert "\x1b[2J" not in step
    assert "─" * 20 in ANSI.sub("", step)


def test_width_wins_over_columns_before_or_after_the_command() -> None:
    narrow = drawn("run", "-s", "it-animal", COLUMNS="40").stdout
    assert max(len(line) for line in narrow.splitlines()) <= 40
    assert drawn("run", "-s", "it-animal", "--width", "40", COLUMNS="200").stdout == narrow
    assert drawn("--width", "40", "run", "-s", "it-animal", COLUMNS="200").stdout == narrow
    wide = drawn("run", "-s", "it-animal", "--width", "200").stdout
    assert max(len(line) for line in wide.splitlines()) > 80  # "street" and the rest fit
    for args in (["run", "--width", "40", "--help"], ["--width", "40", "run", "--help"]):
        assert max(len(line) for line in drawn(*args).stdout.splitlines()) == 40, args


def test_the_variables_are_put_back_when_the_command_ends() -> None:
    before = {name: os.environ.get(name) for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    runner = CliRunner()  # no env of its own: the flags alone change the variables
    result = runner.invoke(app, ["--color", "always", "run", "--color", "never", "--width", "33"])
    assert result.exit_code == 0, result.output
    assert {name: os.environ.get(name) for name in before} == before


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["run", "--width", "19"], ["--width", "'19'", "20 to 1000"]),
        (["run", "--width", "1001"], ["--width", "1001"]),
        (["run", "--width", "abc"], ["--width", "'abc'"]),
        (["run", "--width", ""], ["--width", "not a whole number"]),
        (["run", "--width", "4.5"], ["--width", "'4.5' is not a whole number"]),
        (["--width", "0", "run"], ["--width", "'0'"]),
        (["run", "--width"], ["'--width' requires an argument"]),
        (["run", "--color", "sometimes"], ["--color", "auto, always, never"]),
        (["samples", "--color"], ["'--color' requires an argument"]),
        (["--show-completion", "tcsh"], ["--show-completion", "'tcsh'", "bash, zsh, fish"]),
    ],
)
def test_a_bad_value_is_one_line(
    args: list[str],
    words: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert refused(args, monkeypatch, capsys).count("\n") == 0
    for word in words:
        assert word in refused(args, monkeypatch, capsys)


def refused(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """The one line a usage error is, as main() says it (run_app), in process: exit 2,
    nothing on stdout, ``attntrace: error: ...``."""
    monkeypatch.setattr(sys, "argv", ["attntrace", *args])
    code = run_app(app)
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("attntrace: error: ")
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    return err[:-1]


@pytest.mark.parametrize(
    ("shell", "says"),
    [
        ("bash", "complete -o default -F _attntrace_completion attntrace"),
        ("zsh", "#compdef attntrace"),
        ("fish", "complete --command attntrace"),
    ],
)
def test_show_completion_prints_the_named_shells_script(shell: str, says: str) -> None:
    result = invoke("--show-completion", shell)
    assert result.exit_code == 0, result.output
    assert says in result.stdout
    assert "_ATTNTRACE_COMPLETE" in result.stdout


def test_show_completion_alone_is_this_shells_or_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import typer._completion_shared as completion

    monkeypatch.setattr(completion, "_get_shell_name", lambda: "zsh")
    assert invoke("--show-completion").stdout.startswith("#compdef attntrace")
    assert invoke("--show-completion", "--width", "40").stdout.startswith("#compdef")
    monkeypatch.setattr(completion, "_get_shell_name", lambda: "sh")
    line = refused(["--show-completion"], monkeypatch, capsys)
    assert "cannot tell which shell this is (sh): name one of bash, zsh, fish" in line


def test_install_completion_writes_the_script_and_sources_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--install-completion", "bash"], env={"HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output
    script = tmp_path / ".bash_completions" / "attntrace.sh"
    assert "_ATTNTRACE_COMPLETE" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()


@pytest.mark.parametrize(
    ("words", "cword", "offered"),
    [
        ("attntrace ru", 1, ["run"]),
        ("attntrace he", 1, ["heads"]),
        ("attntrace kv", 1, ["kv-cache"]),
        ("attntrace run --wi", 2, ["--width"]),
        ("attntrace --col", 1, ["--color"]),
    ],
)
def test_bash_completes_commands_and_flags(words: str, cword: int, offered: list[str]) -> None:
    """The protocol the bash script speaks: COMP_WORDS and COMP_CWORD in, one word a line."""
    env = {"_ATTNTRACE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    result = CliRunner().invoke(app, [], env=env, prog_name="attntrace")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == offered


def _sample_names() -> list[str]:
    """The shipped samples, read from the folder itself (a stem with YAML and JSON is one)."""
    folder = Path(__file__).parents[2] / "attntrace" / "samples"
    stems = {p.stem for p in folder.iterdir() if p.suffix in (".yaml", ".json")}
    return sorted(stems - {"index"})


DTYPE_NAMES = ["float64", "float32", "float16", "bfloat16"]


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("attntrace run -s ", _sample_names()),
        ("attntrace run --sample it", ["it-animal"]),
        ("attntrace grad -s t", ["the-cat-sat", "two-heads"]),
        ("attntrace run --color ", ["auto", "always", "never"]),
        ("attntrace --color a", ["auto", "always"]),
        ("attntrace samples --color n", ["never"]),
        ("attntrace run -m ", ["minilm", "smollm2", "gemma3"]),
        ("attntrace heads --model s", ["smollm2"]),
        ("attntrace explore -m g", ["gemma3"]),
        ("attntrace run --dtype ", DTYPE_NAMES),
        ("attntrace decode --dtype f", ["float64", "float32", "float16"]),
        ("attntrace run --softmax-dtype b", ["bfloat16"]),
        ("attntrace run --accumulate ", ["float32", "dtype"]),
        ("attntrace softmax --dtype ", DTYPE_NAMES),
        ("attntrace kv-cache --dtype ", ["fp32", "fp16", "bf16", "int8"]),
        ("attntrace kv-cache --preset llama", ["llama2-7b", "llama2-70b", "llama3-8b"]),
        ("attntrace grad --loss ", ["attend", "mse"]),
        ("attntrace train --loss m", ["mse"]),
        ("attntrace train --init ", ["model", "random"]),
        ("attntrace flash --variant ", ["1", "2"]),
        ("attntrace --show-completion ", ["bash", "zsh", "fish", "powershell", "pwsh"]),
        ("attntrace --install-completion z", ["zsh"]),
        ("attntrace run -s nothing-like-it", []),
    ],
)
def test_bash_completes_a_flags_values(words: str, offered: list[str], tmp_path: Path) -> None:
    """`attntrace run -s <Tab>` offers the samples, not the files here; a flag with a
    fixed set of values offers those (an empty answer lets bash fall back to files).
    The model stores are empty ones, so --model offers the catalogue alone."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {"_ATTNTRACE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    env |= {"HF_HUB_CACHE": str(tmp_path / "hub"), "OLLAMA_MODELS": str(tmp_path / "ollama")}
    result = CliRunner().invoke(app, [], env=env, prog_name="attntrace")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == offered


@pytest.mark.parametrize(
    ("args", "columns", "phrases"),
    [
        (["run", "-s", "it-animal"], 50, ["The animal didn't", "showing 3 of 11"]),
        (["softmax", "--dtype", "bfloat16", "1", "2", "3"], 80, ["share = exp", "sum to 1.0"]),
        (["decode"], 80, ["Step 2 of 3", "multiply-adds of each step"]),
        (["run", "-s", "it-animal", "--map"], 60, ["showing the top 2"]),
    ],
)
def test_no_line_of_text_ends_in_a_space_in_a_pipe(
    args: list[str], columns: int, phrases: list[str]
) -> None:
    """Rich's word wrapping keeps the space it breaks at (`…because it was ⏎`); a pipe
    or a file keeps it too. The lines of text that wrap here end in their last word (a
    table's row may end in its padding: the whole-output check is where there is none)."""
    out = invoke(*args, columns=columns).stdout
    for phrase in phrases:
        lines = [line for line in out.splitlines() if line.startswith(phrase)]
        assert lines, phrase
        assert all(line == line.rstrip(" ") for line in lines), lines
    if args[0] != "decode":  # decode's K and V caches stand side by side, padded
        assert [line for line in out.splitlines() if line.endswith(" ")] == []
