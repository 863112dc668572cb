"""How long FlashAttention's tiled pass takes to record (issue 16: under a second).

Run:  python benchmarks/flash.py

One random head of 512 tokens, d_k = d_v = 64, blocks of 64 × 64 (8 × 8 tiles), each
variant causal and not; the best of 5 runs (the work is fixed: the minimum is the cost,
the rest is the machine's noise). Also the largest gap to the standard computation, and
what the standard one stores and moves that the tiled one does not.
"""

from __future__ import annotations

import time

import numpy as np

from attntrace.core.flash import flash, hbm_traffic
from attntrace.core.ops import attention

N, D, BLOCK, RUNS = 512, 64, 64, 5
TARGET_SECONDS = 1.0


def main() -> None:
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(N, D)) for _ in range(3))
    print(f"flash: {N} tokens, d_k {D}, blocks {BLOCK} × {BLOCK}, best of {RUNS}")
    for causal in (False, True):
        for variant in (1, 2):
            times = []
            for _ in range(RUNS):
                start = time.perf_counter()
                record = flash(Q, K, V, block_q=BLOCK, block_k=BLOCK, causal=causal,
                               variant=variant)  # fmt: skip
                times.append(time.perf_counter() - start)
            gap = np.abs(record.output - attention(Q, K, V, causal=causal).output).max()
            print(
                f"  variant {variant} causal={causal!s:<5} {min(times) * 1e3:7.1f} ms  "
                f"{len(record.tiles)} tiles, {record.skipped} skipped, max |Δ| = {gap:.1e}"
            )
            assert min(times) < TARGET_SECONDS, f"{min(times):.2f} s, over {TARGET_SECONDS} s"
    print(f"  never stored: {record.standard_bytes:,} bytes of scores and weights (float64)")
    for n, d in ((N, D), (1024, 64)):
        traffic = hbm_traffic(n, d, 100 * 1024)
        print(
            f"  HBM, N={n} d={d}, SRAM 100 KiB (fp16): standard {traffic.standard:,} "
            f"elements, tiled {traffic.tiled:,}"
        )


if __name__ == "__main__":
    main()
