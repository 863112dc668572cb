# expect: no-mask
# model: causal
# source: facebookresearch/xformers issue #103 ("Causal mask is skipped if no att_mask is
# passed"); hkproj/pytorch-llama issue #15 ("Why is causal attention mask not used?").
"""A torch student on a causal model who calls SDPA with attn_mask=None and no is_causal."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor([table[t] if t in table else table[t.lower()] for t in words]).float()
    w = {k: torch.tensor(v).float() for k, v in model["weights"].items()}
    q, k, v = x @ w["WQ"], x @ w["WK"], x @ w["WV"]
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=None)  # the bug
    return {"q": q, "k": k, "v": v, "out": out}
