# expect: mask-fill-too-small
# model: MODEL
# source: TransformerLensOrg/TransformerLens issue #318 / pull requests #319 and #366 ("In
# pythia-70m, attn_scores can get below -1e5 ... Masked attn scores are set to -1e5, so
# this makes the model attend outside the mask!"); huggingface/transformers pull request
# #17306 ("Fix -1e4 as attn mask").
"""A student with TransformerLens's old IGNORE = -1e5 fill, on a model (MODEL, below)
whose first token scores its only visible key, itself, at about -1.8e5: the two masked
future keys, at -1e5, take all of its weight."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

IGNORE = -1e5  # the bug: -np.inf

# WK = -identity, so a token's score with itself is -|x|²/√2: "far" (500, 0) scores -176,777.
MODEL: dict[str, Any] = {
    "name": "far-first",
    "sentence": "far b c",
    "causal": True,
    "embeddings": {"far": [500, 0], "b": [0, 3], "c": [1, 1]},
    "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[-1, 0], [0, -1]], "WV": [[1, 0], [0, 1]]},
}


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Array]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    X = np.array([table[w] if w in table else table[w.lower()] for w in words], float)
    Q = X @ np.array(model["weights"]["WQ"], float)
    K = X @ np.array(model["weights"]["WK"], float)
    V = X @ np.array(model["weights"]["WV"], float)
    attn_scores = Q @ K.T / np.sqrt(K.shape[-1])
    n = len(X)
    mask = np.triu(np.ones((n, n), dtype=bool), k=1)
    masked = np.where(mask, IGNORE, attn_scores)
    pattern = np.exp(masked - masked.max(axis=-1, keepdims=True))
    pattern /= pattern.sum(axis=-1, keepdims=True)
    return {"scaled": attn_scores, "masked": masked, "softmax": pattern, "output": pattern @ V}
