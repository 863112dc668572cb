# expect: mask-after-softmax
# source: rasbt/LLMs-from-scratch issue #279 (the book's first causal mask:
# `masked_simple = attn_weights * mask_simple`, a tril of ones applied after the softmax,
# which the book then renormalises; a student who stops there keeps rows summing to less
# than 1); abisee/pointer-generator issue #88 ("you apply the mask after doing the softmax,
# then the probabilities would be summed up to less than 1").
"""A torch student who zeroes the future weights after the softmax, and stops there."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    queries = x @ torch.from_numpy(WQ)
    keys = x @ torch.from_numpy(WK)
    values = x @ torch.from_numpy(WV)
    attn_scores = queries @ keys.T
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    if causal:
        context_length = attn_scores.shape[0]
        mask_simple = torch.tril(torch.ones(context_length, context_length))
        attn_weights = attn_weights * mask_simple  # the bug: mask before the softmax
    return attn_weights @ values
