"""A GPT-2-sized attention layer: d_model 768, 12 heads, 512 tokens (issue 6).

Run:  python benchmarks/gpt2_layer.py        (about a minute; from a `pip install .`
      venv: an editable install adds its import hook to every process measured)

The weights and the embedding table are .npy files beside a small YAML model file.
Measured (medians of fresh processes, interleaved so machine noise falls on all alike):

1. `attntrace run` (tables, summarized) against the bare cost: a Python process that
   loads the same arrays and computes the same stages with plain numpy. Target 1.5×.
   Beside it, the floor any run of the same kind pays: a process that imports what
   attntrace needs at run time (numpy, typer, Rich, PyYAML), loads the arrays and
   computes the stages in plain numpy while keeping them, as a trace must.
2. Peak memory of `attntrace run`, against the bytes of the stages it stores plus the
   import floor (the peak of a process importing numpy, typer, rich and yaml).
3. Writing the full JSON trace (forward/trace_json.dump_bytes) against orjson serializing the same
   arrays, in one process. Target 1.5×.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from attntrace import trace_attention
from attntrace.forward.trace_json import dump_bytes

D_MODEL, HEADS, TOKENS, REPEATS, RUNS = 768, 12, 512, 5, 11

BARE = """
import sys, numpy as np
folder, keep = sys.argv[1], sys.argv[2:] == ["keep"]
emb = np.load(f"{folder}/emb.npy"); W = {n: np.load(f"{folder}/{n}.npy") for n in
     ("wq", "wk", "wv", "wo")}
X = emb[:512]; d = 768 // 12; outputs = []; kept = []
for h in range(12):
    cols = slice(h * d, (h + 1) * d)
    Q, K, V = X @ W["wq"][:, cols], X @ W["wk"][:, cols], X @ W["wv"][:, cols]
    scores = Q @ K.T; scaled = scores / np.sqrt(d)
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    outputs.append(weights @ V)
    if keep:
        kept.append((Q, K, V, scores, scaled, weights))
projected = np.concatenate(outputs, axis=1) @ W["wo"]
"""
# The floor: attntrace's run-time imports, then the bare computation keeping its stages,
# leaving without teardown as attntrace does (freeing 110 MB of stages costs ~35 ms).
FLOOR = "import typer, rich.console, yaml\n" + BARE + "import os; os._exit(0)\n"


def make_model(folder: Path) -> tuple[Path, str]:
    rng = np.random.default_rng(0)
    tokens = [f"t{i}" for i in range(TOKENS)]
    np.save(folder / "emb.npy", rng.normal(size=(TOKENS, D_MODEL)))
    for name in ("wq", "wk", "wv", "wo"):
        np.save(folder / f"{name}.npy", rng.normal(size=(D_MODEL, D_MODEL)) / np.sqrt(D_MODEL))
    path = folder / "gpt2-layer.yaml"
    path.write_text(
        "name: gpt2-sized layer\nheads: 12\nembeddings: emb.npy\n"
        f"vocabulary: [{', '.join(tokens)}]\n"
        "weights: {WQ: wq.npy, WK: wk.npy, WV: wv.npy, WO: wo.npy}\n"
    )
    return path, " ".join(tokens)


def process(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak KB of a fresh process (GNU time)."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "PEAK %M", *command], capture_output=True, text=True, check=True
    )
    return time.perf_counter() - start, int(done.stderr.rsplit("PEAK ", 1)[1].split()[0])


def interleaved(commands: dict[str, list[str]]) -> dict[str, tuple[float, int]]:
    """Median wall seconds and peak KB of each command, run in turn RUNS times."""
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, command in commands.items():
            runs[name].append(process(command))
    return {
        name: (statistics.median(r[0] for r in rs), int(statistics.median(r[1] for r in rs)))
        for name, rs in runs.items()
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path, sentence = make_model(folder)
        python = sys.executable
        medians = interleaved(
            {
                "ours": [python, "-m", "attntrace", "run", sentence, "-c", str(path)],
                "bare": [python, "-c", BARE, str(folder)],
                "floor": [python, "-c", FLOOR, str(folder), "keep"],
                "imports": [python, "-c", "import numpy, typer, rich, yaml"],
            }
        )
        (ours, our_peak), (bare, _) = medians["ours"], medians["bare"]
        floor, imports_peak = medians["floor"][0], medians["imports"][1]
        trace = trace_attention(sentence, config=path)
        stored = sum(s.data.nbytes for s in trace.stages) + sum(
            w.data.nbytes for w in trace.weights
        )
        print(
            f"attntrace run (tables)      {1000 * ours:7.0f} ms   bare load + numpy "
            f"{1000 * bare:7.0f} ms   ratio {ours / bare:.2f}   (floor {1000 * floor:.0f} ms:"
            f" ratio {floor / bare:.2f})"
        )
        print(
            f"peak memory                 {our_peak / 1024:7.0f} MB   "
            f"stages {stored / 2**20:.0f} MB"
            f" + import floor {imports_peak / 1024:.0f} MB = "
            f"{(stored / 1024 + imports_peak) / 1024:.0f} MB"
            f"   ratio {our_peak / (stored / 1024 + imports_peak):.2f}"
        )

        def timed(action: object) -> float:
            times = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                action()  # type: ignore[operator]
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        arrays = [np.ascontiguousarray(m.data) for m in (*trace.stages, *trace.weights)]
        ours_json = timed(lambda: dump_bytes(trace))
        bare_json = timed(lambda: orjson.dumps(arrays, option=orjson.OPT_SERIALIZE_NUMPY))
        size = len(dump_bytes(trace)) / 2**20
        print(
            f"full JSON trace ({size:.0f} MB)   {1000 * ours_json:7.0f} ms   orjson of the "
            f"arrays {1000 * bare_json:7.0f} ms   ratio {ours_json / bare_json:.2f}"
        )


if __name__ == "__main__":
    main()
