"""Real models (issue 7): load, trace, dequantize and decode times on this machine.

Run:  python benchmarks/real_models.py [--repeats N] [table decode progress]
      [--reference-python PYTHON]   (every section by default; the table's comparison
      runs transformers under PYTHON, default this python where it has transformers:
      PYTHONPATH=$PWD python benchmarks/real_models.py table --reference-python
      /tmp/ref/bin/python, attntrace under its own venv, which has orjson)

Measured (medians of 5, of --repeats for the table):

0. The table (issue 17), for every real model installed (minilm, smollm2, gemma3 where
   the catalogue has it; a model missing is skipped with a line saying so):
   - `attntrace run --model M SENTENCE --layer L` on the 15-token sentence, L its last
     layer, as a fresh process. Target: under a second.
   - open (hash check, header, tokenizer) and dequantize every tensor, in one process.
     Target (Gemma 3): under two seconds.
   - a 512-token trace of the last layer, `run --json` to a file, a fresh process,
     beside Hugging Face transformers doing the same in a fresh process where it is
     importable: import, load the model (eager attention, CPU, float32), one forward pass
     with output_attentions=True, the last layer's attention probabilities as JSON
     (json.dumps of .tolist(), the way one writes them) to a file. Target: attntrace
     within 0.6× of transformers' time. Each side's phases are printed too.

1. `attntrace run --model minilm SENTENCE --layer 3 --head 1` as a fresh process, the
   15-token sentence of the issue (start-up, SHA-256 check, load, layers 0-2, trace,
   tables); and in one process the parts: open (hash + safetensors map + vocab), the
   forward pass to layer 3's input, the trace. Target: well under a second.
2. SmolLM2: open (hash, GGUF header, tokenizer) plus dequantizing every one of its 272
   tensors to float32, in one process. Target: under two seconds. Also
   `attntrace run --model smollm2 --layer 29` as a fresh process (all 30 layers).
3. A decode step, two ways:
   - what `attntrace decode --model smollm2` replays: one layer's step (the new token's
     q, k, v, append, attend over the cache), from decode/decoder.decode, per token;
   - a whole-model step, all 30 layers, each with its own KV cache, for the token after
     a 64-token prefix, built from the library's pieces (Llama.attention,
     attention_input, mlp) with the weights already dequantized (a Llama of its own
     keeps them); it is checked against the parallel forward pass (layer_input) before
     it is timed. Target: under 100 ms.
4. The progress display (issue 12): `attntrace run --model smollm2 --layer 29` over a
   510-token sentence as a fresh process, tables to /dev/null, with stderr a pipe (no
   display: the code path of every run above) and with stderr a pseudo-terminal and
   ATTNTRACE_PROGRESS_AFTER=0 (the display drawn from the start, at every report),
   interleaved, medians of 3. Target: the display costs under 2%.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.decode.cache import KVCache
from attntrace.decode.decoder import decode
from attntrace.kernel.ops import kv_head_of, rope, rope_frequencies, softmax
from attntrace.real.catalog import CATALOG, MINILM, SMOLLM2, RealModel
from attntrace.real.forward import LayerAttention
from attntrace.real.layer import DEFAULT_SENTENCE, layer_spec, open_model, opened, trace_layer
from attntrace.real.llama import Llama
from attntrace.real.weights.gguf import GGUFFile

SENTENCE = DEFAULT_SENTENCE  # the one the README and the goldens use
REPEATS = 5
MODELS = ("minilm", "smollm2", "gemma3")  # the table's, in this order, where installed
LONG_TOKENS = 512
WORDS = ["the", "cat", "sat", "on", "the", "mat"]  # one token each in every vocabulary here


def median(action: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fresh(*args: str) -> float:
    command = [sys.executable, "-m", "attntrace", *args]
    return median(lambda: subprocess.run(command, capture_output=True, check=True))


def minilm() -> None:
    whole = fresh("run", "--model", "minilm", SENTENCE, "--layer", "3", "--head", "1")
    open_time = median(lambda: opened.__wrapped__("minilm"))
    model = open_model("minilm")
    ids = model.tokenizer.encode(SENTENCE)
    forward = median(lambda: model.layer_input(ids, 3))
    traced = median(lambda: trace_layer("minilm", SENTENCE, 3, 1))
    print(
        f"minilm   run --layer 3 --head 1 (fresh process)  {1000 * whole:6.0f} ms   "
        f"[{len(ids)} tokens]"
    )
    print(
        f"         open (SHA-256, map, vocab) {1000 * open_time:5.0f} ms · forward to layer 3 "
        f"{1000 * forward:4.0f} ms · layer_spec + trace {1000 * traced:4.0f} ms"
    )


def smollm2_load() -> None:
    def load_and_dequantize() -> None:
        model = opened.__wrapped__("smollm2")
        assert isinstance(model, Llama)
        for name in model.gguf.tensor_names:
            model.gguf.tensor(name)

    loaded = median(load_and_dequantize)
    whole = fresh("run", "--model", "smollm2", SENTENCE, "--layer", "29")
    print(f"smollm2  open + dequantize all 272 tensors        {1000 * loaded:6.0f} ms")
    print(f"         run --layer 29 (fresh process)          {1000 * whole:6.0f} ms")


class WholeModelStep:
    """One token through the layers, each layer with its own KV cache (float64).

    Its own Llama, whose dequantized weights are kept (a generation loop reads them every
    step), so the shared model of open_model stays as light as the CLI's.
    """

    def __init__(self) -> None:
        self.model = model = Llama.load(SMOLLM2.weights_path())
        model._get = cache(model._get)  # type: ignore[method-assign]
        self.layers = [model.attention(layer) for layer in range(SMOLLM2.layers)]

    def prefill(self, ids: list[int]) -> list[KVCache]:
        d = SMOLLM2.head_dim
        caches = [KVCache(SMOLLM2.kv_heads, d, d) for _ in range(SMOLLM2.layers)]
        for position, token in enumerate(ids):
            self.step(token, position, caches)
        return caches

    def step(
        self, token: int, position: int, caches: list[KVCache], layers: int = SMOLLM2.layers
    ) -> npt.NDArray[Any]:
        """The hidden state after the first ``layers`` layers; each cache grows a row."""
        model = self.model
        hidden = model.embed([token])  # [1, d_model]
        for layer in range(layers):
            x = model.attention_input(layer, hidden)
            hidden = hidden + self._attend(x, self.layers[layer], caches[layer], position)
            hidden = hidden + model.mlp(layer, hidden)
        return hidden

    def _attend(
        self, x: npt.NDArray[Any], w: LayerAttention, cache: KVCache, position: int
    ) -> npt.NDArray[Any]:
        spec, d = SMOLLM2, SMOLLM2.head_dim
        q, k, v = ((x @ m).reshape(-1, d) for m in (w.WQ, w.WK, w.WV))  # a row per head
        turns = rope_frequencies(d, self.model.rope_base or 0.0)
        q = rope(q, np.full(spec.heads, position), turns)
        k = rope(k, np.full(spec.kv_heads, position), turns)
        cache.append(k, v)
        heads = []
        for h in range(spec.heads):
            g = kv_head_of(h, spec.heads, spec.kv_heads)
            weights = softmax((cache.keys[g] @ q[h])[None] / math.sqrt(d))[0]
            heads.append(weights @ cache.values[g])
        out: npt.NDArray[Any] = np.concatenate(heads)[None] @ w.WO
        return out


def copied(caches: list[KVCache]) -> list[KVCache]:
    """Caches to step from again, each in buffers of its own."""
    return [c.copy() for c in caches]


def decode_steps() -> None:
    sentence = " ".join([SENTENCE] * 6)
    spec, tokens = layer_spec("smollm2", sentence, 3)
    run = decode(spec, tokens)
    replay = median(lambda: decode(spec, tokens)) / len(tokens)
    print(f"decode   attntrace decode's step of one layer    {1000 * replay:6.2f} ms per token")
    print(
        f"         (with its full-trace check; {len(tokens)} tokens, max |Δ| {run.max_delta:.0e})"
    )

    stepper = WholeModelStep()
    model, last = stepper.model, SMOLLM2.layers - 1
    ids = model.tokenizer.encode(sentence)[:65]
    caches = stepper.prefill(ids[:-1])
    # checked first: the step's input to the last layer is the parallel pass's last row
    hidden = stepper.step(ids[-1], len(ids) - 1, copied(caches), layers=last)
    gap = float(
        np.abs(model.attention_input(last, hidden)[0] - model.layer_input(ids, last)[-1]).max()
    )
    assert gap < 1e-9, gap

    whole = median(lambda: stepper.step(ids[-1], len(ids) - 1, copied(caches)))
    print(
        f"         a whole-model step, 30 layers, after 64 tokens {1000 * whole:6.1f} ms "
        f"(matches the parallel pass to {gap:.0e})"
    )


def progress_display() -> None:
    sentence = " ".join(["the cat sat on the mat"] * 85)  # 510 tokens
    command = [
        sys.executable,
        "-m",
        "attntrace",
        "run",
        "--model",
        "smollm2",
        "--layer",
        "29",
        sentence,
    ]
    env = {**os.environ, "ATTNTRACE_PROGRESS_AFTER": "0", "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)

    def piped() -> None:
        subprocess.run(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=True
        )

    def on_a_terminal() -> None:
        master, slave = os.openpty()
        try:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=slave, env=env)
            os.close(slave)
            while True:  # drain the terminal, as a terminal would
                try:
                    if not os.read(master, 65536):
                        break
                except OSError:
                    break
            assert process.wait() == 0
        finally:
            os.close(master)

    pipe, terminal = [], []
    for _ in range(3):
        pipe.append(median(piped, 1))
        terminal.append(median(on_a_terminal, 1))
    a, b = statistics.median(pipe), statistics.median(terminal)
    print(
        f"progress run --layer 29, 510 tokens: stderr a pipe {1000 * a:6.0f} ms · a terminal, "
        f"display from the start {1000 * b:6.0f} ms ({100 * (b / a - 1):+.1f}%)"
    )


def catalogued(name: str) -> RealModel | None:
    return next((m for m in CATALOG if m.name == name), None)


def long_sentence(name: str) -> str:
    """A sentence the model reads as exactly LONG_TOKENS tokens (its own added included)."""
    model = open_model(name)
    words = (WORDS * LONG_TOKENS)[: LONG_TOKENS - model.added_tokens]
    sentence = " ".join(words)
    count = len(model.tokenizer.encode(sentence))
    assert count == LONG_TOKENS, (name, count)
    return sentence


def dequantize_all(name: str) -> None:
    """Open the model afresh (hash check, header, tokenizer) and read every tensor as the
    forward pass reads it: the token embedding table by the rows of a sentence (Gemma 3's
    is 262,144 × 640, of which a trace reads a row per token; the whole table, tied to
    the output layer attntrace never runs, would add about 1.1 s), every other whole."""
    model: Any = opened.__wrapped__(name)
    if hasattr(model, "gguf"):
        for tensor in model.gguf.tensor_names:
            if tensor == "token_embd.weight":
                model.gguf.rows(tensor, list(range(16)))
            else:
                model.gguf.tensor(tensor)
    elif hasattr(model, "tensors"):  # MiniLM: its one safetensors file, every tensor
        file = model.tensors.source.file
        for name in file:
            np.asarray(file[name], dtype=np.float64)


def timed_process(command: list[str], out: Path | None = None) -> tuple[float, float, str]:
    """One fresh process (stdout to ``out``, else captured): its wall time, its CPU time
    (user + system, every thread) and its stdout. On a machine others share, the wall
    time is mostly waiting for a core; the CPU time is what the work itself took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    stdout = ""
    if out is not None:
        with out.open("wb") as file:
            subprocess.run(command, stdout=file, stderr=subprocess.DEVNULL, check=True)
    else:
        stdout = subprocess.run(command, capture_output=True, check=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, stdout


def medians(runs: list[tuple[float, float, str]]) -> tuple[float, float]:
    """The median wall and the median CPU time of some runs."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def transformers_job(name: str, out: str) -> None:
    """The reference side of the 512-token row, run in its own process: import, load,
    forward with attentions, the last layer's probabilities as JSON to ``out``; prints its
    phases as one JSON line."""
    start = time.perf_counter()
    import torch
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    imported = time.perf_counter()
    spec = catalogued(name)
    assert spec is not None
    path = spec.weights_path()
    if spec.architecture == "bert":
        tokenizer = AutoTokenizer.from_pretrained(path.parent)
        model = AutoModel.from_pretrained(path.parent, attn_implementation="eager")
    else:  # a GGUF file: transformers dequantizes it to float32 as it loads
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, attn_implementation="eager"
        )
    model = model.eval()
    loaded = time.perf_counter()
    words = (WORDS * LONG_TOKENS)[: LONG_TOKENS - (2 if spec.architecture == "bert" else 0)]
    ids = tokenizer(" ".join(words), add_special_tokens=spec.architecture == "bert")
    ids = ids["input_ids"]
    with torch.no_grad():
        attentions = model(torch.tensor([ids]), output_attentions=True).attentions
    forward = time.perf_counter()
    Path(out).write_text(json.dumps({"attention": attentions[-1][0].tolist()}))
    written = time.perf_counter()
    print(
        json.dumps(
            {
                "tokens": len(ids),
                "threads": torch.get_num_threads(),
                "import": imported - start,
                "load": loaded - imported,
                "forward": forward - loaded,
                "json": written - forward,
            }
        )
    )


def ours_in_process(name: str, sentence: str) -> dict[str, float]:
    """The CPU time of each phase of our 512-token row, in this process (the model open):
    the layers before the last (layer_spec), the trace (trace_block), the JSON."""
    from attntrace.forward.attention import trace_block
    from attntrace.forward.trace_json import dump_bytes

    spec = catalogued(name)
    assert spec is not None
    start = time.process_time()
    model, tokens = layer_spec(name, sentence, spec.layers - 1)
    forward = time.process_time()
    trace = trace_block(model, tokens)
    traced = time.process_time()
    with Path(os.devnull).open("wb") as sink:
        sink.write(dump_bytes(trace))
    written = time.process_time()
    return {"forward": forward - start, "trace": traced - forward, "json": written - traced}


def importable(python: str, module: str) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def table(repeats: int, reference_python: str | None, models: list[str]) -> None:
    """Every installed model: run on 15 tokens, open + dequantize, 512 tokens beside
    transformers (run by ``reference_python``, default this one)."""
    reference: str | None = reference_python or sys.executable
    if not importable(reference_python or sys.executable, "transformers"):
        reference = None
        print(
            "transformers is not importable: the 512-token row is attntrace's alone "
            "(give --reference-python PYTHON to compare)"
        )
    if not importable(sys.executable, "orjson"):
        print(
            "note: orjson is not importable here, so attntrace writes JSON with json "
            "(run the benchmark with attntrace's own venv)"
        )
    rows = []
    for name in models:
        spec = catalogued(name)
        if spec is None:
            print(f"{name}: skipped, not in this attntrace's catalogue")
            continue
        if not spec.installed:
            print(f"{name}: skipped, its weights are not installed ({spec.install})")
            continue
        spec.verified_weights()  # hashed once, remembered after: no run below hashes
        run15, opened_all, ours = ours_timed(name, spec.layers - 1, repeats)
        theirs = None if reference is None else theirs_timed(name, reference, repeats)
        rows.append((name, run15, opened_all, ours, theirs))
    print_table(rows, repeats)


Times = tuple[float, float]  # the median wall and CPU seconds of some runs


def ours_timed(name: str, last: int, repeats: int) -> tuple[Times, Times, Times]:
    """attntrace on ``name``: a run on 15 tokens, open + dequantize, and the last layer
    of 512 tokens to JSON (with its phases in process), each printed on one line."""
    short = len(open_model(name).tokenizer.encode(SENTENCE))
    command = [
        sys.executable,
        "-m",
        "attntrace",
        "run",
        "--model",
        name,
        SENTENCE,
        "--layer",
        str(last),
    ]
    run15 = medians([timed_process(command) for _ in range(repeats)])
    load = []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        dequantize_all(name)
        load.append((time.perf_counter() - wall, time.process_time() - cpu, ""))
    opened_all = medians(load)
    sentence = long_sentence(name)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "trace.json"
        command = [
            sys.executable,
            "-m",
            "attntrace",
            "run",
            "--model",
            name,
            "--layer",
            str(last),
            "--json",
            sentence,
        ]
        ours = medians([timed_process(command, out) for _ in range(repeats)])
        size = out.stat().st_size
    phases = ours_in_process(name, sentence)
    print(
        f"{name}: run --layer {last} on {short} tokens {1000 * run15[0]:.0f} ms "
        f"(CPU {1000 * run15[1]:.0f} ms) · open + dequantize {1000 * opened_all[0]:.0f} "
        f"ms (CPU {1000 * opened_all[1]:.0f} ms) · {LONG_TOKENS} tokens, layer {last} "
        f"to JSON ({size / 1e6:.0f} MB) {ours[0]:.2f} s (CPU {ours[1]:.2f} s; in "
        f"process, CPU: layers before {phases['forward']:.2f} s, trace "
        f"{phases['trace']:.2f} s, JSON {phases['json']:.2f} s)"
    )
    return run15, opened_all, ours


def theirs_timed(name: str, reference: str, repeats: int) -> Times:
    """transformers on the same 512 tokens, run by ``reference`` in a fresh process each
    time, with its phases (import, load, forward, JSON) printed on one line."""
    runs, details = [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):
            command = [
                reference,
                __file__,
                "--transformers-job",
                name,
                str(Path(folder) / "attentions.json"),
            ]
            runs.append(timed_process(command))
            details.append(json.loads(runs[-1][2].strip().splitlines()[-1]))
    theirs = medians(runs)
    phase = {
        key: statistics.median(d[key] for d in details)
        for key in ("import", "load", "forward", "json")
    }
    print(
        f"{'':{len(name)}}  transformers ({details[0]['tokens']} tokens, "
        f"{details[0]['threads']} threads) {theirs[0]:.2f} s (CPU {theirs[1]:.2f} s; "
        f"wall: import {phase['import']:.2f} s, load {phase['load']:.2f} s, "
        f"forward {phase['forward']:.2f} s, JSON {phase['json']:.2f} s)"
    )
    return theirs


def print_table(rows: list[tuple[str, Times, Times, Times, Times | None]], repeats: int) -> None:
    """The summary table under the per-model lines, one row a model."""
    print()
    print(
        "model     run, 15 tokens   open+dequantize   512 tokens: attntrace  transformers   ratio"
    )
    print(
        "          wall / CPU (ms)  wall / CPU (ms)   wall / CPU (s)         wall / CPU (s)"
        "  wall / CPU"
    )
    for name, run15, opened_all, ours, theirs in rows:
        other = f"{theirs[0]:6.1f} / {theirs[1]:5.1f}" if theirs else f"{'-':>14}"
        ratio = f"{ours[0] / theirs[0]:.2f} / {ours[1] / theirs[1]:.2f}" if theirs else "-"
        print(
            f"{name:<9} {1000 * run15[0]:6.0f} / {1000 * run15[1]:5.0f}   "
            f"{1000 * opened_all[0]:6.0f} / {1000 * opened_all[1]:5.0f}    "
            f"{ours[0]:6.1f} / {ours[1]:5.1f}         {other}  {ratio}"
        )
    print(
        f"(medians of {repeats}; L is the last layer; targets: run under 1 s, Gemma 3's "
        f"open + dequantize under 2 s, ratio at most 0.6)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "sections", nargs="*", metavar="SECTION", help="table, decode, progress (default: all)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(MODELS), metavar="MODEL")
    parser.add_argument("--reference-python", help="a python with transformers and torch")
    parser.add_argument(
        "--transformers-job", nargs=2, metavar=("MODEL", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.transformers_job:
        transformers_job(*args.transformers_job)
        return
    sections = set(args.sections or ["table", "decode", "progress"])
    if sections - {"table", "decode", "progress"}:
        parser.error(f"unknown sections: {sorted(sections - {'table', 'decode', 'progress'})}")
    if "table" in sections:
        table(args.repeats, args.reference_python, args.models)
    if {"decode", "progress"} & sections:
        for model in (MINILM, SMOLLM2):
            if not model.installed:
                raise SystemExit(f"{model.name} is not installed: {model.install}")
        print(
            f"GGUF header parse: {1000 * median(lambda: GGUFFile(SMOLLM2.weights_path())):.0f} ms"
        )
    if "decode" in sections:
        minilm()
        smollm2_load()
        decode_steps()
    if "progress" in sections:
        progress_display()


if __name__ == "__main__":
    main()
