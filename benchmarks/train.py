"""How long `attntrace train` takes and how much memory it holds (issue 15).

Run:  python benchmarks/train.py        (about a minute on a 2-core machine)

For the default run (`it-animal`, 100 steps from random WQ and WK) and the largest runs
the work bound (core.train.MAX_WORK) allows: `it-animal` at its most steps, and a
300-token 8-head model of d_model 64 at its most: the time of one run (without
tracemalloc, which slows numpy's small arrays some 3 times), then the peak of numpy's
allocations over a second run (tracemalloc sees them), both with the rows kept, as
--json keeps them. Fails if a largest run passes BOUND_SECONDS or BOUND_MIB.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Sequence

import numpy as np

from attntrace.api import prepared
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.objective import Objective
from attntrace.learning.train import largest_steps, train

BOUND_SECONDS = 60  # the largest run, stated: "well under a minute"
BOUND_MIB = 300


def wide_model() -> tuple[ModelSpec, list[str]]:
    rng = np.random.default_rng(0)
    d_model = 64
    scale = 1 / math.sqrt(d_model)
    weights = [rng.normal(size=(d_model, d_model)) * scale for _ in range(3)]
    model = ModelSpec(
        embeddings={f"t{i}": rng.normal(size=d_model) for i in range(50)},
        WQ=weights[0],
        WK=weights[1],
        WV=weights[2],
        heads=8,
    )
    return model, [f"t{int(i)}" for i in rng.integers(0, 50, size=300)]


def measure(
    label: str,
    model: ModelSpec,
    tokens: Sequence[str],
    objective: Objective,
    steps: int,
    *,
    largest: bool,
) -> None:
    start = time.perf_counter()
    train(model, tokens, None, objective, steps=steps, lr=0.1, init="random")
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    train(model, tokens, None, objective, steps=steps, lr=0.1, init="random")
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"{label:<44} {steps:>7,} {elapsed:>7.1f}s {peak:>7.1f} MiB", flush=True)
    if largest:
        assert elapsed < BOUND_SECONDS, f"{label}: {elapsed:.1f} s, over {BOUND_SECONDS} s"
        assert peak < BOUND_MIB, f"{label}: {peak:.1f} MiB, over {BOUND_MIB} MiB"


def main() -> None:
    print(f"{'run':<44} {'steps':>7} {'time':>8} {'peak':>11}")
    ready = prepared(None, sample="it-animal")
    it = Objective("attend", "it", "animal")
    n = len(ready.tokens)
    measure("it-animal, default", ready.spec, ready.tokens, it, 100, largest=False)
    most = largest_steps(ready.spec, n, n, 1, keep_rows=True)
    measure("it-animal, the most steps", ready.spec, ready.tokens, it, most, largest=True)
    model, tokens = wide_model()
    objective = Objective("attend", "299", "0")
    most = largest_steps(model, 300, 300, 8, keep_rows=True)
    measure(
        "300 tokens, 8 heads, d_model 64, the most", model, tokens, objective, most, largest=True
    )


if __name__ == "__main__":
    main()
