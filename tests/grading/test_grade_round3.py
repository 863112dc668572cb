"""grade's third round (issue 32): a bug outside check's catalogue named on no case as if
it were the student's mistake (the hidden models keep n ≠ d_v; a cause that one case
alone reproduces is said to be that case's only), and a dict of stages whose output is
right passes, the stages that differ a note on the case."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
from helpers import schema

from attntrace.grading.cases import RANDOM_SIZES
from attntrace.grading.grade_json import grade_to_dict
from attntrace.grading.grader import grade_function
from attntrace.grading.judge import _narrowed
from attntrace.grading.report import GradeReport
from attntrace.grading.words import report_text

Matrix = npt.NDArray[np.float64]


def _softmax(scores: Matrix) -> Matrix:
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights: Matrix = shifted / shifted.sum(axis=-1, keepdims=True)
    return weights


def _stages(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool, by: float
) -> dict[str, Matrix]:
    """Attention by a naive loop, its scores divided by ``by``; ``scaled`` holds the
    masked scores, as students who mask in place save it."""
    Q, K, V = X @ WQ, X @ WK, X @ WV
    n = X.shape[0]
    raw = np.array([[float(np.dot(Q[i], K[j])) for j in range(n)] for i in range(n)])
    scaled = raw / by
    if causal:
        for i in range(n):
            for j in range(i + 1, n):
                scaled[i, j] = -np.inf
    weights = _softmax(scaled)
    return {"Q": Q, "scores": raw, "scaled": scaled, "softmax": weights, "output": weights @ V}


def by_sqrt_dv(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    return _stages(X, WQ, WK, WV, causal, float(np.sqrt(WV.shape[1])))["output"]


def masked_in_place(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False
) -> dict[str, Matrix]:
    return _stages(X, WQ, WK, WV, causal, float(np.sqrt(WQ.shape[1])))


def masked_in_place_out(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False
) -> dict[str, Matrix]:
    stages = _stages(X, WQ, WK, WV, causal, float(np.sqrt(WQ.shape[1])))
    stages["out"] = stages.pop("output")
    return stages


def masked_in_place_no_output(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False
) -> dict[str, Matrix]:
    stages = _stages(X, WQ, WK, WV, causal, float(np.sqrt(WQ.shape[1])))
    del stages["output"]
    return stages


def dict_wrong_output(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False
) -> dict[str, Matrix]:
    return _stages(X, WQ, WK, WV, causal, float(np.sqrt(WV.shape[1])))


def _valid(document: dict[str, Any]) -> None:
    jsonschema.validate(json.loads(json.dumps(document)), schema("grade-v1.schema.json"))


def test_the_hidden_models_keep_n_apart_from_d_v() -> None:
    for n, d_model, d_k, d_v, _causal, _kind in RANDOM_SIZES:
        if n > 1:
            assert n != d_v, (n, d_v)
            assert n != d_k, (n, d_k)
        if d_model > 1:
            assert d_model != d_k, (d_model, d_k)
            assert d_model != d_v, (d_model, d_v)


def test_dividing_by_sqrt_d_v_is_not_named_scaled_by_length() -> None:
    report = grade_function(by_sqrt_dv)
    text = report_text(report)
    assert not report.passed
    assert all(case.cause != "scaled-by-length" for case in report.cases), text
    assert "scaled-by-length" not in text


def test_a_cause_one_case_alone_reproduces_is_said_to_be_that_case_only() -> None:
    # a hand-made report: one case reproduced by a mistake, another by none
    report = grade_function(by_sqrt_dv)
    cases = list(report.cases)
    failing = [i for i, case in enumerate(cases) if not case.passed and case.kind != "property"]
    assert len(failing) >= 2
    diagnosed = replace(cases[failing[1]], cause="no-scale", message="output differs: no-scale — x")
    cases[failing[1]] = diagnosed
    narrowed = _narrowed(cases)
    case = narrowed[failing[1]]
    assert "this case only" in case.message
    assert case.alone
    assert case.across is not None
    assert "no one mistake" in case.across
    text = report_text(GradeReport("x.py:attention", tuple(narrowed)))
    assert "no-scale?" in text
    assert "(no-scale)" not in text
    assert narrowed[failing[0]].cause is None


def test_a_dict_whose_output_matches_passes_with_a_note() -> None:
    for student in (masked_in_place, masked_in_place_out):
        report = grade_function(student)
        text = report_text(report)
        assert report.passed, text
        noted = [case for case in report.cases if case.notes]
        assert noted, text
        assert all(case.name.endswith("causal=True") for case in noted)
        for case in noted:
            assert case.notes[0].startswith("scaled differs: saved-as-another-stage"), case.notes
        assert "saved-as-another-stage" in text
        document = grade_to_dict(report)
        _valid(document)
        assert any(case["notes"] for case in document["cases"])
        assert all(case["passed"] for case in document["cases"])


def test_a_dict_without_an_output_is_judged_as_before() -> None:
    report = grade_function(masked_in_place_no_output)
    assert not report.passed
    first = report.first_failure
    assert first is not None
    assert first.cause == "saved-as-another-stage", report_text(report)
    _valid(grade_to_dict(report))


def test_a_dict_whose_output_differs_fails_on_its_first_stage() -> None:
    report = grade_function(dict_wrong_output)
    assert not report.passed
    for case in report.cases:
        if not case.passed and case.kind != "property":
            assert not case.notes
            assert case.message.startswith("scaled differs"), case.message
