# expect: mask-inverted
# model: causal
# source: rasbt/LLMs-from-scratch issue #1061 ("for scaled_dot_product_attention, True
# indicates values to participate in attention, but here the attn_mask is
# torch.triu(...).bool() ... I think we need to use ~attn_mask").
"""A torch student who gives SDPA the triangle to hide as the mask of keys to keep: each
token sees only the tokens after it, and the last (which sees nothing) gets zeros."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor([table[t] if t in table else table[t.lower()] for t in words]).float()
    w = {k: torch.tensor(v).float() for k, v in model["weights"].items()}
    q, k, v = (x @ w[name] for name in ("WQ", "WK", "WV"))
    T = x.shape[0]
    attn_mask = torch.triu(torch.ones(T, T), diagonal=1).bool()  # the bug: ~attn_mask
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=attn_mask)
    return {"q": q, "k": k, "v": v, "out": out}
