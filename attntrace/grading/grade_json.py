"""``attntrace grade --json``: the report as ``attntrace/grade/v1`` (docs/json.md).

Each case with its kind, verdict, catalogue id and message; the score; the first
failure with its first differing cell and, where its arrays were compared, check's
own document (``attntrace/check/v1``) for stage-by-stage feedback. A non-finite number
is the string ``NaN``, ``Infinity`` or ``-Infinity``, as in check's document.
"""

from __future__ import annotations

import math
from typing import Any

from attntrace.checking.check_json import check_to_dict
from attntrace.grading.precision import Precision
from attntrace.grading.report import CaseResult, Cell, GradeReport
from attntrace.visible import well_formed

GRADE_SCHEMA_ID = "attntrace/grade/v1"


def grade_to_dict(report: GradeReport) -> dict[str, Any]:
    passed, total = report.score
    first = report.first_failure
    return {
        "schema": GRADE_SCHEMA_ID,
        "target": well_formed(report.target),
        "passed": report.passed,
        "score": {"passed": passed, "total": total},
        "cases": [_case(case) for case in report.cases],
        "first_failure": None if first is None else _first(first),
    }


def _case(case: CaseResult) -> dict[str, Any]:
    return {
        "name": case.name,
        "kind": case.kind,
        "passed": case.passed,
        "cause": case.cause,
        "message": well_formed(case.message),
        "precision": None if case.precision is None else _precision(case.precision),
        "alone": case.alone,
        "notes": [well_formed(note) for note in case.notes],
    }


def _precision(precision: Precision) -> dict[str, Any]:
    return {
        "dtype": precision.dtype,
        "held_as": precision.held_as,
        "rtol": precision.rtol,
        "atol": precision.atol,
    }


def _first(case: CaseResult) -> dict[str, Any]:
    failure = case.failure
    return {
        "name": case.name,
        "kind": case.kind,
        "cause": case.cause,
        "message": well_formed(case.message),
        "cell": None if case.cell is None else _cell(case.cell),
        "error": None
        if failure is None
        else {
            "kind": failure.kind,
            "message": well_formed(failure.message),
            "where": None if failure.where is None else well_formed(failure.where),
            "code": None if failure.code is None else well_formed(failure.code),
        },
        "check": None if case.check is None else check_to_dict(case.check),
    }


def _cell(cell: Cell) -> dict[str, Any]:
    return {
        "stage": cell.stage,
        "row": cell.row,
        "column": cell.column,
        "row_label": well_formed(cell.row_label),
        "column_label": well_formed(cell.column_label),
        "expected": _number(cell.expected),
        "found": _number(cell.found),
    }


def _number(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value
