"""The pytest plugin: a teacher's test file, run by pytest in a subprocess with the
plugin loaded from its entry point, asserts students' functions with grade's verdict."""

from __future__ import annotations

import subprocess
import sys

import pytest
from grade_students import SOURCES

pytest_plugins = ["pytester"]

TEACHER = """
import student_right
import student_unscaled


def test_right(attntrace_grader):
    report = attntrace_grader.assert_correct(student_right.attention)
    assert report.score == (24, 24)


def test_unscaled(attntrace_grader):
    attntrace_grader.assert_correct(student_unscaled.attention)
"""


@pytest.mark.long
def test_a_teachers_test_gets_the_verdict_as_its_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        student_right=SOURCES["correct_numpy"],
        student_unscaled=SOURCES["no_scaling"],
        test_homework=TEACHER,
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: graded student_unscaled.py:attention",
            "*first failure: cat-eats-fish, causal=False",
            "*diagnosis: no-scaling — the scores were not divided by √d_k",
            "*8 of 24 cases pass; the first to fail is cat-eats-fish, causal=False (no-scaling)",
        ]
    )
    assert "attntrace/grading" not in result.stdout.str()  # the teacher's frames, not ours


@pytest.mark.long
def test_a_student_exception_is_a_failure_with_its_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        student_raises=SOURCES["raises"],
        test_homework="""
import student_raises


def test_it(attntrace_grader):
    attntrace_grader.assert_correct(student_raises.attention)
""",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*raised ValueError: matmul*", "*student_raises.py:6: scores = Q @ K / np.sqrt*"]
    )


@pytest.mark.long
def test_the_plugin_loads_nothing_heavy() -> None:
    """Every pytest run loads it: numpy and Rich wait until the fixture is used."""
    code = (
        "import sys, attntrace.grading.pytest_plugin; "
        "print(sorted(m for m in ('numpy', 'rich', 'typer') if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert found.strip() == "[]"


@pytest.mark.long
def test_a_students_exit_and_interrupt_are_its_failures(pytester: pytest.Pytester) -> None:
    """``sys.exit(0)``, ``raise KeyboardInterrupt`` and a BaseException of the student's
    own fail that test, with the student's line, in the CLI's words; the session goes
    on to the next test (a KeyboardInterrupt the student raises is no Ctrl-C)."""
    pytester.makepyfile(
        student_exits="import sys\n\n\ndef attention(X, WQ, WK, WV, causal=False):\n"
        "    sys.exit(0)\n",
        student_interrupts="def attention(X, WQ, WK, WV, causal=False):\n"
        "    raise KeyboardInterrupt\n",
        student_base="class Stop(BaseException):\n    pass\n\n\n"
        'def attention(X, WQ, WK, WV, causal=False):\n    raise Stop("base")\n',
        test_homework="""
import student_base
import student_exits
import student_interrupts


def test_exits(attntrace_grader):
    attntrace_grader.assert_correct(student_exits.attention)


def test_interrupts(attntrace_grader):
    attntrace_grader.assert_correct(student_interrupts.attention)


def test_base(attntrace_grader):
    attntrace_grader.assert_correct(student_base.attention)


def test_after():
    pass
""",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*raised SystemExit: 0 at student_exits.py:5",
            "*student_exits.py:5: sys.exit(0)",
            "*raised KeyboardInterrupt at student_interrupts.py:2",
            "*student_interrupts.py:2: raise KeyboardInterrupt",
            "*raised Stop: base at student_base.py:6",
        ],
        consecutive=False,
    )
    assert "attntrace/grading" not in result.stdout.str()
