"""`attntrace grade` held to students it never saw (tests/wild/grade/, issue 32).

Each student is a single-head ``attention(X, WQ, WK, WV, causal=False)`` written from a
public bug report or tutorial (its header cites it). First the students themselves are
held to tests/wild_students.py's loops, each with its own mistake switched on, so the
verdict asked of ``grade`` is the right one; then ``grade --json`` is run on each, as a
teacher would, and must pass the correct ones and name each buggy one's mistake.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from paths import ROOT
from tolerances import CHECK_TOLERANCE
from wild_students import Bug, Student, causal_mask, everything, load, loops, students

Matrix = npt.NDArray[np.float64]

GRADE = students("grade")

FLOAT32_EXP_LIMIT = 88.72283935546875  # log of float32's largest: exp overflows past it

# Each student's mistake as the loops' switches (docs/check.md's definitions).
RECIPES: dict[str, Bug] = {
    "wild_grade_numpy_correct": Bug(),
    "wild_grade_sdpa_correct": Bug(),
    "wild_grade_einsum_correct": Bug(),
    "wild_grade_attn_t_v": Bug(transposed_weights=True),
    "wild_grade_sqrt_len": Bug(divisor=lambda d_k, m, d_model: math.sqrt(m)),
    "wild_grade_no_scale": Bug(divisor=lambda d_k, m, d_model: 1.0),
    "wild_grade_softmax_dim0": Bug(softmax="columns"),
    "wild_grade_div_dk": Bug(divisor=lambda d_k, m, d_model: float(d_k)),
    "wild_grade_c_pow": Bug(divisor=lambda d_k, m, d_model: math.sqrt(d_model)),
    "wild_grade_tril_mask": Bug(visible=lambda i, j: j >= i),
    "wild_grade_triu_k0": Bug(visible=lambda i, j: j < i),
    "wild_grade_sdpa_tril_m1": Bug(visible=lambda i, j: j < i, empty="zeros"),
    "wild_grade_sdpa_triu_mask": Bug(visible=lambda i, j: j > i, empty="zeros"),
    "wild_grade_is_causal_dropped": Bug(visible=everything),
    "wild_grade_fill_1e4": Bug(fill=-1e4),
    "wild_grade_exp_no_max": Bug(unstable=True, dtype_overflow=FLOAT32_EXP_LIMIT),
    "wild_grade_k_qt": Bug(scores_transposed=True),
    "wild_grade_mask_after_softmax": Bug(mask_after_softmax=True),
}


def _random_case(seed: int, n: int, d_model: int, d_k: int, d_v: int) -> list[Matrix]:
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=shape)
        for shape in ((n, d_model), (d_model, d_k), (d_model, d_k), (d_model, d_v))
    ]


def _cases() -> dict[str, tuple[list[Matrix], bool]]:
    """Inputs that show every mistake: random models, and two with large scores."""
    eye = np.eye(2)
    # WK = -WQ: "far" scores its only visible key (itself) at -176,777, below a -1e4 fill
    far = [np.array([[500.0, 0], [0, 3], [1, 1]]), eye, -eye, eye]
    # scores up to 283: past float32's exp limit of 88.7 without the row max
    hot = [np.array([[20.0, 0], [0, 20], [10, 10]]), eye, eye, eye]
    cases: dict[str, tuple[list[Matrix], bool]] = {}
    for causal in (False, True):
        tag = "causal" if causal else "full"
        cases[f"random-4x3-{tag}"] = (_random_case(1, 4, 3, 2, 3), causal)
        cases[f"random-5x4-{tag}"] = (_random_case(2, 5, 4, 3, 2), causal)
        cases[f"hot-{tag}"] = (hot, causal)
    cases["far-causal"] = (far, True)
    return cases


CASES = _cases()


def _as_float64(result: Any) -> tuple[Matrix, str]:
    """A student's output (numpy, torch or lists) as float64, and the dtype it came in."""
    array = np.asarray(result)
    dtype = "float32" if array.dtype == np.float32 else "float64"
    return array.astype(np.float64), dtype


