"""Each case judged from its calls' outcomes: a sample's or a hidden model's output held
to attntrace's trace by `check` (which names the catalogue's mistake that reproduces
it), a property by :mod:`attntrace.grading.properties`.

`check` compares what the function returned, each array held to its dtype's tolerance
but never looser than float32's (the inputs are float64: a float16 output gets no
float16-sized slack, :mod:`attntrace.grading.precision`), and where the function
returned a dict of stages, each stage: the feedback is check's, stage by stage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace

from attntrace.api import PYTHON_NAMES, checked
from attntrace.checking.given import GivenArray
from attntrace.checking.report import CheckReport, Divergence
from attntrace.checking.tolerance import TOLERANCES
from attntrace.errors import InputError
from attntrace.grading.cases import Call, Case
from attntrace.grading.outcome import Failed, Outcome, Returned
from attntrace.grading.precision import Precision, held_arrays, lowered, power
from attntrace.grading.properties import judge_property
from attntrace.grading.report import CaseResult, Cell, GradeReport
from attntrace.grading.words import COARSE
from attntrace.kernel.stage_names import ALIASES


def grade_outcomes(
    target: str, cases: Sequence[Case], calls: Sequence[Call], outcomes: Sequence[Outcome]
) -> GradeReport:
    """The report of ``target``: every case judged from ``outcomes`` (one per call)."""
    from attntrace.kernel import progress

    judged: list[CaseResult] = []
    # one task, counted by cases: the reads, traces and checks inside (several a case)
    # report to nobody, or a terminal's display would grow a line for each
    with progress.task("judging the cases", len(cases), "cases") as task:
        for case in cases:
            with progress.reporting_to(None):
                if case.kind == "property":
                    judged.append(judge_property(case, calls, outcomes))
                else:
                    judged.append(judge_model_case(case, outcomes[case.calls[0]]))
            task.advance()
    return GradeReport(target, tuple(_narrowed(judged)))


def _narrowed(judged: list[CaseResult]) -> list[CaseResult]:
    """Each failing case's cause, narrowed by the others (:func:`_tied`), then said to be
    that case's alone where other failing cases are reproduced by no mistake
    (:func:`_alone`)."""
    return _alone(_tied(judged))


def _tied(judged: list[CaseResult]) -> list[CaseResult]:
    """Where one case cannot tell two mistakes apart (softmaxᵀ·V and softmax down the
    columns give the same numbers when the scores are symmetric), the mistake that
    reproduces every diagnosed case is the one named."""
    candidates = [_candidates(case) for case in judged if _candidates(case)]
    if len(candidates) < 2:
        return judged
    common = set.intersection(*(set(ids) for ids in candidates))
    messages = {
        case.check.diagnosis.cause: case.check.diagnosis.message
        for case in judged
        if case.check is not None and case.check.diagnosis is not None
    }
    narrowed: list[CaseResult] = []
    for case in judged:
        ids = _candidates(case)
        best = next((cause for cause in ids if cause in common), None)
        if best is None or best == case.cause:
            narrowed.append(case)
            continue
        stage = case.message.split(" ", 1)[0]
        said = messages.get(best, "")
        verdict = f"{best}{' — ' + said if said else ''}"
        same = f"on this case {case.cause} gives the same numbers"
        message = f"{stage} differs: {verdict} ({same}; the other cases tell them apart)"
        across = f"across the cases: {verdict} ({same})"
        narrowed.append(replace(case, cause=best, message=message, across=across))
    return narrowed


#: What a case's message gains where its cause reproduces it alone.
ALONE = "this case only: no one mistake reproduces every case"


def _alone(judged: list[CaseResult]) -> list[CaseResult]:
    """Where some failing cases are reproduced by a mistake and others, their arrays
    compared, by none, no one mistake of the catalogue explains the student (a bug
    outside it, ÷√d_v, matches a mistake on a case whose sizes happen to agree): each
    diagnosed case says its cause is its own, and the verdict across claims none."""
    if not any(_unexplained(case) for case in judged):
        return judged
    return [
        replace(
            case,
            alone=True,
            message=f"{case.message} ({ALONE})",
            across=(
                "across the cases: no one mistake of the catalogue reproduces every "
                f"failing case; {case.cause} reproduces this case only"
            ),
        )
        if not case.passed and case.cause is not None and case.check is not None
        else case
        for case in judged
    ]


def _unexplained(case: CaseResult) -> bool:
    """A failing case whose arrays were compared and differ, reproduced by no mistake
    (not a failed call, a property, or an output right within float16's tolerance)."""
    return (
        not case.passed
        and case.cause is None
        and case.failure is None
        and case.check is not None
        and not case.check.ok
        and COARSE not in case.message
    )


def _candidates(case: CaseResult) -> tuple[str, ...]:
    """The catalogue ids that reproduce a failing case: its cause, then the ties."""
    if case.passed or case.cause is None or case.check is None:
        return ()
    diagnosis = case.check.diagnosis
    return (case.cause,) if diagnosis is None else (diagnosis.cause, *diagnosis.also)


def judge_model_case(case: Case, outcome: Outcome) -> CaseResult:
    """A sample's or hidden model's call against the trace, by `check`, each array held
    to float32's tolerance at the loosest (:mod:`attntrace.grading.precision`)."""
    if isinstance(outcome, Failed):
        return CaseResult(case.name, case.kind, False, None, call_words(outcome), failure=outcome)
    precision = lowered(outcome.arrays)
    arrays, rtol, atol = held_arrays(outcome.arrays)
    try:
        report = _checked(case, arrays, rtol, atol)
    except InputError as error:  # a dict of stages naming no stage, a stage it lacks
        failed = Failed("bad-return", f"returned stages check cannot compare: {error}")
        return CaseResult(case.name, case.kind, False, None, failed.message, failure=failed)
    if report.ok:
        message = _matched(outcome)
        if precision is not None:
            message += f" ({precision.words()})"
        return CaseResult(
            case.name, case.kind, True, None, message, check=report, precision=precision
        )
    noted = _output_right(case, arrays, rtol, atol, report)
    if noted is not None:
        return replace(noted, precision=precision)
    if precision is not None:
        # wrong at float32's tolerance: at the dtype's own, right (too coarse), or a
        # mistake check can name (its recomputation rounds as float16 does not)
        own = _checked(case, outcome.arrays, None, None)
        if own.ok:
            return _coarse(case, report, precision)
        report = own
    first = report.first_divergent
    assert first is not None
    cell = _cell(first)
    diagnosis = report.diagnosis
    message = _differs(report)
    if precision is not None and diagnosis is not None:
        message += f" ({precision.words()})"
    return CaseResult(
        case.name,
        case.kind,
        False,
        None if diagnosis is None else diagnosis.cause,
        message,
        cell,
        report,
        precision=precision,
    )


def _differs(report: CheckReport) -> str:
    """Check's first differing stage and its diagnosis, in a line."""
    first = report.first_divergent
    assert first is not None
    diagnosis = report.diagnosis
    if first.region is None:  # a shape that fits no reading
        shown = ", ".join(str(size) for size in first.shape_found or ())
        message = f"{first.stage} has shape [{shown}], expected {first.shape_expected}"
        if diagnosis is not None:
            message += f": {diagnosis.cause} — {diagnosis.message}"
        return message
    if diagnosis is not None:
        return f"{first.stage} differs: {diagnosis.cause} — {diagnosis.message}"
    words = cell_words(_cell(first))
    return f"{first.stage} differs: no known mistake reproduces it; first {words}"


def _output_right(
    case: Case,
    arrays: Mapping[str, GivenArray],
    rtol: float | None,
    atol: float | None,
    report: CheckReport,
) -> CaseResult | None:
    """A dict of stages whose output (by check's names: output, out, O) matches passes:
    the output is what the function is for, and a student who masks in place saves the
    masked scores as ``scaled``; the stages that differ are a note on the case (check's
    first differing stage and its diagnosis). None where the dict has no output, or the
    output differs (the case is judged on every stage, as check judges it)."""
    outputs = [name for name in arrays if ALIASES.get(name, name) == "output"]
    if len(arrays) < 2 or len(outputs) != 1:
        return None
    alone = _checked(case, {outputs[0]: arrays[outputs[0]]}, rtol, atol)
    if not alone.ok:
        return None
    first = report.first_divergent
    assert first is not None
    message = f"{outputs[0]} matches; {first.stage} differs (see the notes)"
    return CaseResult(
        case.name, case.kind, True, None, message, check=report, notes=(_differs(report),)
    )


def _coarse(case: Case, report: CheckReport, precision: Precision) -> CaseResult:
    """A case within its dtype's tolerance (float16's rtol 1e-2), not float32's: right,
    or wrong by less than float16 can show; either way not to be passed."""
    first = report.first_divergent
    assert first is not None
    cell = _cell(first)
    own = TOLERANCES[precision.dtype][0]
    message = (
        f"{first.stage} differs: within {precision.dtype}'s tolerance (rtol {power(own)}), not "
        f"{precision.held_as}'s; {precision.dtype} is {COARSE} a small bug (1% off) from "
        f"its own rounding: compute and return float32 or float64; first {cell_words(cell)}"
    )
    return CaseResult(case.name, case.kind, False, None, message, cell, report, precision=precision)


def _checked(
    case: Case, arrays: Mapping[str, GivenArray], rtol: float | None, atol: float | None
) -> CheckReport:
    return checked(
        arrays,
        None,
        sample=case.sample,
        model=case.model,
        causal=case.causal,
        rtol=rtol,
        atol=atol,
        names=PYTHON_NAMES,
    )


def _matched(outcome: Returned) -> str:
    names = list(outcome.arrays)
    return "matches" if names == ["output"] else f"{', '.join(names)} match"


def _cell(first: Divergence) -> Cell | None:
    """The first differing cell in reading order (None where the shape is wrong)."""
    spot = first.first_cell
    if spot is not None:
        return Cell(**asdict(spot), stage=first.stage)
    if first.row is None or first.column is None:
        return None
    return Cell(
        first.row,
        first.column,
        first.row_label or str(first.row),
        first.column_label or str(first.column),
        math.nan if first.expected is None else first.expected,
        math.nan if first.found is None else first.found,
        stage=first.stage,
    )


def cell_words(cell: Cell | None) -> str:
    """``differing cell: output row 'it', column d1: expected 0.2, found 0.35``."""
    if cell is None:
        return "differing cell: none (the shape differs)"
    return (
        f"differing cell: {cell.stage} row {cell.row_label}, column {cell.column_label}: "
        f"expected {cell.expected:.6g}, found {cell.found:.6g}"
    )


def call_words(failure: Failed) -> str:
    """``raised ValueError: ... at student.py:12``, ``did not return within 10 s``."""
    if failure.kind == "raised":
        at = f" at {failure.where}" if failure.where else ""
        return f"raised {failure.message}{at}"
    return failure.message
