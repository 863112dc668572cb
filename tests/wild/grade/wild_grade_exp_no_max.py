# expect: unstable-softmax
# source: mila-iqia/blocks pull request #727 ("enough energies to make exp overflow ...
# resulting NaN propagation", "Stabilize attention energies"); jhcross/span-parser issue #2
# ("an 'unsafe' softmax"); pyg-team/pytorch_geometric issue #53. In float32, as students run
# torch, exp overflows past a score of about 88.7.
"""A torch student whose softmax is exp(x) / Σ exp(x), in float32, without the row max."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import torch

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.tensor(X, dtype=torch.float32)
    q = x @ torch.tensor(WQ, dtype=torch.float32)
    k = x @ torch.tensor(WK, dtype=torch.float32)
    v = x @ torch.tensor(WV, dtype=torch.float32)
    scores = q @ k.T / math.sqrt(k.shape[1])
    if causal:
        T = x.shape[0]
        scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    e = torch.exp(scores)  # the bug: torch.exp(scores - scores.amax(-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)) @ v
