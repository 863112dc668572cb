"""Gemma 3 270M (issue 17): where the time of `run --model gemma3 --layer 5` goes.

Run:  python benchmarks/gemma3_layers.py     (about half a minute; needs the gemma3
weight packages, assembled once into the user cache by the first run)

Measured, each the median of 5 in one process, wall time and CPU time (this machine is
shared: the CPU time is the figure that does not depend on who else is running):

1. open: the GGUF header (262,144 tokens, scores and types), the shape checks and the
   tokenizer, i.e. `Gemma3.load`, after the file was verified once;
2. dequantize: every tensor but the embedding table to float32 (as a forward pass through
   all 18 layers reads them), and the sentence's 15 embedding rows alone;
3. the forward pass to layer 5's input (layers 0-4), then layer 5's trace (`trace_block`
   of every head) and `layer_spec` whole, on the issue's 15-token sentence;
4. `attntrace run --model gemma3 SENTENCE --layer 5 --head 0` as a fresh process (tables
   to /dev/null), and `python -c "import attntrace.cli"` for the start-up it includes.

Target (issue 17): run --layer 5 under one second besides Python's start-up; open and
dequantize under two seconds.

Figures of 2026-12-01 (2 cores shared with other jobs, load average about 8, so CPU time
is the fair figure; OPENBLAS_NUM_THREADS=1, since with two BLAS threads on a loaded
machine their spinning doubles the CPU time): open 337 ms CPU, dequantize every tensor
570 ms CPU (open + dequantize 0.9 s: under the 2 s target), the forward pass to layer 5
155 ms, layer 5's trace 9 ms; the whole `run` process 0.8 s user + 0.1 s sys, of which
start-up is 0.1 s. What dominates a run is the vocabulary, not the numbers: parsing the
header's 262,144 token strings (about 0.3 s) and building the tokenizer from them
(about 0.35 s); the five layers' dequantization and arithmetic are about 0.2 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from attntrace.forward.attention import trace_block
from attntrace.real.catalog import GEMMA3
from attntrace.real.gemma import Gemma3
from attntrace.real.layer import DEFAULT_SENTENCE, layer_spec, opened

REPEATS = 5
LAYER = 5


def timed(action: Callable[[], object], repeats: int = REPEATS) -> tuple[float, float]:
    """Median wall and CPU seconds of ``action``."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def show(what: str, figures: tuple[float, float]) -> None:
    wall, cpu = figures
    print(f"{what:<52} {wall * 1000:8.0f} ms wall {cpu * 1000:8.0f} ms CPU")


def main() -> None:
    if not GEMMA3.installed:
        sys.exit(f"gemma3's weights are not installed: {GEMMA3.install}")
    path = GEMMA3.verified_weights()
    model = Gemma3.load(path)
    ids = model.tokenizer.encode(DEFAULT_SENTENCE)
    print(f"gemma3, {len(ids)} tokens, layer {LAYER} ({model.layer_kind(LAYER)})")
    show("open (header, checks, tokenizer)", timed(lambda: Gemma3.load(path)))
    names = [n for n in model.gguf.tensor_names if n != "token_embd.weight"]
    show(
        f"dequantize {len(names)} tensors (all but the embeddings)",
        timed(lambda: [model.gguf.tensor(n) for n in names]),
    )
    show(f"dequantize {len(ids)} embedding rows", timed(lambda: model.embed(ids)))
    show(f"forward pass to layer {LAYER}'s input", timed(lambda: model.layer_input(ids, LAYER)))
    spec, tokens = layer_spec("gemma3", DEFAULT_SENTENCE, LAYER)
    opened("gemma3")  # the CLI's cached model, as a run holds it
    show(f"trace of layer {LAYER}, 4 heads", timed(lambda: trace_block(spec, tokens)))
    show(
        "layer_spec (forward pass, weights, X given)",
        timed(lambda: layer_spec("gemma3", DEFAULT_SENTENCE, LAYER)),
    )
    command = [
        sys.executable,
        "-m",
        "attntrace",
        "run",
        "--model",
        "gemma3",
        DEFAULT_SENTENCE,
        "--layer",
        str(LAYER),
        "--head",
        "0",
    ]
    env = {**os.environ, "NO_COLOR": "1"}

    def fresh(args: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(args, stdout=subprocess.DEVNULL, check=True, env=env)

    for what, args in (
        ("`run --model gemma3 --layer 5 --head 0` (process)", command),
        (
            "python -c 'import attntrace.cli' (start-up)",
            [sys.executable, "-c", "import attntrace.cli"],
        ),
    ):
        wall, _ = timed(fresh(args), 3)
        print(f"{what:<52} {wall * 1000:8.0f} ms wall")


if __name__ == "__main__":
    main()
