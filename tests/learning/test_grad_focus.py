"""grad --focus's record: one row's softmax backward, against loops and finite differences.

J is checked against a double loop over a row of softmax weights; each dSⱼ against the
backward pass's d_scaled stage and, independently, against a central finite difference
of the loss with respect to that one scaled score, the loss recomputed here from the
forward trace's value rows (its own softmax, mask, concat and WO).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from randoms import random_block
from tolerances import FINITE_DIFFERENCE, FINITE_DIFFERENCE_STEP, FLOAT64

from attntrace import InputError
from attntrace.api import prepared
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import block_output_name
from attntrace.learning.grad_focus import JacobianFocus, jacobian_focus
from attntrace.learning.grad_trace import GradTrace, grad_trace
from attntrace.learning.objective import Objective

Array = npt.NDArray[np.float64]
EXAMPLES = settings(max_examples=25, deadline=None)


def with_target(
    model: ModelSpec, tokens: list[str], context: list[str] | None, seed: int
) -> ModelSpec:
    shape = trace_block(model, tokens, context)[block_output_name(model)].shape
    return replace(model, target=np.random.default_rng(seed).normal(size=shape))


def naive_jacobian(a: list[float]) -> list[list[float]]:
    """∂aⱼ/∂sₖ of a softmax row, by its definition, one entry at a time."""
    m = len(a)
    out = [[0.0] * m for _ in range(m)]
    for j in range(m):
        for k in range(m):
            delta = 1.0 if j == k else 0.0
            out[j][k] = a[j] * (delta - a[k])
    return out


def loss_with_scaled_row(
    model: ModelSpec, grad: GradTrace, head: int, row: int, scaled: Array
) -> float:
    """The loss, with head ``head``'s row ``row`` of scaled scores replaced by ``scaled``
    and everything after it recomputed from the forward trace's value rows (``model``'s
    WO, bO and target)."""
    trace = grad.forward
    outputs, weights = [], []
    for h in range(model.heads):
        softmax = np.array(trace.stage("softmax", head=h).data)
        if h == head:
            hidden = trace.softmax_input(head).data[row] == -np.inf
            z = np.where(hidden, -np.inf, scaled)
            e = np.exp(z - z.max())
            softmax[row] = e / e.sum()
        weights.append(softmax)
        outputs.append(softmax @ trace.stage("V", head=h).data)
    block = outputs[0] if model.heads == 1 else np.concatenate(outputs, axis=1)
    if model.WO is not None:
        bias = model.bias("bO")
        block = block @ model.WO + (0.0 if bias is None else bias)
    if grad.objective.kind == "mse":
        assert model.target is not None
        return float(np.mean((block - model.target) ** 2))
    assert grad.loss.cell is not None
    i, k = grad.loss.cell
    return float(sum(-math.log(weights[h][i, k]) for h in grad.loss.heads))


def finite_differences(
    model: ModelSpec, grad: GradTrace, head: int, row: int
) -> tuple[Array, float]:
    """(L(s + h·eⱼ) − L(s − h·eⱼ)) / 2h for each scaled score sⱼ of the row, and L."""
    scaled = np.array(grad.forward.stage("scaled", head=head).data[row])
    step = FINITE_DIFFERENCE_STEP
    estimate = np.zeros_like(scaled)
    for j in range(len(scaled)):
        bump = np.zeros_like(scaled)
        bump[j] = step
        up = loss_with_scaled_row(model, grad, head, row, scaled + bump)
        down = loss_with_scaled_row(model, grad, head, row, scaled - bump)
        estimate[j] = (up - down) / (2 * step)
    return estimate, loss_with_scaled_row(model, grad, head, row, scaled)


def check(focus: JacobianFocus, grad: GradTrace, model: ModelSpec) -> None:
    """Every piece of ``focus`` against its independent computation."""
    trace, head, row = grad.forward, focus.head, focus.index
    a = [float(x) for x in trace.stage("softmax", head=head).data[row]]
    d_a = [float(x) for x in grad.stage("d_softmax", head=head).data[row]]
    m = len(a)
    assert focus.weights == pytest.approx(a, abs=0, rel=0)  # the row itself, read
    np.testing.assert_allclose(focus.jacobian, naive_jacobian(a), **FLOAT64)
    naive_terms = [[naive_jacobian(a)[j][k] * d_a[k] for k in range(m)] for j in range(m)]
    np.testing.assert_allclose(focus.terms, naive_terms, **FLOAT64)
    # each dSⱼ: the shown terms' sum, the stage's entry, and the shortcut, all one number
    for j in range(m):
        assert focus.d_scaled[j] == math.fsum(focus.terms[j])
    stage = grad.stage("d_scaled", head=head).data[row]
    np.testing.assert_allclose(focus.d_scaled, stage, **FLOAT64)
    np.testing.assert_allclose(focus.shortcut, stage, **FLOAT64)
    inner = sum(x * y for x, y in zip(a, d_a, strict=True))
    assert focus.inner == pytest.approx(inner, rel=1e-12, abs=1e-12 * max(map(abs, d_a), default=1))
    np.testing.assert_allclose(
        focus.shortcut, [a[j] * (d_a[j] - inner) for j in range(m)], **FLOAT64
    )
    np.testing.assert_allclose(
        focus.stage_d_scores, np.asarray(stage) / math.sqrt(trace.model.d_k), **FLOAT64
    )
    # masked keys: exactly 0 rows and columns of J, exactly 0 dS
    hidden = trace.softmax_input(head).data[row] == -np.inf
    assert focus.masked == tuple(bool(x) for x in hidden)
    for k in (k for k in range(m) if hidden[k]):
        assert all(focus.jacobian[k][j] == 0.0 and focus.jacobian[j][k] == 0.0 for j in range(m))
        assert focus.d_scaled[k] == 0.0
        assert focus.shortcut[k] == 0.0
        assert all(focus.terms[j][k] == 0.0 for j in range(m))
    # and, independently of the backward pass: the loss's own slope along each score
    estimate, loss = finite_differences(model, grad, head, row)
    scale = max(float(np.abs(estimate).max()), max(map(abs, focus.d_scaled)))
    bound = FINITE_DIFFERENCE["rtol"] * scale + FINITE_DIFFERENCE["atol"] * max(1.0, abs(loss))
    assert float(np.abs(estimate - np.asarray(focus.d_scaled)).max()) <= bound


@EXAMPLES
@given(st.integers(0, 2**32 - 1), st.data())
def test_a_random_row_of_the_mse_loss(seed: int, data: st.DataObject) -> None:
    model, tokens, context = random_block(seed)
    model = with_target(model, tokens, context, seed)
    grad = grad_trace(model, tokens, context, Objective("mse"))
    row = data.draw(st.integers(0, len(tokens) - 1))
    head = data.draw(st.integers(0, model.heads - 1))
    focus = jacobian_focus(grad, row, head)
    assert (focus.index, focus.head, focus.token) == (row, head, tokens[row])
    assert focus.kv_head == head // (model.heads // model.n_kv_heads)
    assert len(focus.keys) == len(context or tokens)
    check(focus, grad, model)


@EXAMPLES
@given(st.integers(0, 2**32 - 1), st.data())
def test_a_random_row_of_the_attend_loss(seed: int, data: st.DataObject) -> None:
    model, tokens, context = random_block(seed)
    n, m = len(tokens), len(context or tokens)
    frm = data.draw(st.integers(0, n - 1))
    to = data.draw(st.integers(0, frm + m - n if model.causal else m - 1))
    assume(to >= 0)
    trace = trace_block(model, tokens, context)
    # −log a curves too fast near a = 0 for a step of 1e-6
    assume(min(trace.stage("softmax", head=h).data[frm, to] for h in range(model.heads)) > 1e-3)
    grad = grad_trace(model, tokens, context, Objective("attend", str(frm), str(to)))
    row = data.draw(st.sampled_from([frm, data.draw(st.integers(0, n - 1))]))
    check(jacobian_focus(grad, row, data.draw(st.integers(0, model.heads - 1))), grad, model)


def test_it_animal() -> None:
    p = prepared(None, sample="it-animal")
    grad = grad_trace(p.spec, p.tokens, p.key_tokens, Objective("attend", "it", "animal"))
    focus = jacobian_focus(grad, 7, 0)
    assert (focus.token, focus.label, focus.size) == ("it", "it", 11)
    assert focus.key_labels[1] == "animal"
    assert not any(focus.masked)
    # the attend loss's dA: −1/a at animal, 0 elsewhere, so Σₖ aₖ·dAₖ = −1
    assert focus.d_weights[1] == pytest.approx(-1 / focus.weights[1], rel=1e-12)
    assert focus.inner == pytest.approx(-1.0, rel=1e-12)
    check(focus, grad, p.spec)


def test_a_causal_row_has_its_later_keys_masked() -> None:
    model, tokens, _context = random_block(5, causal=True, cross=False)
    tokens = ["t0", "t1", "t2", "t3"]
    model = with_target(model, tokens, None, 5)
    grad = grad_trace(model, tokens, None, Objective("mse"))
    focus = jacobian_focus(grad, 1, 0)
    assert focus.masked == (False, False, True, True)
    check(focus, grad, model)


def test_a_row_or_head_out_of_range_is_refused() -> None:
    p = prepared(None, sample="it-animal")
    grad = grad_trace(p.spec, p.tokens, p.key_tokens, Objective("attend", "it", "animal"))
    for row, head, field in ((11, 0, "row"), (-1, 0, "row"), (0, 1, "head"), (0, -1, "head")):
        with pytest.raises(InputError) as caught:
            jacobian_focus(grad, row, head)
        assert caught.value.field == field
    with pytest.raises(InputError):
        jacobian_focus(grad, True, 0)
    numpy_ints = jacobian_focus(grad, np.int64(2), np.int64(0))  # type: ignore[arg-type, unused-ignore]
    assert numpy_ints.index == 2
