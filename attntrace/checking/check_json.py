"""``check --json`` (attntrace/check/v1) and ``diff --json`` (attntrace/diff/v1)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attntrace.kernel.documents import model_to_dict, optional_texts, texts
from attntrace.visible import well_formed

if TYPE_CHECKING:
    from attntrace.checking.diff import Cell, StageDiff, TraceDiff
    from attntrace.checking.report import CheckReport
    from attntrace.kernel.trace import Trace


CHECK_SCHEMA_ID = "attntrace/check/v1"


def check_to_dict(report: CheckReport, source: str | None = None) -> dict[str, Any]:
    """`check`'s report (docs/check.md): each stage and head compared, the first
    divergence and the diagnosis. A non-finite number is the string ``NaN``,
    ``Infinity`` or ``-Infinity``: a found NaN is evidence, not a missing value."""
    first, diagnosis = report.first_divergent, report.diagnosis
    return {
        "schema": CHECK_SCHEMA_ID,
        "source": None if source is None else well_formed(source),
        "model": model_to_dict(report.model),
        "tokens": texts(report.tokens),
        "context_tokens": texts(report.context_tokens) if report.context_tokens else None,
        "head": report.head,
        "ok": report.ok,
        "stages": [
            {
                "name": r.name,
                "head": r.head,
                "kv_head": r.kv_head,
                "status": r.status,
                "given_as": None if r.given_as is None else well_formed(r.given_as),
                "max_abs_delta": r.max_abs_delta,
                "cells_differing": r.cells_differing,
                "cells": r.cells,
                "cells_nonfinite": r.cells_nonfinite,
                "tolerance": None
                if r.tolerance is None
                else {
                    "dtype": r.tolerance.dtype,
                    "rtol": r.tolerance.rtol,
                    "atol": r.tolerance.atol,
                },
                "shape_found": None if r.shape_found is None else list(r.shape_found),
                "shape_expected": r.shape_expected,
            }
            for r in report.results
        ],
        "first_divergent": None
        if first is None
        else {
            "stage": first.stage,
            "head": first.head,
            "kv_head": first.kv_head,
            "given_as": well_formed(first.given_as),
            "row": first.row,
            "column": first.column,
            "row_label": _text(first.row_label),
            "column_label": _text(first.column_label),
            "expected": _number(first.expected),
            "found": _number(first.found),
            "shape_found": None if first.shape_found is None else list(first.shape_found),
            "shape_expected": first.shape_expected,
            "first_cell": None
            if first.first_cell is None
            else {
                "row": first.first_cell.row,
                "column": first.first_cell.column,
                "row_label": _text(first.first_cell.row_label),
                "column_label": _text(first.first_cell.column_label),
                "expected": _number(first.first_cell.expected),
                "found": _number(first.first_cell.found),
            },
            "region": None
            if first.region is None
            else {
                "rows": texts(first.region.rows),
                "cols": texts(first.region.cols),
                "expected": [[_number(x) for x in row] for row in first.region.expected.tolist()],
                "found": [[_number(x) for x in row] for row in first.region.found.tolist()],
                "wrong": first.region.wrong.tolist(),
            },
        },
        "diagnosis": None
        if diagnosis is None
        else {
            "cause": diagnosis.cause,
            "message": well_formed(diagnosis.message),
            "also": texts(diagnosis.also),
        },
    }


def _text(value: str | None) -> str | None:
    return None if value is None else well_formed(value)


def _changed(value: object) -> object:
    """A model field's value in ``model_changes``: a name is text, as every name is."""
    return well_formed(value) if isinstance(value, str) else value


def _number(value: float | None) -> float | str | None:
    """A finite number as is; NaN and ±∞ spelled as JavaScript spells them."""
    if value is None or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


DIFF_SCHEMA_ID = "attntrace/diff/v1"


def diff_to_dict(
    diff: TraceDiff, sources: tuple[str, str], edits: Sequence[str] = ()
) -> dict[str, Any]:
    """`attntrace diff --json`: each stage compared, the first changed one, what else
    differs. ``sources`` names A and B (file names, or the model traced); ``edits`` are
    the ``--set`` edits B was traced with."""
    from attntrace.checking.diff import ATOL, RTOL

    def side(trace: Trace, source: str, made_with: Sequence[str]) -> dict[str, Any]:
        context = trace.context_tokens
        return {
            "source": well_formed(source),
            "edits": texts(made_with),
            "model": model_to_dict(trace.model),
            "tokens": texts(trace.tokens),
            "context_tokens": optional_texts(context),
        }

    first = diff.first_changed
    return {
        "schema": DIFF_SCHEMA_ID,
        "changed": diff.changed,
        "tolerance": {"rtol": RTOL, "atol": ATOL},
        "a": side(diff.a, sources[0], ()),
        "b": side(diff.b, sources[1], edits),
        "model_changes": [
            {"field": c.field, "a": _changed(c.a), "b": _changed(c.b)} for c in diff.model_changes
        ],
        "tokens_differ": diff.tokens_differ,
        "context_differs": diff.context_differs,
        "stages": [stage_diff_to_dict(s) for s in diff.stages],
        "weights": [stage_diff_to_dict(w) for w in diff.weights] if diff.weights_compared else None,
        "first_changed": None if first is None else stage_diff_to_dict(first),
    }


def stage_diff_to_dict(stage: StageDiff) -> dict[str, Any]:
    """One stage compared; |Δ| and values that are not finite numbers are null."""
    return {
        "name": stage.name,
        "head": stage.head,
        "kv_head": stage.kv_head,
        "status": stage.status,
        "shape_a": None if stage.a is None else list(stage.a.shape),
        "shape_b": None if stage.b is None else list(stage.b.shape),
        "cells": stage.cells,
        "changed_cells": stage.changed_cells,
        "max_abs_delta": _finite(stage.max_abs_delta),
        "notes": texts(stage.notes),
        "largest": None if stage.largest is None else _cell_to_dict(stage.largest),
    }


def _cell_to_dict(cell: Cell) -> dict[str, Any]:
    return {
        "row": cell.row,
        "column": cell.col,
        "row_label": _text(cell.row_label),
        "column_label": _text(cell.col_label),
        "a": _finite(cell.a),
        "b": _finite(cell.b),
        "delta": _finite(cell.delta),
    }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
