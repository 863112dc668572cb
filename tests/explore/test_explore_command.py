"""`attntrace explore` as a command: refused without a terminal or with bad flags (one
line, exit 2), and once in a real terminal (tmux) at 80×24."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid

import pytest
from helpers import invoke, one_line_error
from paths import ROOT


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


def capture(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=True
    ).stdout


def wait_for(session: str, needle: str, timeout: float = 60) -> str:
    end = time.monotonic() + timeout
    while True:
        screen = capture(session)
        if needle in screen:
            return screen
        assert time.monotonic() < end, f"never saw {needle!r}:\n{screen}"
        time.sleep(0.1)


@pytest.mark.long
@pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux here")
def test_in_tmux_at_80_by_24_it_shows_softmax_and_q_gives_the_shell_back() -> None:
    session = f"attntrace-explore-{uuid.uuid4().hex[:8]}"
    keys = ["tmux", "send-keys", "-t", session]
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", "-c", str(ROOT)],
        check=True,
        env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "HOME": str(ROOT)},
    )
    try:
        subprocess.run([*keys, "PS1='ready> '; clear", "Enter"], check=True)
        wait_for(session, "ready>")
        command = f"{sys.executable} -m attntrace explore -s it-animal"
        subprocess.run([*keys, command, "Enter"], check=True)
        screen = wait_for(session, "Stage 7 of 8")
        assert "softmax = exp(scaled − row max)" in screen
        assert "street" in screen
        assert "animal" in screen
        subprocess.run([*keys, "Down"], check=True)
        wait_for(session, "softmax[animal, The]")
        subprocess.run([*keys, "q"], check=True)
        screen = wait_for(session, "ready>", 30)
        assert "Stage 7 of 8" not in screen  # the screen restored, the shell's prompt back
        subprocess.run([*keys, "echo done-$((40+2))", "Enter"], check=True)
        wait_for(session, "done-42")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


@pytest.mark.long
@pytest.mark.skipif(shutil.which("tmux") is None, reason="no tmux here")
def test_in_tmux_smollm2_layer_3_opens_and_h_changes_the_head() -> None:
    """The issue's done-when, in a real terminal at 80 × 24: SmolLM2's layer 3 opens on
    softmax, h shows head 1's, q gives the shell back. (How fast: benchmarks/explore.py.)"""
    from attntrace.real.catalog import find_model

    if not find_model("smollm2").installed:
        pytest.skip("SmolLM2 is not installed")
    session = f"attntrace-explore-{uuid.uuid4().hex[:8]}"
    keys = ["tmux", "send-keys", "-t", session]
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", "-c", str(ROOT)],
        check=True,
        env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "HOME": str(ROOT)},
    )
    try:
        subprocess.run([*keys, "PS1='ready> '; clear", "Enter"], check=True)
        wait_for(session, "ready>")
        command = f"{sys.executable} -m attntrace explore -m smollm2 --layer 3"
        subprocess.run([*keys, command, "Enter"], check=True)
        screen = wait_for(session, "· softmax  head 0")
        assert "smollm2 L3" in screen
        assert "softmax[The, The], head 0" in screen
        subprocess.run([*keys, "h"], check=True)
        screen = wait_for(session, "· softmax  head 1")
        assert "softmax[The, The], head 1" in screen
        subprocess.run([*keys, "q"], check=True)
        wait_for(session, "ready>", 30)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
