"""Real models (issue 7): load, trace, dequantize and decode times on this machine.

Run:  python benchmarks/real_models.py     (about a minute; needs both weight packages)

Measured (medians of 5):

1. `attntrace run --model minilm SENTENCE --layer 3 --head 1` as a fresh process, the
   15-token sentence of the issue (start-up, SHA-256 check, load, layers 0-3, trace,
   tables); and in one process the parts: open (hash + safetensors map + vocab), the
   forward pass to layer 3, the trace. Target: well under a second.
2. SmolLM2: open (hash, GGUF header, tokenizer) plus dequantizing every one of its 272
   tensors to float32, in one process. Target: under two seconds. Also
   `attntrace run --model smollm2 --layer 29` as a fresh process (all 30 layers).
3. A decode step, two ways:
   - what `attntrace decode --model smollm2` replays: one layer's step (the new token's
     q, k, v, append, attend over the cache), from kvcache.decode, per token;
   - a whole-model step, all 30 layers, each with its own KV cache, for the token after
     a 64-token prefix, built from the library's pieces (Llama.attention,
     attention_input, mlp) with the weights already dequantized; it is checked against
     the parallel forward pass before it is timed. Target: under 100 ms.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

from attntrace.kvcache import KVCache, decode
from attntrace.ops import rope, softmax
from attntrace.real.catalog import MINILM, SMOLLM2
from attntrace.real.forward import LayerAttention
from attntrace.real.gguf import GGUFFile
from attntrace.real.layer import layer_spec, open_model, trace_layer
from attntrace.real.llama import Llama

SENTENCE = "The animal didn't cross the street because it was tired."
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
    opened = median(lambda: open_model.__wrapped__("minilm"))
    model = open_model("minilm")
    ids = model.tokenizer.encode(SENTENCE)
    forward = median(lambda: model.run(ids, 4))
    traced = median(lambda: trace_layer("minilm", SENTENCE, 3, 1))
    print(f"minilm   run --layer 3 --head 1 (fresh process)  {1000 * whole:6.0f} ms   "
          f"[{len(ids)} tokens]")  # fmt: skip
    print(f"         open (SHA-256, map, vocab) {1000 * opened:5.0f} ms · forward to layer 3 "
          f"{1000 * forward:4.0f} ms · layer_spec + trace {1000 * traced:4.0f} ms")  # fmt: skip


def smollm2_load() -> None:
    def load_and_dequantize() -> None:
        model = open_model.__wrapped__("smollm2")
        assert isinstance(model, Llama)
        for name in model.gguf.tensor_names:
            model.gguf.tensor(name)

    loaded = median(load_and_dequantize)
    whole = fresh("run", "--model", "smollm2", SENTENCE, "--layer", "29")
    print(f"smollm2  open + dequantize all 272 tensors        {1000 * loaded:6.0f} ms")
    print(f"         run --layer 29 (fresh process)          {1000 * whole:6.0f} ms")


class WholeModelStep:
    """One token through all 30 layers, each layer with its own cache (float64)."""

    def __init__(self, model: Llama) -> None:
        self.model = model
        model.kept = {}  # a generation loop keeps the dequantized weights
        spec = model.spec
        self.layers = [model.attention(layer) for layer in range(spec.layers)]

    def prefill(self, ids: list[int]) -> list[KVCache]:
        caches = [KVCache(SMOLLM2.kv_heads, 64, 64) for _ in range(SMOLLM2.layers)]
        for position, token in enumerate(ids):
            self.step(token, position, caches)
        return caches

    def step(self, token: int, position: int, caches: list[KVCache]) -> np.ndarray:
        model, spec = self.model, self.model.spec
        hidden = model.embed([token])  # [1, d_model]
        group = spec.heads // spec.kv_heads
        for layer, (weights, cache) in enumerate(zip(self.layers, caches, strict=True)):
            x = model.attention_input(layer, hidden)
            hidden = hidden + self._attend(x, weights, cache, position, group)
            hidden = hidden + model.mlp(layer, hidden)
        return hidden

    def _attend(self, x: np.ndarray, w: LayerAttention, cache: KVCache, position: int,
                group: int) -> np.ndarray:  # fmt: skip
        at = np.array([position])
        q = (x @ w.WQ).reshape(-1, 64)  # [heads, 64]
        k = (x @ w.WK).reshape(-1, 64)
        v = (x @ w.WV).reshape(-1, 64)
        q = rope(q, np.repeat(at, q.shape[0]), self.model.rope_base)
        k = rope(k, np.repeat(at, k.shape[0]), self.model.rope_base)
        cache.append(k, v)
        heads = [
            softmax((cache.keys[h // group] @ q[h])[None] / 8.0)[0] @ cache.values[h // group]
            for h in range(q.shape[0])
        ]
        out: np.ndarray = np.concatenate(heads)[None] @ w.WO
        return out


def decode_steps() -> None:
    model = open_model("smollm2")
    assert isinstance(model, Llama)
    sentence = " ".join([SENTENCE] * 6)
    spec, tokens = layer_spec("smollm2", sentence, 3)
    run = decode(spec, tokens)
    replay = median(lambda: decode(spec, tokens)) / len(tokens)
    print(f"decode   attntrace decode's step of one layer    {1000 * replay:6.2f} ms per token")
    print(f"         (with its full-trace check; {len(tokens)} tokens, max |Δ| "
          f"{run.max_delta:.0e})")  # fmt: skip

    stepper = WholeModelStep(model)
    ids = model.tokenizer.encode(sentence)[:65]
    inputs, _ = model.run(ids, SMOLLM2.layers)
    caches = stepper.prefill(ids[:-1])
    last = stepper.step(ids[-1], len(ids) - 1, caches)
    # the step's hidden state entering the last layer equals the parallel pass's: check
    # it through the final layer's input instead (what the stepper does not return)
    reference_input = inputs[-1][-1]
    check = WholeModelStep(model)
    check_caches = check.prefill(ids[:-1])
    hidden = model.embed([ids[-1]])
    for layer in range(SMOLLM2.layers - 1):
        x = model.attention_input(layer, hidden)
        hidden = hidden + check._attend(x, check.layers[layer], check_caches[layer],
                                        len(ids) - 1, 3)  # fmt: skip
        hidden = hidden + model.mlp(layer, hidden)
    gap = float(
        np.abs(model.attention_input(SMOLLM2.layers - 1, hidden)[0] - reference_input).max()
    )
    assert gap < 1e-9, gap
    assert last.shape == (1, SMOLLM2.d_model)

    def one_step() -> None:
        local = [KVCache(c.kv_heads, c.d_k, c.d_v) for c in caches]
        for mine, theirs in zip(local, caches, strict=True):
            mine.keys, mine.values = list(theirs.keys), list(theirs.values)
        stepper.step(ids[-1], len(ids) - 1, local)

    whole = median(one_step)
    print(f"         a whole-model step, 30 layers, after 64 tokens {1000 * whole:6.1f} ms "
          f"(matches the parallel pass to {gap:.0e})")  # fmt: skip


def main() -> None:
    for model in (MINILM, SMOLLM2):
        if not model.installed:
            raise SystemExit(f"{model.name} is not installed: {model.install}")
    print(f"GGUF header parse: {1000 * median(lambda: GGUFFile(SMOLLM2.weights_path())):.0f} ms")
    minilm()
    smollm2_load()
    decode_steps()


if __name__ == "__main__":
    main()
