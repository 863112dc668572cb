"""core.train: gradient descent on the block's weights (docs/learning.md, `train`).

Checked against independent computations: the loss from the forward trace alone (central
finite differences for one step's update, no grad_block), numpy's own generator for the
random start, and the loss's fall for a small rate on every kind of block.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from randoms import random_block
from tolerances import FINITE_DIFFERENCE, FINITE_DIFFERENCE_STEP

from attntrace.api import prepared
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import block_output_name
from attntrace.learning.objective import Objective, resolve
from attntrace.learning.train import DEFAULT_LR, DEFAULT_STEPS, has, train

IT_ANIMAL = Objective("attend", "it", "animal")


def it_animal() -> tuple[ModelSpec, tuple[str, ...]]:
    ready = prepared(None, sample="it-animal")
    return ready.spec, ready.tokens


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 7, 42])
def test_it_animal_from_random_weights_learns_it_looks_at_animal(seed: int) -> None:
    model, tokens = it_animal()
    run = train(model, tokens, None, IT_ANIMAL, init="random", seed=seed)
    assert (run.steps, run.lr) == (DEFAULT_STEPS, DEFAULT_LR)
    assert run.first.to_weights[0] < 0.2  # a fresh start looks nowhere in particular
    assert run.last.to_weights[0] > 0.95  # the contract says 0.9: with margin
    row = run.last.rows[0]
    assert math.isclose(sum(row), 1.0, rel_tol=1e-12)
    assert max(range(len(row)), key=row.__getitem__) == tokens.index("animal")


def test_random_start_draws_in_the_documented_order() -> None:
    model, tokens = it_animal()
    run = train(model, tokens, None, IT_ANIMAL, names=["WK"], steps=1, init="random", seed=5)
    rng = np.random.default_rng(5)
    scale = 1 / math.sqrt(model.d_model)
    drawn = [rng.normal(0.0, scale, size=w.shape) for w in (model.WQ, model.WK, model.WV)]
    assert np.array_equal(run.initial.WK, drawn[1])  # WQ's draw came first, though not trained
    assert np.array_equal(run.initial.WQ, model.WQ)  # untrained: the model's own
    again = train(model, tokens, None, IT_ANIMAL, names=["WK"], steps=1, init="random", seed=5)
    assert np.array_equal(again.final.WK, run.final.WK)


def test_a_trained_bias_starts_at_zero_under_random() -> None:
    model, tokens, _ = random_block(3, heads=1, cross=False, causal=False, biases=True, rope=False)
    objective = Objective("attend", str(len(tokens) - 1), "0")
    run = train(model, tokens, None, objective, names=["bQ", "WK"], steps=2, init="random")
    start, given = run.initial.bias("bQ"), model.bias("bK")
    assert start is not None
    assert given is not None
    assert np.array_equal(start, np.zeros(model.WQ.shape[1]))
    assert run.initial.bias("bK") is given  # not trained: the model's own


def test_same_input_same_numbers() -> None:
    model, tokens = it_animal()
    runs = [
        train(model, tokens, None, IT_ANIMAL, steps=30, init="random", seed=9) for _ in range(2)
    ]
    assert [r.loss for r in runs[0].history] == [r.loss for r in runs[1].history]
    assert np.array_equal(runs[0].final.WQ, runs[1].final.WQ)
    other = train(model, tokens, None, IT_ANIMAL, steps=30, init="random", seed=10)
    assert not np.array_equal(other.initial.WQ, runs[0].initial.WQ)


def loss_of(
    model: ModelSpec, tokens: list[str], context: list[str] | None, objective: Objective
) -> float:
    """The loss from the forward pass alone (no backward pass)."""
    return resolve(objective, model, trace_block(model, tokens, context)).loss.value


def with_target(model: ModelSpec, tokens: list[str], seed: int) -> ModelSpec:
    """``model`` with a random target as wide as its block's output."""
    trace = trace_block(model, tokens, None if model.context is None else ["t0"])
    width = trace.stage(block_output_name(model)).shape[1]
    return replace(model, target=np.random.default_rng(seed).normal(size=(len(tokens), width)))


KINDS: dict[str, dict[str, Any]] = {
    "single": {"heads": 1, "kv_heads": 1, "cross": False, "causal": False, "rope": False},
    "multi-head": {"heads": 2, "kv_heads": 2, "cross": False, "causal": False},
    "GQA": {"heads": 4, "kv_heads": 2, "cross": False},
    "MQA": {"heads": 3, "kv_heads": 1, "cross": False},
    "causal": {"causal": True, "cross": False},
    "cross": {"cross": True},
    "RoPE": {"rope": True, "cross": False},
    "biases": {"biases": True},
    "WO": {"wo": True},
}


def movable(model: ModelSpec, loss: str) -> list[str]:
    """What the loss moves: the attend loss not what acts after the softmax, and bK only
    where RoPE turns it (else it shifts a whole row of scores: the softmax cannot see it)."""
    return [
        n
        for n in has(model)
        if (loss == "mse" or n in ("WQ", "WK", "bQ", "bK"))
        and (n != "bK" or model.position_kind == "rope")
    ]


