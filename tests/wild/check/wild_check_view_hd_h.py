# expect: heads-split-wrong
# model: two-heads
# source: attntrace issue 32 ("heads-split-wrong is not named when Q/K/V are saved as they
# come out of q_proj(x) (shape [1, n, H·d], correct) before the wrong
# .view(B, T, head_dim, H)"); the head split bugs of reczoo/FuxiCTR issue #30 and
# bentrevett/pytorch-seq2seq issue #148 (a .view whose axes are in the wrong order).
"""A torch student who splits heads with .view(B, T, head_dim, H): head h gets columns
h, h + H, ... Q, K, V are saved before the split (right), the rest after (wrong)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor(
        [table[t] if t in table else table[t.lower()] for t in words], dtype=torch.float64
    )[None]
    B, T, _ = x.shape
    H = int(model.get("heads", 1))
    q = x @ torch.tensor(model["weights"]["WQ"], dtype=torch.float64)
    k = x @ torch.tensor(model["weights"]["WK"], dtype=torch.float64)
    v = x @ torch.tensor(model["weights"]["WV"], dtype=torch.float64)
    head_dim = q.shape[-1] // H
    # the bug: .view(B, T, H, head_dim).transpose(1, 2) was meant
    qh = q.view(B, T, head_dim, H).permute(0, 3, 1, 2)
    kh = k.view(B, T, head_dim, H).permute(0, 3, 1, 2)
    vh = v.view(B, T, -1, H).permute(0, 3, 1, 2)
    scaled = qh @ kh.transpose(-2, -1) / math.sqrt(head_dim)
    attn = torch.softmax(scaled, dim=-1)
    return {"q": q, "k": k, "v": v, "scaled": scaled, "attn": attn, "out": attn @ vh}
