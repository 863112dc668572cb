# expect: correct
# model: gqa
# source: LLaMA's repeat_kv as transformers writes it (the expand + reshape that equals
# torch.repeat_interleave on the heads axis; meta-llama/llama issue #384 shows it), in float32;
# Q, K and V saved as q_proj(x) returns them, [1, n, heads·d].
"""A student's torch grouped-query attention with repeat_interleave: right."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def embed(model: dict[str, Any], text: str) -> Tensor:
    table = model["embeddings"]
    rows = [table[w] if w in table else table[w.lower()] for w in text.split()]
    return torch.tensor(rows, dtype=torch.float32)[None]  # [1, T, C]


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    x = embed(model, sentence or model["sentence"])
    B, T, _ = x.shape
    w = {k: torch.tensor(v, dtype=torch.float32) for k, v in model["weights"].items()}
    n_head = int(model.get("heads", 1))
    n_kv = int(model.get("kv_heads", n_head))
    q, k, v = x @ w["WQ"], x @ w["WK"], x @ w["WV"]
    hd = q.shape[-1] // n_head
    qh = q.view(B, T, n_head, hd).transpose(1, 2)
    kh = k.view(B, T, n_kv, hd).transpose(1, 2).repeat_interleave(n_head // n_kv, dim=1)
    vh = v.view(B, T, n_kv, -1).transpose(1, 2).repeat_interleave(n_head // n_kv, dim=1)
    att = torch.softmax(qh @ kh.transpose(-2, -1) / hd**0.5, dim=-1)
    y = att @ vh
    concat = y.transpose(1, 2).contiguous().view(B, T, -1)
    return {"q": q, "k": k, "v": v, "attn": att, "out": y, "concat": concat}
