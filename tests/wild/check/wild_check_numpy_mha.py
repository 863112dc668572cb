# expect: correct
# model: two-heads
# source: multi-head attention as "Attention Is All You Need" §3.2.2 writes it, in numpy:
# reshape(n, heads, d).transpose(1, 0, 2) to split, the reverse to concatenate, then WO.
"""A student's numpy multi-head attention, saving every stage by its own name: right."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


def embed(model: dict[str, Any], text: str) -> Array:
    table = model["embeddings"]
    return np.array([table[w] if w in table else table[w.lower()] for w in text.split()], float)


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Array]:
    X = embed(model, sentence or model["sentence"])
    W = {name: np.array(m, float) for name, m in model["weights"].items()}
    H = int(model.get("heads", 1))
    kv = int(model.get("kv_heads", H))
    n = len(X)
    Q = (X @ W["WQ"]).reshape(n, H, -1).transpose(1, 0, 2)
    K = (X @ W["WK"]).reshape(n, kv, -1).transpose(1, 0, 2)
    V = (X @ W["WV"]).reshape(n, kv, -1).transpose(1, 0, 2)
    K_rep = np.repeat(K, H // kv, axis=0)
    V_rep = np.repeat(V, H // kv, axis=0)
    scores = Q @ K_rep.transpose(0, 2, 1)
    scaled = scores / np.sqrt(Q.shape[-1])
    e = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    output = weights @ V_rep
    concat = output.transpose(1, 0, 2).reshape(n, -1)
    out = {"Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled, "softmax": weights}
    out |= {"output": output, "concat": concat, "projected": concat @ W["WO"]}
    return out
