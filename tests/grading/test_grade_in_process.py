"""grade_function, the plugin's way of grading: a student's exit, interrupt and other
BaseException are its failures; Ctrl-C still stops the run."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from attntrace.grading.grader import grade_function
from attntrace.grading.words import report_text


def test_sys_exit_is_the_students_failure() -> None:
    def attention(*args: object, causal: bool = False) -> object:
        sys.exit(0)

    report = grade_function(attention)
    first = report.first_failure
    assert first is not None
    assert first.message.startswith("raised SystemExit: 0 at test_grade_in_process.py:")
    assert report.score == (0, 24)


def test_a_raised_keyboard_interrupt_is_the_students_failure() -> None:
    def attention(*args: object, causal: bool = False) -> object:
        raise KeyboardInterrupt

    report = grade_function(attention)
    assert "raised KeyboardInterrupt at test_grade_in_process.py:" in report_text(report)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_ctrl_c_stops_the_run() -> None:
    """SIGINT while a call runs is a real interrupt: it goes up, not into the report."""

    def attention(*args: object, causal: bool = False) -> object:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        return None

    with pytest.raises(KeyboardInterrupt):
        grade_function(attention)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
