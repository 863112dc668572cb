# expect: correct
# model: cross
# source: a translation decoder's cross-attention with torch SDPA and no mask: queries
# from the target sentence, keys and values from the source (meta-pytorch/torchtune issue
# #2493: "The cross attention ... doesn't follow the causal pattern", is_causal=False).
"""A student's cross-attention with F.scaled_dot_product_attention, not causal: right."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def embed(model: dict[str, Any], text: str) -> Tensor:
    table = model["embeddings"]
    rows = [table[w] if w in table else table[w.lower()] for w in text.split()]
    return torch.tensor(rows, dtype=torch.float64)


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    x = embed(model, sentence or model["sentence"])
    memory = embed(model, model["context"])
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in model["weights"].items()}
    q, k, v = x @ w["WQ"], memory @ w["WK"], memory @ w["WV"]
    out = F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None])
    return {"q": q, "k": k, "v": v, "out": out}
