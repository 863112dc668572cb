"""The losses as a user names them (learning/objective): tokens resolved as --focus resolves
them, the heads summed or one, the values against plain loops (tests/naive.py), and every
refusal one InputError naming the flag."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from naive import naive_block
from randoms import random_block
from tolerances import FLOAT64_APPROX

from attntrace.api import prepared
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace
from attntrace.learning.objective import Objective, resolve


def _it_animal() -> tuple[ModelSpec, Trace]:
    inputs = prepared(None, sample="it-animal")
    return inputs.spec, inputs.trace()


def test_the_attend_loss_reads_the_cell_the_tokens_name() -> None:
    spec, trace = _it_animal()
    resolved = resolve(Objective("attend", "it", "animal"), spec, trace)
    assert resolved.cell == (7, 1)
    assert resolved.heads == (0,)
    assert resolved.formula == "L = −log softmax[it, animal]"
    # the sample's description: "it" puts 0.6486 of its attention on "animal"
    assert math.exp(-resolved.loss.value) == pytest.approx(0.6486, abs=5e-5)


def test_tokens_are_named_as_focus_names_them_and_a_repeat_is_noted() -> None:
    spec, trace = _it_animal()
    by_index = resolve(Objective("attend", "7", "1"), spec, trace)
    by_label = resolve(Objective("attend", "it#7", "animal#1"), spec, trace)
    assert by_index.cell == by_label.cell == (7, 1)
    repeated = resolve(Objective("attend", "it", "the"), spec, trace)
    assert repeated.cell == (7, 4)  # "the" is at 4 (and "The" at 0 differs in case)
    first = resolve(Objective("attend", "it", "The"), spec, trace)
    assert first.cell == (7, 0)
    # the formula names the cell as the tables label a repeated token: the#3, not the
    twice = prepared("it the street the animal", sample="it-animal")
    second = resolve(Objective("attend", "it", "the#3"), twice.spec, twice.trace())
    assert second.cell == (0, 3)
    assert second.formula == "L = −log softmax[it, the#3]"


def test_under_cross_attention_to_names_a_context_token() -> None:
    inputs = prepared(None, sample="cross")
    trace = inputs.trace()
    assert trace.context_tokens is not None
    resolved = resolve(Objective("attend", "0", trace.context_tokens[1]), inputs.spec, trace)
    assert resolved.cell == (0, 1)
    with pytest.raises(InputError) as raised:
        resolve(Objective("attend", "0", "zebra"), inputs.spec, trace)
    assert raised.value.field == "--to"
    assert "a token of the context" in str(raised.value)
    assert trace.context_tokens[0] in str(raised.value)  # the keys are listed, not the queries


@pytest.mark.parametrize("seed", range(12))
def test_the_attend_loss_is_minus_log_the_weight_summed_over_heads(seed: int) -> None:
    model, tokens, context = random_block(seed, heads=3, kv_heads=3, causal=False, cross=False)
    trace = trace_block(model, tokens, context)
    x = [[float(v) for v in model.embeddings[t]] for t in tokens]
    naive = naive_block(
        x,
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=3,
        kv_heads=3,
        wo=None if model.WO is None else model.WO.tolist(),
        biases={k: v.tolist() for k, v in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
    )
    row, col = len(tokens) - 1, 0
    summed = resolve(Objective("attend", str(row), str(col)), model, trace)
    expected = -sum(math.log(naive["softmax"][h][row][col]) for h in range(3))
    assert summed.loss.value == pytest.approx(expected, **FLOAT64_APPROX)
    assert summed.heads == (0, 1, 2)
    assert summed.formula.startswith("L = Σ over heads 0…2 of −log softmax[")
    one = resolve(Objective("attend", str(row), str(col), head=1), model, trace)
    assert one.loss.value == pytest.approx(
        -math.log(naive["softmax"][1][row][col]), **FLOAT64_APPROX
    )
    assert one.heads == (1,)
    assert one.loss.d_softmax is not None
    assert one.loss.d_softmax[0] is None
    assert one.loss.d_softmax[2] is None


def test_mse_against_the_target_is_the_mean_squared_difference() -> None:
    spec, trace = _it_animal()
    output = trace.stage("output").data
    target = np.arange(output.size, dtype=float).reshape(output.shape) / 10
    model = replace(spec, target=target)
    resolved = resolve(Objective("mse"), model, trace)
    cells = [
        (a - b) ** 2 for a, b in zip(output.ravel().tolist(), target.ravel().tolist(), strict=True)
    ]
    assert resolved.loss.value == pytest.approx(math.fsum(cells) / len(cells), **FLOAT64_APPROX)
    assert resolved.formula == "L = mean((output − target)²)"
    assert resolved.cell is None


@pytest.mark.parametrize(
    ("objective", "target_rows", "field", "fragment"),
    [
        (Objective("attend", "dog", "animal"), None, "--from", "'dog' (tokens: 0:The"),
        (Objective("attend", "it", "99"), None, "--to", "an index from 0 to 10"),
        (Objective("attend", "it", None), None, "--to", "nothing"),
        (Objective("attend", "it", "animal", head=1), None, "--head", "0 … 0 (a head)"),
        (Objective("mse"), None, "target", "no target"),
        (Objective("mse"), 3, "target", "expected 11 rows (one per token of the sentence)"),
        (Objective("hinge"), None, "--loss", "expected attend or mse"),
    ],
)
def test_a_loss_that_does_not_fit_is_one_input_error(
    objective: Objective, target_rows: int | None, field: str, fragment: str
) -> None:
    spec, trace = _it_animal()
    if target_rows is not None:
        spec = replace(spec, target=np.zeros((target_rows, 3)))
    with pytest.raises(InputError) as raised:
        resolve(objective, spec, trace)
    assert raised.value.field == field
    assert fragment in str(raised.value)


def test_a_key_the_causal_mask_hides_is_refused() -> None:
    inputs = prepared(None, sample="it-animal", causal=True)
    with pytest.raises(InputError, match="the causal mask hides a later token"):
        resolve(Objective("attend", "it", "tired"), inputs.spec, inputs.trace())
