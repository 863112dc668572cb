# expect: weights-transposed
# model: two-heads
# source: einsum index slips in attention: pytorch-tpu/transformers pull request #34 (the
# review: "This should be bnsk,bnkh->bnsh"), aladdinpersson/Machine-Learning-Collection
# issue #165 ("SelfAttention bug on Scores * V": the einsum's output differs from matmul's).
# Here the weights' query index is summed and the key index kept: "bhqk,bhqd->bhkd".
"""A torch einsum student whose weights-times-values contracts the wrong index."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor([[table[t] if t in table else table[t.lower()] for t in words]]).double()
    H = int(model.get("heads", 1))
    w = {k: torch.tensor(v).double() for k, v in model["weights"].items()}
    b, n, _ = x.shape
    q = torch.einsum("bnd,de->bne", x, w["WQ"]).reshape(b, n, H, -1)
    k = torch.einsum("bnd,de->bne", x, w["WK"]).reshape(b, n, H, -1)
    v = torch.einsum("bnd,de->bne", x, w["WV"]).reshape(b, n, H, -1)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    attn = torch.softmax(scores, dim=-1)
    out = torch.einsum("bhqk,bqhd->bhkd", attn, v)  # the bug: "bhqk,bkhd->bhqd"
    return {"q": q, "k": k, "v": v, "attn": attn, "out": out}
