"""The cases and comparisons the backward-pass tests share (test_backward_oracle,
test_backward_torch): the models of every option, the oracle (tests/naive_backward.py)
fed from a ModelSpec, random upstream gradients, the losses' own gradients by the
contract's formulas, and the entry-by-entry comparison within the terms' magnitudes."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from naive import Rows
from naive_backward import naive_block_backward
from randoms import random_block
from tolerances import BACKWARD_ORACLE

from attntrace.kernel.spec import ModelSpec
from attntrace.learning.objective import Objective

# Each option alone and together (random_block's keywords); positions are set after.
FIXED: list[dict[str, Any]] = [
    {"heads": 1, "cross": False, "causal": False, "rope": False, "biases": False, "wo": False},
    {
        "heads": 3,
        "kv_heads": 3,
        "cross": False,
        "causal": False,
        "rope": False,
        "biases": False,
        "wo": False,
    },
    {
        "heads": 4,
        "kv_heads": 2,
        "cross": False,
        "causal": False,
        "rope": False,
        "biases": False,
        "wo": False,
    },
    {
        "heads": 3,
        "kv_heads": 1,
        "cross": False,
        "causal": False,
        "rope": False,
        "biases": False,
        "wo": False,
    },
    {"heads": 1, "cross": False, "causal": True, "rope": False, "biases": False, "wo": False},
    {"heads": 2, "cross": True, "rope": False, "biases": False, "wo": False},
    {
        "heads": 1,
        "cross": False,
        "causal": False,
        "rope": True,
        "rope_pairing": "half",
        "biases": False,
        "wo": False,
    },
    {
        "heads": 2,
        "cross": False,
        "causal": False,
        "rope": True,
        "rope_pairing": "interleaved",
        "biases": False,
        "wo": False,
    },
    {"heads": 1, "cross": False, "causal": False, "rope": False, "biases": True, "wo": False},
    {"heads": 1, "cross": False, "causal": False, "rope": False, "biases": False, "wo": True},
    {"heads": 2, "cross": False, "causal": False, "rope": False, "biases": True, "wo": True},
    {
        "heads": 4,
        "kv_heads": 2,
        "cross": False,
        "causal": True,
        "rope": True,
        "rope_pairing": "half",
        "biases": True,
        "wo": True,
    },
    {
        "heads": 4,
        "kv_heads": 1,
        "cross": False,
        "causal": True,
        "rope": True,
        "rope_pairing": "interleaved",
        "biases": True,
        "wo": True,
    },
    {"heads": 4, "kv_heads": 2, "cross": True, "rope": False, "biases": True, "wo": True},
    {"heads": 2, "kv_heads": 1, "cross": True, "rope": False, "biases": True, "wo": False},
    {
        "heads": 2,
        "kv_heads": 2,
        "cross": False,
        "causal": True,
        "rope": False,
        "biases": True,
        "wo": False,
        "positions": "sinusoidal",
    },
    {
        "heads": 2,
        "kv_heads": 1,
        "cross": True,
        "rope": False,
        "biases": False,
        "wo": True,
        "positions": "learned",
    },
]


def fixed_model(index: int, seed: int) -> tuple[ModelSpec, list[str], list[str] | None]:
    options = dict(FIXED[index])
    positions = options.pop("positions", None)
    model, tokens, context = random_block(seed, **options)
    if positions == "sinusoidal":
        model = replace(model, positions="sinusoidal")
    elif positions == "learned":
        rng = np.random.default_rng(seed + 1)
        model = replace(model, positions=rng.normal(size=(8, model.d_model)))
    return model, tokens, context


def rows_of(model: ModelSpec, tokens: list[str]) -> Rows:
    """X: each token's embedding, plus its position's vector (counted from 0)."""
    x = [list(map(float, model.embeddings[t])) for t in tokens]
    d = model.d_model
    for p, row in enumerate(x):
        if model.position_kind == "sinusoidal":
            for c in range(d):
                angle = p / 10000 ** ((c - c % 2) / d)
                row[c] += math.sin(angle) if c % 2 == 0 else math.cos(angle)
        elif model.position_kind == "learned":
            assert isinstance(model.positions, np.ndarray)
            for c in range(d):
                row[c] += float(model.positions[p][c])
    return x


def oracle(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    d_block: Rows | None,
    d_softmax: list[Rows | None] | None,
    *,
    magnitudes: bool = False,
) -> dict[str, Any]:
    return naive_block_backward(
        rows_of(model, tokens),
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        context=rows_of(model, context) if context else None,
        wo=model.WO.tolist() if model.WO is not None else None,
        biases={name: [float(v) for v in b] for name, b in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
        d_block=d_block,
        d_softmax=d_softmax,
        magnitudes=magnitudes,
    )


def shapes(model: ModelSpec, tokens: list[str], context: list[str] | None) -> dict[str, int]:
    n = len(tokens)
    return {
        "n": n,
        "m": len(context) if context else n,
        "width": (model.d_model if model.WO is not None else model.heads * model.d_v),
    }


def random_upstream(
    model: ModelSpec, tokens: list[str], context: list[str] | None, seed: int, kind: str
) -> tuple[Rows | None, list[Rows | None] | None]:
    """dL/d(block output) and/or dL/d softmax per head (some heads None), normal draws."""
    rng = np.random.default_rng(seed)
    size = shapes(model, tokens, context)
    d_block = rng.normal(size=(size["n"], size["width"])).tolist() if kind != "softmax" else None
    d_softmax: list[Rows | None] | None = None
    if kind != "block":
        d_softmax = [
            rng.normal(size=(size["n"], size["m"])).tolist() if rng.integers(0, 3) else None
            for _ in range(model.heads)
        ]
    return d_block, d_softmax


def assert_equal(found: Any, expected: Any, magnitude: Any, what: str) -> None:
    """``found`` (the code's) equals ``expected`` (the oracle's) entry by entry within
    BACKWARD_ORACLE × the magnitude of the terms summed; exactly where that is 0."""
    assert found is not None, f"{what}: missing"
    expected_array = np.asarray(expected, dtype=np.float64)
    size = np.asarray(magnitude, dtype=np.float64)
    assert found.shape == expected_array.shape, f"{what}: {found.shape} ≠ {expected_array.shape}"
    error = np.abs(found - expected_array)
    bad = error > BACKWARD_ORACLE * size
    if bad.any():
        where = tuple(int(i[0]) for i in np.nonzero(bad))
        pytest.fail(
            f"{what}{list(where)}: code {found[where]!r}, oracle {expected_array[where]!r} "
            f"(terms' magnitude {size[where]!r}; {int(bad.sum())} cells differ)"
        )


def transposed_product(rows: Rows, grad: Rows) -> Rows:
    """rowsᵀ · grad as loops: a weight's gradient from its input and its output's."""
    return [
        [sum(rows[i][r] * grad[i][c] for i in range(len(rows))) for c in range(len(grad[0]))]
        for r in range(len(rows[0]))
    ]


def columns(matrix: Any, start: int, width: int) -> Any:
    if matrix is None:
        return None
    if matrix and isinstance(matrix[0], list):
        return [row[start : start + width] for row in matrix]
    return matrix[start : start + width]


def loss_upstream(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    objective: Objective,
) -> tuple[float, tuple[int, ...], Rows | None, list[Rows | None] | None]:
    """The loss value, the heads it reads and its gradient, from the contract's formulas
    on tests/naive.py's forward pass: attend, L = Σₕ −log softmaxₕ[from, to] (one head
    with ``head``), dL/dA = −1/A there; mse, L = mean((out − target)²), dL/d out =
    2(out − target) / (its number of cells)."""
    forward = oracle(model, tokens, context, None, None)["forward"]
    if objective.kind == "attend":
        assert objective.from_token is not None
        assert objective.to_token is not None
        row = tokens.index(objective.from_token)
        col = (context or tokens).index(objective.to_token)
        heads = tuple(range(model.heads)) if objective.head is None else (objective.head,)
        n, m = len(tokens), len(context or tokens)
        d_softmax: list[Rows | None] = [None] * model.heads
        value = 0.0
        for h in heads:
            weight = forward["softmax"][h][row][col]
            value -= math.log(weight)
            cell = [[0.0] * m for _ in range(n)]
            cell[row][col] = -1.0 / weight
            d_softmax[h] = cell
        return value, heads, None, d_softmax
    assert model.target is not None
    out = forward["projected"] if model.WO is not None else forward["concat"]
    cells = len(out) * len(out[0])
    diff = [
        [o - t for o, t in zip(row, target, strict=True)]
        for row, target in zip(out, model.target.tolist(), strict=True)
    ]
    value = math.fsum(d * d for row in diff for d in row) / cells
    return value, tuple(range(model.heads)), [[2 * d / cells for d in row] for row in diff], None


def upstream_magnitude(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    objective: Objective,
    d_block: Rows | None,
) -> Rows | None:
    """The magnitude of the terms behind :func:`loss_upstream`'s dL/d out, for the
    oracle's magnitudes: mse's 2(out − target) / cells subtracts two numbers, so its
    rounding is of the size of 2(|out| + |target|) / cells, not of the difference (a
    target within 1e-6 of the output left a cell's bound at 1e-17 and failed a correct
    gradient). The attend loss enters at softmax: no d_block."""
    if objective.kind != "mse":
        return d_block
    assert model.target is not None
    forward = oracle(model, tokens, context, None, None)["forward"]
    out = forward["projected"] if model.WO is not None else forward["concat"]
    cells = len(out) * len(out[0])
    return [
        [2 * (abs(o) + abs(t)) / cells for o, t in zip(row, target, strict=True)]
        for row, target in zip(out, model.target.tolist(), strict=True)
    ]


def oracle_stage(want: dict[str, Any], name: str, head: int | None, kv_head: int | None) -> Any:
    """The oracle's value for a stage; biases as one row (1 × width), as the tables."""
    if head is not None:
        return want[name][head]
    if kv_head is not None:
        return want[f"{name}_sum"][kv_head]
    value = want[name]
    return [value] if name.startswith("d_b") else value


def attend_objective(
    tokens: list[str], context: list[str] | None, causal: bool, seed: int, head: int | None
) -> Objective:
    """From a random token to a random key it can see (under a causal mask: one before
    it), each named by its first occurrence, as the user names them."""
    rng = np.random.default_rng(seed)
    keys = context or tokens
    row = tokens.index(tokens[int(rng.integers(0, len(tokens)))])
    visible = [j for j in range(len(keys)) if not causal or j <= row]
    col = keys.index(keys[int(rng.choice(visible))])
    return Objective("attend", tokens[row], keys[col], head)


def with_target(model: ModelSpec, tokens: list[str], seed: int) -> ModelSpec:
    rng = np.random.default_rng(seed)
    width = model.d_model if model.WO is not None else model.heads * model.d_v
    return replace(model, target=rng.normal(size=(len(tokens), width)))
