"""grade's verdicts in words, without a renderer: a case's short reason, the score line,
and the whole report as plain text for the pytest plugin's AssertionError (check's own
report, for the first failure, comes through the display hook as ``str(report)``).
The terminal view (:mod:`attntrace.grading.views.grade`) says the same words in colour.
"""

from __future__ import annotations

from attntrace.grading.report import CaseResult, GradeReport
from attntrace.visible import visible

PASS, FAIL = "✓", "✗"
#: How a property's message starts where a call it needs failed.
UNCHECKED = "cannot be checked"
#: How a case's message says its numbers are within float16's tolerance only.
COARSE = "too coarse to tell"
#: How much of the student's text a line shows.
SHOWN_LIMIT = 300


#: How a case's line marks a cause that reproduces that case alone.
ALONE_MARK = "?"
#: The line under the cases that says what the mark means.
ALONE_LEGEND = (
    f"{ALONE_MARK} that case's mistake only: no one mistake reproduces every failing case"
)
#: How a passing case's line says it has a note.
NOTED = "note"


def short_reason(case: CaseResult) -> str:
    """Why a case failed, in a few words: the mistake's id (marked where it reproduces
    that case alone), or what the call did; for a passing case with notes, ``note``."""
    if case.passed:
        return NOTED if case.notes else ""
    if case.cause is not None:
        return case.cause + (ALONE_MARK if case.alone else "")
    failure = case.failure
    if failure is not None:
        words = {
            "raised": "raised " + visible(failure.message.partition(":")[0], 40),
            "signature": "wrong signature",
            "timeout": "did not return in time",
            "crashed": "the process ended",
            "not-run": "not run",
        }
        return visible(failure.short or words.get(failure.kind, "returned nothing comparable"), 60)
    if case.kind == "property":
        return "not checked" if case.message.startswith(UNCHECKED) else "does not hold"
    first = None if case.check is None else case.check.first_divergent
    if first is not None and first.region is None:
        return "wrong shape"
    if case.precision is not None and COARSE in case.message:
        return f"{case.precision.dtype}: too coarse"
    return "no known mistake"


def shows_check(case: CaseResult) -> bool:
    """Whether the first failure is said by check's report (its arrays were compared
    and differ), not by grade's own words (a failed call, a property, an output right
    within float16's tolerance only, where check would say no mistake reproduces it)."""
    if case.check is None or case.check.ok:
        return False
    return not (case.precision is not None and COARSE in case.message)


def failure_words(case: CaseResult) -> list[str]:
    """The first failure's lines where check's report does not say it: the call's
    failure (and its line of code), or the property's words."""
    failure = case.failure
    if failure is None:
        return [visible(case.message, 2 * SHOWN_LIMIT)]
    if failure.kind == "raised":
        at = f" at {failure.where}" if failure.where else ""
        lines = [visible(f"raised {failure.message}{at}", SHOWN_LIMIT)]
    else:
        lines = [visible(failure.message, SHOWN_LIMIT)]
    if failure.code:
        lines.append(visible(f"  {failure.where}: {failure.code}", SHOWN_LIMIT))
    return lines


def score_words(report: GradeReport) -> str:
    """``all 24 cases pass``, or ``8 of 24 cases pass; the first to fail is ...``."""
    passed, total = report.score
    first = report.first_failure
    if first is None:
        return f"all {total} cases pass"
    cause = f" ({first.cause})" if first.cause is not None and not first.alone else ""
    return f"{passed} of {total} cases pass; the first to fail is {first.name}{cause}"


def header_words(report: GradeReport) -> tuple[str, str]:
    """``graded hw.py:attention`` and ``24 cases: 10 samples, 11 hidden models, ...``."""
    kinds = [case.kind for case in report.cases]
    counted = ", ".join(
        f"{kinds.count(kind)} {words}"
        for kind, words in (
            ("sample", "on samples"),
            ("random", "on hidden models"),
            ("property", "properties"),
        )
        if kind in kinds
    )
    return f"graded {visible(report.target, SHOWN_LIMIT)}", f"{len(kinds)} cases: {counted}"


def precision_words(report: GradeReport) -> str | None:
    """``returned float16: held to float32's tolerance ...`` where a case's arrays came
    back below float32 (the lowest such dtype), else None."""
    found = [case.precision for case in report.cases if case.precision is not None]
    if not found:
        return None
    return max(found, key=lambda p: p.rtol_own).words()


def notes_words(report: GradeReport) -> list[str]:
    """The lines under the cases: what ``?`` means where a case has it, and the passing
    cases' notes, each note once with how many cases it is on."""
    lines = [ALONE_LEGEND] if any(case.alone for case in report.cases) else []
    noted: dict[str, list[str]] = {}
    for case in report.cases:
        for note in case.notes:
            noted.setdefault(note, []).append(case.name)
    for note, names in noted.items():
        on = names[0] if len(names) == 1 else f"{len(names)} cases"
        lines.append(visible(f"note ({on}, output right): {note}", 2 * SHOWN_LIMIT))
    return lines


def report_text(report: GradeReport) -> str:
    """The report as plain text, as `attntrace grade` prints it without colour."""
    width = max(len(case.name) for case in report.cases)
    note = precision_words(report)
    lines = [*header_words(report), *([note] if note else []), ""]
    for case in report.cases:
        why = short_reason(case)
        name = case.name.ljust(width) + "  " + why if why else case.name
        lines.append(f"{PASS if case.passed else FAIL} {name}")
    if notes := notes_words(report):
        lines += ["", *notes]
    first = report.first_failure
    if first is not None:
        lines += ["", f"first failure: {first.name}", ""]
        if shows_check(first):
            assert first.check is not None
            lines.append(str(first.check))
            if first.across is not None:
                lines += ["", visible(first.across, 2 * SHOWN_LIMIT)]
        else:
            lines += failure_words(first)
    lines += ["", f"{FAIL if first is not None else PASS} {score_words(report)}"]
    return "\n".join(lines)
