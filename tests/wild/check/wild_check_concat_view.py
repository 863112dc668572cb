# expect: concat-without-transpose
# model: two-heads
# source: jsbaan/transformer-from-scratch pull request #6 ("a missing permute before a
# reshape in multi-head attention ... mixes chunks from different sequence positions into
# the same token's output embedding"); 649453932/Chinese-Text-Classification-Pytorch issues
# #10 and #53 (context.view(batch_size, -1, dim_head * num_head) straight from [heads, ...]).
"""A torch student whose heads are right and whose concat is out.reshape(B, T, H·d_v)
without moving the heads axis."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    rows = [table[t] if t in table else table[t.lower()] for t in words]
    x = torch.tensor(rows, dtype=torch.float32)[None]
    B, T, _ = x.shape
    H = int(model["heads"])
    w = {k: torch.tensor(v, dtype=torch.float32) for k, v in model["weights"].items()}
    q = (x @ w["WQ"]).view(B, T, H, -1).transpose(1, 2)
    k = (x @ w["WK"]).view(B, T, H, -1).transpose(1, 2)
    v = (x @ w["WV"]).view(B, T, H, -1).transpose(1, 2)
    att = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    out = att @ v  # [B, H, T, d_v]
    concat = out.reshape(B, T, -1)  # the bug: out.transpose(1, 2).reshape(B, T, -1)
    return {"attn": att, "out": out, "concat": concat, "projected": concat @ w["WO"]}
