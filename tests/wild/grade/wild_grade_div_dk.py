# expect: scaled-by-d_k
# source: delzac/cntkx issue #10 ("ScaledDotProductAttention doesn't apply C.sqrt?": the
# scores divided by d_k, not by its square root; fixed in 0.1.33).
"""A numpy student who divides the scores by d_k instead of √d_k."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    d_k = K.shape[1]
    scores = Q @ K.T / d_k  # the bug: / np.sqrt(d_k)
    if causal:
        scores[np.triu(np.ones_like(scores, dtype=bool), k=1)] = -np.inf
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    out: Matrix = weights @ V
    return out
