# expect: mask-hides-diagonal
# model: causal
# source: np.triu's k off by one (karpathy/nanoGPT issue #170 on which triangle and
# diagonal the causal mask covers): k=0 hides the diagonal too; with a -inf fill the first
# row is NaN.
"""A numpy student whose mask is np.triu(k=0): every stage saved, NaN in the first row."""

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
    n = len(X)
    masked = np.where(np.triu(np.ones((n, n)), k=0) == 1, -np.inf, scaled)  # k=1 meant
    with np.errstate(invalid="ignore"):
        e = np.exp(masked - masked.max(axis=1, keepdims=True))
        weights = e / e.sum(axis=1, keepdims=True)
    return {
        "Q": Q,
        "K": K,
        "V": V,
        "scores": scores,
        "scaled": scaled,
        "masked": masked,
        "softmax": weights,
        "output": weights @ V,
    }
