"""An independent attention, written with plain Python loops and the math module.

Nothing here calls attntrace or numpy's matrix product: it is the second way every
number is computed, so a test compares two implementations, not the code with itself.
"""

from __future__ import annotations

import math
from typing import Any

Rows = list[list[float]]


def matmul(a: Rows, b: Rows) -> Rows:
    n, inner, m = len(a), len(b), len(b[0])
    assert all(len(row) == inner for row in a)
    return [[sum(a[i][k] * b[k][j] for k in range(inner)) for j in range(m)] for i in range(n)]


def transpose(a: Rows) -> Rows:
    return [list(col) for col in zip(*a, strict=True)]


def naive_softmax_row(row: list[float]) -> list[float]:
    top = max(row)
    exps = [0.0 if x == -math.inf else math.exp(x - top) for x in row]
    total = math.fsum(exps)
    return [e / total for e in exps]


def naive_attention(x: Rows, wq: Rows, wk: Rows, wv: Rows) -> dict[str, Rows]:
    """Every stage of single-head attention, by the textbook formulas."""
    q, k, v = matmul(x, wq), matmul(x, wk), matmul(x, wv)
    d_k = len(wq[0])
    scores = [
        [sum(qi * kj for qi, kj in zip(q_row, k_row, strict=True)) for k_row in k] for q_row in q
    ]
    scaled = [[s / math.sqrt(d_k) for s in row] for row in scores]
    weights = [naive_softmax_row(row) for row in scaled]
    output = [
        [sum(weights[i][j] * v[j][c] for j in range(len(v))) for c in range(len(v[0]))]
        for i in range(len(weights))
    ]
    return {
        "X": x,
        "Q": q,
        "K": k,
        "V": v,
        "scores": scores,
        "scaled": scaled,
        "softmax": weights,
        "output": output,
    }


def naive_block(
    x: Rows,
    wq: Rows,
    wk: Rows,
    wv: Rows,
    *,
    heads: int = 1,
    kv_heads: int | None = None,
    causal: bool = False,
    context: Rows | None = None,
    wo: Rows | None = None,
) -> dict[str, Any]:
    """A whole attention block by the paper's formulas, head by head, with loops.

    Returns per-head lists under "Q", "K", ..., "masked", "softmax", "output" (index =
    head), and "concat" / "projected". Masked cells are -inf before softmax, 0 after.
    """
    kv_heads = heads if kv_heads is None else kv_heads
    keys_in = x if context is None else context
    d_k = len(wq[0]) // heads
    d_v = len(wv[0]) // kv_heads
    n, m = len(x), len(keys_in)
    names = ("Q", "K", "V", "scores", "scaled", "masked", "softmax", "output")
    result: dict[str, Any] = {name: [] for name in names}
    for h in range(heads):
        g = h // (heads // kv_heads)  # the K/V head that query head h reads
        q = [row[h * d_k : (h + 1) * d_k] for row in matmul(x, wq)]
        k = [row[g * d_k : (g + 1) * d_k] for row in matmul(keys_in, wk)]
        v = [row[g * d_v : (g + 1) * d_v] for row in matmul(keys_in, wv)]
        scores = [
            [sum(a * b for a, b in zip(q[i], k[j], strict=True)) for j in range(m)]
            for i in range(n)
        ]
        scaled = [[s / math.sqrt(d_k) for s in row] for row in scores]
        masked = scaled
        if causal:  # query i sees keys 0..i (+ m - n when keys outnumber queries)
            masked = [
                [s if j <= i + (m - n) else -math.inf for j, s in enumerate(row)]
                for i, row in enumerate(scaled)
            ]
        weights = [naive_softmax_row(row) for row in masked]
        output = [
            [sum(weights[i][j] * v[j][c] for j in range(m)) for c in range(d_v)] for i in range(n)
        ]
        stages = (q, k, v, scores, scaled, masked, weights, output)
        for name, value in zip(names, stages, strict=True):
            result[name].append(value)
    result["concat"] = [[c for h in range(heads) for c in result["output"][h][i]] for i in range(n)]
    result["projected"] = matmul(result["concat"], wo) if wo is not None else None
    return result