def _expected(case: str, bug: Bug) -> Matrix:
    (X, WQ, WK, WV), causal = CASES[case]
    if not causal:  # a mask's mistake needs a mask: without one each student is right
        bug = replace(bug, visible=None)
    stages = loops(X.tolist(), WQ.tolist(), WK.tolist(), WV.tolist(), causal=causal, bug=bug)
    return np.array(stages["output"][0], dtype=np.float64)


def _close(found: Matrix, expected: Matrix, dtype: str) -> bool:
    """docs/check.md's rule: |Δ| ≤ atol·scale + rtol·|expected|, NaN only where NaN."""
    tolerance = CHECK_TOLERANCE[dtype]
    if found.shape != expected.shape:
        return False
    nan = np.isnan(expected)
    if not np.array_equal(nan, np.isnan(found)):
        return False
    finite = expected[~nan]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    delta = np.abs(found[~nan] - finite)
    return bool(np.all(delta <= tolerance["atol"] * scale + tolerance["rtol"] * np.abs(finite)))


def _param(student: Student) -> Any:
    marks = [pytest.mark.long] if student.uses_torch else []
    return pytest.param(student, id=student.name, marks=marks)


def test_every_grade_student_has_its_recipe() -> None:
    assert sorted(RECIPES) == sorted(s.name for s in GRADE)
    assert len(GRADE) >= 15


@pytest.mark.parametrize("student", [_param(s) for s in GRADE])
def test_the_student_computes_its_own_mistake(student: Student) -> None:
    """The oracle of the grade tests: on every case, the student's output is the loops'
    with its mistake switched on (and the correct ones', with none)."""
    if student.uses_torch:
        pytest.importorskip("torch")
    attention = load(student).attention
    for case, ((X, WQ, WK, WV), causal) in CASES.items():
        found, dtype = _as_float64(attention(X.copy(), WQ, WK, WV, causal=causal))
        expected = _expected(case, RECIPES[student.name])
        assert _close(found, expected, dtype), f"{case}:\n{found}\nexpected\n{expected}"


@pytest.mark.parametrize(
    "student", [s for s in GRADE if s.expect != "correct"], ids=lambda s: s.name
)
def test_the_mistake_shows_on_some_case(student: Student) -> None:
    """A buggy student computes something else than attention on at least one case."""
    differs = [
        case
        for case in CASES
        if not _close(_expected(case, RECIPES[student.name]), _expected(case, Bug()), "float32")
    ]
    assert differs, f"{student.name}'s mistake changes nothing on any case"


def test_the_loops_mask_as_the_causal_mask_says() -> None:
    """The right causal loops see j ≤ i: the last row is the full softmax's."""
    (X, WQ, WK, WV), _ = CASES["random-4x3-full"]
    full = loops(X.tolist(), WQ.tolist(), WK.tolist(), WV.tolist())["output"][0]
    masked = loops(X.tolist(), WQ.tolist(), WK.tolist(), WV.tolist(), causal=True)
    assert masked["output"][0][-1] == pytest.approx(full[-1], rel=1e-12)
    assert causal_mask(2, 2)
    assert not causal_mask(1, 2)


def _grade(student: Student) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "80"}
    target = f"{student.path.relative_to(ROOT)}:attention"
    result = subprocess.run(
        [sys.executable, "-m", "attntrace", "grade", target, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        document: dict[str, Any] | None = json.loads(result.stdout)
    except json.JSONDecodeError:
        document = None
    return result, document


@pytest.mark.long
@pytest.mark.parametrize("student", GRADE, ids=lambda s: s.name)
def test_grade_judges_the_wild_student(student: Student) -> None:
    """grade passes the correct students and names each buggy one's mistake."""
    if student.uses_torch:
        pytest.importorskip("torch")
    result, document = _grade(student)
    assert "Traceback" not in result.stderr, result.stderr
    assert document is not None, result.stdout + result.stderr
    assert document["schema"] == "attntrace/grade/v1"
    if student.expect == "correct":
        assert result.returncode == 0, result.stdout
        assert document["passed"] is True
        assert document["first_failure"] is None
        assert document["score"]["passed"] == document["score"]["total"]
    else:
        assert result.returncode == 1, result.stdout + result.stderr
        assert document["passed"] is False
        assert document["first_failure"]["cause"] == student.expect, document["first_failure"]
