# expect: mask-inverted
# model: causal
# source: karpathy/nanoGPT issue #170 ("I missed the == 0"): the masked_fill condition
# written tril == 1, which hides each token's past and itself and leaves it the future; the
# last token sees nothing (NaN).
"""A nanoGPT-style student whose masked_fill condition is inverted: tril == 1."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor([table[t] if t in table else table[t.lower()] for t in words])[None]
    x = x.float()
    T = x.shape[1]
    k = x @ torch.tensor(model["weights"]["WK"]).float()
    q = x @ torch.tensor(model["weights"]["WQ"]).float()
    v = x @ torch.tensor(model["weights"]["WV"]).float()
    tril = torch.tril(torch.ones(T, T))
    wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
    wei = wei.masked_fill(tril == 1, float("-inf"))  # the bug: tril == 0
    masked = wei
    wei = F.softmax(wei, dim=-1)
    return {"masked": masked, "attn": wei, "out": wei @ v}
