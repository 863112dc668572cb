"""`attntrace explore` as a command: refused without a terminal or with bad flags (one
line, exit 2), and once in a real terminal (tmux) at 80×24."""

from __future__ import annotations

import shutil
import sys

import pytest
from helpers import invoke, one_line_error
from paths import ROOT
from tmux_pane import Pane

# The shell in the pane starts clean: no colour settings or prompt from the caller.
SHELL_ENVIRON = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "HOME": str(ROOT)}


def test_without_a_terminal_it_says_to_use_step_mode() -> None:
    line = one_line_error(invoke("explore", "-s", "it-animal"))
    assert line == (
        "attntrace: error: explore needs a terminal on stdin, stdout and stderr; "
        "from a pipe, use run --step"
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-s", "nope"], ["nope"]),
        (["-s", "it-animal", "--from", "it"], ["--to"]),
        (["-s", "it-animal", "--dtype", "float16", "--from", "it", "--to", "animal"], ["--dtype"]),
        (["-s", "it-animal", "--model", "smollm2"], ["--model"]),
        (["--layer", "3"], ["--model"]),
    ],
)
def test_bad_flags_are_one_line(args: list[str], words: list[str]) -> None:
    one_line_error(invoke("explore", *args), *words)


@pytest.mark.long
@pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux here")
def test_in_tmux_at_80_by_24_it_shows_softmax_and_q_gives_the_shell_back() -> None:
    with Pane(ROOT, environ=SHELL_ENVIRON).start() as pane:
        pane.send("PS1='ready> '; clear", "Enter")
        pane.wait_for("ready>")
        pane.send(f"{sys.executable} -m attntrace explore -s it-animal", "Enter")
        screen = pane.wait_for("Stage 7 of 8")
        assert "softmax = exp(scaled − row max)" in screen
        assert "street" in screen
        assert "animal" in screen
        pane.send("Down")
        pane.wait_for("softmax[animal, The]")
        pane.send("q")
        screen = pane.wait_for("ready>", 30)
        assert "Stage 7 of 8" not in screen  # the screen restored, the shell's prompt back
        pane.send("echo done-$((40+2))", "Enter")
        pane.wait_for("done-42")


@pytest.mark.long
@pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux here")
def test_in_tmux_smollm2_layer_3_opens_and_h_changes_the_head() -> None:
    """The issue's done-when, in a real terminal at 80 × 24: SmolLM2's layer 3 opens on
    softmax, h shows head 1's, q gives the shell back. (How fast: benchmarks/explore.py.)"""
    from attntrace.real.catalog import find_model

    if not find_model("smollm2").installed:
        pytest.skip("SmolLM2 is not installed")
    with Pane(ROOT, environ=SHELL_ENVIRON).start() as pane:
        pane.send("PS1='ready> '; clear", "Enter")
        pane.wait_for("ready>")
        pane.send(f"{sys.executable} -m attntrace explore -m smollm2 --layer 3", "Enter")
        # the header is drawn before the story pane: wait for the pane's line, which
        # comes last (under CI's load the header was seen alone)
        screen = pane.wait_for("softmax[The, The], head 0")
        assert "· softmax  head 0" in screen
        assert "smollm2 L3" in screen
        pane.send("h")
        screen = pane.wait_for("softmax[The, The], head 1")
        assert "· softmax  head 1" in screen
        pane.send("q")
        pane.wait_for("ready>", 30)
