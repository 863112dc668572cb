# expect: cross-attention-causal
# model: cross
# source: huggingface/transformers issue #48172 ("MllamaTextCrossAttention never set
# self.is_causal — cross-attention is silently causal under sdpa": sdpa_attention resolves
# getattr(module, "is_causal", True)); onlybooks/llm issue #4 (is_causal to be removed from
# the cross-attention call).
"""A torch student who passes is_causal=True to the decoder's cross-attention too."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def embed(model: dict[str, Any], text: str) -> Tensor:
    table = model["embeddings"]
    rows = [table[w] if w in table else table[w.lower()] for w in text.split()]
    return torch.tensor(rows, dtype=torch.float32)


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    x = embed(model, sentence or model["sentence"])
    memory = embed(model, model["context"])
    w = {k: torch.tensor(v, dtype=torch.float32) for k, v in model["weights"].items()}
    q, k, v = x @ w["WQ"], memory @ w["WK"], memory @ w["WV"]
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)  # the bug
    return {"q": q, "k": k, "v": v, "out": out}
