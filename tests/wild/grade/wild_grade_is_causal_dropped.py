# expect: no-mask
# source: facebookresearch/xformers issue #103 ("Causal mask is skipped if no att_mask is
# passed"); onlybooks/llm issue #4 (is_causal never passed to self_attn); NVIDIA/
# TransformerEngine issue #1524 ("Causal mask ignored in DotProductAttention").
"""A torch student who takes `causal` and never passes it on: SDPA with no mask."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X)
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    # the bug: is_causal=causal forgotten, and no attn_mask either
    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=None)[0]
