"""The backward pass (issue 15) against central finite differences and closed forms.

Every gradient grad_block returns is compared with (L(p + h) − L(p − h)) / 2h, where L
is computed by an independent forward pass written here (its own softmax, mask and RoPE
as explicit rotation matrices), perturbed at the one point the gradient names: a
weight, X, or an intermediate of one head (its Q, its softmax, ...). Random blocks cover
one head, multi-head, GQA, MQA, causal, cross-attention, RoPE in both pairings, biases
and WO; the upstream gradient is random, the attend loss's or the mse loss's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from finite_differences import assert_close_to, finite_difference
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from randoms import random_block
from tolerances import FLOAT64

from attntrace import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import GivenInputs, ModelSpec
from attntrace.learning.backward import Gradients, block_output_name, grad_block
from attntrace.learning.losses import Loss, attend_loss, mse_loss

Array = npt.NDArray[np.float64]
Point = tuple[str, int | None]  # where a perturbation is added: ("Q", head), ("concat", None)
PER_HEAD = ["output", "V", "softmax", "scaled", "scores", "Q_rope", "K_rope", "Q", "K"]
PARAMS = ["WQ", "WK", "WV", "WO", "bQ", "bK", "bV", "bO", "X", "X_context"]
EXAMPLES = settings(max_examples=12, deadline=None)


@functools.cache
def rotation(position: int, width: int, base: float, pairing: str) -> Array:
    """RoPE at ``position`` as a width × width matrix, built pair by pair."""
    turn = np.eye(width)
    for i in range(width // 2):
        angle = position * base ** (-2 * i / width)
        a, b = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + width // 2)
        turn[a, a], turn[a, b] = math.cos(angle), -math.sin(angle)
        turn[b, a], turn[b, b] = math.sin(angle), math.cos(angle)
    return turn


def params_of(model: ModelSpec, tokens: list[str], context: list[str] | None) -> dict[str, Any]:
    trace = trace_block(model, tokens, context)
    params: dict[str, Any] = {name: model.bias(name) for name in ("bQ", "bK", "bV", "bO")}
    params.update(
        WQ=model.WQ,
        WK=model.WK,
        WV=model.WV,
        WO=model.WO,
        X=trace["X"].data,
        X_context=trace["X_context"].data if context else None,
    )
    return params


def forward(
    model: ModelSpec, p: dict[str, Any], bump: dict[Point, Array]
) -> tuple[Array, list[Array]]:
    """The block output and each head's softmax, with ``bump`` added at its points."""

    def at(name: str, head: int | None, value: Array) -> Array:
        return value + bump[(name, head)] if (name, head) in bump else value

    d_k, d_v, group = model.d_k, model.d_v, model.heads // model.n_kv_heads
    X = p["X"]
    keys = X if p["X_context"] is None else p["X_context"]
    n, m = len(X), len(keys)
    outputs, softmaxes = [], []
    for h in range(model.heads):
        g = h // group

        def project(name: str, rows: Array, index: int, width: int) -> Array:
            cols = slice(index * width, (index + 1) * width)
            bias = p["b" + name[1]]
            out: Array = rows @ p[name][:, cols]
            return out if bias is None else out + bias[cols]

        Q = at("Q", h, project("WQ", X, h, d_k))
        K = at("K_kv", g, at("K", h, project("WK", keys, g, d_k)))
        V = at("V_kv", g, at("V", h, project("WV", keys, g, d_v)))
        if model.position_kind == "rope":
            base, pairing = model.rope_base, model.rope_pairing
            Q = at(
                "Q_rope", h, np.stack([rotation(i, d_k, base, pairing) @ Q[i] for i in range(n)])
            )
            K = at(
                "K_rope", h, np.stack([rotation(j, d_k, base, pairing) @ K[j] for j in range(m)])
            )
        scaled = at("scaled", h, at("scores", h, Q @ K.T) / math.sqrt(d_k))
        # query i may not see key j after it (the last query aligned with the last key)
        hidden = model.causal & (np.arange(m)[None, :] > np.arange(n)[:, None] + (m - n))
        masked = np.where(hidden, -np.inf, scaled)
        shifted = np.exp(masked - masked.max(axis=1, keepdims=True))
        weights = at("softmax", h, shifted / shifted.sum(axis=1, keepdims=True))
        softmaxes.append(weights)
        outputs.append(at("output", h, weights @ V))
    block = outputs[0] if model.heads == 1 else at("concat", None, np.concatenate(outputs, 1))
    if p["WO"] is not None:
        block = block @ p["WO"] + (0 if p["bO"] is None else p["bO"])
        block = at("projected", None, block)
    return block, softmaxes


