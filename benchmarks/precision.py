"""The cost of low precision (issue 16): rounding, the casting rule's matmul and softmax.

Run:  python benchmarks/precision.py        (about half a minute on a 2-core machine)

Prints the median of 5 runs each for: rounding a 512 × 512 float64 matrix to each dtype;
matmul_in of two 512 × 512 matrices (accumulated in float32, and in the dtype) against
numpy's float64 product; softmax_in of 512 rows of 512 against a float64 softmax; and,
where ml_dtypes is importable, what importing it costs in a fresh process after numpy
(why bfloat16 is rounded in numpy here). The issue's budget is --dtype adding at most
1.5× to a run: a run's matrices are n × d_model (tens to hundreds a side), so the 512 × 512
figures are an upper end; matmul_in loops over the inner dimension in Python, k numpy
operations of m × n each, where BLAS does one call.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import numpy.typing as npt

from attntrace.kernel.precision import matmul_in, round_to, softmax_in

N = 512
RUNS = 5


def median_seconds(work: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def softmax64(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    e: npt.NDArray[np.float64] = np.exp(x - x.max(axis=-1, keepdims=True))
    weights: npt.NDArray[np.float64] = e / e.sum(axis=-1, keepdims=True)
    return weights


def import_cost() -> str:
    if importlib.util.find_spec("ml_dtypes") is None:
        return "ml_dtypes not installed: its import cost not measured"
    code = (
        "import time, numpy; t = time.perf_counter(); import ml_dtypes; "
        "print(time.perf_counter() - t)"
    )
    command = [sys.executable, "-c", code]
    runs = [
        float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
        for _ in range(RUNS)
    ]
    median_ms = statistics.median(runs) * 1000
    return f"import ml_dtypes after numpy: {median_ms:.0f} ms (median of {RUNS})"


def main() -> None:
    rng = np.random.default_rng(16)
    a, b = rng.normal(size=(N, N)), rng.normal(size=(N, N))
    print(f"round_to, {N} × {N}:")
    for dtype in ("float32", "float16", "bfloat16"):
        print(f"  {dtype:<9} {median_seconds(partial(round_to, a, dtype)) * 1000:8.1f} ms")
    base = median_seconds(lambda: a @ b)
    print(f"matmul {N} × {N} · {N} × {N}: float64 (numpy, BLAS) {base * 1000:.1f} ms")
    for dtype in ("float32", "float16", "bfloat16"):
        for accumulate in ("float32", "dtype"):
            runs = RUNS if accumulate == "float32" else 1
            took = median_seconds(partial(matmul_in, a, b, dtype, accumulate), runs)
            print(f"  matmul_in {dtype:<9} accumulate {accumulate:<8} {took * 1000:8.1f} ms")
    scores = 4 * a
    base = median_seconds(lambda: softmax64(scores))
    print(f"softmax of {N} rows of {N}: float64 {base * 1000:.1f} ms")
    for dtype in ("float32", "float16", "bfloat16"):
        for inner in ("float32", dtype):
            took = median_seconds(partial(softmax_in, scores, dtype, inner))
            print(f"  softmax_in {dtype:<9} in {inner:<9} {took * 1000:8.1f} ms")
    print(import_cost())


if __name__ == "__main__":
    main()
