"""The grad screen's cell stories: any cell of any gradient, as the chain rule's step.

Every gradient stage of every sample gets a story (hypothesis picks the cells), whose
worked result is the backward pass's own cell; on random blocks (GQA, cross-attention,
biases, WO, RoPE) the terms each story writes add up to tests/naive_backward.py's loops.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive import naive_block
from naive_backward import naive_block_backward
from randoms import random_block
from tolerances import OFFSET_APPROX, significant

from attntrace import trace_attention
from attntrace.errors import InputError
from attntrace.forward.cell_terms import DIGITS
from attntrace.learning.grad_cell_story import grad_cell_story
from attntrace.learning.grad_trace import GradTrace, grad_trace
from attntrace.learning.objective import Objective
from attntrace.modelfile.model_file import load_model
from attntrace.modelfile.samples import list_samples, sample_path

SAMPLES = sorted(sample.name for sample in list_samples())
MOST_LINES = 20
SIX = significant(DIGITS)


@cache
def sample_grad(name: str) -> GradTrace:
    trace = trace_attention(sample=name)
    context = None if trace.context_tokens is None else list(trace.context_tokens)
    return grad_trace(
        load_model(sample_path(name)), list(trace.tokens), context, Objective("attend", "1", "0")
    )


def worked(lines: tuple[str, ...]) -> float | None:
    """The figure the step ends on, the line before the value's (None: words only)."""
    found = re.search(r"= (\S+)$", lines[-2])
    return None if found is None else float(found.group(1))


@given(data=st.data())
@pytest.mark.parametrize("name", SAMPLES)
def test_every_cell_of_every_gradient_has_a_story(name: str, data: Any) -> None:
    grad = sample_grad(name)
    stage = data.draw(st.sampled_from(grad.stages), label="stage")
    row = data.draw(st.integers(0, stage.shape[0] - 1), label="row")
    col = data.draw(st.integers(0, stage.shape[1] - 1), label="col")
    story = grad_cell_story(grad, stage, row, col)
    value = float(stage.data[row, col])
    assert story.heading.startswith(f"{stage.name}[")
    assert 2 <= len(story.lines) <= MOST_LINES
    assert float(story.lines[-1].split()[1]) == value
    assert not any("not in this trace" in line for line in story.lines)
    result = worked(story.lines)
    if result is not None:  # the step, redone from the forward stages, gives the cell
        assert result == pytest.approx(value, rel=10.0 ** (1 - DIGITS), abs=1e-12)


# The gradients whose story is one sum: the terms written add up to the cell.
SUMS = {"d_V", "d_softmax", "d_WQ", "d_WK", "d_WV", "d_bQ", "d_bK", "d_bV", "d_X"}
SUMS |= {"d_X_context", "d_WO", "d_bO", "d_concat"}
# naive_block_backward's name for a stage of one head, or of a K/V head's sum.
PER_HEAD = ("d_output", "d_V", "d_softmax", "d_scaled", "d_scores", "d_Q", "d_K")


def loops_gradient(naive: dict[str, Any], name: str, head: int | None, kv: int | None) -> Any:
    if head is not None and name in (*PER_HEAD, "d_Q_rope", "d_K_rope"):
        return naive[name][head]
    if name in ("d_K", "d_V") and kv is not None:
        return naive[f"{name}_sum"][kv]
    return naive[name]


@pytest.mark.parametrize("seed", range(16))
def test_the_steps_add_up_to_the_loops_gradients(seed: int) -> None:
    model, tokens, context = random_block(seed)
    grad = grad_trace(model, tokens, context, Objective("attend", "0", "0"))
    keys = [list(model.embeddings[t]) for t in (context or tokens)]
    x = [list(model.embeddings[t]) for t in tokens]
    shared: dict[str, Any] = {
        "heads": model.heads,
        "kv_heads": model.n_kv_heads,
        "causal": model.causal,
        "context": keys if context is not None else None,
        "wo": None if model.WO is None else model.WO.tolist(),
        "biases": {name: list(b) for name, b in model.biases.items()},
        "rope_base": model.rope_base if model.position_kind == "rope" else None,
        "rope_pairing": model.rope_pairing,
    }
    matrices = (model.WQ.tolist(), model.WK.tolist(), model.WV.tolist())
    forward = naive_block(x, *matrices, **shared)
    m = len(keys)
    d_softmax: list[list[list[float]] | None] = []
    for h in range(model.heads):  # the attend loss: −log A[0, 0] of every head
        d = [[0.0] * m for _ in tokens]
        d[0][0] = -1.0 / forward["softmax"][h][0][0]
        d_softmax.append(d)
    naive = naive_block_backward(x, *matrices, **shared, d_softmax=d_softmax)
    checked = 0
    for stage in grad.stages:
        if stage.name in ("d_Q_norm", "d_K_norm", "d_q_norm", "d_k_norm", "d_sink_logit"):
            continue  # not in random blocks
        expected = loops_gradient(naive, stage.name, stage.head, stage.kv_head)
        if expected is None:
            continue
        rows = expected if isinstance(expected[0], list) else [expected]
        for i in range(stage.shape[0]):
            for j in range(stage.shape[1]):
                story = grad_cell_story(grad, stage, i, j)
                want = rows[i][j]
                result = worked(story.lines)
                if result is not None:
                    assert result == pytest.approx(want, rel=2 * 10.0 ** (1 - DIGITS), abs=1e-9)
                    checked += 1
                if stage.name in SUMS:
                    assert math.fsum(story.terms) == pytest.approx(want, **OFFSET_APPROX)
    assert checked > 20


def test_the_softmax_backward_is_written_as_the_shortcut() -> None:
    """d_scaled[i, j] = a_j · (dA_j − Σₖ a_k · dA_k): the terms are a_k · dA_k."""
    grad = sample_grad("it-animal")
    trace = grad.forward
    weights, d_weights = trace["softmax"].data, grad.stage("d_softmax", 0).data
    d_scaled = grad.stage("d_scaled", 0)
    story = grad_cell_story(grad, d_scaled, 1, 2)
    expected = [a * d for a, d in zip(weights[1], d_weights[1], strict=True)]
    assert list(story.terms) == pytest.approx(expected, **OFFSET_APPROX)
    inner = math.fsum(expected)
    by_hand = weights[1][2] * (d_weights[1][2] - inner)
    assert by_hand == pytest.approx(d_scaled.data[1, 2], **OFFSET_APPROX)
    assert "softmax · (d_softmax − Σ)" in "\n".join(story.lines)
    assert worked(story.lines) == pytest.approx(by_hand, **SIX)


def test_a_shared_kv_head_sums_its_query_heads() -> None:
    grad = sample_grad("gqa")
    summed = grad.stage("d_K", None, kv_head=0)
    story = grad_cell_story(grad, summed, 1, 0)
    parts = [grad.stage("d_K", h).data[1, 0] for h in grad.summed[0]]
    assert list(story.terms) == pytest.approx(parts, **OFFSET_APPROX)
    assert story.heading == "d_K[cat, d0], K/V head 0"


def test_a_gradient_cell_out_of_range_is_one_input_error() -> None:
    grad = sample_grad("cat-eats-fish")
    with pytest.raises(InputError, match="0 … 2"):
        grad_cell_story(grad, grad.stage("d_scaled", 0), 0, 3)
