# expect: weights-transposed
# source: attntrace issue 32 ("tried as a new user would, `attn.T @ V` gets 'no known
# mistake'"); the same slip as heykeetae/Self-Attention-GAN issue #11 (bmm with the
# attention map's axes in the wrong order) and leaderj1001/BottleneckTransformers issue #14.
"""A numpy student who multiplies V by the weights' transpose: softmaxᵀ·V."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> Matrix:
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T / np.sqrt(K.shape[1])
    if causal:
        n = len(X)
        scores[np.triu_indices(n, k=1)] = -np.inf
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    attn = e / e.sum(axis=1, keepdims=True)
    out: Matrix = attn.T @ V  # the bug: attn @ V was meant
    return out
