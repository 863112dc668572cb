"""The README's examples are real: every ``console`` block is run and its output compared.

A block is a ``$ command`` line followed by what it prints (stdout and stderr, at 80
columns, no colour, run from an empty directory); ``tools/regenerate_goldens.py``
rewrites the outputs from the code. Each ``pycon`` block runs as a doctest, and the first
lines must be the two set-up commands that ``.ci/run`` uses.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
from goldens import README, console_blocks, example_folder, run_shell, why_not_run
from helpers import WEIGHTS_MISSING
from paths import ROOT


@pytest.mark.parametrize(("command", "output"), console_blocks(), ids=lambda x: x[:40])
def test_console_example(command: str, output: str, tmp_path: Path) -> None:
    reason = why_not_run(command)
    if reason is not None:
        pytest.skip(reason)
    actual = run_shell(command, example_folder(tmp_path, README))
    assert actual == output
    assert actual.strip(), "an example that prints nothing shows nothing"


PYCON_BLOCK = re.compile(r"```pycon\n(.*?)```", re.DOTALL)


def pycon_blocks() -> list[str]:
    return PYCON_BLOCK.findall(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("index", range(len(pycon_blocks())))
def test_python_example(index: int) -> None:
    """Each ``pycon`` block is a doctest, run in a fresh namespace as a new session."""
    block = pycon_blocks()[index]
    if "attntrace.real" in block and WEIGHTS_MISSING is not None:
        pytest.skip(WEIGHTS_MISSING)
    test = doctest.DocTestParser().get_doctest(block, {}, f"README-{index}", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert len(test.examples) >= 5


def test_the_python_example_is_there() -> None:
    """A short session of the plain API; the whole session and the one of the real
    models' layers are in docs/ (tests/test_docs.py runs and checks them)."""
    blocks = pycon_blocks()
    assert len(blocks) == 1
    assert "from attntrace import trace_attention" in blocks[0]


def test_first_lines_are_the_setup_commands_and_ci_runs_the_test_one() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[3].endswith('pip install . && attntrace run "cat eats fish"')
    test_command = lines[4]
    assert test_command.endswith("&& pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
