# expect: kv-heads-tiled
# model: gqa
# source: onnx/onnx pull request #7274 ("previous to this PR, we used tile, which gave us
# [head0, head1, head0, head1] ... in torch, it uses repeat interleave"); apple/axlearn pull
# request #842 (jnp.repeat's order for GQA); mindspore-lab/mindone pull request #1039
# ("repeat to repeat_interleave").
"""A torch student who expands the K/V heads with .repeat (tiles them) where
repeat_interleave was meant. K and V are saved before the expansion (right)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def arrays(model: dict[str, Any], sentence: str | None = None) -> dict[str, Tensor]:
    table = model["embeddings"]
    words = (sentence or model["sentence"]).split()
    x = torch.tensor([table[t] if t in table else table[t.lower()] for t in words])[None]
    x = x.float()
    B, T, _ = x.shape
    n_head = int(model["heads"])
    n_kv = int(model["kv_heads"])
    w = {k: torch.tensor(v).float() for k, v in model["weights"].items()}
    q, k, v = x @ w["WQ"], x @ w["WK"], x @ w["WV"]
    hd = q.shape[-1] // n_head
    qh = q.view(B, T, n_head, hd).transpose(1, 2)
    kh = k.view(B, T, n_kv, hd).transpose(1, 2).repeat(1, n_head // n_kv, 1, 1)  # the bug
    vh = v.view(B, T, n_kv, -1).transpose(1, 2).repeat(1, n_head // n_kv, 1, 1)  # likewise
    att = torch.softmax(qh @ kh.transpose(-2, -1) * hd**-0.5, dim=-1)
    return {"q": q, "k": k, "v": v, "attn": att, "out": att @ vh}
