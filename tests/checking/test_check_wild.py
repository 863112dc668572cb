"""`attntrace check` held to students it never saw (tests/wild/check/, issue 32).

Each student computes attention from a model file's dict the way public code does (numpy,
nanoGPT's head, torch SDPA, einsum, q_proj(x) then .view) and returns what it would save
for `check`, under the names and shapes people use. Its header cites the bug report it
comes from, names the sample it is checked on and the catalogue id `check` should find.
First the students are held to tests/wild_students.py's loops with their own mistake
switched on; then `attntrace.check` must pass the correct ones and name each mistake.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from paths import ROOT
from tolerances import CHECK_TOLERANCE
from wild_students import (
    Bug,
    Student,
    causal_mask,
    everything,
    load,
    model_loops,
    model_of,
    sample,
    students,
)

import attntrace

Array = npt.NDArray[np.float64]

CHECK = students("check")

# Each student's mistake as the loops' switches (docs/check.md's definitions).
RECIPES: dict[str, Bug] = {
    "wild_check_numpy_mha": Bug(),
    "wild_check_torch_gqa": Bug(),
    "wild_check_nanogpt_causal": Bug(),
    "wild_check_cross_sdpa": Bug(),
    "wild_check_view_hd_h": Bug(split="interleaved"),
    "wild_check_gqa_repeat": Bug(kv="tiled"),
    "wild_check_sdpa_tril_m1": Bug(visible=lambda i, j: j < i, empty="zeros"),
    "wild_check_triu_k0": Bug(visible=lambda i, j: j < i),
    "wild_check_sdpa_triu_mask": Bug(visible=lambda i, j: j > i, empty="zeros"),
    "wild_check_fill_tril_eq1": Bug(visible=lambda i, j: j > i),
    "wild_check_cross_is_causal": Bug(visible=causal_mask),
    "wild_check_attn_t_v": Bug(transposed_weights=True),
    "wild_check_einsum_slip": Bug(transposed_weights=True),
    "wild_check_concat_view": Bug(concat="no-transpose"),
    "wild_check_softmax_dim1_heads": Bug(softmax="heads"),
    "wild_check_softmax_dim1_causal": Bug(softmax="columns"),
    "wild_check_ignore_1e5": Bug(fill=-1e5),
    "wild_check_sqrt_t": Bug(divisor=lambda d_k, m, d_model: math.sqrt(m)),
    "wild_check_no_scale": Bug(divisor=lambda d_k, m, d_model: 1.0),
    "wild_check_is_causal_dropped": Bug(visible=everything),
}

# The names a student saves, by the stage the loops compute.
STAGES = {
    "scaled": "scaled",
    "masked": "masked",
    "softmax": "softmax",
    "attn": "softmax",
    "output": "output",
    "out": "output",
    "concat": "concat",
    "projected": "projected",
}
SHARED = {"concat", "projected"}


def _param(student: Student) -> Any:
    marks = [pytest.mark.long] if student.uses_torch else []
    return pytest.param(student, id=student.name, marks=marks)


def _arrays(student: Student) -> tuple[dict[str, Any], dict[str, Any]]:
    """The student's arrays for its model, and the model."""
    if student.uses_torch:
        pytest.importorskip("torch")
    module = load(student)
    model = model_of(student, module)
    arrays: dict[str, Any] = module.arrays(model, None)
    return arrays, model


def _as_float64(value: Any) -> tuple[Array, str]:
    array = np.asarray(value)
    dtype = "float32" if array.dtype == np.float32 else "float64"
    return array.astype(np.float64), dtype


def _heads_first(array: Array, shared: bool) -> Array:
    """A saved array without its batch of one, a per-head stage as [H, rows, columns]."""
    while array.ndim > (2 if shared else 3) and array.shape[0] == 1:
        array = array[0]
    if not shared and array.ndim == 2:
        array = array[None]
    return array


def _close(found: Array, expected: Array, dtype: str) -> bool:
    """docs/check.md's rule per stage: |Δ| ≤ atol·scale + rtol·|expected|, non-finite cells
    only where the same non-finite cell is expected."""
    tolerance = CHECK_TOLERANCE[dtype]
    if found.shape != expected.shape:
        return False
    finite = np.isfinite(expected)
    same = (found == expected) | (np.isnan(found) & np.isnan(expected))
    if not np.all(same[~finite]) or not np.all(np.isfinite(found[finite])):
        return False
    scale = max(1.0, float(np.abs(expected[finite]).max())) if finite.any() else 1.0
    delta = np.abs(found[finite] - expected[finite])
    bound = tolerance["atol"] * scale + tolerance["rtol"] * np.abs(expected[finite])
    return bool(np.all(delta <= bound))


def _loop_stage(stages: dict[str, Any], stage: str) -> Array:
    return np.array(stages[stage], dtype=np.float64)


def test_every_check_student_has_its_recipe() -> None:
    assert sorted(RECIPES) == sorted(s.name for s in CHECK)
    assert len(CHECK) >= 15


def test_the_expected_ids_are_in_the_catalogue() -> None:
    """docs/check.md's catalogue names every id the wild students expect (issue 32's new
    ones too: weights-transposed, cross-attention-causal, scaled-by-length, ...)."""
    page = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    ids = set(re.findall(r"^\| `([a-z0-9_-]+)` \|", page, re.M))
    expected = {s.expect for s in CHECK + students("grade")} - {"correct"}
    assert sorted(expected - ids) == []


@pytest.mark.parametrize("student", [_param(s) for s in CHECK])
def test_the_student_computes_its_own_mistake(student: Student) -> None:
    """The oracle of the check tests: every stage the loops compute that the student
    saved is the loops' with its mistake switched on (with none for the correct ones)."""
    arrays, model = _arrays(student)
    stages = model_loops(model, RECIPES[student.name])
    compared = []
    for name, value in arrays.items():
        stage = STAGES.get(name)
        if stage is None:
            continue
        found, dtype = _as_float64(value)
        found = _heads_first(found, stage in SHARED)
        expected = _loop_stage(stages, stage)
        assert _close(found, expected, dtype), f"{name}:\n{found}\nexpected\n{expected}"
        compared.append(name)
    assert compared, "the student saved no stage the loops compute"


@pytest.mark.parametrize(
    "student", [s for s in CHECK if s.expect != "correct"], ids=lambda s: s.name
)
def test_the_mistake_shows_on_the_model(student: Student) -> None:
    """A buggy student's model is one on which its mistake changes the output."""
    assert student.model is not None
    model = model_of(student, load(student)) if student.model == "MODEL" else sample(student.model)
    right = model_loops(model)
    wrong = model_loops(model, RECIPES[student.name])
    stage = "concat" if RECIPES[student.name].concat != "right" else "output"
    assert not _close(_loop_stage(wrong, stage), _loop_stage(right, stage), "float32")


@pytest.mark.parametrize("student", [_param(s) for s in CHECK])
def test_check_names_the_wild_students_mistake(student: Student) -> None:
    """check passes the correct students (exit 0, no diagnosis) and names each buggy
    student's mistake (exit 1, diagnosis.cause the header's id)."""
    arrays, model = _arrays(student)
    if student.model == "MODEL":
        report = attntrace.check(arrays, model=model)
    else:
        report = attntrace.check(arrays, sample=student.model)
    if student.expect == "correct":
        assert report.exit_code == 0, report
        assert report.diagnosis is None
    else:
        assert report.exit_code == 1, report
        assert report.diagnosis is not None, f"no diagnosis: {report}"
        assert report.diagnosis.cause == student.expect, report.diagnosis
