# expect: no-scaling
# source: huggingface/blog pull request #2893 ("the PyTorch code example for attention
# calculation was missing the 1/√d_k scaling factor", kv-cache.md); tunz/transformer-pytorch
# issue #8 asks the same of another implementation.
"""A numpy student who forgets to divide the scores by √d_k."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T  # the bug: no / np.sqrt(d_k)
    if causal:
        scores = scores + np.triu(np.full(scores.shape, -np.inf), k=1)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    out: Matrix = weights @ V
    return out
