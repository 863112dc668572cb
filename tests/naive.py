"""An independent attention, written with plain Python loops and the math module.

Nothing here calls attntrace or numpy's matrix product: it is the second way every
number is computed, so a test compares two implementations, not the code with itself.
"""

from __future__ import annotations

import math

Rows = list[list[float]]


def matmul(a: Rows, b: Rows) -> Rows:
    n, inner, m = len(a), len(b), len(b[0])
    assert all(len(row) == inner for row in a)
    return [[sum(a[i][k] * b[k][j] for k in range(inner)) for j in range(m)] for i in range(n)]


def transpose(a: Rows) -> Rows:
    return [list(col) for col in zip(*a, strict=True)]


def naive_softmax_row(row: list[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(x - top) for x in row]
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
