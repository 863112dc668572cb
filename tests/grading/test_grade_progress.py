"""grade's progress on a terminal: one task for preparing the cases, one for running the
function, one for judging them, and nothing of the many check and trace calls inside
(a tester saw ~38 stale "reading sample ...", "tracing ..." lines above the report,
more with every case)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from grade_students import student_file
from paths import ROOT

from attntrace.grading.grader import grade_function
from attntrace.kernel import progress

Matrix = npt.NDArray[np.float64]


class Recorder:
    """A listener that notes every task started, and which are running."""

    def __init__(self) -> None:
        self.started_tasks: list[str] = []
        self.running: set[int] = set()
        self.deepest = 0

    def started(self, description: str, total: int | None, unit: str) -> int:
        self.started_tasks.append(description)
        key = len(self.started_tasks) - 1
        self.running.add(key)
        self.deepest = max(self.deepest, len(self.running))
        return key

    def advanced(self, key: int, completed: int) -> None:
        pass

    def finished(self, key: int) -> None:
        self.running.discard(key)


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    return X @ WV  # wrong: every case is judged by check, diagnosis and all


def test_grading_reports_its_own_tasks_only() -> None:
    recorder = Recorder()
    with progress.reporting_to(recorder):
        grade_function(attention)
    assert recorder.started_tasks == ["preparing the cases", "judging the cases"]
    assert recorder.deepest == 1
    assert not recorder.running


def _environ() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ATTNTRACE_PROGRESS_AFTER": "0",
        "NO_COLOR": "1",
    }


@pytest.mark.long
def test_no_stale_progress_lines_at_80_by_24(tmp_path: Path) -> None:
    """In tmux at 80 × 24, with the display from the first moment, the report's last
    screen holds no line of progress, and nothing above the report in the history."""
    if shutil.which("tmux") is None:
        pytest.skip("no tmux")
    from tmux_pane import Pane

    student_file(tmp_path, "no_scaling")
    command = (
        f"printf 'START%s\\n' -OF-GRADE; {sys.executable} -m attntrace grade "
        "no_scaling.py:attention; printf 'END%s\\n' -OF-GRADE"
    )
    with Pane(tmp_path, environ=_environ()).start() as pane:
        pane.send(command, "Enter")
        pane.wait_for("END-OF-GRADE\n", timeout=120)
        history = pane.tmux("capture-pane", "-p", "-S", "-200", "-t", "main")
    for word in ("reading sample", "checking", "tracing", "judging", "running", "preparing"):
        assert word not in history, history
    before = history.split("START-OF-GRADE\n", 1)[1].split("graded no_scaling.py", 1)[0]
    assert before.strip() == "", history
    assert "✗ 8 of 24 cases pass" in history
