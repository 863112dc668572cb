"""The cost of `decode --dtype` (issue 16): a SmolLM2-shaped layer decoded in each dtype.

Run:  python benchmarks/decode_dtype.py        (about half a minute on a 2-core machine)

Prints the median of 3 runs of attntrace.decode.decoder.decode for a random layer of SmolLM2-135M's
shape (d_model 576, 9 heads, 3 K/V heads, head width 64) over 8 and 32 tokens: float64
alone, and each low-precision dtype. A low-precision decode also runs float64's (its
error is measured against it) and the full causal attention in the dtype (for the exact
comparison), and its matrix products loop over the inner dimension in Python
(kernel/precision.matmul_in): so it costs several float64 decodes.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from attntrace.decode.decoder import decode
from attntrace.kernel.casting import Cast
from attntrace.kernel.spec import ModelSpec

RUNS = 3


def layer(tokens: int) -> tuple[ModelSpec, list[str]]:
    rng = np.random.default_rng(0)
    d_model, heads, kv_heads, width = 576, 9, 3, 64
    vocab = {f"t{i}": rng.normal(size=d_model) for i in range(tokens)}
    scale = d_model**-0.5
    model = ModelSpec(
        vocab,
        rng.normal(size=(d_model, heads * width)) * scale,
        rng.normal(size=(d_model, kv_heads * width)) * scale,
        rng.normal(size=(d_model, kv_heads * width)) * scale,
        WO=rng.normal(size=(heads * width, d_model)) * scale,
        heads=heads,
        kv_heads=kv_heads,
        causal=True,
        positions="rope",
    )
    return model, list(vocab)


def median_seconds(model: ModelSpec, tokens: list[str], cast: Cast) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        decode(model, tokens, cast)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    for n in (8, 32):
        model, tokens = layer(n)
        base = median_seconds(model, tokens, Cast.of("float64"))
        print(f"{n} tokens: float64 {base * 1000:.0f} ms")
        for dtype in ("float32", "float16", "bfloat16"):
            took = median_seconds(model, tokens, Cast.of(dtype))
            print(f"  {dtype:<8} {took * 1000:.0f} ms ({took / base:.1f}× float64)")


if __name__ == "__main__":
    main()
