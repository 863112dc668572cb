"""grade's verdicts on students written as homework writes them (tests/grade_students.py),
judged in this process (grade_function, what the pytest plugin
calls): the correct ones pass, each buggy one fails with its mistake named."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from grade_students import CAUSES, student_file

from attntrace.grading.grader import grade_function
from attntrace.grading.report import GradeReport
from attntrace.grading.words import report_text


def student(folder: Path, name: str) -> Callable[..., object]:
    path = student_file(folder, name)
    spec = importlib.util.spec_from_file_location(f"grade_student_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function: Callable[..., object] = module.attention
    return function


def graded(folder: Path, name: str) -> GradeReport:
    return grade_function(student(folder, name))


@pytest.mark.parametrize("name", ["correct_numpy", "correct_lists", "prints"])
def test_a_correct_student_passes_every_case(name: str, tmp_path: Path) -> None:
    report = graded(tmp_path, name)
    assert report.passed, report_text(report)
    assert report.score == (24, 24)
    assert report.first_failure is None
    assert report.exit_code == 0


@pytest.mark.long
def test_torch_sdpa_passes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    report = graded(tmp_path, "correct_torch")
    assert report.passed, report_text(report)


@pytest.mark.parametrize("name", sorted(CAUSES))
def test_a_buggy_student_is_named(name: str, tmp_path: Path) -> None:
    report = graded(tmp_path, name)
    assert report.exit_code == 1
    first = report.first_failure
    assert first is not None
    causes = CAUSES[name]
    if name == "weights_transposed":
        # the samples' scores are symmetric (WQ = WK), where softmaxᵀ is the softmax
        # over columns: both ids reproduce the first failure; a hidden model's scores are
        # not, and there only weights-transposed can (or no id, before check knows it)
        assert first.cause in ("softmax-over-columns", "weights-transposed")
        hidden = [c for c in report.cases if c.kind == "random" and not c.passed]
        assert hidden
        assert {c.cause for c in hidden} <= set(causes)
    else:
        assert first.cause in causes, report_text(report)
    assert first.cause is None or first.cause in first.message


def test_the_first_failure_is_the_first_case_that_fails(tmp_path: Path) -> None:
    """No scaling goes unseen where d_k = 1 and where scores are huge (a one-hot softmax
    either way); it is named at the first sample."""
    report = graded(tmp_path, "no_scaling")
    first = report.first_failure
    assert first is not None
    assert first.name == "cat-eats-fish, causal=False"
    assert first.cause == "no-scaling"
    passing = {c.name for c in report.cases if c.passed}
    assert any(name.startswith("random 3: n 2, d_model 3, d_k 1") for name in passing)
    assert first.check is not None
    assert first.check.first_divergent is not None


def test_a_mask_on_the_wrong_side_fails_the_causal_cases_and_properties(tmp_path: Path) -> None:
    report = graded(tmp_path, "mask_wrong_triangle")
    failed = {c.name for c in report.cases if not c.passed}
    assert all(
        "causal=True" in name for name in failed if not name[0].isupper() and "causal=" in name
    )
    properties = {c.name: c for c in report.cases if c.kind == "property"}
    assert not properties["causal: later tokens change nothing before them"].passed
    assert not properties["each output row inside the hull of V's rows"].passed
    assert properties["permutation equivariance"].passed


def test_an_exception_is_the_students_with_its_line(tmp_path: Path) -> None:
    report = graded(tmp_path, "raises")
    first = report.first_failure
    assert first is not None
    assert first.failure is not None
    assert first.failure.kind == "raised"
    assert first.failure.where is not None
    line = next(
        i + 1
        for i, text in enumerate((tmp_path / "raises.py").read_text().splitlines())
        if "Q @ K" in text
    )
    assert first.failure.where == f"raises.py:{line}"
    assert first.failure.code == "scores = Q @ K / np.sqrt(K.shape[-1])"
    assert first.message.startswith("raised ValueError")
    assert "Traceback" not in report_text(report)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("wrong_shape", "has shape [2, 3], expected [3, 2]"),
        ("returns_nan", "no known mistake reproduces it; first differing cell: output row cat"),
        ("returns_tuple", "returned a tuple of 2 arrays"),
    ],
)
def test_what_is_returned_wrongly_is_said(name: str, words: str, tmp_path: Path) -> None:
    report = graded(tmp_path, name)
    first = report.first_failure
    assert first is not None
    assert words in first.message


def test_no_known_mistake_names_the_first_differing_cell(tmp_path: Path) -> None:
    report = graded(tmp_path, "returns_nan")
    first = report.first_failure
    assert first is not None
    assert first.cause is None
    assert first.cell is not None
    assert (first.cell.stage, first.cell.row_label, first.cell.column_label) == (
        "output",
        "cat",
        "d0",
    )
    assert np.isnan(first.cell.found)
    assert first.cell.expected == pytest.approx(3.8623, abs=1e-4)


def test_a_dict_of_stages_gets_feedback_stage_by_stage(tmp_path: Path) -> None:
    report = graded(tmp_path, "stages_no_scaling")
    first = report.first_failure
    assert first is not None
    assert first.cause == "no-scaling"
    assert first.check is not None
    statuses = {r.name: r.status for r in first.check.results}
    assert statuses["Q"] == statuses["K"] == statuses["V"] == "match"
    assert statuses["softmax"] == "differs"
    assert first.message.startswith("softmax differs: no-scaling")


def test_the_plugins_text_says_the_verdict(tmp_path: Path) -> None:
    text = report_text(graded(tmp_path, "no_scaling"))
    assert "first failure: cat-eats-fish, causal=False" in text
    assert "diagnosis: no-scaling" in text
    assert text.endswith(
        "✗ 8 of 24 cases pass; the first to fail is cat-eats-fish, causal=False (no-scaling)"
    )


def test_a_mistake_one_case_cannot_tell_apart_is_named_by_the_others() -> None:
    """softmaxᵀ·V on a sample whose scores are symmetric gives the same numbers as a
    softmax down the columns; the hidden models tell them apart, and the verdict on
    every case, the first one too, is the mistake that reproduces them all."""

    def transposed(
        X: npt.NDArray[np.float64],
        WQ: npt.NDArray[np.float64],
        WK: npt.NDArray[np.float64],
        WV: npt.NDArray[np.float64],
        causal: bool = False,
    ) -> npt.NDArray[np.float64]:
        scores = (X @ WQ) @ (X @ WK).T / np.sqrt(WQ.shape[1])
        if causal:
            scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        result: npt.NDArray[np.float64] = weights.T @ (X @ WV)
        return result

    report = grade_function(transposed)
    first = report.first_failure
    assert first is not None
    assert first.check is not None
    assert first.check.diagnosis is not None
    # on its own, the first case names the columns' softmax and lists the other
    assert first.check.diagnosis.cause == "softmax-over-columns"
    assert "weights-transposed" in first.check.diagnosis.also
    assert first.cause == "weights-transposed"
    assert "the other cases tell them apart" in first.message
    assert {case.cause for case in report.cases if case.kind != "property"} - {None} == {
        "weights-transposed"
    }


def test_the_first_failure_block_agrees_with_the_verdict_across_cases(tmp_path: Path) -> None:
    """softmaxᵀ·V: on a sample (symmetric scores) check's own report names
    softmax-over-columns, tied with weights-transposed; across the cases only
    weights-transposed reproduces every one. The block after check's report says so,
    and the case line, the score line and the JSON's cause agree."""
    from attntrace.grading.grade_json import grade_to_dict

    report = graded(tmp_path, "weights_transposed")
    first = report.first_failure
    assert first is not None
    assert first.cause == "weights-transposed"
    text = report_text(report)
    block = text.split("first failure:", 1)[1]
    assert "diagnosis: softmax-over-columns" in block  # check's own words on this case
    assert "across the cases: weights-transposed — output = softmaxᵀ · V" in " ".join(
        block.split()
    ), block
    assert "(on this case softmax-over-columns gives the same numbers)" in " ".join(block.split())
    document = grade_to_dict(report)
    assert document["first_failure"]["cause"] == "weights-transposed"
    assert document["first_failure"]["check"]["diagnosis"]["cause"] == "softmax-over-columns"
