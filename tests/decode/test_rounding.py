"""The float64 rounding bound decode is judged by: it holds for any correct computation
of the numbers, on any machine, and for numbers near 1 it is tight enough to catch a
computation off by a part in a billion. (It is a worst case: at a real model's sizes it
is some 1e-6 of the values, enough to tell a mistake in the cache, not float32.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from naive import naive_block, rotate, rotate_interleaved
from randoms import random_block
from tolerances import FLOAT64_APPROX, UNIT_SCALE_BOUND

import attntrace.decode.decoder
from attntrace.decode.decoder import decode
from attntrace.decode.rounding import UNIT_ROUNDOFF, _turned, decode_bounds, gamma
from attntrace.forward.attention import trace_block
from attntrace.kernel.ops import Attention, attention
from attntrace.kernel.spec import ModelSpec


def scaled(model: ModelSpec, factor: float) -> ModelSpec:
    """The model with its embeddings times ``factor``: scores grow by factor²."""
    return replace(model, embeddings={t: v * factor for t, v in model.embeddings.items()})


def loops(model: ModelSpec, tokens: list[str]) -> dict[str, Any]:
    """The block by tests/naive.py: Python sums left to right, math's exp, cos and sin."""
    return naive_block(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        wo=None if model.WO is None else model.WO.tolist(),
        biases={name: list(b) for name, b in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
    )


@pytest.mark.parametrize("factor", [1e-3, 1.0, 30.0], ids=["small", "unit", "big-scores"])
@pytest.mark.parametrize("seed", range(40))
def test_the_loops_and_the_trace_differ_within_the_bound(seed: int, factor: float) -> None:
    """Another order of every sum (the loops) stays within the bound, cell by cell,
    from scores near 0 to scores of 1e4 where the softmax saturates."""
    model, tokens, _ = random_block(seed, cross=False)
    model = scaled(model, factor)
    full = trace_block(model, tokens)
    naive = loops(model, tokens)
    heads, projected = decode_bounds(model, full)
    for h in range(model.heads):
        delta = np.abs(full.stage("output", head=h).data - np.array(naive["output"][h]))
        assert np.all(delta <= heads[h]), f"head {h}: {delta.max():.3g} > {heads[h].max():.3g}"
    if model.WO is not None:
        assert projected is not None
        assert np.all(np.abs(full["projected"].data - np.array(naive["projected"])) <= projected)


@pytest.mark.parametrize("seed", range(40))
def test_decode_matches_within_the_bound_at_any_scale(seed: int) -> None:
    model, tokens, _ = random_block(seed, cross=False)
    for factor in (1e-3, 1.0, 30.0):
        run = decode(scaled(model, factor), tokens)
        assert run.matches, f"factor {factor}: {run.max_delta:.3g} against {run.bound:.3g}"
        assert run.max_delta <= run.bound


@pytest.mark.parametrize("seed", range(40))
def test_the_bound_is_far_below_what_a_mistake_moves(seed: int) -> None:
    """Not vacuous: for numbers near 1 (random_block's), every cell's bound is within
    UNIT_SCALE_BOUND of the values (the worst case of rounding through the projections,
    the scores and the exps), where a mistake in the cache moves them by 1e-3 or more."""
    model, tokens, _ = random_block(seed, cross=False)
    full = trace_block(model, tokens)
    heads, _ = decode_bounds(model, full)
    values = max(float(np.abs(full.stage("V", head=h).data).max()) for h in range(model.heads))
    assert heads.max() <= UNIT_SCALE_BOUND * max(values, 1.0)
    assert heads.min() >= 0


@pytest.mark.parametrize("seed", range(20))
def test_a_decode_off_by_a_part_in_a_billion_is_caught(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, tokens, _ = random_block(seed, cross=False, wo=False)
    full_v = trace_block(replace(model, causal=True), tokens).stage("V", head=0).data
    if np.abs(full_v).max() < 1e-3:  # a value row near 0 hides any weight's error
        pytest.skip("values too small to show a wrong weight")

    def slightly_off(Q: Any, K: Any, V: Any, **options: Any) -> Attention:
        """Decode's attention with every weight a part in a billion too big."""
        weights = attention(Q, K, V, **options).softmax * (1 + 1e-9)
        return attention(Q, K, V, **options)._replace(softmax=weights, output=weights @ V)

    monkeypatch.setattr(attntrace.decode.decoder, "attention", slightly_off)
    run = decode(model, tokens)
    assert not run.matches
    assert run.max_delta > run.bound


def test_gamma_is_n_units_of_roundoff_to_first_order() -> None:
    assert gamma(1) == pytest.approx(UNIT_ROUNDOFF, **FLOAT64_APPROX)
    assert gamma(1000) == pytest.approx(1000 * UNIT_ROUNDOFF, **FLOAT64_APPROX)
    assert np.finfo(np.float64).eps / 2 == UNIT_ROUNDOFF


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("seed", range(10))
def test_the_turned_magnitudes_bound_the_turned_rows(pairing: str, seed: int) -> None:
    """The bound carries |value| through RoPE as |x| plus |its partner|: each turned cell
    (turned by tests/naive.py's loops, with the model's pairing) is within it."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(6, 8)) * rng.choice([1e-3, 1.0, 1e3], size=(6, 8))
    turn = rotate_interleaved if pairing == "interleaved" else rotate
    turned = np.array([turn(list(row), p, 10.0) for p, row in enumerate(rows)])
    magnitude, _ = _turned(np.abs(rows), np.zeros_like(rows), pairing)
    assert (np.abs(turned) <= magnitude * (1 + UNIT_SCALE_BOUND)).all()
