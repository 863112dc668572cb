"""`attntrace quiz` as a process: answers piped in (a script), Ctrl-C at the prompt
(exit 130, no traceback), and a real terminal at 80×24 under tmux, where the hidden
table and the prompt end the screen and a typed answer is judged."""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tmux_pane import Pane

ROOT = Path(__file__).resolve().parents[2]
FISH = ["quiz", "-s", "cat-eats-fish", "--stage", "softmax", "--cell", "fish,fish"]
pytestmark = pytest.mark.long


def environ() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80", "NO_COLOR": "1"}


def piped(answers: str, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "attntrace", *FISH, *flags]
    return subprocess.run(
        command,
        input=answers,
        capture_output=True,
        text=True,
        timeout=60,
        env=environ(),
        check=False,
    )


def test_answers_from_a_pipe() -> None:
    right = piped("0.9983\n")
    assert right.returncode == 0, right.stderr
    assert "✓ correct" in right.stdout
    assert right.stderr == ""
    wrong = piped("0.5\n")
    assert wrong.returncode == 1
    assert "Hint 1 of 3" in wrong.stdout
    assert "no answer (end of input)" in wrong.stdout


@pytest.mark.parametrize(("answer", "code"), [("0.5", 1), ("0.9983", 0)])
def test_a_reader_that_leaves_early_keeps_the_verdict(answer: str, code: int) -> None:
    command = shlex.join([sys.executable, "-m", "attntrace", *FISH])
    done = subprocess.run(
        ["bash", "-c", f"echo {answer} | {command} | head -n 1; exit ${{PIPESTATUS[1]}}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ(),
        check=False,
    )
    assert done.returncode == code
    assert done.stderr == ""


def test_json_from_a_pipe_is_the_whole_stdout() -> None:
    done = piped("0.5\n0.9983\n", "--json")
    assert done.returncode == 0
    document = json.loads(done.stdout)
    assert document["questions"][0]["correct"] is True
    assert done.stderr == ""


def test_ctrl_c_at_the_prompt_exits_130() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "attntrace", *FISH],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ(),
    )
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while b"fish] = ?" not in seen:  # the prompt: the question waits
            left = deadline - time.monotonic()
            assert left > 0, seen.decode()
            if select.select([process.stdout], [], [], left)[0]:
                chunk = os.read(process.stdout.fileno(), 4096)
                assert chunk, seen.decode()
                seen += chunk
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130
    assert b"Traceback" not in err


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_at_80_by_24_the_question_ends_the_screen() -> None:
    command = shlex.join([sys.executable, "-m", "attntrace", *FISH]) + "; sleep 30"
    env = {"NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    with Pane(ROOT).start(command, env=env) as pane:
        screen = pane.wait_for("fish] = ?", 60).rstrip("\n").split("\n")
        assert len(screen) <= 24
        assert all(len(line) <= 80 for line in screen)
        assert screen[-1].startswith("softmax[fish, fish] = ?")
        assert any(line.split() == ["fish", "·", "·", "?"] for line in screen)
        pane.send("0.5", "Enter")
        pane.wait_for("Hint 1 of 3", 30)
        time.sleep(0.3)
        pane.send("0.9983", "Enter")
        assert "✓ correct" in pane.wait_for("✓ correct", 30)
