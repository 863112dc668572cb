"""The golden outputs and how each is made from the code, for the tests and the tool alike.

``tests/golden/NAME.txt`` holds what a command prints at a fixed width; the README's
``console`` blocks hold what a shell command prints. The tests
(``forward/test_golden_tables.py``, ``api/test_readme.py``) only compare the code's output
now with them, so they can fail; ``tools/regenerate_goldens.py`` rewrites them through
these same functions, so what it writes is exactly what the tests compare.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from helpers import WEIGHTS_MISSING, invoke, machine_independent
from paths import GOLDEN, ROOT
from typer.testing import Result  # type: ignore[attr-defined, unused-ignore]  # typer 0.26

# ---------------------------------------------------------------- tests/golden/NAME.txt

TRILLION_TOKENS = ("kv-cache", "--preset", "gpt3-175b", "--tokens", "1000000000000")
ONE_QUERY_HEAD = ("kv-cache", "--heads", "1", "--layers", "2", "--head-dim", "64", "--tokens", "1")
# name: (the command's arguments, the terminal's width, the keys typed at its prompts)
CASES: dict[str, tuple[tuple[str, ...], int, str | None]] = {
    "run-cat-eats-fish-80": (("run", "cat eats fish"), 80, None),
    "run-cat-eats-fish-40": (("run", "cat eats fish"), 40, None),
    "run-it-animal-60": (("run", "--sample", "it-animal"), 60, None),
    "run-it-animal-160": (("run", "--sample", "it-animal"), 160, None),
    "run-the-cat-sat-precision-2": (("run", "-s", "the-cat-sat", "--precision", "2"), 80, None),
    "step-softmax-80": (("run", "--step"), 80, "7\nq\n"),
    "samples-80": (("samples",), 80, None),
    "run-cat-eats-fish-equations-150": (("run", "cat eats fish"), 150, None),
    "focus-fish-80": (("run", "cat eats fish", "--focus", "fish"), 80, None),
    "focus-it-80": (("run", "-s", "it-animal", "--focus", "it"), 80, None),
    "step-focus-softmax-80": (("run", "--step", "--focus", "fish"), 80, "softmax\nq\n"),
    "softmax-article-80": (("softmax", "3.2", "4.0", "1.0", "6.2", "8.0"), 80, None),
    "softmax-overflow-80": (("softmax", "800", "799", "-1.5"), 80, None),
    "map-it-animal-80": (("run", "-s", "it-animal", "--map"), 80, None),
    "overview-100": (("run", "--overview"), 100, None),
    "run-two-heads-80": (("run", "-s", "two-heads"), 80, None),
    # gqa prints 0.875, a half-way point at 2 digits (0.88), yet exact on every machine: it
    # is a row whose scaled scores are all 0, so each weight is exp(0) / 4 = 0.25 exactly
    # and its output 0.25 · (0.5 + 2 + 0 + 1), a sum of exact quarters
    "run-gqa-160": (("run", "-s", "gqa", "--precision", "2"), 160, None),
    "run-causal-80": (("run", "-s", "causal"), 80, None),
    "run-cross-100": (("run", "-s", "cross"), 100, None),
    "run-positions-80": (("run", "-s", "positions"), 80, None),
    "focus-causal-cat-80": (("run", "-s", "causal", "--focus", "cat"), 80, None),
    "map-gqa-80": (("run", "-s", "gqa", "--map"), 80, None),
    "map-two-heads-160": (("run", "-s", "two-heads", "--map"), 160, None),
    "decode-cat-eats-fish-80": (("decode",), 80, None),
    "decode-gqa-100": (("decode", "-s", "gqa", "--precision", "2"), 100, None),
    "kv-cache-llama2-70b-80": (("kv-cache", "--preset", "llama2-70b"), 80, None),
    "kv-cache-presets-100": (("kv-cache",), 100, None),
    "kv-cache-presets-80": (("kv-cache",), 80, None),
    "kv-cache-presets-40": (("kv-cache",), 40, None),
    "kv-cache-trillion-tokens-40": (TRILLION_TOKENS, 40, None),
    "kv-cache-one-head-80": (ONE_QUERY_HEAD, 80, None),
    # the variants (docs/variants.md): a window's reasons under --focus, a sink's table
    "focus-window-mat-80": (("run", "-s", "window", "--focus", "mat"), 80, None),
    "run-sink-logit-80": (("run", "-s", "sink-logit"), 80, None),
}


def table_path(name: str) -> Path:
    return GOLDEN / f"{name}.txt"


def table_run(name: str) -> Result:
    """Run the command of golden ``name`` in-process, at its width, typing its keys."""
    args, columns, keys = CASES[name]
    return invoke(*args, input=keys, columns=columns)


def table_text(result: Result) -> str:
    """What a golden file holds of a run: its stdout, with the figures only this machine
    decides (decode's measured |Δ|) replaced by ``…``."""
    return machine_independent(result.stdout)


# ---------------------------------------------------------------- the README's examples

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def example_folder(folder: Path, page: Path) -> Path:
    """``folder`` (empty) made ready for ``page``'s examples: they name files in
    docs/examples/, so a ``docs`` link to the repository's is put in; an example that
    writes a file writes it here, never into the checkout."""
    if page.parent == DOCS or page == README:
        (folder / "docs").symlink_to(DOCS, target_is_directory=True)
    return folder


CONSOLE_BLOCK = re.compile(r"```console\n\$ (?P<command>[^\n]*)\n(?P<output>.*?)```", re.DOTALL)
REAL_MODEL = re.compile(r"attntrace (models|heads)|--model ")


def console_blocks(text: str | None = None) -> list[tuple[str, str]]:
    """Each ``console`` block of the README (or ``text``) as (command, what it prints)."""
    text = README.read_text(encoding="utf-8") if text is None else text
    return [(m["command"], m["output"]) for m in CONSOLE_BLOCK.finditer(text)]


def why_not_run(command: str) -> str | None:
    """Why ``command`` cannot run on this machine (a tool or a model missing), or None."""
    if "| jq" in command and shutil.which("jq") is None:
        return "jq is not installed"
    return WEIGHTS_MISSING if REAL_MODEL.search(command) else None


def run_shell(command: str, cwd: Path) -> str:
    """What ``command`` prints, stdout and stderr together, as the README shows it: run
    by bash in ``cwd`` (an empty folder), at 80 columns, no colour, no stdin, with this
    Python's ``attntrace`` first on the PATH."""
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


def with_outputs(text: str, output_of: Callable[[str], str | None]) -> str:
    """``text`` (the README) with each console block's output replaced by
    ``output_of(command)``; a block it gives None for is left as it is."""

    def replaced(block: re.Match[str]) -> str:
        output = output_of(block["command"])
        return block[0] if output is None else f"```console\n$ {block['command']}\n{output}```"

    return CONSOLE_BLOCK.sub(replaced, text)
