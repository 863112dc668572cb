"""RoPE by given frequencies, with loops: the oracle of scaled and partial RoPE.

Pair i of a row at position p turns by the angle p · frequencies[i]. With r = 2 ·
len(frequencies) turned dimensions, ``half`` pairs dimension i with i + r/2 (transformers'
``rotate_half`` on the first r dimensions, Phi-3's partial rotary width); ``interleaved``
pairs 2i with 2i + 1. Dimensions from r on are not turned. Written from transformers'
``apply_rotary_pos_emb`` and RoFormer's equations, one number at a time, sharing nothing
with attntrace.kernel.ops.
"""

from __future__ import annotations

import math
from typing import Any

from naive import add_bias, matmul, naive_softmax_row

Rows = list[list[float]]


def rotate_by(
    row: list[float], position: int, frequencies: list[float], pairing: str
) -> list[float]:
    """One row turned pair by pair; the dimensions past the turned ones as they were."""
    out = list(row)
    half = len(frequencies)
    for i, frequency in enumerate(frequencies):
        angle = position * frequency
        first, second = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + half)
        a, b = row[first], row[second]
        out[first] = a * math.cos(angle) - b * math.sin(angle)
        out[second] = b * math.cos(angle) + a * math.sin(angle)
    return out


def naive_turned_block(
    x: Rows,
    wq: Rows,
    wk: Rows,
    *,
    heads: int,
    kv_heads: int,
    frequencies: list[float],
    pairing: str,
    causal: bool,
    q_bias: list[float] | None = None,
    k_bias: list[float] | None = None,
) -> dict[str, Any]:
    """Each head's Q_rope, K_rope and causal (or full) softmax, by loops."""
    d_k = len(wq[0]) // heads
    q_all, k_all = add_bias(matmul(x, wq), q_bias), add_bias(matmul(x, wk), k_bias)
    n = len(x)
    result: dict[str, Any] = {"Q_rope": [], "K_rope": [], "softmax": []}
    for h in range(heads):
        g = h // (heads // kv_heads)
        q = [
            rotate_by(r[h * d_k : (h + 1) * d_k], p, frequencies, pairing)
            for p, r in enumerate(q_all)
        ]
        k = [
            rotate_by(r[g * d_k : (g + 1) * d_k], p, frequencies, pairing)
            for p, r in enumerate(k_all)
        ]
        scores = [
            [
                sum(a * b for a, b in zip(q[i], k[j], strict=True)) / math.sqrt(d_k)
                if not causal or j <= i
                else -math.inf
                for j in range(n)
            ]
            for i in range(n)
        ]
        result["Q_rope"].append(q)
        result["K_rope"].append(k)
        result["softmax"].append([naive_softmax_row(row) for row in scores])
    return result
