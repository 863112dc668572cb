"""The backward pass through the attention variants (docs/variants.md) against central
finite differences.

The forward pass is written again here, from docs/variants.md's table, with plain loops
(its own RMSNorm, RoPE as rotation matrices, ALiBi's −m·|i − j|, the cap, the window's
rule j ≤ i and i − j < N with sinks j < S kept, and the sink's one more term in the
softmax's denominator), and perturbed at the point each gradient names: a weight, the
q_norm / k_norm vectors, a head's sink logit, or an intermediate of one head (Q, Q_norm,
Q_rope, scaled, biased, capped, softmax, ...). Every option is drawn on and off at random.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from finite_differences import assert_close_to, finite_difference
from hypothesis import example, given, settings
from hypothesis import strategies as st
from variant_cases import (
    Point,
    naive_forward,
    params,
    variant_block,
)

from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import block_output_name, grad_block
from attntrace.learning.grad_trace import GRAD_ORDER, grad_trace
from attntrace.learning.objective import Objective

Array = npt.NDArray[np.float64]
EXAMPLES = settings(max_examples=25, deadline=None)
ALL_ON = {
    "causal": True,
    "window": True,
    "qk_norm": True,
    "weighted": True,
    "softcap": True,
    "sink": True,
}


def paired(upstream: Array) -> Callable[[Array, list[Array]], float]:
    """L = Σ upstream ∘ block output."""
    return lambda block, _: float((upstream * block).sum())


def check(
    model: ModelSpec,
    tokens: list[str],
    objective: Callable[..., float],
    d_output: Array | None,
    d_softmax: list[Array | None] | None,
) -> None:
    grads = grad_block(model, tokens, d_output=d_output, d_softmax=d_softmax)
    p = params(model, tokens)
    loss = objective(*naive_forward(model, p, {}))

    def at_point(point: Point) -> Callable[[Array], float]:
        return lambda step: objective(*naive_forward(model, p, {point: step}))

    def at_param(name: str) -> Callable[[Array], float]:
        return lambda step: objective(*naive_forward(model, {**p, name: p[name] + step}, {}))

    v = model.variants
    for hg in grads.heads:
        h = hg.head
        points = {
            "Q": hg.d_Q,
            "K": hg.d_K,
            "scores": hg.d_scores,
            "scaled": hg.d_scaled,
            "softmax": hg.d_softmax,
            "Q_norm": hg.d_Q_norm,
            "K_norm": hg.d_K_norm,
            "Q_rope": hg.d_Q_rope,
            "K_rope": hg.d_K_rope,
            "biased": hg.d_biased,
            "capped": hg.d_capped,
        }
        on = {
            "Q_norm": v.qk_norm,
            "K_norm": v.qk_norm,
            "Q_rope": model.position_kind == "rope",
            "K_rope": model.position_kind == "rope",
            "biased": model.position_kind == "alibi",
            "capped": v.softcap is not None,
        }
        for name, gradient in points.items():
            assert (gradient is not None) == on.get(name, True), f"d_{name} (head {h})"
            if gradient is not None:
                assert_close_to(
                    finite_difference(gradient.shape, at_point((name, h))),
                    gradient,
                    loss,
                    f"d_{name} (head {h})",
                )
        assert (hg.d_sink_logit is None) == (v.sink_logit is None)
    for name in ("WQ", "WK", "WV", "WO", "X", "q_norm", "k_norm"):
        gradient = getattr(grads, "d_" + name)
        assert (gradient is None) == (p[name] is None), f"d_{name}"
        if gradient is not None:
            assert_close_to(
                finite_difference(gradient.shape, at_param(name)), gradient, loss, f"d_{name}"
            )
    if p["sink_logit"] is not None:
        gradient = np.array([float(hg.d_sink_logit[0, 0]) for hg in grads.heads])  # type: ignore[index]
        assert_close_to(
            finite_difference(gradient.shape, at_param("sink_logit")),
            gradient,
            loss,
            "d_sink_logit",
        )


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@EXAMPLES
@given(st.integers(0, 2**32 - 1))
@example(234055)  # large scores: the plain central difference's h² term missed the bound
def test_every_variant_gradient_of_a_random_upstream_matches_finite_differences(
    seed: int,
) -> None:
    model, tokens = variant_block(seed)
    trace = trace_block(model, tokens)
    rng = np.random.default_rng(seed + 1)
    upstream = rng.normal(size=trace[block_output_name(model)].shape)
    entering: list[Array | None] = [
        rng.normal(size=(len(tokens), len(tokens))) for _ in range(model.heads)
    ]

    def objective(block: Array, softmaxes: list[Array]) -> float:
        return float((upstream * block).sum()) + sum(
            float((e * a).sum()) for e, a in zip(entering, softmaxes, strict=True) if e is not None
        )

    check(model, tokens, objective, upstream, entering)


@pytest.mark.parametrize("positions", ["rope", "alibi", "none"])
def test_every_variant_on_at_once(positions: str) -> None:
    """The whole table of docs/variants.md: QK-norm (weighted), window and a sink, the
    cap and the sink logit, with RoPE (after the norm), ALiBi, or no positions."""
    for seed in range(3):
        model, tokens = variant_block(seed, positions=positions, **ALL_ON)
        shape = trace_block(model, tokens)[block_output_name(model)].shape
        upstream = np.random.default_rng(seed).normal(size=shape)
        check(model, tokens, paired(upstream), upstream, None)


def test_a_window_passes_no_gradient_through_the_cells_it_hides() -> None:
    model, tokens = variant_block(3, causal=True, window=True, softcap=True)
    model_tokens = [*tokens, "t1", "t2", "t3", "t4"]
    rng = np.random.default_rng(0)
    upstream = rng.normal(size=trace_block(model, model_tokens)[block_output_name(model)].shape)
    grads = grad_block(model, model_tokens, d_output=upstream)
    window, sinks = model.variants.window, model.variants.sinks
    assert window is not None
    n = len(model_tokens)
    for hg in grads.heads:
        for i in range(n):
            for j in range(n):
                hidden = j > i or (i - j >= window and j >= sinks)
                if hidden:
                    assert hg.d_scaled[i, j] == 0.0
                    assert hg.d_capped is not None
                    assert hg.d_capped[i, j] == 0.0


def test_with_a_sink_each_row_of_the_logits_gradient_sums_to_minus_the_sinks_share() -> None:
    """Σⱼ dxⱼ + d sᵢ = 0 per row: the softmax's shift invariance, over the keys and the
    sink together; the sink logit's gradient is the sum of the rows' shares."""
    model, tokens = variant_block(5, sink=True, softcap=False, positions="none")
    trace = trace_block(model, tokens)
    upstream = np.random.default_rng(2).normal(size=trace[block_output_name(model)].shape)
    grads = grad_block(model, tokens, d_output=upstream)
    for hg in grads.heads:
        a = trace.stage("softmax", head=hg.head).data
        sink = trace.stage("sink", head=hg.head).data[:, 0]
        inner = (hg.d_softmax * a).sum(axis=1)
        shares = -sink * inner
        assert hg.d_sink_logit is not None
        assert hg.d_sink_logit[0, 0] == pytest.approx(shares.sum(), abs=1e-12)
        np.testing.assert_allclose(hg.d_scaled.sum(axis=1), -shares, atol=1e-12)


def test_the_grad_record_names_each_new_stage_in_backward_order() -> None:
    model, tokens = variant_block(
        1,
        positions="alibi",
        causal=True,
        window=True,
        qk_norm=True,
        weighted=True,
        softcap=True,
        sink=True,
    )
    grad = grad_trace(model, tokens, None, Objective("attend", tokens[-1], tokens[-1]))
    names = list(dict.fromkeys(grad.names))
    for name in (
        "d_sink_logit",
        "d_capped",
        "d_biased",
        "d_Q_norm",
        "d_K_norm",
        "d_q_norm",
        "d_k_norm",
    ):
        assert name in names
    assert names == [name for name in GRAD_ORDER if name in names]
    formulas = {s.name: s.formula for s in grad.stages}
    assert formulas["d_capped"].startswith("d_capped = softmax ∘ (d_softmax")
    assert "1 − (capped /" in formulas["d_biased"]
    assert formulas["d_scaled"] == "d_scaled = d_biased (ALiBi's bias is a constant)"
    assert formulas["d_Q"].startswith("d_Q = d_Q_norm back through RMSNorm")
    assert grad.mirror(grad.stage("d_capped", head=0)) is not None


def test_the_focus_panel_checks_against_the_stage_the_softmax_backward_lands_on() -> None:
    """Under a cap the softmax backward is d_capped (d_biased under ALiBi alone), and the
    by-hand row of grad --focus is set beside that stage's row, recomputed here."""
    from attntrace.learning.grad_focus import jacobian_focus

    for fixed, landed in (
        ({"softcap": True, "positions": "alibi"}, "d_capped"),
        ({"softcap": False, "positions": "alibi"}, "d_biased"),
        ({"softcap": False, "positions": "none"}, "d_scaled"),
    ):
        model, tokens = variant_block(2, causal=True, sink=True, **fixed)
        tokens = [*tokens, "t0", "t3"]
        grad = grad_trace(model, tokens, None, Objective("attend", "t3", "t0"))
        focus = jacobian_focus(grad, len(tokens) - 1, 0)
        assert focus.landed == landed
        a = grad.forward.stage("softmax", head=0).data[-1]
        d_a = grad.stage("d_softmax", head=0).data[-1]
        by_hand = [
            a[j] * (d_a[j] - sum(a[k] * d_a[k] for k in range(len(a)))) for j in range(len(a))
        ]
        np.testing.assert_allclose(focus.stage_d_scaled, by_hand, rtol=0, atol=1e-12)
