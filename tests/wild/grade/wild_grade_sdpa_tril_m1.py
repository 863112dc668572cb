# expect: mask-hides-diagonal
# source: attntrace issue 32 ("mask-hides-diagonal written as SDPA with
# attn_mask=torch.tril(ones, diagonal=-1): torch's SDPA returns zeros for the fully masked
# first row (not NaN, not uniform)").
"""A torch student who builds SDPA's boolean mask with diagonal=-1: no token sees itself."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    mask = None
    if causal:
        T = x.shape[0]
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)  # diagonal=0 meant
    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask)[0]
