"""How long FlashAttention's tiled pass takes to record, and `attntrace flash` to run
(issue 16: under a second).

Run:  python benchmarks/flash.py

One random head of 512 tokens, d_k = d_v = 64, blocks of 64 × 64 (8 × 8 tiles), each
variant causal and not; the best of 5 runs (the work is fixed: the minimum is the cost,
the rest is the machine's noise). Also the largest gap to the standard computation, and
what the standard one stores and moves that the tiled one does not.

Then the whole command path on a 512-token random causal model file (d_model = d_k =
64): the trace, the tiles and the view drawn to a console writing nowhere, and the same
with the JSON written instead; then the command itself, as a process (start-up and
imports included).
"""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console

from attntrace.api import traced
from attntrace.kernel.ops import attention
from attntrace.kernels.flash import flash, hbm_traffic
from attntrace.kernels.flash_json import flash_dump_bytes
from attntrace.kernels.flash_report import flash_report
from attntrace.kernels.views.flash import render_flash

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
                record = flash(
                    Q, K, V, block_q=BLOCK, block_k=BLOCK, causal=causal, variant=variant
                )
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
    command_path()


def best(action: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def model_file(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    vocab = {f"w{i}": rng.normal(size=D).round(4).tolist() for i in range(N)}
    weights = {name: (rng.normal(size=(D, D)) / 8).round(4).tolist() for name in ("WQ", "WK", "WV")}
    path = folder / "random-512.json"
    path.write_text(
        json.dumps(
            {"embeddings": vocab, "weights": weights, "causal": True, "sentence": " ".join(vocab)}
        )
    )
    return path


def command_path() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = model_file(Path(folder))

        def view() -> None:
            trace = traced(None, config=path)
            report = flash_report(trace, 0, BLOCK, BLOCK)
            console = Console(file=io.StringIO(), width=80)
            for renderable in render_flash(report):
                console.print(renderable, crop=False)

        def document() -> None:
            flash_dump_bytes(flash_report(traced(None, config=path), 0, BLOCK, BLOCK))

        print(
            f"attntrace flash: {N} random tokens, causal, blocks {BLOCK} × {BLOCK}, best of {RUNS}"
        )
        for name, action in (("trace + flash + view", view), ("trace + flash + --json", document)):
            seconds = best(action)
            print(f"  {name:<26}{seconds * 1e3:7.1f} ms")
            assert seconds < TARGET_SECONDS, f"{seconds:.2f} s, over {TARGET_SECONDS} s"
        for extra in ((), ("--json",)):
            argv = [
                sys.executable,
                "-m",
                "attntrace",
                "flash",
                "-c",
                str(path),
                "--block-q",
                str(BLOCK),
                "--block-k",
                str(BLOCK),
                *extra,
            ]
            walls, cpus = [], []
            for _ in range(3):
                before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                subprocess.run(argv, capture_output=True, check=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                walls.append(time.perf_counter() - start)
                cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            # the wall clock counts whatever else the machine runs; the CPU time is the cost
            print(
                f"  {'process' + (' --json' if extra else ''):<26}{min(walls) * 1e3:7.1f} ms "
                f"wall, {min(cpus) * 1e3:.1f} ms CPU"
            )


if __name__ == "__main__":
    main()
