"""The small numeric operations attention is built from, numpy only."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]


def softmax(scores: Matrix) -> Matrix:
    """Row-wise softmax, computed stably: ``exp(s − max(s)) / Σ exp(s − max(s))``.

    Subtracting the row max changes nothing mathematically (it cancels between numerator
    and denominator) but keeps every ``exp`` at most 1, so scores of 800 or 1e5 do not
    overflow float64 the way ``exp(800)`` does.
    """
    # [n, m] -> [n, m]
    shifted = scores - scores.max(axis=-1, keepdims=True)
    exps = np.exp(shifted)
    weights: Matrix = exps / exps.sum(axis=-1, keepdims=True)
    return weights
