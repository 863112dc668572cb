"""How long `attntrace scaling` takes and how much memory it holds (issue 15).

Run:  python benchmarks/scaling.py        (about a minute and a half on a 2-core machine)

Times (one run each: the work is a fixed number of draws) and the peak of numpy's
allocations (tracemalloc sees them, and slows a run some 3 times: the default takes
about a second without it) for the default run and for the largest ones the bounds
allow: samples × keys × max_dk = 2**27 (MAX_WORK) with few keys, with the most
keys, and with the largest d_k. The normals are drawn CHUNK (2**20) at a time, so the
peak stays near 2 × 8 MiB whatever the size: this script fails if it passes BOUND_MIB.
"""

from __future__ import annotations

import time
import tracemalloc

from attntrace.learning.scaling import MAX_WORK, measure

BOUND_MIB = 64  # a run's peak, stated; the whole draw at 16M floats would be 128 MiB
RUNS = (
    ("default", 2000, 8, 1024),
    ("most rows", MAX_WORK // (8 * 1024), 8, 1024),
    ("most keys", MAX_WORK // (4096 * 1024), 4096, 1024),
    ("fewest keys", 65536, 2, 1024),
    ("largest d_k", MAX_WORK // (8 * 16384), 8, 16384),
)


def main() -> None:
    print(f"{'run':<12} {'samples':>8} {'keys':>5} {'max_dk':>7} {'time':>8} {'peak':>10}")
    for name, samples, keys, max_dk in RUNS:
        tracemalloc.start()
        start = time.perf_counter()
        measure(samples=samples, keys=keys, max_dk=max_dk)
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(
            f"{name:<12} {samples:>8,} {keys:>5,} {max_dk:>7,} {elapsed:>7.1f}s {peak:>6.1f} MiB",
            flush=True,
        )
        assert peak < BOUND_MIB, f"{name}: a peak of {peak:.1f} MiB, over {BOUND_MIB} MiB"


if __name__ == "__main__":
    main()
