# expect: scaled-by-length
# source: the size-index slip of onlybooks/llm issue #18 (`querys.size(2)` read as the
# length where it was the head dimension), here the other way round: k.size(-2), the
# number of keys, where k.size(-1), d_k, was meant; phlippe/uvadlc_notebooks issue #72
# discusses why the divisor is d_k, "independent of the sequence length".
"""A torch student who divides the scores by √(number of keys) instead of √d_k."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import torch

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.tensor(X)
    q, k, v = x @ torch.tensor(WQ), x @ torch.tensor(WK), x @ torch.tensor(WV)
    wei = q @ k.transpose(-2, -1) / math.sqrt(k.size(-2))  # the bug: k.size(-1)
    if causal:
        T = x.size(0)
        wei = wei.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    return torch.softmax(wei, dim=-1) @ v
