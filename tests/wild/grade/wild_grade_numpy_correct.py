# expect: correct
# source: the textbook formula softmax(QKᵀ/√d_k)·V (Vaswani et al. 2017, eq. 1), written
# in numpy the way course notebooks write it: a stable softmax along the last axis and an
# np.triu mask above the diagonal.
"""A student's single-head attention in plain numpy: right."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def softmax(x: Matrix) -> Matrix:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: Matrix = e / e.sum(axis=-1, keepdims=True)
    return out


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if causal:
        n = X.shape[0]
        future = np.triu(np.ones((n, n), dtype=bool), k=1)
        scores = np.where(future, -np.inf, scores)
    out: Matrix = softmax(scores) @ V
    return out