Objective = Callable[[Array, list[Array]], float]


def paired_with(upstream: Array) -> Objective:
    """L = Σ upstream ∘ block output: its gradient at the output is ``upstream`` itself."""
    return lambda block, _: float((upstream * block).sum())


def check_against_finite_differences(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    grads: Gradients,
    objective: Objective,
) -> None:
    p = params_of(model, tokens, context)
    loss = objective(*forward(model, p, {}))

    def at_point(point: Point) -> Callable[[Array], float]:
        return lambda step: objective(*forward(model, p, {point: step}))

    def at_param(name: str) -> Callable[[Array], float]:
        return lambda step: objective(*forward(model, {**p, name: p[name] + step}, {}))

    for hg in grads.heads:
        for name in PER_HEAD:
            gradient = getattr(hg, "d_" + name if name != "output" else "d_output")
            if gradient is None:
                assert name.endswith("_rope")
                assert model.position_kind != "rope"
                continue
            assert_close_to(
                finite_difference(gradient.shape, at_point((name, hg.head))),
                gradient,
                loss,
                f"d_{name} (head {hg.head})",
            )
    for kv in grads.kv_heads:
        for name in ("K", "V"):
            gradient = getattr(kv, "d_" + name)
            assert_close_to(
                finite_difference(gradient.shape, at_point((f"{name}_kv", kv.kv_head))),
                gradient,
                loss,
                f"d_{name} (K/V head {kv.kv_head})",
            )
    for name in PARAMS:
        gradient = getattr(grads, "d_" + name)
        if p[name] is None:
            assert gradient is None, f"d_{name} without {name}"
            continue
        assert gradient is not None, f"no d_{name}"
        assert_close_to(
            finite_difference(gradient.shape, at_param(name)), gradient, loss, f"d_{name}"
        )
    for name, gradient in (("concat", grads.d_concat), ("projected", grads.d_projected)):
        if gradient is not None:
            assert_close_to(
                finite_difference(gradient.shape, at_point((name, None))),
                gradient,
                loss,
                f"d_{name}",
            )


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@EXAMPLES
@given(st.integers(0, 2**32 - 1))
def test_every_gradient_of_a_random_upstream_matches_finite_differences(seed: int) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    upstream = np.random.default_rng(seed).normal(size=trace[block_output_name(model)].shape)
    grads = grad_block(model, tokens, context, d_output=upstream)
    check_against_finite_differences(model, tokens, context, grads, paired_with(upstream))


@EXAMPLES
@given(st.integers(0, 2**32 - 1), st.data())
def test_every_gradient_of_the_attend_loss_matches_finite_differences(
    seed: int, data: st.DataObject
) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    n, m = len(tokens), len(context or tokens)
    row = data.draw(st.integers(0, n - 1))
    col = data.draw(st.integers(0, row + m - n if model.causal else m - 1))
    head = data.draw(st.none() | st.integers(0, model.heads - 1))
    chosen = range(model.heads) if head is None else [head]
    weights = [trace.stage("softmax", head=h).data[row, col] for h in chosen]
    # a weight near 0 has −log of it curving too fast for a step of 1e-6 (or below 0)
    assume(min(weights) > 1e-3)
    loss = attend_loss(trace, row, col, head)
    assert loss.value == pytest.approx(-sum(math.log(w) for w in weights), rel=1e-12)
    grads = grad_block(model, tokens, context, d_softmax=loss.d_softmax)
    check_against_finite_differences(
        model,
        tokens,
        context,
        grads,
        lambda _, softmaxes: -sum(math.log(softmaxes[h][row, col]) for h in chosen),
    )


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@EXAMPLES
@given(st.integers(0, 2**32 - 1))
def test_every_gradient_of_the_mse_loss_matches_finite_differences(seed: int) -> None:
    model, tokens, context = random_block(seed)
    out = trace_block(model, tokens, context)[block_output_name(model)].data
    target = np.random.default_rng(seed).normal(size=out.shape)
    loss = mse_loss(out, target)
    assert loss.value == pytest.approx(
        sum((a - b) ** 2 for a, b in zip(out.flat, target.flat, strict=True)) / out.size, rel=1e-12
    )
    grads = grad_block(model, tokens, context, d_output=loss.d_output)
    check_against_finite_differences(
        model,
        tokens,
        context,
        grads,
        lambda block, _: float(np.mean((block - target) ** 2)),
    )


