"""Real models (issue 7): load, trace, dequantize and decode times on this machine.

Run:  python benchmarks/real_models.py     (about a minute; needs both weight packages)

Measured (medians of 5):

1. `attntrace run --model minilm SENTENCE --layer 3 --head 1` as a fresh process, the
   15-token sentence of the issue (start-up, SHA-256 check, load, layers 0-2, trace,
   tables); and in one process the parts: open (hash + safetensors map + vocab), the
   forward pass to layer 3's input, the trace. Target: well under a second.
2. SmolLM2: open (hash, GGUF header, tokenizer) plus dequantizing every one of its 272
   tensors to float32, in one process. Target: under two seconds. Also
   `attntrace run --model smollm2 --layer 29` as a fresh process (all 30 layers).
3. A decode step, two ways:
   - what `attntrace decode --model smollm2` replays: one layer's step (the new token's
     q, k, v, append, attend over the cache), from kvcache.decode, per token;
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

import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.core.kvcache import KVCache, decode
from attntrace.core.ops import kv_head_of, rope, softmax
from attntrace.real.catalog import MINILM, SMOLLM2
from attntrace.real.forward import LayerAttention
from attntrace.real.gguf import GGUFFile
from attntrace.real.layer import DEFAULT_SENTENCE, layer_spec, open_model, opened, trace_layer
from attntrace.real.llama import Llama

SENTENCE = DEFAULT_SENTENCE  # the one the README and the goldens use
REPEATS = 5


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
    print(f"minilm   run --layer 3 --head 1 (fresh process)  {1000 * whole:6.0f} ms   "
          f"[{len(ids)} tokens]")  # fmt: skip
    print(f"         open (SHA-256, map, vocab) {1000 * open_time:5.0f} ms · forward to layer 3 "
          f"{1000 * forward:4.0f} ms · layer_spec + trace {1000 * traced:4.0f} ms")  # fmt: skip


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

    def _attend(self, x: npt.NDArray[Any], w: LayerAttention, cache: KVCache, position: int
                ) -> npt.NDArray[Any]:  # fmt: skip
        spec, d = SMOLLM2, SMOLLM2.head_dim
        q, k, v = ((x @ m).reshape(-1, d) for m in (w.WQ, w.WK, w.WV))  # a row per head
        q = rope(q, np.full(spec.heads, position), self.model.rope_base or 0.0)
        k = rope(k, np.full(spec.kv_heads, position), self.model.rope_base or 0.0)
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
    print(f"         (with its full-trace check; {len(tokens)} tokens, max |Δ| "
          f"{run.max_delta:.0e})")  # fmt: skip

    stepper = WholeModelStep()
    model, last = stepper.model, SMOLLM2.layers - 1
    ids = model.tokenizer.encode(sentence)[:65]
    caches = stepper.prefill(ids[:-1])
    # checked first: the step's input to the last layer is the parallel pass's last row
    hidden = stepper.step(ids[-1], len(ids) - 1, copied(caches), layers=last)
    gap = float(np.abs(model.attention_input(last, hidden)[0]
                       - model.layer_input(ids, last)[-1]).max())  # fmt: skip
    assert gap < 1e-9, gap

    whole = median(lambda: stepper.step(ids[-1], len(ids) - 1, copied(caches)))
    print(f"         a whole-model step, 30 layers, after 64 tokens {1000 * whole:6.1f} ms "
          f"(matches the parallel pass to {gap:.0e})")  # fmt: skip


def progress_display() -> None:
    sentence = " ".join(["the cat sat on the mat"] * 85)  # 510 tokens
    command = [sys.executable, "-m", "attntrace", "run", "--model", "smollm2", "--layer",
               "29", sentence]  # fmt: skip
    env = {**os.environ, "ATTNTRACE_PROGRESS_AFTER": "0", "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)

    def piped() -> None:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                       check=True)  # fmt: skip

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
    print(f"progress run --layer 29, 510 tokens: stderr a pipe {1000 * a:6.0f} ms · a terminal, "
          f"display from the start {1000 * b:6.0f} ms ({100 * (b / a - 1):+.1f}%)")  # fmt: skip


def main() -> None:
    for model in (MINILM, SMOLLM2):
        if not model.installed:
            raise SystemExit(f"{model.name} is not installed: {model.install}")
    print(f"GGUF header parse: {1000 * median(lambda: GGUFFile(SMOLLM2.weights_path())):.0f} ms")
    minilm()
    smollm2_load()
    decode_steps()
    progress_display()


if __name__ == "__main__":
    main()
