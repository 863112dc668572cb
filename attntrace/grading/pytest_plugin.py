"""The pytest plugin (entry point ``pytest11``): the ``attntrace_grader`` fixture, so a
teacher's test asserts a student's function correct with grade's verdict as the message.

    def test_attention(attntrace_grader):
        attntrace_grader.assert_correct(student.attention)

Loaded by every pytest run where attntrace is installed: it imports nothing heavy until
the fixture is used. The function is called in pytest's own process, directly, on the
cases of `attntrace grade` (docs/teaching.md): its exceptions are failures, reported with
their line, ``sys.exit`` and a ``raise KeyboardInterrupt`` of its own included (Ctrl-C
still stops pytest: :func:`attntrace.grading.grader.grade_function` tells the two
apart); there is no time limit of the plugin's own (pytest-timeout gives one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from attntrace.grading.report import GradeReport


class Grader:
    """What the fixture gives: :meth:`grade` a function, or :meth:`assert_correct` it."""

    def grade(self, function: Callable[..., object]) -> GradeReport:
        """The report on ``function``: each case, the score, the first failure."""
        from attntrace.grading.grader import grade_function

        return grade_function(function)

    def assert_correct(self, function: Callable[..., object]) -> GradeReport:
        """Raise an AssertionError whose message is `attntrace grade`'s report unless
        every case passes; return the report when they do."""
        __tracebackhide__ = True  # pytest shows the teacher's line, not attntrace's frames
        report = self.grade(function)
        if not report.passed:
            from attntrace.grading.words import report_text

            raise AssertionError(report_text(report))
        return report


@pytest.fixture
def attntrace_grader() -> Grader:
    """Grades a student's ``attention(X, WQ, WK, WV, causal=False)`` as `attntrace grade`
    does: ``attntrace_grader.assert_correct(student.attention)``."""
    return Grader()
