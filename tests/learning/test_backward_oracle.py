"""The backward pass against an independent loop implementation of it.

tests/naive_backward.py derives every gradient of docs/learning.md from the chain rule
with plain loops (written without reading attntrace/learning/backward.py); here
``grad_block``'s gradients and every stage of ``grad_trace`` must equal it, entry by
entry, within float64 rounding of the terms summed (tolerances.BACKWARD_ORACLE), on
random models of every option and on a fixed list that covers each option and their
combinations, from random upstream gradients and from the attend and mse losses. The
contract's structural rules are checked too: the stage list and its order, the shapes,
exact zeros where a cell is masked or the loss does not reach, the K/V heads' sums.
The oracle itself is held to central finite differences of tests/naive.py's forward.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
from backward_cases import (
    FIXED,
    assert_equal,
    attend_objective,
    columns,
    fixed_model,
    loss_upstream,
    oracle,
    oracle_stage,
    random_upstream,
    rows_of,
    transposed_product,
    upstream_magnitude,
    with_target,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from naive import Rows, naive_block, rotate, rotate_interleaved
from naive_backward import rope_rotation, unrotate
from randoms import random_block
from tolerances import BACKWARD_ORACLE, FINITE_DIFFERENCE

from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import Gradients, grad_block
from attntrace.learning.grad_trace import GRAD_ORDER, MIRRORS, GradTrace, grad_trace
from attntrace.learning.objective import Objective

EXAMPLES = settings(max_examples=40, deadline=None)


# ---- grad_block: every field ----


def check_gradients(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    d_block: Rows | None,
    d_softmax: list[Rows | None] | None,
) -> Gradients:
    """grad_block equals the oracle in every field; returns it for more checks."""
    found = grad_block(
        model,
        tokens,
        context,
        d_output=None if d_block is None else np.array(d_block),
        d_softmax=None
        if d_softmax is None
        else [None if d is None else np.array(d) for d in d_softmax],
    )
    want = oracle(model, tokens, context, d_block, d_softmax)
    size = oracle(model, tokens, context, d_block, d_softmax, magnitudes=True)
    keys_in = rows_of(model, context) if context else rows_of(model, tokens)
    check_query_heads(found, model, want, size, keys_in)
    check_kv_heads(found, model, want, size)
    check_whole_model(found, model, want, size, context)
    return found


def check_query_heads(
    found: Gradients, model: ModelSpec, want: dict[str, Any], size: dict[str, Any], keys_in: Rows
) -> None:
    """Each query head's gradients, and its shares of the weights' and biases'."""
    abs_keys = [[abs(v) for v in row] for row in keys_in]
    rope = model.position_kind == "rope"
    d_k, group = model.d_k, model.group
    assert len(found.heads) == model.heads
    for h, head in enumerate(found.heads):
        assert (head.head, head.kv_head) == (h, h // group)
        for name in ("d_output", "d_V", "d_softmax", "d_scaled", "d_scores", "d_Q", "d_K"):
            assert_equal(getattr(head, name), want[name][h], size[name][h], f"head {h} {name}")
        for name in ("d_Q_rope", "d_K_rope"):
            if rope:
                assert_equal(getattr(head, name), want[name][h], size[name][h], f"head {h} {name}")
            else:
                assert getattr(head, name) is None, f"head {h} {name} without RoPE"
        # the head's block of d_WQ, and its contributions to its K/V head's weights
        assert_equal(
            head.d_WQ,
            columns(want["d_WQ"], h * d_k, d_k),
            columns(size["d_WQ"], h * d_k, d_k),
            f"head {h} d_WQ",
        )
        for name, grad in (("d_WK", "d_K"), ("d_WV", "d_V")):
            assert_equal(
                getattr(head, name),
                transposed_product(keys_in, want[grad][h]),
                transposed_product(abs_keys, size[grad][h]),
                f"head {h} {name}",
            )
        for bias, grad in (("bQ", "d_Q"), ("bK", "d_K"), ("bV", "d_V")):
            value = getattr(head, f"d_{bias}")
            if bias not in model.biases:
                assert value is None, f"head {h} d_{bias} without {bias}"
                continue
            assert_equal(
                value,
                [sum(col) for col in zip(*want[grad][h], strict=True)],
                [sum(col) for col in zip(*size[grad][h], strict=True)],
                f"head {h} d_{bias}",
            )


def check_kv_heads(
    found: Gradients, model: ModelSpec, want: dict[str, Any], size: dict[str, Any]
) -> None:
    """Each K/V head's sums over the query heads that share it."""
    d_k, d_v, group = model.d_k, model.d_v, model.group
    assert len(found.kv_heads) == model.n_kv_heads
    for g, kv in enumerate(found.kv_heads):
        assert kv.kv_head == g
        assert kv.query_heads == tuple(range(g * group, (g + 1) * group))
        assert_equal(kv.d_K, want["d_K_sum"][g], size["d_K_sum"][g], f"K/V head {g} d_K")
        assert_equal(kv.d_V, want["d_V_sum"][g], size["d_V_sum"][g], f"K/V head {g} d_V")
        for name, width in (("d_WK", d_k), ("d_WV", d_v), ("d_bK", d_k), ("d_bV", d_v)):
            if want.get(name) is None and name.startswith("d_b"):
                assert getattr(kv, name) is None, f"K/V head {g} {name} without its bias"
                continue
            assert_equal(
                getattr(kv, name),
                columns(want[name], g * width, width),
                columns(size[name], g * width, width),
                f"K/V head {g} {name}",
            )


def check_whole_model(
    found: Gradients,
    model: ModelSpec,
    want: dict[str, Any],
    size: dict[str, Any],
    context: list[str] | None,
) -> None:
    """The whole model's gradients: weights, biases, X (and the context's), and those
    of the block's output side (concat, WO), each None where the model has none."""
    for name in ("d_WQ", "d_WK", "d_WV", "d_X"):
        assert_equal(getattr(found, name), want[name], size[name], name)
    for name in ("d_bQ", "d_bK", "d_bV", "d_bO"):
        if want.get(name) is None:
            assert getattr(found, name) is None, f"{name} without its bias"
        else:
            assert_equal(getattr(found, name), want[name], size[name], name)
    if context:
        assert_equal(found.d_X_context, want["d_X_context"], size["d_X_context"], "d_X_context")
    else:
        assert found.d_X_context is None
    if model.heads > 1:
        assert_equal(found.d_concat, want["d_concat"], size["d_concat"], "d_concat")
    else:
        assert found.d_concat is None
    for name in ("d_projected", "d_WO"):
        if model.WO is None:
            assert getattr(found, name) is None, f"{name} without WO"
        else:
            assert_equal(getattr(found, name), want[name], size[name], name)
    block = want["d_projected"] if model.WO is not None else want["d_concat"]
    assert_equal(found.d_block, block, np.abs(np.array(block)), "d_block")


# ---- grad_block from random upstream gradients ----


@pytest.mark.parametrize("kind", ["block", "softmax", "both"])
@pytest.mark.parametrize("index", range(len(FIXED)))
def test_every_option_matches_the_loops(index: int, kind: str) -> None:
    for seed in range(3):
        model, tokens, context = fixed_model(index, seed)
        d_block, d_softmax = random_upstream(model, tokens, context, seed, kind)
        check_gradients(model, tokens, context, d_block, d_softmax)


@EXAMPLES
@given(st.integers(0, 2**32 - 1), st.sampled_from(["block", "softmax", "both"]))
def test_random_models_match_the_loops(seed: int, kind: str) -> None:
    model, tokens, context = random_block(seed)
    d_block, d_softmax = random_upstream(model, tokens, context, seed, kind)
    check_gradients(model, tokens, context, d_block, d_softmax)


def test_masked_cells_get_exactly_zero() -> None:
    for seed in range(6):
        model, tokens, context = random_block(seed, causal=True, cross=False)
        d_block, d_softmax = random_upstream(model, tokens, context, seed, "both")
        found = check_gradients(model, tokens, context, d_block, d_softmax)
        n = len(tokens)
        hidden = np.triu(np.ones((n, n), dtype=bool), k=1)
        for head in found.heads:
            assert (head.d_scaled[hidden] == 0).all()
            assert (head.d_scores[hidden] == 0).all()


# ---- grad_trace from the losses, as the user names them ----


def expected_stages(model: ModelSpec, context: list[str] | None) -> list[tuple[str, Any, Any]]:
    """(name, head, kv_head) of every stage, in the contract's order (docs/learning.md,
    "The stages"): the block's output first, each head's stages in head order, the K/V
    heads' sums (GQA, MQA), then the whole-model gradients, X last."""
    out: list[tuple[str, Any, Any]] = []
    if model.WO is not None:
        out += [("d_projected", None, None), ("d_WO", None, None)]
        out += [("d_bO", None, None)] if "bO" in model.biases else []
    if model.heads > 1:
        out.append(("d_concat", None, None))
    rope = ["d_Q_rope", "d_K_rope"] if model.position_kind == "rope" else []
    per_head = ["d_output", "d_V", "d_softmax", "d_scaled", "d_scores", *rope, "d_Q", "d_K"]
    for h in range(model.heads):
        out += [(name, h, h // model.group) for name in per_head]
    if model.group > 1:
        for g in range(model.n_kv_heads):
            out += [("d_K", None, g), ("d_V", None, g)]
    for weight, bias in (("d_WQ", "bQ"), ("d_WK", "bK"), ("d_WV", "bV")):
        out.append((weight, None, None))
        out += [(f"d_{bias}", None, None)] if bias in model.biases else []
    out.append(("d_X", None, None))
    out += [("d_X_context", None, None)] if context else []
    return out


def check_trace(
    model: ModelSpec, tokens: list[str], context: list[str] | None, objective: Objective
) -> GradTrace:
    traced = grad_trace(model, tokens, context, objective)
    value, heads, d_block, d_softmax = loss_upstream(model, tokens, context, objective)
    assert traced.loss.loss.value == pytest.approx(value, rel=BACKWARD_ORACLE)
    assert traced.loss.heads == heads
    want = oracle(model, tokens, context, d_block, d_softmax)
    upstream = upstream_magnitude(model, tokens, context, objective, d_block)
    size = oracle(model, tokens, context, upstream, d_softmax, magnitudes=True)
    listed = [(s.name, s.head, s.kv_head) for s in traced.stages]
    assert listed == expected_stages(model, context)
    assert all(name in GRAD_ORDER for name, _, _ in listed)
    for stage in traced.stages:
        what = f"{stage.name} head {stage.head} K/V head {stage.kv_head}"
        assert_equal(
            stage.data,
            oracle_stage(want, stage.name, stage.head, stage.kv_head),
            oracle_stage(size, stage.name, stage.head, stage.kv_head),
            what,
        )
        assert (len(stage.rows), len(stage.cols)) == stage.data.shape, what
        mirror = traced.mirror(stage)
        if mirror is not None:
            assert mirror.name == MIRRORS[stage.name]
            assert mirror.data.shape == stage.data.shape, what
    group = model.group
    assert dict(traced.summed) == (
        {g: tuple(range(g * group, (g + 1) * group)) for g in range(model.n_kv_heads)}
        if group > 1
        else {}
    )
    if objective.kind == "attend":  # the attend loss reads the softmax alone
        silent = {"d_output", "d_V", "d_WV", "d_bV", "d_projected", "d_WO", "d_bO", "d_concat"}
        for stage in traced.stages:
            if stage.name in silent:
                assert (stage.data == 0).all(), f"{stage.name} under the attend loss"
    if model.causal:
        n = len(tokens)
        hidden = np.triu(np.ones((n, n), dtype=bool), k=1)
        for stage in traced.stages:
            if stage.name in ("d_scaled", "d_scores"):
                assert (stage.data[hidden] == 0).all(), f"{stage.name}, a masked cell"
    return traced


@pytest.mark.parametrize("index", range(len(FIXED)))
def test_the_losses_stages_match_the_loops(index: int) -> None:
    for seed in range(2):
        model, tokens, context = fixed_model(index, seed)
        for head in (None, model.heads - 1):
            objective = attend_objective(tokens, context, model.causal, seed, head)
            check_trace(model, tokens, context, objective)
        check_trace(with_target(model, tokens, seed), tokens, context, Objective("mse"))


@EXAMPLES
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
@example(35213, True, False)  # a target within 1e-6 of the output: mse's d_projected cancels
def test_random_models_losses_match_the_loops(seed: int, mse: bool, one_head: bool) -> None:
    model, tokens, context = random_block(seed)
    if mse:
        check_trace(with_target(model, tokens, seed), tokens, context, Objective("mse"))
    else:
        head = seed % model.heads if one_head else None
        check_trace(
            model, tokens, context, attend_objective(tokens, context, model.causal, seed, head)
        )


def test_the_contracts_table_order() -> None:
    """GRAD_ORDER is docs/learning.md's table, row by row."""
    table = [
        "d_projected",
        "d_WO",
        "d_bO",
        "d_concat",
        "d_output",
        "d_V",
        "d_softmax",
        "d_sink_logit",
        "d_capped",
        "d_biased",
        "d_scaled",
        "d_scores",
        "d_Q_rope",
        "d_K_rope",
        "d_Q_norm",
        "d_K_norm",
        "d_Q",
        "d_K",
        "d_WQ",
        "d_bQ",
        "d_WK",
        "d_bK",
        "d_WV",
        "d_bV",
        "d_q_norm",
        "d_k_norm",
        "d_X",
        "d_X_context",
    ]
    assert list(GRAD_ORDER) == table


# ---- the oracle itself, against finite differences of tests/naive.py's forward ----


def test_the_oracles_rotation_is_naives() -> None:
    row = [0.3, -1.2, 2.5, 0.7, -0.4, 1.1]
    for pairing, turn in (("half", rotate), ("interleaved", rotate_interleaved)):
        for position in (0, 1, 5):
            matrix = rope_rotation(len(row), position, 10.0, pairing)
            turned = [sum(matrix[r][c] * row[c] for c in range(len(row))) for r in range(6)]
            np.testing.assert_allclose(turned, turn(row, position, 10.0), rtol=0, atol=1e-15)
            back = unrotate(turned, position, 10.0, pairing)  # a rotation's transpose undoes it
            np.testing.assert_allclose(back, row, rtol=0, atol=1e-14)


@pytest.mark.parametrize("index", [0, 3, 5, 11, 12, 13, 15])
def test_the_oracle_is_the_forwards_derivative(index: int) -> None:
    """The oracle's gradients of L = Σ d_block ∘ out + Σₕ d_softmaxₕ ∘ Aₕ equal central
    finite differences of naive_block's L (nothing from attntrace computes either)."""
    model, tokens, context = fixed_model(index, 7)
    d_block, d_softmax = random_upstream(model, tokens, context, 7, "both")
    assert d_block is not None
    assert d_softmax is not None
    options: dict[str, Any] = {
        "heads": model.heads,
        "kv_heads": model.n_kv_heads,
        "causal": model.causal,
        "rope_base": model.rope_base if model.position_kind == "rope" else None,
        "rope_pairing": model.rope_pairing,
    }
    params: dict[str, Any] = {
        "x": rows_of(model, tokens),
        "wq": model.WQ.tolist(),
        "wk": model.WK.tolist(),
        "wv": model.WV.tolist(),
        "context": rows_of(model, context) if context else None,
        "wo": model.WO.tolist() if model.WO is not None else None,
        "biases": {name: [[float(v) for v in b]] for name, b in model.biases.items()},
    }

    def loss(p: dict[str, Any]) -> float:
        biases = {name: rows[0] for name, rows in p["biases"].items()}
        f = naive_block(
            p["x"],
            p["wq"],
            p["wk"],
            p["wv"],
            context=p["context"],
            wo=p["wo"],
            biases=biases,
            **options,
        )
        out = f["projected"] if p["wo"] is not None else f["concat"]
        total = math.fsum(
            g * o
            for gr, orow in zip(d_block, out, strict=True)
            for g, o in zip(gr, orow, strict=True)
        )
        for h, d in enumerate(d_softmax):
            if d is not None:
                total += math.fsum(
                    g * a
                    for gr, arow in zip(d, f["softmax"][h], strict=True)
                    for g, a in zip(gr, arow, strict=True)
                )
        return total

    want = oracle(model, tokens, context, d_block, d_softmax)
    step, scale = 1e-6, max(1.0, abs(loss(params)))
    targets = [("x", "d_X"), ("wq", "d_WQ"), ("wk", "d_WK"), ("wv", "d_WV")]
    targets += [("context", "d_X_context")] if context else []
    targets += [("wo", "d_WO")] if model.WO is not None else []
    for key, name in targets + [(f"biases.{b}", f"d_{b}") for b in model.biases]:
        expected = want[name] if not name.startswith("d_b") else [want[name]]
        largest = max(abs(v) for row in expected for v in row)
        for i, row in enumerate(expected):
            for j, value in enumerate(row):
                moved = [copy.deepcopy(params), copy.deepcopy(params)]
                for sign, p in zip((1, -1), moved, strict=True):
                    holder = p["biases"] if key.startswith("biases.") else p
                    holder[key.removeprefix("biases.")][i][j] += sign * step
                numeric = (loss(moved[0]) - loss(moved[1])) / (2 * step)
                assert abs(numeric - value) <= (
                    FINITE_DIFFERENCE["rtol"] * largest + FINITE_DIFFERENCE["atol"] * scale
                ), f"{name}[{i}][{j}]: oracle {value}, finite difference {numeric}"
