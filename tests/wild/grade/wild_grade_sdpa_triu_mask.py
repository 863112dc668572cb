# expect: mask-inverted
# source: rasbt/LLMs-from-scratch issue #1061 ("for scaled_dot_product_attention, True
# indicates values to participate in attention, but here the attn_mask is
# torch.triu(...).bool() ... future tokens can be attended to. I think we need ~attn_mask");
# pytorch/pytorch pull request #120668 notes nn.Transformer's masks mean the opposite.
"""A torch student who hands SDPA the "hide these" triangle as its boolean mask."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    attn_mask = None
    if causal:
        T = x.shape[0]
        attn_mask = torch.triu(torch.ones(T, T), diagonal=1).bool()  # the bug: ~attn_mask
    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=attn_mask)[0]
