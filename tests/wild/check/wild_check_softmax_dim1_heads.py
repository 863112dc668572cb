# expect: softmax-over-heads
# model: two-heads
# source: jadore801120/attention-is-all-you-need-pytorch issue #52 ("when calculating the
# attention in MultiHead, softmax's dim is 0, but i think dim=2 is right"); karpathy/
# ng-video-lecture issue #42: F.softmax(wei, dim=1), right for [B, T, T] only if dim=-1,
# here on [B, H, T, T], where dim=1 is the heads.
"""A torch student whose softmax runs over dim=1 of [B, H, T, T]: across the heads."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    rows = [table[t] if t in table else table[t.lower()] for t in words]
    x = torch.tensor(rows, dtype=torch.float64)[None]
    B, T, _ = x.shape
    H = int(model["heads"])
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in model["weights"].items()}
    q = (x @ w["WQ"]).view(B, T, H, -1).transpose(1, 2)
    k = (x @ w["WK"]).view(B, T, H, -1).transpose(1, 2)
    v = (x @ w["WV"]).view(B, T, H, -1).transpose(1, 2)
    wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
    wei = F.softmax(wei, dim=1)  # the bug: dim=-1
    return {
        "q": q,
        "k": k,
        "v": v,
        "scaled": q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5,
        "attn": wei,
        "out": wei @ v,
    }
