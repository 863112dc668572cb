# expect: weights-transposed
# model: the-cat-sat
# source: attntrace issue 32 ("tried as a new user would, `attn.T @ V` gets 'no known
# mistake reproduces this'"); heykeetae/Self-Attention-GAN issue #11 (the attention map's
# axes swapped in the product with the values).
"""A numpy student whose weights are right and whose output is softmaxᵀ·V."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Array]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    X = np.array([table[w] if w in table else table[w.lower()] for w in words], float)
    Q = X @ np.array(model["weights"]["WQ"], float)
    K = X @ np.array(model["weights"]["WK"], float)
    V = X @ np.array(model["weights"]["WV"], float)
    scores = Q @ K.T
    scaled = scores / np.sqrt(K.shape[1])
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    attn = e / e.sum(axis=1, keepdims=True)
    out = attn.T @ V  # the bug: attn @ V
    return {"Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled, "attn": attn, "out": out}
