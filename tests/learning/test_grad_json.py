"""`grad --json` (attntrace/grad/v1): every document validates against the shipped
schema, its numbers round-trip and match central finite differences of a loss computed
here from the forward trace alone, and its stage list is the contract's table
(docs/learning.md#the-stages) for every kind of block."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
import pytest
from helpers import invoke, schema
from randoms import random_block
from tolerances import FINITE_DIFFERENCE, FINITE_DIFFERENCE_STEP

from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.grad_json import grad_dump_bytes, grad_to_dict
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective

Array = npt.NDArray[np.float64]
GRAD_SCHEMA = schema("grad-v1.schema.json")


def valid(document: dict[str, Any]) -> dict[str, Any]:
    jsonschema.Draft202012Validator.check_schema(GRAD_SCHEMA)
    jsonschema.validate(document, GRAD_SCHEMA, cls=jsonschema.Draft202012Validator)
    return document


def loss_here(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    objective: Objective,
    cell: tuple[int, int] | None,
) -> float:
    """The loss from the forward trace alone (no attntrace loss code): Σ −log a or mse."""
    trace = trace_block(model, tokens, context)
    if objective.kind == "attend":
        assert cell is not None
        heads = range(model.heads) if objective.head is None else [objective.head]
        return float(sum(-np.log(trace.stage("softmax", head=h).data[cell]) for h in heads))
    out = trace.stage(
        "projected" if model.WO is not None else "concat" if model.heads > 1 else "output"
    ).data
    assert model.target is not None
    return float(np.mean((out - model.target) ** 2))


def finite_difference(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    objective: Objective,
    cell: tuple[int, int] | None,
    name: str,
) -> Array:
    """(L(W + h) − L(W − h)) / 2h for every entry of weight (or bias) ``name``."""
    is_bias = name.startswith("b")
    base = np.array(model.biases[name] if is_bias else getattr(model, name), dtype=float)
    out = np.zeros(base.shape)
    h = FINITE_DIFFERENCE_STEP
    for index in np.ndindex(base.shape):
        values = []
        for sign in (1, -1):
            bumped = base.copy()
            bumped[index] += sign * h
            weight: dict[str, Any] = {name: bumped}
            changed = (
                replace(model, biases={**model.biases, name: bumped})
                if is_bias
                else replace(model, **weight)
            )
            values.append(loss_here(changed, tokens, context, objective, cell))
        out[index] = (values[0] - values[1]) / (2 * h)
    return out


def with_target(model: ModelSpec, tokens: list[str], seed: int) -> ModelSpec:
    width = model.d_model if model.WO is not None else model.heads * model.d_v
    rng = np.random.default_rng(seed)
    return replace(model, target=rng.normal(size=(len(tokens), width)))


KINDS: dict[str, dict[str, Any]] = {
    "single": {"heads": 1, "kv_heads": 1},
    "multi-head": {"heads": 2, "kv_heads": 2},
    "gqa": {"heads": 4, "kv_heads": 2},
    "mqa": {"heads": 3, "kv_heads": 1},
    "causal": {"causal": True, "cross": False},
    "cross": {"cross": True},
    "rope": {"rope": True, "cross": False},
    "bias": {"biases": True},
    "wo": {"wo": True},
}


def expected_names(model: ModelSpec, cross: bool) -> list[tuple[str, int | None, int | None]]:
    """The contract's table, in its order, for this model: (name, head, kv_head)."""
    rope = model.positions == "rope"
    names: list[tuple[str, int | None, int | None]] = []
    if model.WO is not None:
        names += [("d_projected", None, None), ("d_WO", None, None)]
        names += [("d_bO", None, None)] if "bO" in model.biases else []
    if model.heads > 1:
        names.append(("d_concat", None, None))
    group = model.heads // model.n_kv_heads
    for h in range(model.heads):
        per = ["d_output", "d_V", "d_softmax", "d_scaled", "d_scores"]
        per += ["d_Q_rope", "d_K_rope"] if rope else []
        names += [(n, h, h // group) for n in [*per, "d_Q", "d_K"]]
    if group > 1:
        for g in range(model.n_kv_heads):
            names += [("d_K", None, g), ("d_V", None, g)]
    for w in ("Q", "K", "V"):
        names.append((f"d_W{w}", None, None))
        if f"b{w}" in model.biases:
            names.append((f"d_b{w}", None, None))
    names.append(("d_X", None, None))
    if cross:
        names.append(("d_X_context", None, None))
    return names


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("loss", ["attend", "mse"])
def test_each_kind_of_block_gives_the_contracts_stages_and_numbers(
    kind: str, seed: int, loss: str
) -> None:
    model, tokens, context = random_block(1000 + seed, **KINDS[kind])
    if loss == "mse":
        model = with_target(model, tokens, seed)
        objective = Objective("mse")
    else:
        keys = context or tokens
        objective = Objective("attend", str(len(tokens) - 1), str(len(keys) - 1))
    traced = grad_trace(model, tokens, context, objective)
    document = valid(json.loads(grad_dump_bytes(traced)))
    assert [(s["name"], s["head"], s["kv_head"]) for s in document["stages"]] == (
        expected_names(model, context is not None)
    )
    cell = traced.loss.cell
    assert document["loss"]["kind"] == loss
    assert document["loss"]["value"] == pytest.approx(
        loss_here(model, tokens, context, objective, cell), rel=1e-12
    )
    if loss == "attend":
        assert cell is not None
        assert document["loss"]["from"] == {"index": cell[0], "token": tokens[cell[0]]}
        assert document["loss"]["to"]["index"] == cell[1]
    else:
        assert document["loss"]["from"] is None
        assert document["loss"]["to"] is None
    # the weights' gradients against central finite differences of the loss above
    stages = {
        s["name"]: s for s in document["stages"] if s["head"] is None and s["kv_head"] is None
    }
    weights = ["WQ", "WK", "WV", *(["WO"] if model.WO is not None else []), *model.biases]
    scale = max(1.0, abs(document["loss"]["value"]))
    for name in weights:
        expected = finite_difference(model, tokens, context, objective, cell, name)
        got = np.array(stages[f"d_{name}"]["data"]).reshape(expected.shape)
        atol = FINITE_DIFFERENCE["atol"] * scale
        np.testing.assert_allclose(
            got, expected, rtol=FINITE_DIFFERENCE["rtol"], atol=atol, err_msg=name
        )


def test_each_stage_names_what_it_mirrors_and_a_kv_sum_its_heads() -> None:
    model, tokens, context = random_block(7, heads=4, kv_heads=2, cross=False, rope=False)
    traced = grad_trace(model, tokens, context, Objective("attend", "0", "0"))
    document = grad_to_dict(traced)
    mirrors = {(s["name"], s["of"]) for s in document["stages"]}
    assert {("d_softmax", "softmax"), ("d_WQ", "WQ"), ("d_X", "X"), ("d_K", "K")} <= mirrors
    sums = [s for s in document["stages"] if s["summed_heads"] is not None]
    assert [(s["name"], s["kv_head"], s["summed_heads"]) for s in sums] == [
        ("d_K", 0, [0, 1]),
        ("d_V", 0, [0, 1]),
        ("d_K", 1, [2, 3]),
        ("d_V", 1, [2, 3]),
    ]
    # a sum is the sum of its heads' own contributions
    for s in sums:
        parts = [
            t
            for t in document["stages"]
            if t["name"] == s["name"] and t["head"] in s["summed_heads"]
        ]
        np.testing.assert_allclose(
            np.array(s["data"]), sum(np.array(t["data"]) for t in parts), rtol=1e-12
        )


def test_the_numbers_read_back_exactly() -> None:
    model, tokens, context = random_block(3, rope=True, cross=False)
    traced = grad_trace(model, tokens, context, Objective("attend", "0", "0"))
    document = json.loads(grad_dump_bytes(traced))
    for stage, written in zip(traced.stages, document["stages"], strict=True):
        assert np.array_equal(np.array(written["data"]), stage.data)  # repr round-trips
        assert written["shape"] == list(stage.shape)
        assert written["rows"] == list(stage.rows)
        assert written["cols"] == list(stage.cols)


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "it-animal", "--from", "it", "--to", "animal"],
        ["-s", "two-heads", "--from", "cat", "--to", "fish", "--head", "1"],
        ["-s", "gqa", "--from", "the", "--to", "cat"],
        ["-s", "causal", "--from", "2", "--to", "0"],
        ["-s", "cross", "--from", "0", "--to", "0"],
        ["-s", "rope", "--from", "1", "--to", "0"],
        ["-s", "positions", "--from", "1", "--to", "0"],
    ],
)
def test_every_sample_writes_a_valid_document(args: list[str]) -> None:
    result = invoke("grad", *args, "--json")
    assert result.exit_code == 0, result.stderr
    document = valid(json.loads(result.stdout))
    assert document["schema"] == "attntrace/grad/v1"
    run = json.loads(invoke("run", *args[:2], "--json").stdout)
    assert document["model"] == run["model"]
    assert document["tokens"] == run["tokens"]


def test_the_schema_refuses_what_is_not_in_the_contract() -> None:
    traced = grad_trace(*random_block(2, cross=False)[:2], None, Objective("attend", "0", "0"))
    document = grad_to_dict(traced)
    for bad in (
        {**document, "extra": 1},
        {**document, "stages": [{**document["stages"][0], "name": "d_nothing"}]},
        {**document, "loss": {**document["loss"], "kind": "l1"}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, GRAD_SCHEMA, cls=jsonschema.Draft202012Validator)
