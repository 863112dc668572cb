# expect: softmax-over-columns
# source: karpathy/ng-video-lecture issue #42 (the softmax's axis); PetrochukM/PyTorch-NLP
# issue #2 (`nn.Softmax(dim=0)` in Attention); nerminnuraydogan/vision-transformer issue #1
# ("the softmax is taken along the wrong dimension ... it should be dim=-1").
"""A torch student whose softmax runs down each column (dim=0) instead of along each row."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    wei = q @ k.T * k.shape[-1] ** -0.5
    if causal:
        T = x.shape[0]
        wei = wei.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
    wei = F.softmax(wei, dim=0)  # the bug: dim=-1
    return wei @ v
