"""`grade`: a student's attention function judged on samples and hidden models
(docs/teaching.md).

Exit codes as check's: 0 every case passes, 1 a case fails (the student's exception,
hang or crash included), 2 bad input (no such file, not .py, a syntax error, an import
that fails, no such function).
"""

from __future__ import annotations

from typing import Annotated

import typer

from attntrace.cli.emit import emit
from attntrace.cli.exits import bad_input_fails
from attntrace.cli.options import json_flag


def grade(
    target: Annotated[
        str,
        typer.Argument(
            metavar="FILE.py:FUNCTION",
            help="The student's file and function: FUNCTION(X, WQ, WK, WV, causal=False).",
        ),
    ],
    timeout: Annotated[
        str,  # read by grade, so a bad one is echoed as typed
        typer.Option(metavar="SECONDS", help="Time for the file's import and for each call."),
    ] = "10",
    as_json: Annotated[bool, json_flag("Write the grade as JSON to stdout.")] = False,
) -> None:
    """Grade a student's attention function on the samples and hidden models.

    Runs FUNCTION in a child process on the samples, on hidden random models
    and on properties of its outputs; names each failure by check's catalogue.

    Exit 0 when every case passes, 1 when one fails, 2 when the file cannot
    be imported or has no such function."""
    from attntrace.grading.grader import grade_file

    with bad_input_fails():
        report = grade_file(target, timeout)

    def document() -> dict[str, object]:
        from attntrace.grading.grade_json import grade_to_dict

        return grade_to_dict(report)

    def view() -> None:
        from attntrace.cli.pipes import stdout_console
        from attntrace.grading.views.grade import grade_view

        stdout_console().print(grade_view(report), crop=False)

    emit(as_json, document, view, verdict=report.exit_code)
