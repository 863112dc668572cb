# expect: correct
# source: PyTorch's own recipe, torch.nn.functional.scaled_dot_product_attention with
# is_causal (docs.pytorch.org, scaled_dot_product_attention), in float32 as most students
# run torch: X and the weights cast with .float().
"""A student's single-head attention with torch SDPA, in float32: right."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

Matrix = npt.NDArray[np.float64]


def attention(X: Matrix, WQ: Matrix, WK: Matrix, WV: Matrix, causal: bool = False) -> torch.Tensor:
    x = torch.from_numpy(X).float()
    q = x @ torch.from_numpy(WQ).float()
    k = x @ torch.from_numpy(WK).float()
    v = x @ torch.from_numpy(WV).float()
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)
    return out[0]
