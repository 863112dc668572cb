"""A student's homework: attention in numpy, graded by `attntrace grade` (docs/teaching.md).

    attntrace grade docs/examples/homework.py:attention

It forgets one thing: ``causal`` is taken and never used, so a decoder's token sees the
tokens after it (check's catalogue calls that no-mask).
"""

import numpy as np


def attention(X, WQ, WK, WV, causal=False):
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T / np.sqrt(K.shape[1])
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=1, keepdims=True)
    return weights @ V
