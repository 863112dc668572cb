"""How long the backward pass takes and how much memory it holds (issue 15), by size.

Run:  python benchmarks/grad.py        (about twenty seconds on a 2-core machine)

For each case, the median of 3 runs of :func:`attntrace.learning.grad_trace.grad_trace` (the
forward trace, the loss, every gradient, recorded as stages) and the peak memory
tracemalloc sees for one run (numpy's arrays are traced): a trained layer of MiniLM and
of SmolLM2 (where installed), and random causal GQA blocks with WO and biases of
d_model 256 (8 heads, 4 K/V heads) over 64 to 512 tokens. The trace holds a few n × n
matrices per head, forward and backward, so memory grows as heads · n².
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Sequence

import numpy as np

from attntrace.errors import InputError
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective

D_MODEL, HEADS, KV_HEADS, REPEATS = 256, 8, 4, 3
LENGTHS = (64, 128, 256, 512)


def random_model(rng: np.random.Generator) -> ModelSpec:
    d_head = D_MODEL // HEADS
    scale = 1 / np.sqrt(D_MODEL)
    return ModelSpec(
        embeddings={f"t{i}": rng.normal(size=D_MODEL) for i in range(50)},
        WQ=rng.normal(size=(D_MODEL, D_MODEL)) * scale,
        WK=rng.normal(size=(D_MODEL, KV_HEADS * d_head)) * scale,
        WV=rng.normal(size=(D_MODEL, KV_HEADS * d_head)) * scale,
        WO=rng.normal(size=(D_MODEL, D_MODEL)) * scale,
        heads=HEADS,
        kv_heads=KV_HEADS,
        causal=True,
        biases={"bQ": rng.normal(size=D_MODEL), "bO": rng.normal(size=D_MODEL)},
    )


def measure(label: str, model: ModelSpec, tokens: Sequence[str], objective: Objective) -> None:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        grad_trace(model, tokens, None, objective)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    grad_trace(model, tokens, None, objective)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{label:<40} {statistics.median(times) * 1000:9.1f} ms {peak / 2**20:9.1f} MB")


def main() -> None:
    print(f"{'case':<40} {'median':>12} {'peak':>12}")
    for name, layer in (("minilm", 3), ("smollm2", 29)):
        try:
            from attntrace.real.layer import layer_spec

            real, words = layer_spec(name, None, layer)
        except InputError as error:
            print(f"{name}: skipped ({error})")
            continue
        last = str(len(words) - 1)
        measure(
            f"{name} layer {layer}, {len(words)} tokens, attend",
            real,
            words,
            Objective("attend", last, "0"),
        )
    rng = np.random.default_rng(0)
    model = random_model(rng)
    for n in LENGTHS:
        tokens = [f"t{int(i)}" for i in rng.integers(0, 50, size=n)]
        measure(
            f"random d_model {D_MODEL}, {HEADS}/{KV_HEADS} heads, n {n}",
            model,
            tokens,
            Objective("attend", str(n - 1), "0"),
        )


if __name__ == "__main__":
    main()
