# expect: mask-hides-diagonal
# source: the off-by-one of np.triu's k (karpathy/nanoGPT issue #170 on which triangle and
# which diagonal the causal mask covers): k=0 hides the diagonal too, so the first token
# sees nothing and its row is NaN (−∞ everywhere, then −∞ − (−∞)).
"""A numpy student whose causal mask also hides the diagonal: np.triu(k=0)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if causal:
        n = len(X)
        scores = np.where(np.triu(np.ones((n, n)), k=0) == 1, -np.inf, scores)  # k=1 meant
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out: Matrix = (e / e.sum(axis=-1, keepdims=True)) @ V
    return out
