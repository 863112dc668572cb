"""`attntrace grade`'s report as a person reads it (docs/teaching.md).

Top to bottom: what was graded; a line per case (✓ passes, ✗ fails, with the mistake
that reproduces it or why it failed); then the first failure in check's own words (its
stage lines, the first differing cell, the region, the diagnosis), or the student's
exception with its line; last, the score. Every mark is a character as well as a
colour (NO_COLOR, pipes). The words are :mod:`attntrace.grading.words`', which shows the
student's text (an exception's message, a line of its source, the file's name) through
:func:`attntrace.visible.visible`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from attntrace.checking.views.report import check_view
from attntrace.grading.report import CaseResult, GradeReport
from attntrace.grading.words import (
    FAIL,
    PASS,
    failure_words,
    header_words,
    notes_words,
    precision_words,
    score_words,
    short_reason,
    shows_check,
)
from attntrace.ui.shown import pad
from attntrace.ui.wrap import Wrapped

_STYLE = {PASS: "bold green", FAIL: "bold red"}


def grade_view(report: GradeReport) -> Group:
    """The whole report, for ``console.print``."""
    graded, counted = header_words(report)
    parts: list[RenderableType] = [
        Wrapped(Text(graded, style="bold")),
        Wrapped(Text(counted, style="dim")),
        *([Wrapped(Text(note, style="yellow"))] if (note := precision_words(report)) else []),
        Text(""),
        CaseLines(report.cases),
    ]
    if notes := notes_words(report):
        parts += [Text(""), *(Wrapped(Text(line, style="yellow")) for line in notes)]
    first = report.first_failure
    if first is not None:
        parts += [Text(""), *first_failure(first)]
    mark = PASS if first is None else FAIL
    parts += [
        Text(""),
        Wrapped(Text.assemble((mark, _STYLE[mark]), " ", (score_words(report), _STYLE[mark]))),
    ]
    return Group(*parts)


@dataclass(frozen=True)
class CaseLines:
    """A line per case: the mark, the name, and for a failure why, in a column; where
    the line is wider than the terminal, why goes on the next line, indented."""

    cases: tuple[CaseResult, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(cell_len(case.name) for case in self.cases)
        for case in self.cases:
            mark = PASS if case.passed else FAIL
            why = short_reason(case)
            style = "dim" if case.passed else "yellow"
            first = Text.assemble((mark, _STYLE[mark]), " ")
            if not why:
                yield Wrapped(Text.assemble(first, case.name))
            elif 2 + width + 2 + cell_len(why) <= options.max_width:
                yield Text.assemble(first, pad(case.name, width), "  ", (why, style))
            else:
                yield Wrapped(Text.assemble(first, case.name))
                yield Wrapped(Text.assemble("    ", (why, style)))


def first_failure(case: CaseResult) -> list[RenderableType]:
    """The first failing case, said as check says it, or as the call failed."""
    head = Wrapped(Text.assemble(("first failure: ", "bold"), (case.name, "bold")))
    if shows_check(case):
        assert case.check is not None
        parts: list[RenderableType] = [head, Text(""), check_view(case.check)]
        if case.across is not None:
            parts += [Text(""), Wrapped(Text(case.across, style="yellow"))]
        return parts
    return [head, Text(""), *(Wrapped(Text(line)) for line in failure_words(case))]
