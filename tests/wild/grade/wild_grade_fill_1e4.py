# expect: mask-fill-too-small
# source: huggingface/transformers pull request #17306 ("Fix -1e4 as attn mask");
# TransformerLensOrg/TransformerLens issue #318 / pull request #366 ("attn_scores can get
# below -1e5 ... Masked attn scores are set to -1e5, so this makes the model attend outside
# the mask!"). A finite fill hides a cell only while every visible score is well above it.
"""A torch student who fills the masked cells with -1e4 instead of -inf."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import torch

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if causal:
        T = x.shape[0]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, -1e4)  # the bug: float("-inf")
    return torch.softmax(scores, dim=-1) @ v