def test_every_kind_of_block_is_among_the_finite_difference_checks() -> None:
    """The seeds above are hypothesis's; these fixed ones make sure each option is run."""
    kinds: list[dict[str, Any]] = [
        {"heads": 1, "cross": False, "rope": False},
        {"heads": 4, "kv_heads": 4, "wo": True},
        {"heads": 4, "kv_heads": 2, "causal": True, "cross": False},
        {"heads": 3, "kv_heads": 1},
        {"heads": 2, "cross": True, "biases": True, "wo": True},
        {"heads": 2, "cross": False, "rope": True, "rope_pairing": "half", "biases": True},
        {
            "heads": 2,
            "kv_heads": 1,
            "cross": False,
            "rope": True,
            "rope_pairing": "interleaved",
            "causal": True,
        },
    ]
    for seed, fixed in enumerate(kinds):
        model, tokens, context = random_block(seed, **fixed)
        trace = trace_block(model, tokens, context)
        upstream = np.random.default_rng(seed).normal(size=trace[block_output_name(model)].shape)
        grads = grad_block(model, tokens, context, d_output=upstream)
        check_against_finite_differences(model, tokens, context, grads, paired_with(upstream))


def test_positions_and_a_given_x_are_differentiated_at_x() -> None:
    """Sinusoidal or learned positions are added before X, and a real layer hands X over:
    d_X is the gradient of X itself in each (the embeddings' is the same rows, summed
    over repeated tokens, and is not the block's to give)."""
    model, tokens, _ = random_block(11, heads=2, cross=False, rope=False, causal=True, wo=True)
    learned = np.random.default_rng(11).normal(size=(len(tokens), model.d_model))
    x = np.random.default_rng(12).normal(size=(len(tokens), model.d_model))
    for changed in (
        replace(model, positions="sinusoidal"),
        replace(model, positions=learned),
        replace(model, given=GivenInputs(x, "X = given")),
    ):
        trace = trace_block(changed, tokens)
        upstream = np.random.default_rng(13).normal(size=trace["projected"].shape)
        grads = grad_block(changed, tokens, d_output=upstream)
        check_against_finite_differences(changed, tokens, None, grads, paired_with(upstream))


@EXAMPLES
@given(st.integers(0, 2**32 - 1))
def test_masked_cells_get_exactly_zero_gradient(seed: int) -> None:
    model, tokens, _ = random_block(seed, causal=True, cross=False)
    upstream = np.random.default_rng(seed).normal(
        size=trace_block(model, tokens)[block_output_name(model)].shape
    )
    grads = grad_block(model, tokens, d_output=upstream)
    n = len(tokens)
    for hg in grads.heads:
        for i in range(n):
            for j in range(i + 1, n):
                assert hg.d_scaled[i, j] == 0.0
                assert hg.d_scores[i, j] == 0.0


