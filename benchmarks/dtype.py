"""How much `run --dtype float16` adds to a run (issue 16: no more than 1.5× float64's time).

Run:  python benchmarks/dtype.py            (prints medians, in ms, and the ratios)

Two measures. In-process: the trace computed from the model file and drawn (the default
tables, 80 columns) into an in-memory console, and the same with --json (the trace and
its document): the work alone, where --dtype computes two traces (the dtype's, and
float64's to measure its error against) and rounds every stage. Whole commands: `attntrace
run` as a user runs it, in a new process (start-up, reading the model file, the work,
writing to /dev/null), float64 and float16 runs alternated so drift on a busy machine
falls on both: "a run's time", which the issue bounds. Inputs: the worked example, and
random models of 128 and 512 tokens (d_model 64, d_k = d_v = 16, 4 heads).
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console

from attntrace import trace_attention
from attntrace.forward.trace_json import dump_bytes
from attntrace.forward.views.present import Presentation, renderables
from attntrace.ui.stage_table import cached_column_widths

D_MODEL, D_HEAD, HEADS, REPEATS = 64, 16, 4, 5


def model_file(folder: Path, tokens: int) -> tuple[Path, str]:
    rng = np.random.default_rng(0)
    vocab = {f"w{i}": rng.normal(size=D_MODEL).round(4).tolist() for i in range(tokens)}
    weights = {
        name: (rng.normal(size=(D_MODEL, HEADS * D_HEAD)) / 8).round(4).tolist()
        for name in ("WQ", "WK", "WV")
    }
    path = folder / f"random-{tokens}.json"
    path.write_text(json.dumps({"heads": HEADS, "embeddings": vocab, "weights": weights}))
    return path, " ".join(vocab)


def median_ms(action: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def tables(sentence: str | None, path: Path | None, dtype: str) -> None:
    trace = trace_attention(sentence, config=path, dtype=dtype)
    cached_column_widths.cache_clear()  # as a fresh process: no layout remembered
    console = Console(file=io.StringIO(), width=80, color_system="truecolor")
    for renderable in renderables(trace, Presentation(), None):
        console.print(renderable, crop=False)


def as_json(sentence: str | None, path: Path | None, dtype: str) -> None:
    dump_bytes(trace_attention(sentence, config=path, dtype=dtype))


def process_ms(args: list[str]) -> tuple[float, float]:
    """Medians of whole `attntrace run` commands at float64 and float16, alternated."""
    command = [sys.executable, "-m", "attntrace", "run", *args]
    times: dict[str, list[float]] = {"float64": [], "float16": []}
    for _ in range(2 * REPEATS + 1):
        for dtype in times:
            start = time.perf_counter()
            subprocess.run([*command, "--dtype", dtype], stdout=subprocess.DEVNULL, check=True)
            times[dtype].append(time.perf_counter() - start)
    return 1000 * statistics.median(times["float64"]), 1000 * statistics.median(times["float16"])


def main() -> None:
    print(f"median of {REPEATS}, ms; ratio = float16 / float64 (the target: at most 1.5)")
    print(f"{'input':<24}{'run':<8}{'float64':>10}{'float16':>10}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as folder:
        inputs: list[tuple[str, str | None, Path | None]] = [("worked example", None, None)]
        for tokens in (128, 512):
            made, words = model_file(Path(folder), tokens)
            inputs.append((f"{tokens} tokens, 4 heads", words, made))
        for name, sentence, path in inputs:
            for label, action in (("tables", tables), ("--json", as_json)):

                def timed(
                    dtype: str,
                    act: Callable[..., None] = action,
                    words: str | None = sentence,
                    where: Path | None = path,
                ) -> float:
                    return median_ms(lambda: act(words, where, dtype))

                exact, low = timed("float64"), timed("float16")
                print(f"{name:<24}{label:<8}{exact:10.1f}{low:10.1f}{low / exact:8.2f}")
        print(f"\nwhole commands, median of {2 * REPEATS + 1} each, ms")
        for name, sentence, path in inputs:
            given = ([] if path is None else ["-c", str(path)]) + ([sentence] if sentence else [])
            for label, extra in (("tables", []), ("--json", ["--json"])):
                exact, low = process_ms(given + extra)
                print(f"{name:<24}{label:<8}{exact:10.1f}{low:10.1f}{low / exact:8.2f}")


if __name__ == "__main__":
    main()
