"""Per-step time of decoding with a KV cache against recomputing the prefix (issue 5).

Run:  python benchmarks/decode.py        (about a minute on a 2-core machine)

A random model: d_model 512, 8 heads (d_k = d_v = 64), 1,024 tokens. For steps t
spread over 1..1024, it times (median of 5) what step t costs each way, using the
library's own pieces (ops.head_columns, ops.softmax, decode/cache.KVCache):

- cached: the new token's q, k, v, append to the cache, attend over t+1 keys;
- recomputed: K and V and Q of the whole prefix again, full causal attention over it.

Then the slope of log(time) against log(t) over the upper half of the range: about 1
for the cache (attention over t keys), about 2 for recomputing (t × t scores), until
the fixed cost of the projections dominates the small steps.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np

from attntrace.decode.cache import KVCache
from attntrace.kernel.ops import Mask, Matrix, apply_mask, causal_mask, head_columns, softmax

T = TypeVar("T")
D_MODEL, HEADS, TOKENS, REPEATS = 512, 8, 1024, 5
D_HEAD = D_MODEL // HEADS
STEPS = [2**k for k in range(0, 11)]  # 1 .. 1024 tokens so far


def median_seconds(action: Callable[[T], object], setup: Callable[[], T]) -> float:
    """Median time of ``action(setup())``, the set-up left out of the timing."""
    times = []
    for _ in range(REPEATS):
        state = setup()
        start = time.perf_counter()
        action(state)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@dataclass(frozen=True)
class _Layer:
    """The random model's inputs and weights, and each way of computing step t that is
    timed: a method each, so that main reads as the measurement alone."""

    X: Matrix
    WQ: Matrix
    WK: Matrix
    WV: Matrix

    @classmethod
    def random(cls, rng: np.random.Generator) -> _Layer:
        X = rng.normal(size=(TOKENS, D_MODEL))
        WQ, WK, WV = (rng.normal(size=(D_MODEL, D_MODEL)) / np.sqrt(D_MODEL) for _ in range(3))
        return cls(X, WQ, WK, WV)

    def cached_step(self, cache: KVCache, t: int) -> None:
        x = self.X[t]
        q = np.stack([x @ head_columns(self.WQ, h, D_HEAD) for h in range(HEADS)])
        k = np.stack([x @ head_columns(self.WK, h, D_HEAD) for h in range(HEADS)])
        v = np.stack([x @ head_columns(self.WV, h, D_HEAD) for h in range(HEADS)])
        cache.append(k, v)
        for h in range(HEADS):
            weights = softmax((cache.keys[h] @ q[h])[None, :] / np.sqrt(D_HEAD))
            _ = weights[0] @ cache.values[h]

    def recomputed_step(self, t: int) -> None:
        prefix = self.X[: t + 1]
        mask = causal_mask(t + 1)
        for h in range(HEADS):
            q = prefix @ head_columns(self.WQ, h, D_HEAD)
            k = prefix @ head_columns(self.WK, h, D_HEAD)
            v = prefix @ head_columns(self.WV, h, D_HEAD)
            scores = apply_mask(q @ k.T / np.sqrt(D_HEAD), mask)
            _ = softmax(scores) @ v

    def cache_with(self, tokens: int) -> KVCache:
        return KVCache.holding(
            [self.X[:tokens] @ head_columns(self.WK, g, D_HEAD) for g in range(HEADS)],
            [self.X[:tokens] @ head_columns(self.WV, g, D_HEAD) for g in range(HEADS)],
        )

    def cache_and_query(self, t: int) -> tuple[KVCache, Matrix]:
        return self.cache_with(t + 1), self.projected(t)[0][:, t]

    def projected(self, t: int) -> tuple[Matrix, Matrix, Matrix, Mask]:
        prefix = self.X[: t + 1]
        q, k, v = (
            np.stack([prefix @ head_columns(W, h, D_HEAD) for h in range(HEADS)])
            for W in (self.WQ, self.WK, self.WV)
        )
        return q, k, v, causal_mask(t + 1)


def cached_attention(state: tuple[KVCache, Matrix]) -> None:
    """Only the attention of step t: the new q over the t+1 cached keys."""
    cache, q = state
    for h in range(HEADS):
        weights = softmax((cache.keys[h] @ q[h])[None, :] / np.sqrt(D_HEAD))
        _ = weights[0] @ cache.values[h]


def full_attention(state: tuple[Matrix, Matrix, Matrix, Mask]) -> None:
    """Only the attention of recomputing: every prefix query over every prefix key."""
    qs, ks, vs, mask = state
    for h in range(HEADS):
        scores = apply_mask(qs[h] @ ks[h].T / np.sqrt(D_HEAD), mask)
        _ = softmax(scores) @ vs[h]


def main() -> None:
    layer = _Layer.random(np.random.default_rng(0))
    print(f"d_model {D_MODEL}, {HEADS} heads, d_k = d_v = {D_HEAD}; median of {REPEATS} runs")
    print(
        f"{'tokens':>7} {'whole step, ms: cached':>23} {'recomputed':>11} {'ratio':>6}"
        f" {'attention only, ms: cached':>27} {'full':>8}"
    )
    rows = []
    for steps in STEPS:
        t = steps - 1
        cached = median_seconds(partial(layer.cached_step, t=t), partial(layer.cache_with, t))
        recomputed = median_seconds(lambda _: layer.recomputed_step(t), lambda: None)  # noqa: B023
        attend = median_seconds(cached_attention, partial(layer.cache_and_query, t))
        attend_all = median_seconds(full_attention, partial(layer.projected, t))
        rows.append((steps, cached, recomputed, attend, attend_all))
        print(
            f"{steps:>7} {1000 * cached:>23.3f} {1000 * recomputed:>11.3f} "
            f"{recomputed / cached:>6.1f} {1000 * attend:>27.3f} {1000 * attend_all:>8.3f}"
        )
    upper = [row for row in rows if row[0] >= 128]
    logs = np.log([row[0] for row in upper])
    names = (
        "whole step, cached",
        "whole step, recomputed",
        "attention, cached",
        "attention, recomputed",
    )
    for index, label in enumerate(names, start=1):
        slope = np.polyfit(logs, np.log([row[index] for row in upper]), 1)[0]
        print(f"log-log slope over 128..1024 tokens, {label:<22}: {slope:.2f}")


if __name__ == "__main__":
    main()
