"""`check` on the arrays of a model with variants (docs/variants.md, docs/check.md): it
places each new stage under its name and the names people give it, the correct student
matches, and each classic mistake of the variants, written as a student writes it
(tests/students.py), is named, at the first stage it changes.

The model is built from the student's document here (its variant keys made a
:class:`Variants`), through the Python API: a model file carries the variant keys once
the model-file side of issue 17 lands, and the CLI's catalogue test then covers them too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from students import (
    FIRST_AFFECTED,
    MISTAKES,
    VARIANT_KEYS,
    VARIANT_MODELS,
    applies,
    first_difference,
    given_stages,
    saved,
    student_attention,
)
from variant_cases import naive_forward, params

from attntrace.checking.compare import check_arrays
from attntrace.checking.given import GivenArray
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.variants import Variants
from attntrace.modelfile.model_file import model_from_document

VARIANT_MISTAKES = MISTAKES[MISTAKES.index("window-off-by-one") :]


def spec_of(document: dict[str, Any]) -> ModelSpec:
    """The document's model: the paper's keys read by the model file, the variants' here."""
    plain = {k: v for k, v in document.items() if k not in VARIANT_KEYS}
    alibi = plain.get("positions") == "alibi"
    if alibi:
        del plain["positions"]
    model = model_from_document(plain)
    keys: dict[str, Any] = {k: document[k] for k in VARIANT_KEYS if k in document}
    for name in ("q_norm", "k_norm"):
        if name in keys:
            keys[name] = np.array(keys[name], dtype=np.float64)
    variants = Variants(**keys)
    return replace(model, positions="alibi" if alibi else model.positions, variants=variants)


def given(arrays: dict[str, npt.NDArray[np.float64]]) -> dict[str, GivenArray]:
    return {k: GivenArray(k, np.asarray(v, dtype=np.float64), "float64") for k, v in arrays.items()}


def tokens_of(document: dict[str, Any]) -> list[str]:
    return str(document["sentence"]).split()


def report_for(
    document: dict[str, Any], arrays: dict[str, npt.NDArray[np.float64]], **options: Any
) -> Any:
    model = spec_of(document)
    sentence = [w.lower() if w not in model.embeddings else w for w in tokens_of(document)]
    return check_arrays(model, trace_block(model, sentence), given(arrays), **options)


@pytest.mark.parametrize("name", VARIANT_MODELS)
@pytest.mark.parametrize("layout", ["batched", "heads", "tokens", "flat"])
def test_the_correct_students_variant_stages_all_match(name: str, layout: str) -> None:
    document = VARIANT_MODELS[name]
    native = student_attention(document, dtype="float64")
    arrays = saved(native, layout=layout)
    report = report_for(document, arrays)
    assert report.first_divergent is None, report.first_divergent
    statuses = {r.name: r.status for r in report.results}
    for stage in ("Q_norm", "K_norm", "alibi", "biased", "capped", "sink"):
        if stage in native:
            assert statuses[stage] == "match", stage


def test_people_s_names_for_the_new_stages_are_read_as_the_stages() -> None:
    document = VARIANT_MODELS["gemma-like"]
    native = saved(student_attention(document, dtype="float64"), layout="heads")
    arrays = {
        "q_norm": native["Q_norm"],
        "k_normed": native["K_norm"],
        "logits_capped": native["capped"],
        "attn": native["softmax"],
    }
    report = report_for(document, arrays)
    assert {r.name for r in report.results if r.status == "match"} >= {
        "Q_norm",
        "K_norm",
        "capped",
        "softmax",
    }
    alibi = saved(student_attention(VARIANT_MODELS["bloom-like"], dtype="float64"), layout="heads")
    report = report_for(
        VARIANT_MODELS["bloom-like"],
        {
            "position_bias": alibi["alibi"],
            "biased_scores": alibi["biased"],
            "softcapped": alibi["capped"],
        },
    )
    assert {r.name for r in report.results if r.status == "match"} == {"alibi", "biased", "capped"}


def test_the_sink_may_be_saved_without_its_column() -> None:
    document = VARIANT_MODELS["gpt-oss-like"]
    native = student_attention(document, dtype="float64")
    sink = native["sink"][0, :, :, 0]  # [H, n]: the [..., -1] of the softmax, squeezed
    for name in ("sink", "sinks", "sink_weights"):
        report = report_for(document, {name: sink})
        assert [r.status for r in report.results if r.name == "sink"] == ["match"] * 4


CASES = [
    (mistake, name)
    for mistake in VARIANT_MISTAKES
    for name, doc in VARIANT_MODELS.items()
    if applies(mistake, doc)
]


def test_every_variant_mistake_applies_to_a_model() -> None:
    assert {mistake for mistake, _ in CASES} == set(VARIANT_MISTAKES)


@pytest.mark.parametrize(("mistake", "name"), CASES)
@pytest.mark.parametrize("layout", ["heads", "flat"])
def test_each_variant_mistake_is_named_at_the_first_stage_it_changes(
    mistake: str, name: str, layout: str
) -> None:
    document = VARIANT_MODELS[name]
    wrong = student_attention(document, dtype="float64", mistake=mistake)
    right = student_attention(document, dtype="float64")
    stages = given_stages(wrong)
    first = first_difference(wrong, right, [s for s in stages if s in right])
    assert first is not None, f"{mistake} changes nothing on {name}"
    report = report_for(document, saved(wrong, layout=layout))
    assert report.first_divergent is not None
    assert report.first_divergent.stage == first
    assert report.diagnosis is not None, f"{mistake} on {name}: not diagnosed"
    assert report.diagnosis.cause == mistake
    assert FIRST_AFFECTED[mistake] in stages


def test_the_diagnosis_sentences_say_what_went_wrong() -> None:
    document = VARIANT_MODELS["gemma-like"]
    wrong = student_attention(document, dtype="float64", mistake="window-off-by-one")
    report = report_for(document, saved(wrong))
    assert report.diagnosis.message == (
        "the window lets in one key too many: i − j ≤ N instead of < N"
    )


@pytest.mark.parametrize("name", VARIANT_MODELS)
def test_the_correct_variant_student_is_the_loops(name: str) -> None:
    """The student's softmax and output against the loops of test_backward_variants (two
    codes written apart from docs/variants.md), before either is compared with a trace."""
    document = VARIANT_MODELS[name]
    model = spec_of(document)
    sentence = [w.lower() if w not in model.embeddings else w for w in tokens_of(document)]
    block, softmaxes = naive_forward(model, params(model, sentence), {})
    native = student_attention(document, dtype="float64")
    for h, weights in enumerate(softmaxes):
        np.testing.assert_allclose(native["softmax"][0, h], weights, rtol=1e-12, atol=1e-14)
    whole = (
        native["projected"][0]
        if "projected" in native
        else (native["concat"][0] if "concat" in native else native["output"][0, 0])
    )
    np.testing.assert_allclose(whole, block, rtol=1e-12, atol=1e-12)
