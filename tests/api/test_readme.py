"""The README's examples are real: every ``console`` block is run and its output compared.

A block is a ``$ command`` line followed by what it prints (stdout and stderr, at 80
columns, no colour, run from an empty directory). ``ATTNTRACE_REGENERATE_GOLDEN=1``
rewrites the outputs from the code. Each ``pycon`` block runs as a doctest, and the first
lines must be the two set-up commands that ``.ci/run`` uses.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from attntrace.real.catalog import CATALOG

README = ROOT / "README.md"
REGENERATE = os.environ.get("ATTNTRACE_REGENERATE_GOLDEN") == "1"
CONSOLE_BLOCK = re.compile(r"```console\n\$ (?P<command>[^\n]*)\n(?P<output>.*?)```", re.DOTALL)
REAL_MODEL = re.compile(r"attntrace (models|heads)|--model ")


def console_blocks() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    return [(m["command"], m["output"]) for m in CONSOLE_BLOCK.finditer(text)]


def run_shell(command: str, cwd: Path) -> str:
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "COLUMNS": "80",
        "NO_COLOR": "1",
        "TERM": "dumb",
    }
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    return result.stdout


@pytest.mark.parametrize(("command", "output"), console_blocks(), ids=lambda x: x[:40])
def test_console_example(command: str, output: str, tmp_path: Path) -> None:
    if "| jq" in command and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    missing = [m.install for m in CATALOG if not m.installed]
    if REAL_MODEL.search(command) and missing:
        pytest.skip(f"a real model's weights are not installed: {'; '.join(missing)}")
    actual = run_shell(command, tmp_path)
    if REGENERATE:
        text = README.read_text(encoding="utf-8")
        old = f"```console\n$ {command}\n{output}```"
        README.write_text(text.replace(old, f"```console\n$ {command}\n{actual}```"))
        return
    assert actual == output
    assert actual.strip(), "an example that prints nothing shows nothing"


PYCON_BLOCK = re.compile(r"```pycon\n(.*?)```", re.DOTALL)


def pycon_blocks() -> list[str]:
    return PYCON_BLOCK.findall(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("index", range(len(pycon_blocks())))
def test_python_example(index: int) -> None:
    """Each ``pycon`` block is a doctest, run in a fresh namespace as a new session."""
    block = pycon_blocks()[index]
    missing = [m.install for m in CATALOG if not m.installed]
    if "attntrace.real" in block and missing:
        pytest.skip(f"a real model's weights are not installed: {'; '.join(missing)}")
    test = doctest.DocTestParser().get_doctest(block, {}, f"README-{index}", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert len(test.examples) >= 5


def test_the_python_examples_are_there() -> None:
    """The session of the plain API and the one of the real models' layers."""
    blocks = pycon_blocks()
    assert len(blocks) == 2
    assert "from attntrace import trace_attention" in blocks[0]
    assert "from attntrace.real.layer import" in blocks[1]


def test_first_lines_are_the_setup_commands_and_ci_runs_the_test_one() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[3].endswith('pip install . && attntrace run "cat eats fish"')
    test_command = lines[4]
    assert test_command.endswith("&& pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
