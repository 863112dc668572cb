"""decode with the variants: each step's row against a loop written here from
docs/variants.md, and against the full trace within the decode bound; a sliding window's
cache drops its oldest row and stops growing at N + S rows."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from randoms import random_block
from tolerances import FLOAT64

from attntrace.decode.decoder import decode
from attntrace.kernel.casting import Cast
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.variants import Variants


def _with(model: ModelSpec, alibi: bool = False, **options: Any) -> ModelSpec:
    rng = np.random.default_rng(7)
    if options.pop("weights", False):
        options["q_norm"] = rng.normal(size=model.d_k)
        options["k_norm"] = rng.normal(size=model.d_k)
    return replace(
        model,
        causal=True,
        variants=Variants(**options),
        positions="alibi" if alibi else model.positions,
    )


def _rms(row: list[float], weight: Any, eps: float) -> list[float]:
    scale = 1 / math.sqrt(sum(x * x for x in row) / len(row) + eps)
    return [x * scale * (1.0 if weight is None else float(weight[i])) for i, x in enumerate(row)]


def _turned(row: list[float], p: int, base: float, pairing: str) -> list[float]:
    d = len(row)
    out = list(row)
    pairs = (
        [(2 * i, 2 * i + 1) for i in range(d // 2)]
        if pairing == "interleaved"
        else [(i, i + d // 2) for i in range(d // 2)]
    )
    for i, (a, b) in enumerate(pairs):
        angle = p * base ** (-2 * i / d)
        out[a] = row[a] * math.cos(angle) - row[b] * math.sin(angle)
        out[b] = row[b] * math.cos(angle) + row[a] * math.sin(angle)
    return out


def _loop_rows(model: ModelSpec, tokens: list[str]) -> list[list[list[float]]]:
    """Every query's output row per head, [heads][n][d_v], by plain loops: the contract's
    stage order (QK-norm, RoPE, scores, scaled, ALiBi, cap, window mask, sink)."""
    var, H, G = model.variants, model.heads, model.n_kv_heads
    d_k, d_v, n = model.d_k, model.d_v, len(tokens)
    X = [list(model.embeddings[t]) for t in tokens]

    def project(W: Any, bias: str, index: int, width: int) -> list[list[float]]:
        b = model.biases.get(bias)
        return [
            [
                sum(x[r] * W[r][index * width + c] for r in range(len(x)))
                + (0.0 if b is None else b[index * width + c])
                for c in range(width)
            ]
            for x in X
        ]

    slopes = var.slopes(H)
    sinks = var.sink_logits(H)
    rows = []
    for h in range(H):
        g = h // (H // G)
        Q, K, V = (
            project(model.WQ, "bQ", h, d_k),
            project(model.WK, "bK", g, d_k),
            project(model.WV, "bV", g, d_v),
        )
        if var.qk_norm:
            Q = [_rms(r, var.q_norm, var.qk_norm_eps) for r in Q]
            K = [_rms(r, var.k_norm, var.qk_norm_eps) for r in K]
        if model.position_kind == "rope":
            Q = [_turned(r, p, model.rope_base, model.rope_pairing) for p, r in enumerate(Q)]
            K = [_turned(r, p, model.rope_base, model.rope_pairing) for p, r in enumerate(K)]
        head = []
        for i in range(n):
            logits = {}
            for j in range(i + 1):
                if var.window is not None and i - j >= var.window and not j < var.sinks:
                    continue
                x = sum(Q[i][c] * K[j][c] for c in range(d_k)) / math.sqrt(d_k)
                if model.position_kind == "alibi":
                    x += -slopes[h] * (i - j)
                if var.softcap is not None:
                    x = var.softcap * math.tanh(x / var.softcap)
                logits[j] = x
            top = max([*logits.values(), *([] if sinks is None else [sinks[h]])])
            exps = {j: math.exp(x - top) for j, x in logits.items()}
            total = sum(exps.values()) + (0.0 if sinks is None else math.exp(sinks[h] - top))
            head.append([sum(exps[j] / total * V[j][c] for j in exps) for c in range(d_v)])
        rows.append(head)
    return rows


CASES: dict[str, dict[str, Any]] = {
    "window": {"window": 3},
    "window+sinks": {"window": 2, "sinks": 1},
    "alibi": {"alibi": True},
    "qk_norm": {"qk_norm": True, "weights": True},
    "softcap": {"softcap": 1.5},
    "sink_logit": {"sink_logit": 0.3},
    "everything": {
        "window": 3,
        "sinks": 2,
        "alibi": True,
        "qk_norm": True,
        "softcap": 2.0,
        "sink_logit": -0.5,
    },
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", range(6))
def test_each_step_equals_the_loops_and_the_full_trace(case: str, seed: int) -> None:
    options = dict(CASES[case])
    alibi = bool(options.pop("alibi", False))
    base, _, _ = random_block(seed, cross=False, rope=not alibi and seed % 2 == 0)
    model = _with(base, alibi, **options)
    tokens = [f"t{(seed + 3 * i) % 6}" for i in range(7)]
    run = decode(model, tokens)
    assert run.matches, (run.max_delta, run.bound)
    loops = _loop_rows(model, tokens)
    for step in run.steps:
        for h in range(model.heads):
            np.testing.assert_allclose(step.output[h], loops[h][step.t], **FLOAT64)


@given(st.integers(1, 5), st.integers(0, 3), st.integers(1, 12))
@settings(max_examples=40, deadline=None)
def test_a_windowed_cache_drops_its_oldest_row_and_stops_at_n_plus_s(
    window: int, sinks: int, n: int
) -> None:
    base, _, _ = random_block(1, cross=False, heads=2, kv_heads=1)
    model = _with(base, window=window, sinks=sinks)
    run = decode(model, [f"t{i % 6}" for i in range(n)])
    for step in run.steps:
        t = step.t
        expected = [p for p in range(t + 1) if t - p < window or p < sinks]
        assert list(step.positions) == expected  # the cache holds what the query may see
        assert len(step.positions) <= window + sinks
        assert step.keys[0].shape[0] == len(expected) == step.weights.shape[1]
        gone = t - window
        assert step.dropped == (gone if gone >= sinks else None)
    assert run.matches


def test_the_cache_bytes_stop_growing_at_the_window() -> None:
    base, _, _ = random_block(2, cross=False, heads=2, kv_heads=2)
    run = decode(_with(base, window=3), [f"t{i % 6}" for i in range(8)])
    sizes = [step.cache_bytes for step in run.steps]
    per_row = 2 * (base.d_k + base.d_v) * 8
    assert sizes == [per_row * min(t + 1, 3) for t in range(8)]
    # an earlier step's view still reads its own rows after later drops
    first_three = run.steps[2].keys[0]
    assert first_three.shape[0] == 3
    assert run.steps[-1].positions == (5, 6, 7)


@pytest.mark.parametrize("case", ["window+sinks", "everything"])
def test_a_low_precision_decode_equals_the_full_attention_in_its_dtype(case: str) -> None:
    options = dict(CASES[case])
    alibi = bool(options.pop("alibi", False))
    base, _, _ = random_block(4, cross=False, heads=2, kv_heads=1)
    model = _with(base, alibi, **options)
    run = decode(model, [f"t{i % 6}" for i in range(7)], Cast.of("float16"))
    assert run.matches
    assert run.differing == 0
    assert [s.positions for s in run.steps] == [s.positions for s in run.reference.steps]  # type: ignore[union-attr]


def test_decode_json_carries_each_steps_cache_positions() -> None:
    import jsonschema
    from helpers import schema

    from attntrace.decode.decode_json import decode_to_dict

    base, _, _ = random_block(5, cross=False, heads=2, kv_heads=1)
    model = _with(base, True, window=2, sinks=1, softcap=3.0, sink_logit=0.1)
    document = decode_to_dict(decode(model, [f"t{i % 6}" for i in range(5)]))
    jsonschema.validate(document, schema("decode-v1.schema.json"))
    steps = document["steps"]
    assert [s["cache_positions"] for s in steps] == [[0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    assert [s["dropped"] for s in steps] == [None, None, None, 1, 2]
    assert all(len(s["sink"]) == 2 and len(s["biased"][0]) == s["cache_length"] for s in steps)


@pytest.mark.parametrize("factor", [1e-3, 1.0, 30.0], ids=["small", "unit", "big-scores"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", range(8))
def test_the_loops_and_the_trace_differ_within_the_decode_bound(
    seed: int, case: str, factor: float
) -> None:
    """The decode bound (decode/rounding.py) carries each variant's stage: another order
    of every sum (the loops here) stays within it, cell by cell, at any scale."""
    from attntrace.decode.rounding import decode_bounds
    from attntrace.forward.attention import trace_block

    options = dict(CASES[case])
    alibi = bool(options.pop("alibi", False))
    base, _, _ = random_block(seed, cross=False, rope=not alibi and seed % 2 == 0)
    base = replace(base, embeddings={t: v * factor for t, v in base.embeddings.items()})
    model = _with(base, alibi, **options)
    tokens = [f"t{(seed + 3 * i) % 6}" for i in range(7)]
    full = trace_block(model, tokens)
    heads, _ = decode_bounds(model, full)
    loops = _loop_rows(model, tokens)
    for h in range(model.heads):
        delta = np.abs(full.stage("output", head=h).data - np.array(loops[h]))
        assert np.all(delta <= heads[h]), f"head {h}: {delta.max():.3g} > {heads[h].max():.3g}"


@pytest.mark.parametrize("case", list(CASES))
def test_a_decode_off_by_a_part_in_a_billion_is_caught_with_the_variants(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not vacuous: the bound with the variants' stages still catches a wrong weight."""
    import attntrace.decode.decoder
    from attntrace.kernel.ops import Attention, attention

    options = dict(CASES[case])
    alibi = bool(options.pop("alibi", False))
    base, _, _ = random_block(2, cross=False, heads=2, kv_heads=1, wo=False)
    model = _with(base, alibi, **options)

    def slightly_off(Q: Any, K: Any, V: Any, **given: Any) -> Attention:
        weights = attention(Q, K, V, **given).softmax * (1 + 1e-9)
        return attention(Q, K, V, **given)._replace(softmax=weights, output=weights @ V)

    monkeypatch.setattr(attntrace.decode.decoder, "attention", slightly_off)
    run = decode(model, [f"t{i % 6}" for i in range(7)])
    assert not run.matches
    assert run.max_delta > run.bound
