# expect: softmax-over-columns
# model: causal
# source: karpathy/ng-video-lecture issue #42 (the softmax's axis in the Head); labmlai/
# annotated_deep_learning_paper_implementations issue #282 ("Attention takes softmax over
# wrong dimension"); nerdai/llms-from-scratch-rs pull request #30 ("bug in computing softmax
# on wrong dim for attn weights"). On [B, T, T], dim=1 normalises each column.
"""A nanoGPT-style causal head whose softmax is F.softmax(wei, dim=1) on [B, T, T]."""

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
    masked = wei.masked_fill(tril[:T, :T] == 0, float("-inf"))
    wei = F.softmax(masked, dim=1)  # the bug: dim=-1
    return {"masked": masked, "attn": wei, "out": wei @ v}
