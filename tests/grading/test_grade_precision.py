"""grade holds a lower-precision output to float32's tolerance: the inputs are float64,
so a student who returns float16 or bfloat16 gets no float16-sized slack for a bug
(issue 32, a tester's eps ÷ (sum + 1e-2) cast to float16 passed every case)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
import pytest
from helpers import schema

from attntrace.grading.grade_json import grade_to_dict
from attntrace.grading.grader import grade_function
from attntrace.grading.words import report_text

Matrix = npt.NDArray[np.float64]


def attention(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool, eps: float, scale: float = 1.0
) -> Matrix:
    """Attention by a naive loop over rows (a student's, not attntrace's), with an
    ``eps`` added to the softmax's sum and the scores divided by ``scale`` too."""
    Q, K, V = X @ WQ, X @ WK, X @ WV
    out = np.zeros((X.shape[0], V.shape[1]))
    for i in range(X.shape[0]):
        seen = i + 1 if causal else X.shape[0]
        s = np.array([Q[i] @ K[j] for j in range(seen)]) / (np.sqrt(K.shape[1]) * scale)
        e = np.exp(s - s.max())
        out[i] = (e / (e.sum() + eps)) @ V[:seen]
    return out


def cast(dtype: str, eps: float = 0.0, scale: float = 1.0) -> Callable[..., object]:
    def student(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> object:
        return attention(X, WQ, WK, WV, causal, eps, scale).astype(dtype)

    return student


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_bug_cast_down_fails(dtype: str) -> None:
    report = grade_function(cast(dtype, eps=1e-2))
    assert not report.passed, report_text(report)


def test_a_correct_float32_output_passes() -> None:
    report = grade_function(cast("float32"))
    assert report.passed, report_text(report)


def test_a_correct_float64_output_keeps_float64s_tolerance() -> None:
    """A float64 output 2e-5 off (past float64's rtol 1e-6, inside float32's) fails."""
    report = grade_function(cast("float64", eps=2e-5))
    assert not report.passed


def test_a_correct_float16_output_is_told_its_precision_is_too_low() -> None:
    report = grade_function(cast("float16"))
    assert not report.passed
    first = report.first_failure
    assert first is not None
    text = report_text(report)
    assert "within float16's tolerance (rtol 1e-2), not float32's" in first.message, text
    assert "returned float16: held to float32's tolerance (rtol 1e-4, atol 1e-5)" in text
    assert "float16: too coarse" in text
    assert "no known mistake" not in text
    document = grade_to_dict(report)
    jsonschema.validate(document, schema("grade-v1.schema.json"))
    assert document["cases"][0]["precision"] == {
        "dtype": "float16",
        "held_as": "float32",
        "rtol": 1e-4,
        "atol": 1e-5,
    }
    assert json.loads(json.dumps(document)) == document


def test_a_float32_case_has_no_precision_note() -> None:
    document: dict[str, Any] = grade_to_dict(grade_function(cast("float32")))
    assert all(case["precision"] is None for case in document["cases"])


def test_a_float16_bug_is_still_named() -> None:
    """The no-scaling student cast to float16 still gets the mistake's name."""

    def student(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> object:
        return attention(X, WQ, WK, WV, causal, 0.0, 1 / np.sqrt(WK.shape[1])).astype("float16")

    report = grade_function(student)
    first = report.first_failure
    assert first is not None
    assert first.cause == "no-scaling", report_text(report)
    assert "returned float16" in report_text(report)


@pytest.mark.long
@pytest.mark.parametrize("to", ["bfloat16", "float16"])
def test_a_torch_scale_two_percent_off_cast_down_fails(to: str) -> None:
    torch = pytest.importorskip("torch")

    def student(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> object:
        out = attention(X, WQ, WK, WV, causal, 0.0, 1.02)
        return torch.from_numpy(out).to(getattr(torch, to))

    assert not grade_function(student).passed


@pytest.mark.long
def test_a_float32_torch_sdpa_passes() -> None:
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional

    def student(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> object:
        x, wq, wk, wv = (torch.from_numpy(a).float() for a in (X, WQ, WK, WV))
        q, k, v = x @ wq, x @ wk, x @ wv
        return functional.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[
            0
        ]

    report = grade_function(student)
    assert report.passed, report_text(report)


def test_a_dict_of_float64_stages_and_a_float16_output() -> None:
    """The float16 output is held to float32's tolerance, the float64 Q to float64's."""

    def student(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> object:
        out = attention(X, WQ, WK, WV, causal, 1e-2)
        return {"Q": X @ WQ, "output": out.astype("float16")}

    report = grade_function(student)
    assert not report.passed, report_text(report)
    first = report.first_failure
    assert first is not None
    assert first.precision is not None
    assert first.precision.dtype == "float16"

    def sloppy_q(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> object:
        out = attention(X, WQ, WK, WV, causal, 0.0)
        return {"Q": (X @ WQ) * (1 + 2e-5), "output": out.astype("float16")}

    first = grade_function(sloppy_q).first_failure
    assert first is not None
    assert first.cell is not None
    assert first.cell.stage == "Q"  # float64's rtol 1e-6, not float32's 1e-4
