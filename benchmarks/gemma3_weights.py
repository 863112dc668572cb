"""Gemma 3's weight file (issue 17): assembling its four chunks, opening it after, dequantizing.

Run:  python benchmarks/gemma3_weights.py     (about half a minute; needs the four packages)

Measured:

1. The first time: the four chunks joined into an empty user cache (a temporary
   XDG_CACHE_HOME), hashed as written, flushed and renamed: ``GEMMA3.verified_weights()``
   in a fresh process (so the chunks' page cache is what a second run would find: warm;
   a cold disk adds its read time). Median of 3.
2. Every time after: ``verified_weights()`` (the fingerprint found) plus the GGUF header
   parse (262,144 tokens and scores), in one process. Median of 5.
3. Dequantizing every tensor of the file to float32, by type (the embedding, Q8_0 168 M
   weights, is the largest), median of 3. The issue's target: open and dequantize under
   two seconds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from attntrace.real.catalog import GEMMA3
from attntrace.real.weights.gguf import GGUFFile

FIRST = "from attntrace.real.catalog import GEMMA3; GEMMA3.verified_weights()"


def median(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def first_assembly() -> float:
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "XDG_CACHE_HOME": cache, "PYTHONPATH": os.pathsep.join(sys.path)}
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", FIRST], env=env, check=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    if not GEMMA3.installed:
        raise SystemExit(f"gemma3 is not installed: {GEMMA3.install}")
    size = sum(
        (GEMMA3.part_folder(p) or Path()).joinpath(p.chunk).stat().st_size for p in GEMMA3.parts
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import attntrace.real.catalog"], check=True)
    startup = time.perf_counter() - start
    first = first_assembly()
    print(
        f"first time: assemble + verify {size / 1e6:.0f} MB: {1000 * first:.0f} ms in a fresh "
        f"process ({1000 * (first - startup):.0f} ms less its start-up), "
        f"{size / 1e6 / (first - startup):.0f} MB/s"
    )
    path = GEMMA3.verified_weights()  # the user's cache: assembled here if it is not yet
    opened = median(lambda: GGUFFile(GEMMA3.verified_weights()), 5)
    print(f"after: verified_weights() + GGUF header: {1000 * opened:.0f} ms")
    reader = GGUFFile(path)
    by_type: dict[str, list[str]] = defaultdict(list)
    for name in reader.tensor_names:
        by_type[reader.tensor_info(name).type_name].append(name)
    total = 0.0
    for type_name, names in sorted(by_type.items()):
        took = median(lambda names=names: [reader.tensor(n) for n in names], 3)  # type: ignore[misc]
        total += took
        count = sum(reader.tensor_info(n).n_elements for n in names)
        print(
            f"dequantize {type_name:5} {len(names):3} tensors, {count / 1e6:6.1f} M weights: "
            f"{1000 * took:6.0f} ms"
        )
    print(f"open + dequantize every tensor: {1000 * (opened + total):.0f} ms (target < 2000)")


if __name__ == "__main__":
    main()
