"""The backward pass as a record (learning/grad_trace): each gradient shaped and labelled as
the forward stage it mirrors, named as docs/learning.md's table, in its order."""

from __future__ import annotations

import pytest
from randoms import random_block

from attntrace.forward.attention import trace_block
from attntrace.learning.grad_trace import GRAD_ORDER, MIRRORS, grad_trace
from attntrace.learning.objective import Objective


@pytest.mark.parametrize("seed", range(40))
def test_every_gradient_has_its_forward_stage_s_shape_and_labels(seed: int) -> None:
    model, tokens, context = random_block(seed)
    forward = trace_block(model, tokens, context)
    keys = tokens if context is None else context
    grad = grad_trace(
        model,
        tokens,
        context,
        Objective("attend", "0", str(len(keys) - 1) if not model.causal else "0"),
    )
    for stage in grad.stages:
        mirror = grad.mirror(stage)
        if mirror is None:  # a whole-model weight gradient of several heads or K/V heads
            assert stage.head is None
            assert stage.name in ("d_WQ", "d_bQ", "d_WK", "d_bK", "d_WV", "d_bV")
            continue
        assert mirror.name == MIRRORS[stage.name]
        assert stage.shape == mirror.shape, stage
        if stage.name not in ("d_bQ", "d_bK", "d_bV", "d_bO"):
            assert stage.cols == mirror.cols
            assert stage.rows == mirror.rows or stage.name.startswith("d_W")
    shared = [s for s in grad.stages if s.head is None and s.kv_head is None]
    order = [GRAD_ORDER.index(stage.name) for stage in shared]
    assert order == sorted(order), "the shared gradients keep the contract's order"
    assert grad.forward.stage("X").shape == forward.stage("X").shape


def test_a_missing_gradient_names_those_held() -> None:
    model, tokens, context = random_block(
        3, heads=1, kv_heads=1, cross=False, causal=False, wo=False
    )
    grad = grad_trace(model, tokens, context, Objective("attend", "0", "0"))
    assert grad.stage("d_softmax", head=0).shape == (len(tokens), len(tokens))
    with pytest.raises(KeyError, match="gradients: d_output, d_V, d_softmax"):
        grad.stage("d_concat")


def _formulas(**fixed: object) -> dict[tuple[str, int | None, int | None], str]:
    model, tokens, context = random_block(7, **fixed)
    grad = grad_trace(model, tokens, context, Objective("attend", "0", "0"))
    return {(s.name, s.head, s.kv_head): s.formula for s in grad.stages}


def test_each_formula_says_what_was_computed_for_the_model() -> None:
    rope = _formulas(heads=1, kv_heads=1, rope=True, cross=False, causal=False, wo=False)
    assert rope[("d_Q_rope", 0, 0)] == "d_Q_rope = d_scores · K_rope"
    assert rope[("d_K_rope", 0, 0)] == "d_K_rope = d_scoresᵀ · Q_rope"
    assert rope[("d_Q", 0, 0)] == "d_Q = d_Q_rope turned back (RoPE by −θ)"
    plain = _formulas(heads=1, kv_heads=1, rope=False, cross=False, causal=False, wo=False)
    assert plain[("d_Q", 0, 0)] == "d_Q = d_scores · K"
    assert plain[("d_K", 0, 0)] == "d_K = d_scoresᵀ · Q"
    assert plain[("d_X", None, None)] == "d_X = d_Q · WQᵀ + d_K · WKᵀ + d_V · WVᵀ"
    cross = _formulas(heads=2, kv_heads=2, cross=True, wo=False)
    assert cross[("d_X", None, None)] == "d_X = d_Q · WQᵀ (summed over heads)"
    assert (
        cross[("d_X_context", None, None)]
        == "d_X_context = d_K · WKᵀ + d_V · WVᵀ (summed over heads)"
    )
    assert cross[("d_WK", None, None)] == "d_WK = X_contextᵀ · d_K"
    gqa = _formulas(heads=4, kv_heads=2, cross=False, wo=True)
    assert gqa[("d_K", None, 1)] == "d_K = Σ over heads 2, 3 of their d_K"
    assert gqa[("d_concat", None, None)] == "d_concat = d_projected · WOᵀ"
    d_v = random_block(7, heads=4, kv_heads=2, cross=False, wo=True)[0].d_v
    assert gqa[("d_output", 3, 1)] == f"d_output = columns {3 * d_v}…{4 * d_v - 1} of d_concat"
    one_wo = _formulas(heads=1, kv_heads=1, cross=False, wo=True)
    assert one_wo[("d_output", 0, 0)] == "d_output = d_projected · WOᵀ"
    assert one_wo[("d_projected", None, None)] == "d_projected = 0 (L does not read projected)"
