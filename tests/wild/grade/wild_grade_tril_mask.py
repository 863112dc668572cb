# expect: mask-wrong-triangle
# source: pytorch/examples issue #649 ("the attention mask is flipped (masking future
# elements, rather than past)" in word_language_model); karpathy/nanoGPT issue #170
# ("you use tril(). Shouldn't it be triu()?"): np.tril where np.triu was meant.
"""A numpy student whose causal mask hides the past (np.tril) instead of the future."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    if causal:
        n = scores.shape[0]
        mask = np.tril(np.ones((n, n)), k=-1).astype(bool)  # the bug: np.triu(..., k=1)
        scores[mask] = -np.inf
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    out: Matrix = (e / np.sum(e, axis=1, keepdims=True)) @ V
    return out
