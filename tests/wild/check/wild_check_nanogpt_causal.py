# expect: correct
# model: causal
# source: karpathy/ng-video-lecture's Head: a registered tril buffer,
# wei.masked_fill(self.tril[:T, :T] == 0, float('-inf')), F.softmax(wei, dim=-1), in float32
# with a batch of one.
"""A student's nanoGPT-style causal head, saving scaled, masked, attn and out: right."""

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
    _, T, _ = x.shape
    key = torch.tensor(model["weights"]["WK"]).float()
    query = torch.tensor(model["weights"]["WQ"]).float()
    value = torch.tensor(model["weights"]["WV"]).float()
    tril = torch.tril(torch.ones(T, T))
    k, q = x @ key, x @ query
    wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
    masked = wei.masked_fill(tril[:T, :T] == 0, float("-inf"))
    att = F.softmax(masked, dim=-1)
    return {"scaled": wei, "masked": masked, "attn": att, "out": att @ (x @ value)}
