"""Issue 30's done-when for step mode, in a real terminal: at 80×24 under tmux, walking
every page of every stage with space, each screen keeps its `Stage k of N` line on top
(`run -s it-animal --step --focus it`, and SmolLM2's layer 3 head 0 when installed)."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import time
from pathlib import Path

import pytest
from helpers import needs_weights
from tmux_pane import Pane

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def screen(pane: Pane) -> list[str]:
    return pane.capture().rstrip("\n").split("\n")


def changed(pane: Pane, before: list[str] | None, wait: float) -> list[str]:
    """The pane once it differs from ``before`` and has a prompt (or after ``wait`` s)."""
    end = time.monotonic() + wait
    while True:
        now = screen(pane)
        ready = any(line.startswith("(") and line.rstrip().endswith(">") for line in now)
        if (ready and now != before) or time.monotonic() > end:
            return now
        time.sleep(0.1)


def walk_every_page(args: list[str], stages: int, start_wait: float) -> set[int]:
    """Press space from the first page of stage 1 to the end; every capture's first line
    must be its `Stage k of N` line. The stage numbers seen."""
    command = shlex.join([sys.executable, "-m", "attntrace", *args]) + "; sleep 60"
    env = {"NO_COLOR": "1", "COLUMNS": "80", "LINES": "24"}
    seen: set[int] = set()
    with Pane(ROOT).start(command, env=env) as pane:
        shown = changed(pane, None, start_wait)
        for _ in range(400):
            first = re.match(rf"Stage (\d+) of {stages} · ", shown[0])
            assert first is not None, "\n".join(shown)
            assert len(shown) <= 24
            seen.add(int(first.group(1)))
            status = next((line for line in shown if line.startswith("lines ")), "")
            if int(first.group(1)) == stages and ("end" in status or not status):
                break
            pane.send("Space")
            shown = changed(pane, shown, 20)
    return seen


def test_it_animal_with_focus_keeps_every_stage_title_on_screen() -> None:
    seen = walk_every_page(["run", "-s", "it-animal", "--step", "--focus", "it"], 8, 30)
    assert seen == set(range(1, 9))


@needs_weights
def test_smollm2_layer_3_head_0_keeps_every_stage_title_on_screen() -> None:
    seen = walk_every_page(
        ["run", "-m", "smollm2", "--layer", "3", "--head", "0", "--step"], 11, 120
    )
    assert seen == set(range(1, 12))
