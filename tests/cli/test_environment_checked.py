"""Every ATTNTRACE_* variable is checked at the start of every command (issue 29, §4), not
only by the commands that come to read it: a bad ATTNTRACE_MAX_FILE_MB in a shell profile
is refused the first time anything runs, not on the day a file is read."""

from __future__ import annotations

import pytest
from helpers import invoke

# every command, as it runs without reading any file
COMMANDS = [
    ["run", "--json"],
    ["run", "cat eats fish", "--map"],
    ["samples"],
    ["samples", "gqa"],
    ["models", "--json"],
    ["kv-cache", "--json"],
    ["softmax", "1", "2", "3"],
    ["scaling", "--json"],
    ["decode", "--json"],
    ["flash", "--json"],
    ["grad", "-s", "it-animal", "--from", "it", "--to", "animal", "--json"],
    ["train", "-s", "it-animal", "--from", "it", "--to", "animal", "--steps", "1", "--json"],
    ["diff", "--set", "name=x", "--json"],
    ["explore", "-s", "it-animal"],
]
# a command that needs a terminal: with good values it gets as far as asking for one
NEEDS_A_TERMINAL = {
    "explore": "explore needs a terminal on stdin, stdout and stderr; from a pipe, use run --step"
}

FILE = "a positive number of MiB (from 1e-6, about a byte, to 2**30)"
MEMORY = "a number of MiB from 1 to 2**30"
VARIABLES = [
    ("ATTNTRACE_MAX_FILE_MB", "abc", FILE),
    ("ATTNTRACE_MAX_FILE_MB", "0", FILE),
    ("ATTNTRACE_MAX_MEMORY_MB", "abc", MEMORY),
    ("ATTNTRACE_MAX_MEMORY_MB", "nan", MEMORY),
    ("ATTNTRACE_MAX_TRACE_MB", "-5", MEMORY),  # 0.1.0's name, read where the new is unset
    ("ATTNTRACE_PROGRESS_AFTER", "soon", "a number of seconds ≥ 0"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
@pytest.mark.parametrize(("name", "value", "expected"), VARIABLES)
def test_a_bad_variable_is_one_line_and_exit_2_for_every_command(
    args: list[str], name: str, value: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for other in {n for n, _, _ in VARIABLES}:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, value)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"attntrace: error: {name}: expected {expected}, got {value!r}\n"


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_the_commands_run_with_good_values(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # so the refusals above are the variables', not the commands' own
    monkeypatch.setenv("ATTNTRACE_MAX_FILE_MB", "1")
    monkeypatch.setenv("ATTNTRACE_MAX_MEMORY_MB", "100")
    monkeypatch.setenv("ATTNTRACE_PROGRESS_AFTER", "inf")
    result = invoke(*args)
    if args[0] in NEEDS_A_TERMINAL:  # the variables passed: its own refusal, last of all
        assert result.exit_code == 2, result.output
        assert result.stderr == f"attntrace: error: {NEEDS_A_TERMINAL[args[0]]}\n"
        return
    assert result.exit_code == 0, result.output