def objective_for(kind: str, tokens: list[str]) -> Objective:
    # the last query and the first key: visible under a causal mask too
    return Objective("attend", str(len(tokens) - 1), "0") if kind == "attend" else Objective("mse")


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("loss", ["attend", "mse"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("seed", range(3))
def test_the_loss_falls_step_by_step_for_a_small_rate(kind: str, loss: str, seed: int) -> None:
    model, tokens, context = random_block(100 * seed + len(kind), **KINDS[kind])
    if loss == "mse":
        model = with_target(model, tokens, seed)
    names = movable(model, loss)
    run = train(model, tokens, context, objective_for(loss, tokens), names=names, steps=25, lr=1e-3)
    losses = [r.loss for r in run.history]
    assert all(b <= a for a, b in itertools.pairwise(losses)), losses
    moved = any(c.largest > 0 for c in run.changes)
    assert losses[-1] < losses[0] or not moved


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("loss", ["attend", "mse"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_one_step_is_minus_lr_times_a_central_difference(kind: str, loss: str) -> None:
    model, tokens, context = random_block(7 + len(kind), **KINDS[kind])
    if loss == "mse":
        model = with_target(model, tokens, 1)
    objective = objective_for(loss, tokens)
    names = movable(model, loss)
    lr = 0.25
    run = train(model, tokens, context, objective, names=names, steps=1, lr=lr)
    h = FINITE_DIFFERENCE_STEP
    for change in run.changes:
        start = np.array(change.before)
        numeric = np.zeros_like(start)
        for index in np.ndindex(start.shape):
            sides = []
            for sign in (1, -1):
                moved = start.copy()
                moved[index] += sign * h
                sides.append(loss_of(_set(model, change.name, moved), tokens, context, objective))
            numeric[index] = (sides[0] - sides[1]) / (2 * h)
        np.testing.assert_allclose(
            change.delta, -lr * numeric, **FINITE_DIFFERENCE, err_msg=change.name
        )


def _set(model: ModelSpec, name: str, value: np.ndarray[Any, Any]) -> ModelSpec:
    if name.startswith("b"):
        return replace(model, biases={**model.biases, name: value[0]})
    changed: dict[str, Any] = {name: value}
    return replace(model, **changed)


def test_the_change_is_after_minus_before() -> None:
    model, tokens = it_animal()
    run = train(model, tokens, None, IT_ANIMAL, steps=5)
    for change in run.changes:
        delta = getattr(run.final, change.name) - getattr(run.initial, change.name)
        assert np.array_equal(change.delta, delta)
        assert change.largest == np.abs(delta).max()
        assert abs(delta[change.where]) == change.largest
    assert np.array_equal(run.final.WV, model.WV)  # not trained: untouched


def test_the_history_has_every_step_and_the_callback_sees_each() -> None:
    model, tokens = it_animal()
    seen: list[int] = []
    run = train(
        model,
        tokens,
        None,
        IT_ANIMAL,
        steps=4,
        on_step=lambda record, trace, loss: seen.append(record.step),
    )
    assert [r.step for r in run.history] == seen == [0, 1, 2, 3, 4]
    assert run.loss.cell == (tokens.index("it"), tokens.index("animal"))


def test_an_interrupt_in_the_callback_ends_the_run() -> None:
    model, tokens = it_animal()

    def stop(record: object, trace: object, loss: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(model, tokens, None, IT_ANIMAL, on_step=stop)


def test_a_rate_that_overflows_names_the_step() -> None:
    model, tokens = it_animal()
    with pytest.raises(InputError, match=r"diverged at step \d+ .*lower --lr"):
        train(model, tokens, None, IT_ANIMAL, lr=1e300)


REFUSED = [
    ({"names": ["WX"]}, "--train", "names from WQ, WK, WV, WO, bQ, bK, bV, bO"),
    ({"names": []}, "--train", "none"),
    ({"names": ["WO"]}, "--train", "no WO"),
    ({"names": ["bO"]}, "--train", "no bO"),
    ({"names": ["bQ"]}, "--train", "no bQ"),
    ({"names": ["WV"]}, "--train", "would never change"),
    ({"names": ["WQ", "WV"]}, "--train", "would never change"),
    ({"steps": 0}, "--steps", "1 to 100,000"),
    ({"steps": 100_001}, "--steps", "1 to 100,000"),
    ({"lr": 0.0}, "--lr", "> 0"),
    ({"lr": -1.0}, "--lr", "> 0"),
    ({"lr": math.inf}, "--lr", "finite"),
    ({"lr": math.nan}, "--lr", "finite"),
    ({"init": "zeros"}, "--init", "model or random"),
]


@pytest.mark.parametrize(("settings", "field", "said"), REFUSED)
def test_refusals(settings: dict[str, object], field: str, said: str) -> None:
    model, tokens = it_animal()
    with pytest.raises(InputError) as caught:
        train(model, tokens, None, IT_ANIMAL, **settings)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert said in str(caught.value)


def test_mse_reaches_what_the_attend_loss_cannot() -> None:
    model, tokens, _ = random_block(4, heads=1, cross=False, wo=True, biases=True)
    model = with_target(model, tokens, 0)
    run = train(model, tokens, None, Objective("mse"), names=["WV", "WO", "bO"], steps=3, lr=1e-2)
    assert all(c.largest > 0 for c in run.changes)
    assert run.last.to_weights.size == 0
    assert run.last.rows.size == 0


def test_bk_is_refused_without_rope_since_a_row_shift_leaves_the_softmax() -> None:
    for loss in ("attend", "mse"):
        model, tokens, _ = random_block(5, heads=2, cross=False, rope=False, biases=True)
        model = with_target(model, tokens, 0)
        objective = objective_for(loss, tokens)
        # independently: moving bK leaves the loss where it was (to rounding)
        start = model.bias("bK")
        assert start is not None
        shifted = loss_of(
            replace(model, biases={**model.biases, "bK": start + 1.0}), tokens, None, objective
        )
        assert shifted == pytest.approx(loss_of(model, tokens, None, objective), rel=1e-9)
        with pytest.raises(InputError, match="bK adds q·bK to every score") as caught:
            train(model, tokens, None, objective, names=["WQ", "bK"], steps=1)
        assert caught.value.field == "--train"
        roped, words, _ = random_block(6, heads=2, cross=False, rope=True, biases=True)
        run = train(
            with_target(roped, words, 0),
            words,
            None,
            objective_for(loss, words),
            names=["bK"],
            steps=1,
            lr=0.1,
        )
        assert run.changes[0].largest > 0


def test_the_wv_refusal_advises_bk_only_with_rope() -> None:
    model, tokens, _ = random_block(5, heads=1, cross=False, rope=False, biases=True)
    with pytest.raises(InputError, match=r"\(train WQ, WK, bQ, or use --loss mse\)"):
        train(model, tokens, None, objective_for("attend", tokens), names=["WV"], steps=1)
    roped, words, _ = random_block(6, heads=1, cross=False, rope=True, biases=True)
    with pytest.raises(InputError, match=r"\(train WQ, WK, bQ, bK, or use --loss mse\)"):
        train(roped, words, None, objective_for("attend", words), names=["WV"], steps=1)


def big_model(n: int, heads: int, d_model: int) -> tuple[ModelSpec, list[str]]:
    rng = np.random.default_rng(0)
    square = rng.normal(size=(d_model, d_model)) / math.sqrt(d_model)
    model = ModelSpec(
        embeddings={f"t{i}": rng.normal(size=d_model) for i in range(20)},
        WQ=square,
        WK=square,
        WV=square,
        heads=heads,
    )
    return model, [f"t{i % 20}" for i in range(n)]


def test_a_run_over_the_work_bound_is_refused_before_it_starts() -> None:
    n, heads, d_model = 300, 8, 64
    model, tokens = big_model(n, heads, d_model)
    width = 2 * d_model // heads  # d_k + d_v
    # the bound docs/learning.md states, computed here from its formula
    largest = 2**32 // (heads * ((width + 8) * n * n + width * d_model * 2 * n + 2**18))
    objective = Objective("attend", "0", "1")
    with pytest.raises(InputError) as caught:
        train(model, tokens, None, objective, steps=largest + 1)
    assert caught.value.field == "--steps"
    assert f"at most {largest:,} for this model" in str(caught.value)
    assert str(caught.value).count("\n") == 0
    # it-animal: the tiny model's bound comes from a step's fixed cost
    small, words = it_animal()
    per_step = (4 + 3 + 8) * 11 * 11 + (4 + 3) * 6 * 22 + 2**18
    with pytest.raises(InputError, match=f"at most {2**32 // per_step:,} for this model"):
        train(small, words, None, IT_ANIMAL, steps=100_000)


def test_the_rows_kept_are_bounded_too_and_only_where_asked() -> None:
    model, _ = big_model(1, 1, 2)
    context = [f"t{i % 20}" for i in range(50_000)]
    objective = Objective("attend", "0", "1")
    steps = 2**23 // 50_000  # (steps + 1) × 50,000 keys: just over 2**23 floats
    with pytest.raises(InputError, match="the history keeps each step's 1 × 50,000 weights"):
        train(model, ["t0"], context, objective, steps=steps, lr=1e-3)
    with pytest.raises(InputError, match=f"at most {steps - 1:,}"):
        train(model, ["t0"], context, objective, steps=steps, lr=1e-3)
    run = train(model, ["t0"], context[:100], objective, steps=3, lr=1e-3, keep_rows=False)
    assert run.rows is None
    assert run.last.rows.size == 0


def test_the_history_is_kept_as_arrays() -> None:
    model, tokens = it_animal()
    run = train(model, tokens, None, IT_ANIMAL, steps=4)
    assert isinstance(run.losses, np.ndarray)
    assert run.losses.shape == (5,)
    assert run.weights.shape == (5, 1)
    assert run.rows is not None
    assert run.rows.shape == (5, 1, len(tokens))
    for step in range(5):  # the to-weight is the row's weight at the to-token
        assert run.weights[step, 0] == run.rows[step, 0, tokens.index("animal")]
        assert run.rows[step, 0].sum() == pytest.approx(1.0)
