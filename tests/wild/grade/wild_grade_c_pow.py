# expect: scaled-by-d_model
# source: Graylab/DL4Proteins-notebooks issue #12 (`wei = q @ k.transpose(-2, -1) * C**-0.5`
# with C the embedding width); lucidrains/vit-pytorch issue #65 (`self.scale = dim ** -0.5`
# where dim_head was meant); FareedKhan-dev/train-llm-from-scratch pull request #3.
"""A torch student, in Karpathy's style, who scales by √C (d_model) instead of √d_k."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    T, C = x.shape
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    wei = q @ k.transpose(-2, -1) * C**-0.5  # the bug: k.size(-1) ** -0.5
    if causal:
        wei = wei.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    return F.softmax(wei, dim=-1) @ v
