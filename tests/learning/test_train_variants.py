"""`train` on a model with the variants of docs/variants.md: it trains the matrices of
``--train`` through every variant's stage, keeps the variants as they are, and its first
step is W − lr · dL/dW with dL/dW from central finite differences of the loop-written
forward of tests/learning/test_backward_variants.py (nothing of attntrace's backward)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from finite_differences import assert_close_to, finite_difference
from variant_cases import (
    naive_forward,
    params,
    variant_block,
)

from attntrace.learning.objective import Objective
from attntrace.learning.train import train

ALL_ON = {
    "causal": True,
    "window": True,
    "qk_norm": True,
    "weighted": True,
    "softcap": True,
    "sink": True,
}


@pytest.mark.parametrize("positions", ["rope", "alibi"])
def test_one_step_is_minus_lr_times_the_finite_difference_gradient(positions: str) -> None:
    model, tokens = variant_block(4, positions=positions, **ALL_ON)
    last = len(tokens) - 1
    lr = 0.1
    run = train(
        model,
        tokens,
        None,
        Objective("attend", tokens[last], tokens[last], head=0),
        names=("WQ", "WK"),
        steps=1,
        lr=lr,
    )
    p = params(model, tokens)

    def loss_at(name: str):  # type: ignore[no-untyped-def]
        def value(step: npt.NDArray[np.float64]) -> float:  # −log A[last, last] of head 0
            _, softmaxes = naive_forward(model, {**p, name: p[name] + step}, {})
            return -math.log(softmaxes[0][last, last])

        return value

    loss = loss_at("WQ")(np.zeros_like(model.WQ))
    assert run.losses[0] == pytest.approx(loss, rel=1e-12)
    for name in ("WQ", "WK"):
        gradient = finite_difference(getattr(model, name).shape, loss_at(name))
        moved = (getattr(model, name) - getattr(run.final, name)) / lr
        assert_close_to(gradient, moved, loss, f"the step of {name}")
    assert run.final.variants == model.variants


def test_training_a_model_with_every_variant_lowers_its_loss() -> None:
    model, tokens = variant_block(7, positions="rope", **ALL_ON)
    run = train(
        model,
        tokens,
        None,
        Objective("attend", tokens[-1], tokens[-1]),
        names=("WQ", "WK"),
        steps=30,
        lr=0.2,
    )
    assert run.losses[-1] < run.losses[0]
