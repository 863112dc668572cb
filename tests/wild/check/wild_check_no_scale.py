# expect: no-scaling
# model: two-heads
# source: huggingface/blog pull request #2893 ("the PyTorch code example for attention
# calculation was missing the 1/√d_k scaling factor"); flexflow/flexflow-train issue #467
# ("there should have been a scaling by sqrt(kdim) before computing the softmax").
"""A torch student who forgets the ÷√d_k, saving q, k, v, scores, attn and out."""

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
    scores = q @ k.transpose(-2, -1)
    attn = torch.softmax(scores, dim=-1)  # the bug: scores / math.sqrt(d_k)
    return {"q": q, "k": k, "v": v, "scores": scores, "attn": attn, "out": attn @ v}