@EXAMPLES
@given(st.integers(0, 2**32 - 1))
def test_a_kv_heads_gradient_is_the_sum_over_its_query_heads(seed: int) -> None:
    model, tokens, context = random_block(seed, heads=4, kv_heads=2)
    shape = trace_block(model, tokens, context)[block_output_name(model)].shape
    grads = grad_block(
        model, tokens, context, d_output=np.random.default_rng(seed).normal(size=shape)
    )
    for kv in grads.kv_heads:
        group = [hg for hg in grads.heads if hg.head // 2 == kv.kv_head]
        assert len(group) == 2
        assert kv.query_heads == tuple(hg.head for hg in group)
        for name in ("d_K", "d_V", "d_WK", "d_WV"):
            total = group[0].__dict__[name] + group[1].__dict__[name]
            np.testing.assert_allclose(getattr(kv, name), total, **FLOAT64)
        cols = slice(kv.kv_head * model.d_k, (kv.kv_head + 1) * model.d_k)
        np.testing.assert_allclose(grads.d_WK[:, cols], kv.d_WK, **FLOAT64)


@EXAMPLES
@given(st.integers(0, 2**32 - 1))
def test_the_softmax_backward_is_the_jacobian_times_dA_row_by_row(seed: int) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    shape = trace[block_output_name(model)].shape
    grads = grad_block(
        model, tokens, context, d_output=np.random.default_rng(seed).normal(size=shape)
    )
    for hg in grads.heads:
        weights = trace.stage("softmax", head=hg.head).data
        for i, a in enumerate(weights):
            m = len(a)
            jacobian = [
                [(a[r] if r == c else 0.0) - a[r] * a[c] for c in range(m)] for r in range(m)
            ]
            expected = [
                sum(jacobian[r][c] * hg.d_softmax[i, c] for c in range(m)) for r in range(m)
            ]
            np.testing.assert_allclose(hg.d_scaled[i], expected, **FLOAT64)


def test_gradients_are_read_only() -> None:
    model, tokens, context = random_block(3, heads=2, wo=True, biases=True)
    grads = grad_block(
        model,
        tokens,
        context,
        d_output=np.ones(trace_block(model, tokens, context)["projected"].shape),
    )
    for array in (
        grads.d_X,
        grads.d_WQ,
        grads.d_WO,
        grads.heads[0].d_scaled,
        grads.d_bQ,
        grads.kv_heads[0].d_WK,
    ):
        assert array is not None
        assert not array.flags.writeable


def test_bad_gradients_and_losses_are_input_errors() -> None:
    model, tokens, _ = random_block(5, heads=2, cross=False, causal=True, wo=False)
    trace = trace_block(model, tokens)
    n = len(tokens)
    with pytest.raises(InputError, match="d_output"):
        grad_block(model, tokens, d_output=np.ones((n + 1, 1)))
    with pytest.raises(InputError, match="finite"):
        grad_block(model, tokens, d_output=np.full(trace["concat"].shape, np.nan))
    with pytest.raises(InputError, match="one per head"):
        grad_block(model, tokens, d_softmax=[np.ones((n, n))])
    with pytest.raises(InputError, match="0 … "):
        attend_loss(trace, n, 0)
    with pytest.raises(InputError, match="head"):
        attend_loss(trace, 0, 0, head=2)
    if n > 1:
        with pytest.raises(InputError, match="causal mask"):
            attend_loss(trace, 0, 1)
    with pytest.raises(InputError, match="target"):
        mse_loss(trace["concat"].data, np.ones((n, 1, 1)))


def test_the_attend_loss_enters_at_softmax_and_the_mse_loss_at_the_output() -> None:
    model, tokens, _ = random_block(7, heads=3, cross=False, causal=False)
    trace = trace_block(model, tokens)
    loss = attend_loss(trace, 0, 0, head=1)
    assert isinstance(loss, Loss)
    assert loss.d_output is None
    assert loss.d_softmax is not None
    assert loss.d_softmax[0] is None
    assert loss.d_softmax[2] is None
    weight = trace.stage("softmax", head=1).data[0, 0]
    d = loss.d_softmax[1]
    assert d is not None
    assert d[0, 0] == pytest.approx(-1 / weight, rel=1e-12)
    assert np.count_nonzero(d) == 1
    grads = grad_block(model, tokens, d_softmax=loss.d_softmax)
    assert not grads.heads[0].d_scaled.any()  # head 0 is not in the loss: no gradient
    assert not grads.heads[2].d_WQ.any()


def test_torch_autograd_agrees_where_it_is_installed() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: autograd not compared")
    for seed in range(12):
        model, tokens, context = random_block(seed, rope=False)
        p = params_of(model, tokens, context)
        t: dict[str, Any] = {
            k: None if v is None else torch.tensor(np.array(v), requires_grad=True)
            for k, v in p.items()
        }
        keys = t["X"] if t["X_context"] is None else t["X_context"]
        n, m = t["X"].shape[0], keys.shape[0]
        d_k, d_v, group = model.d_k, model.d_v, model.heads // model.n_kv_heads
        outputs = []
        for h in range(model.heads):
            g = h // group

            def project(name: str, rows: Any, index: int, width: int, t: Any = t) -> Any:
                cols = slice(index * width, (index + 1) * width)
                out = rows @ t[name][:, cols]
                bias = t["b" + name[1]]
                return out if bias is None else out + bias[cols]

            Q, K, V = (
                project("WQ", t["X"], h, d_k),
                project("WK", keys, g, d_k),
                project("WV", keys, g, d_v),
            )
            scaled = Q @ K.T / math.sqrt(d_k)
            if model.causal:
                hidden = torch.ones(n, m, dtype=torch.bool).triu(1 + m - n)
                scaled = scaled.masked_fill(hidden, float("-inf"))
            outputs.append(torch.softmax(scaled, dim=-1) @ V)
        block = torch.cat(outputs, dim=1)
        if t["WO"] is not None:
            block = block @ t["WO"] + (0 if t["bO"] is None else t["bO"])
        upstream = np.random.default_rng(seed).normal(size=tuple(block.shape))
        (block * torch.tensor(upstream)).sum().backward()
        grads = grad_block(model, tokens, context, d_output=upstream)
        for name, tensor in t.items():
            if tensor is not None:
                np.testing.assert_allclose(
                    getattr(grads, "d_" + name), tensor.grad.numpy(), **FLOAT64
                )
