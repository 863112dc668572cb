# expect: scaled-by-length
# model: two-heads
# source: the size-index slip of onlybooks/llm issue #18 (querys.size(2) taken for the
# length where it was the head dimension), the other way round: math.sqrt(T), the sequence
# length, where the head size was meant; phlippe/uvadlc_notebooks issue #72 on why the
# divisor is d_k, "independent of the sequence length".
"""A torch student who divides the scores by √T (the number of keys)."""

from __future__ import annotations

import math
from typing import Any

import torch
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
    scores = q @ k.transpose(-2, -1)
    scaled = scores / math.sqrt(T)  # the bug: math.sqrt(q.size(-1))
    attn = torch.softmax(scaled, dim=-1)
    return {"scores": scores, "scaled": scaled, "attn": attn, "out": attn @ v}
