"""How long `check` takes to compare and to diagnose (issue 14), by sentence length.

Run:  python benchmarks/check.py        (about half a minute on a 2-core machine)

A random model: d_model 256, 8 heads, 4 K/V heads (GQA, d_k = d_v = 32), causal, with
biases and WO; sentences of 16 to 256 tokens. For each it times (median of 3) the
Python API on every stage of

- a correct float32 implementation (compared only: every stage matches);
- one that forgot the scaling (compared, then every mistake of the catalogue that
  applies is recomputed to find the one that reproduces it).

The second is the cost of a diagnosis: one block recomputed per mistake tried, so it
grows as the trace does (n² scores per head), a constant number of times the first.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import numpy.typing as npt

import attntrace
from attntrace.api import prepared

D_MODEL, HEADS, KV_HEADS, REPEATS = 256, 8, 4, 3
LENGTHS = (16, 64, 128, 256)


def model_document(rng: np.random.Generator, vocabulary: list[str]) -> dict[str, Any]:
    width, kv_width = D_MODEL, D_MODEL // HEADS * KV_HEADS
    return {
        "embeddings": {t: rng.normal(size=D_MODEL).tolist() for t in vocabulary},
        "weights": {
            name: (rng.normal(size=shape) / np.sqrt(D_MODEL)).tolist()
            for name, shape in (
                ("WQ", (D_MODEL, width)),
                ("WK", (D_MODEL, kv_width)),
                ("WV", (D_MODEL, kv_width)),
                ("WO", (width, D_MODEL)),
            )
        },
        "biases": {"bQ": rng.normal(size=width).tolist(), "bK": rng.normal(size=kv_width).tolist()},
        "heads": HEADS,
        "kv_heads": KV_HEADS,
        "causal": True,
    }


def stages_of(trace: attntrace.Trace, scale: float = 1.0) -> dict[str, npt.NDArray[Any]]:
    """Every stage as a student saves it, heads first, in float32; ``scale`` multiplies
    scaled (√d_k: the scaling forgotten) and what follows is recomputed from it."""
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name in dict.fromkeys(trace.names):
        found = [s.data for s in trace.stages if s.name == name]
        arrays[name] = (found[0] if len(found) == 1 else np.stack(found)).astype(np.float32)
    if scale != 1.0:
        scaled = arrays["scaled"] * scale
        arrays["scaled"] = scaled
        arrays["masked"] = np.where(np.isneginf(arrays["masked"]), -np.inf, scaled)
        exps = np.exp(arrays["masked"] - arrays["masked"].max(axis=-1, keepdims=True))
        arrays["softmax"] = exps / exps.sum(axis=-1, keepdims=True)
        for late in ("output", "concat", "projected"):
            del arrays[late]
    return arrays


def median_seconds(
    arrays: dict[str, npt.NDArray[Any]], document: dict[str, Any], words: str
) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        attntrace.check(arrays, model=document, sentence=words)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    vocabulary = [f"t{i}" for i in range(64)]
    document = model_document(rng, vocabulary)
    print(f"d_model {D_MODEL}, {HEADS} heads, {KV_HEADS} K/V heads, causal; median of {REPEATS}")
    print(f"{'tokens':>7} {'trace':>9} {'match':>9} {'diagnose':>9}  cause")
    for n in LENGTHS:
        words = " ".join(rng.choice(vocabulary, size=n))
        start = time.perf_counter()
        trace = prepared(words, model=document).trace()
        traced = time.perf_counter() - start
        right = stages_of(trace)
        wrong = stages_of(trace, scale=float(np.sqrt(trace.model.d_k)))
        report = attntrace.check(wrong, model=document, sentence=words)
        cause = report.diagnosis.cause if report.diagnosis else "none"
        assert attntrace.check(right, model=document, sentence=words).ok
        print(
            f"{n:>7} {traced:>8.3f}s {median_seconds(right, document, words):>8.3f}s "
            f"{median_seconds(wrong, document, words):>8.3f}s  {cause}"
        )


if __name__ == "__main__":
    main()
