# expect: scores-transposed
# source: karpathy/llm.c pull request #531 ("we compute K^T @ Q instead of Q @ K^T and that
# combined with causal masking might have introduced a bug" — there a false alarm, because
# cuBLAS is column-major; in numpy it is the real thing).
"""A numpy student who computes the scores as K·Qᵀ."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = K @ Q.T / np.sqrt(K.shape[1])  # the bug: Q @ K.T
    if causal:
        scores[np.triu_indices(len(X), k=1)] = -np.inf
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    out: Matrix = (e / e.sum(axis=1, keepdims=True)) @ V
    return out
