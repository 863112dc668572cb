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


def test_a_function_that_cannot_take_causal_fails_every_case_in_one_message() -> None:
    def attention(X: object, WQ: object, WK: object, WV: object, mask: object = None) -> object:
        return None

    report = grade_function(attention)
    said = (
        "attention cannot be called as attention(X, WQ, WK, WV, causal=False): "
        "its signature is (X: "  # the annotations as Python writes them
    )
    assert report.score == (0, 24)
    models = [c for c in report.cases if c.kind != "property"]
    assert all(c.message.startswith(said) for c in models), models[0].message
    assert all(c.message.endswith("mask: 'object' = None)") for c in models)
    text = report_text(report)
    assert "wrong signature" in text
    assert "grader.py" not in text
    assert "TypeError" not in text


def test_an_error_reading_the_result_is_not_placed_in_attntrace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where reading what the function returned fails (a MemoryError on a huge result),
    no line of attntrace's is named as the student's: it says when it happened."""
    import attntrace.checking.user_arrays as user_arrays

    def huge(arrays: object) -> object:
        raise MemoryError("Unable to allocate 488. MiB")

    monkeypatch.setattr(user_arrays, "given_arrays", huge)

    def attention(*args: object, causal: bool = False) -> object:
        return [[1.0]]

    report = grade_function(attention)
    first = report.first_failure
    assert first is not None
    assert first.failure is not None
    assert first.failure.where is None
    assert "while its result was read" in first.message
    assert "user_arrays" not in report_text(report)
