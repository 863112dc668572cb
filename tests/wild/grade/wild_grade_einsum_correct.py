# expect: correct
# source: the einsum style of tutorials (e.g. aladdinpersson/Machine-Learning-Collection's
# SelfAttention, "nqhd,nkhd->nhqk"), with nanoGPT's causal mask:
# masked_fill(tril == 0, float('-inf')) (karpathy/nanoGPT issue #170 discusses it).
# Returns nested lists, as a student who calls .tolist() does.
"""A student's single-head attention with torch.einsum and masked_fill: right."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import numpy.typing as npt
import torch

Matrix = npt.NDArray[np.float64]


def attention(
    X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False
) -> list[list[float]]:
    x = torch.from_numpy(X)
    q = torch.einsum("nd,dk->nk", x, torch.from_numpy(WQ))
    k = torch.einsum("nd,dk->nk", x, torch.from_numpy(WK))
    v = torch.einsum("nd,dv->nv", x, torch.from_numpy(WV))
    wei = torch.einsum("qk,mk->qm", q, k) / math.sqrt(k.shape[-1])
    if causal:
        n = x.shape[0]
        tril = torch.tril(torch.ones(n, n))
        wei = wei.masked_fill(tril == 0, float("-inf"))
    wei = torch.softmax(wei, dim=-1)
    out = torch.einsum("qm,mv->qv", wei, v)
    return cast(list[list[float]], out.tolist())
