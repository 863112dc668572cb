"""`attntrace.check` and `attntrace.testing.assert_attention_matches` from Python.

A course's homework test hands over the student's numpy arrays as they are: the report
names the mistake (tests/students.py makes one of each), and a correct student passes
in float64, float32 and float16. The property: attntrace's own trace of any random
model, its stages handed back as arrays, is exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import whole_runs
from hypothesis import given
from hypothesis import strategies as st
from randoms import random_block
from students import (
    MISTAKES,
    MODELS,
    NAMINGS,
    ORDER,
    OVERFLOWING,
    PER_HEAD,
    VARIANT_MODELS,
    applies,
    first_difference,
    given_stages,
    lowest_head,
    saved,
    student_attention,
)

import attntrace
from attntrace.forward.attention import trace_block

# A model for each mistake: the first of these it applies to.
PREFERRED = (
    "gqa-causal",
    "mqa-rope",
    "multi",
    "single-causal",
    "cross",
    "single",
    "interleaved-rope",
)


def model_for(mistake: str) -> str:
    if mistake == "unstable-softmax":
        return "huge"
    if mistake == "mask-fill-too-small":  # scores past ±10⁵, where a fill of −1e4 leaks
        return "deep"
    # the variants' mistakes (a window off by one, ...) apply to the models that have them
    return next(
        name for name in (*PREFERRED, *VARIANT_MODELS) if applies(mistake, document_of(name))
    )


def document_of(name: str) -> dict[str, Any]:
    return {**MODELS, **OVERFLOWING, **VARIANT_MODELS}[name]


@pytest.mark.parametrize("mistake", MISTAKES)
def test_check_names_each_mistake(mistake: str) -> None:
    name = model_for(mistake)
    document = document_of(name)
    wrong = student_attention(document, dtype="float64", mistake=mistake)
    right = student_attention(document, dtype="float64")
    naming = list(NAMINGS)[MISTAKES.index(mistake) % len(NAMINGS)]
    arrays = saved(wrong, naming=naming)
    stages = given_stages(wrong)
    first = first_difference(saved(wrong), saved(right), stages)
    assert first is not None
    report = attntrace.check(arrays, model=document)
    assert report.exit_code == 1
    assert not report.ok
    assert report.diagnosis is not None
    assert report.diagnosis.cause == mistake, str(report)
    assert report.first_divergent is not None
    assert report.first_divergent.stage == first, str(report)
    if first in PER_HEAD:
        assert report.first_divergent.head == lowest_head(wrong, right, first), str(report)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("name", MODELS)
def test_a_correct_student_passes(name: str, dtype: str) -> None:
    document = MODELS[name]
    arrays = saved(student_attention(document, dtype=dtype), layout="heads")
    report = attntrace.check(arrays, model=document)
    assert report.exit_code == 0, str(report)
    assert report.ok
    assert report.diagnosis is None
    assert report.first_divergent is None
    from attntrace.testing import assert_attention_matches

    assert_attention_matches(arrays, model=document)  # passes: no AssertionError


def test_a_config_file_and_a_sentence_are_the_same_check(tmp_path: Path) -> None:
    document = dict(MODELS["gqa-causal"])
    sentence = document.pop("sentence")
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    native = student_attention(document, sentence, dtype="float32", mistake="kv-heads-tiled")
    report = attntrace.check(saved(native, layout="tokens"), config=path, sentence=sentence)
    assert report.exit_code == 1
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "kv-heads-tiled"


def test_assert_attention_matches_raises_with_the_report() -> None:
    document = MODELS["single-causal"]
    arrays = saved(student_attention(document, dtype="float32", mistake="mask-wrong-triangle"))
    from attntrace.testing import assert_attention_matches

    with pytest.raises(AssertionError) as raised:
        assert_attention_matches(arrays, model=document)
    message = str(raised.value)  # the report check prints
    assert "first difference: masked, row 'The', column 'cat'" in message, message
    assert "diagnosis: mask-wrong-triangle — " in message, message


def test_head_and_tolerance_keywords() -> None:
    document = MODELS["gqa-causal"]
    native = student_attention(document, dtype="float16", mistake="kv-heads-tiled")
    head0 = {"softmax": native["softmax"][0, 0], "output": native["output"][0, 0]}
    head1 = {"softmax": native["softmax"][0, 1], "output": native["output"][0, 1]}
    assert attntrace.check(head0, model=document, head=0).exit_code == 0
    report = attntrace.check(head1, model=document, head=1)
    assert report.exit_code == 1
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "kv-heads-tiled"
    widened = {k: a.astype(np.float64) for k, a in head0.items()}  # float64's tolerance now
    assert attntrace.check(widened, model=document, head=0).exit_code == 1
    loose = attntrace.check(widened, model=document, head=0, rtol=1e-2, atol=1e-3)
    assert loose.exit_code == 0


# --------------------------------------------------------- the trace checks as itself


@whole_runs
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from(["float64", "float32", "float16"]),
    per_kv_head=st.booleans(),
    keep=st.sets(st.sampled_from(ORDER), min_size=1),
)
def test_the_tools_own_trace_checks_as_exit_0(
    seed: int, dtype: str, per_kv_head: bool, keep: set[str]
) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    names = [n for n in ORDER if n in trace.names]
    chosen = [n for n in names if n in keep] or names
    group = model.heads // model.n_kv_heads
    arrays: dict[str, Any] = {}
    for name in chosen:
        if name in PER_HEAD:
            heads = range(model.heads)
            if per_kv_head and name in ("K", "V", "K_rope"):
                heads = range(0, model.heads, group)  # one query head of each K/V head
            data = np.stack([trace.stage(name, head=h).data for h in heads])
        else:
            data = trace.stage(name).data
        arrays[name] = data.astype(dtype)
    report = attntrace.check(
        arrays,
        model=model,
        sentence=" ".join(tokens),
        context=" ".join(context) if context else None,
        layout="heads-first",
    )
    assert report.exit_code == 0, str(report)
    assert report.first_divergent is None


AS_MANY_TOKENS_AS_HEADS = "the cat sat on"  # gqa-causal has 4 heads: [4, 4, d] reads two ways


@pytest.mark.parametrize("mistake", [None, *MISTAKES])
def test_as_many_tokens_as_heads_every_mistake_is_still_named(mistake: str | None) -> None:
    """Found by review: every per-head array of gqa-causal over four tokens reads two
    ways, and a wrong one was refused as bad input (or crashed) instead of diagnosed."""
    document = MODELS["gqa-causal"]
    if mistake is not None and not applies(mistake, document):
        pytest.skip(f"{mistake} does not apply to gqa-causal")
    words = AS_MANY_TOKENS_AS_HEADS
    with np.errstate(all="ignore"):
        native = student_attention(document, words, dtype="float64", mistake=mistake)
        right = student_attention(document, words, dtype="float64")
    harmless = all(np.allclose(native[k], right[k], equal_nan=True) for k in right if k in native)
    for layout in ("batched", "tokens"):
        report = attntrace.check(saved(native, layout=layout), model=document, sentence=words)
        if harmless:  # unstable-softmax on scores that do not overflow: nothing to find
            assert report.ok, layout
            continue
        assert report.exit_code == 1, layout
        assert report.diagnosis is not None, layout
        assert mistake in (report.diagnosis.cause, *report.diagnosis.also), layout
