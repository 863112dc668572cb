# expect: mask-hides-diagonal
# model: causal
# source: attntrace issue 32 ("mask-hides-diagonal written as SDPA with
# attn_mask=torch.tril(ones, diagonal=-1): torch's SDPA returns zeros for the fully masked
# first row (not NaN, not uniform)").
"""A torch student whose SDPA boolean mask is tril(diagonal=-1): no token sees itself,
and SDPA returns a row of zeros for the first token, which sees nothing."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor([table[t] if t in table else table[t.lower()] for t in words]).float()
    q = x @ torch.tensor(model["weights"]["WQ"]).float()
    k = x @ torch.tensor(model["weights"]["WK"]).float()
    v = x @ torch.tensor(model["weights"]["WV"]).float()
    T = x.shape[0]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)  # diagonal=0 meant
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask)
    return {"q": q, "k": k, "v": v, "out": out}
