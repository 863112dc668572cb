"""flash with the variants: the tiled pass equals the full trace's output and a loop
written here (docs/variants.md); tiles the window or the causal mask hides entirely are
skipped, each with its reason."""

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

from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.variants import Variants
from attntrace.kernels.flash import BOTH, FUTURE, OUT_OF_WINDOW, flash
from attntrace.kernels.flash_report import flash_report


def _model(seed: int, alibi: bool = False, **options: Any) -> ModelSpec:
    base, _, _ = random_block(seed, cross=False, rope=not alibi and seed % 2 == 0)
    if options.pop("weights", False):
        rng = np.random.default_rng(seed)
        options["q_norm"] = rng.normal(size=base.d_k)
        options["k_norm"] = rng.normal(size=base.d_k)
    return replace(
        base,
        causal=True,
        variants=Variants(**options),
        positions="alibi" if alibi else base.positions,
    )


def _loop(
    Q: Any,
    K: Any,
    V: Any,
    *,
    window: int | None,
    sinks: int,
    slope: float | None,
    softcap: float | None,
    sink: float | None,
) -> list[list[float]]:
    """softmax over each query's visible keys, with every variant, by plain loops."""
    rows = []
    for i in range(len(Q)):
        logits = {}
        for j in range(i + 1):
            if window is not None and i - j >= window and not j < sinks:
                continue
            x = sum(a * b for a, b in zip(Q[i], K[j], strict=True)) / math.sqrt(len(Q[i]))
            if slope is not None:
                x -= slope * (i - j)
            if softcap is not None:
                x = softcap * math.tanh(x / softcap)
            logits[j] = x
        top = max([*logits.values(), *([] if sink is None else [sink])])
        total = sum(math.exp(x - top) for x in logits.values())
        total += 0.0 if sink is None else math.exp(sink - top)
        rows.append(
            [
                sum(math.exp(logits[j] - top) / total * V[j][c] for j in logits)
                for c in range(len(V[0]))
            ]
        )
    return rows


CASES: dict[str, dict[str, Any]] = {
    "window": {"window": 2},
    "window+sinks": {"window": 2, "sinks": 1},
    "alibi": {"alibi": True},
    "qk_norm": {"qk_norm": True, "weights": True},
    "softcap": {"softcap": 1.5},
    "sink_logit": {"sink_logit": 0.4},
    "everything": {
        "window": 3,
        "sinks": 1,
        "alibi": True,
        "qk_norm": True,
        "softcap": 2.0,
        "sink_logit": -0.3,
    },
}


@pytest.mark.parametrize("variant", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", range(4))
def test_flash_equals_the_trace_and_the_loop(seed: int, case: str, variant: int) -> None:
    options = dict(CASES[case])
    alibi = bool(options.pop("alibi", False))
    model = _model(seed, alibi, **options)
    tokens = [f"t{(seed + 5 * i) % 6}" for i in range(9)]
    trace = trace_block(model, tokens)
    var = model.variants
    for head in range(model.heads):
        report = flash_report(trace, head, 2, 3, variant)
        np.testing.assert_allclose(report.record.output, report.standard_output, **FLOAT64)
        q, k = trace.model.score_inputs
        Q, K, V = (trace.stage(name, head=head).data.tolist() for name in (q, k, "V"))
        sinks = var.sink_logits(model.heads)
        loop = _loop(
            Q,
            K,
            V,
            window=var.window,
            sinks=var.sinks,
            slope=var.slopes(model.heads)[head] if alibi else None,
            softcap=var.softcap,
            sink=None if sinks is None else sinks[head],
        )
        np.testing.assert_allclose(report.record.output, np.array(loop), **FLOAT64)
        if sinks is not None:
            assert report.record.sink is not None
            expected = trace.stage("sink", head=head).data[:, 0]
            np.testing.assert_allclose(report.record.sink, expected, **FLOAT64)


@given(
    st.integers(1, 12), st.integers(1, 6), st.integers(0, 3), st.integers(1, 4), st.integers(1, 4)
)
@settings(max_examples=60, deadline=None)
def test_a_tile_is_skipped_exactly_when_every_cell_is_hidden(
    n: int, window: int, sinks: int, block_q: int, block_k: int
) -> None:
    rng = np.random.default_rng(n)
    Q, K, V = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=(n, 3))
    record = flash(
        Q, K, V, block_q=block_q, block_k=block_k, causal=True, window=window, sinks=sinks
    )
    for tile in record.tiles:
        (r0, r1), (c0, c1) = tile.rows, tile.cols
        cells = [(i, j) for i in range(r0, r1) for j in range(c0, c1)]
        visible = [(i, j) for i, j in cells if j <= i and (i - j < window or j < sinks)]
        assert tile.skipped == (not visible)
        if tile.skipped:
            later = all(j > i for i, j in cells)
            none_later = not any(j > i for i, j in cells)
            assert tile.why == (FUTURE if later else OUT_OF_WINDOW if none_later else BOTH)
        else:
            assert tile.why is None
    assert record.skipped == sum(record.skipped_for(w) for w in (FUTURE, OUT_OF_WINDOW, BOTH))


def test_a_long_window_model_skips_the_tiles_far_below_the_diagonal() -> None:
    model = _model(1, window=2)
    trace = trace_block(model, [f"t{i % 6}" for i in range(12)])
    record = flash_report(trace, 0, 2, 2).record
    # 6 × 6 tiles: 15 above the diagonal (the future), and those whose every cell is 2 or
    # more keys back: query block i, key block j with 2i − (2j + 1) ≥ 2, i.e. j ≤ i − 2
    assert record.skipped_for(FUTURE) == 15
    assert record.skipped_for(OUT_OF_WINDOW) == sum(1 for i in range(6) for j in range(i - 1))


def test_flash_json_says_why_each_tile_was_skipped_and_the_sinks_share() -> None:
    import jsonschema
    import orjson
    from helpers import schema

    from attntrace.kernels.flash_json import flash_dump_bytes

    model = _model(3, window=2, sink_logit=0.25)
    trace = trace_block(model, [f"t{i % 6}" for i in range(8)])
    report = flash_report(trace, 0, 2, 2)
    document = orjson.loads(flash_dump_bytes(report))
    jsonschema.validate(document, schema("flash-v1.schema.json"))
    whys = [tile.get("why") for tile in document["tiles"] if tile["skipped"]]
    assert whys.count(FUTURE) == 6
    assert whys.count(OUT_OF_WINDOW) == 3
    assert all("why" not in tile for tile in document["tiles"] if not tile["skipped"])
    np.testing.assert_allclose(document["sink"], trace.stage("sink", head=0).data[:, 0], **FLOAT64)
