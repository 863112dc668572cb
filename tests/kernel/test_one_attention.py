"""The three callers of the one attention agree: the traced block, the KV-cache decode
and a real model's forward pass (attntrace.kernel.ops.attention, each with its own
projections and head layout), with each other and with the loops of tests/naive.py.

Each computes the same numbers in another order (a head at a time, one query row at a
time, every head stacked), so they agree to float64 rounding: tolerances.FLOAT64.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from naive import naive_block
from randoms import random_block
from tolerances import FLOAT64

from attntrace.decode.decoder import decode
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.real.forward import LayerAttention, attend

# real.forward turns RoPE's pairs as Hugging Face's LLaMA does (i with i + d/2): half
KINDS = [
    {**kind, "rope_pairing": "half"}
    for kind in (
        {"heads": 1},
        {"heads": 4, "kv_heads": 4},
        {"heads": 4, "kv_heads": 2},
        {"heads": 3, "kv_heads": 1},
        {"rope": True},
        {"biases": True},
    )
]


def loops(model: ModelSpec, tokens: list[str]) -> dict[str, Any]:
    assert model.WO is not None
    return naive_block(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        wo=model.WO.tolist(),
        biases={name: list(b) for name, b in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
    )


def forward(model: ModelSpec, tokens: list[str]) -> tuple[Any, Any]:
    """real.forward.attend over the same rows and weights: (projected, weights)."""
    assert model.WO is not None
    weights = LayerAttention(model.WQ, model.WK, model.WV, model.WO, dict(model.biases))
    rope_base = model.rope_base if model.position_kind == "rope" else None
    return attend(
        model.embed(tokens),
        weights,
        model.heads,
        model.n_kv_heads,
        causal=model.causal,
        rope_base=rope_base,
    )


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("kind", KINDS, ids=["one", "MHA", "GQA", "MQA", "rope", "biases"])
@pytest.mark.parametrize("seed", range(6))
def test_the_trace_the_forward_pass_and_the_loops_agree(
    seed: int, kind: dict[str, Any], causal: bool
) -> None:
    model, tokens, _ = random_block(seed, cross=False, wo=True, causal=causal, **kind)
    trace, naive = trace_block(model, tokens), loops(model, tokens)
    projected, weights = forward(model, tokens)
    for h in range(model.heads):
        traced = trace.stage("softmax", head=h).data
        np.testing.assert_allclose(weights[h], traced, **FLOAT64, err_msg=f"head {h}")
        np.testing.assert_allclose(weights[h], naive["softmax"][h], **FLOAT64)
    np.testing.assert_allclose(projected, trace["projected"].data, **FLOAT64)
    np.testing.assert_allclose(projected, naive["projected"], **FLOAT64)


@pytest.mark.parametrize("kind", KINDS, ids=["one", "MHA", "GQA", "MQA", "rope", "biases"])
@pytest.mark.parametrize("seed", range(6))
def test_each_decode_step_agrees_with_the_trace_the_forward_pass_and_the_loops(
    seed: int, kind: dict[str, Any]
) -> None:
    model, tokens, _ = random_block(seed, cross=False, wo=True, causal=True, **kind)
    run = decode(model, tokens)
    trace, naive = run.full, loops(replace(model, causal=True), tokens)
    projected, weights = forward(replace(model, causal=True), tokens)
    for step in run.steps:
        seen = slice(0, step.t + 1)  # the keys cached so far: the unmasked ones
        for h in range(model.heads):
            row = trace.stage("softmax", head=h).data[step.t]
            np.testing.assert_allclose(step.weights[h], row[seen], **FLOAT64)
            np.testing.assert_allclose(step.weights[h], weights[h][step.t][seen], **FLOAT64)
            np.testing.assert_allclose(
                step.weights[h], naive["softmax"][h][step.t][seen], **FLOAT64
            )
            np.testing.assert_allclose(
                step.output[h], trace.stage("output", head=h).data[step.t], **FLOAT64
            )
            np.testing.assert_allclose(step.output[h], naive["output"][h][step.t], **FLOAT64)
        assert step.projected is not None
        np.testing.assert_allclose(step.projected, projected[step.t], **FLOAT64)
        np.testing.assert_allclose(step.projected, naive["projected"][step.t], **FLOAT64)
