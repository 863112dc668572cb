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
    biases: dict[str, list[float]] | None = None,
    rope_base: float | None = None,
    rope_pairing: str = "half",
) -> dict[str, Any]:
    """A whole attention block by the paper's formulas, head by head, with loops.

    Returns per-head lists under "Q", "K", ..., "masked", "softmax", "output" (index =
    head), and "concat" / "projected". Masked cells are -inf before softmax, 0 after.
    ``biases`` (bQ, bK, bV, bO) are added after their matrices; with ``rope_base``, Q and
    K are rotated (RoFormer, pairs i and i + d_k/2 as in LLaMA, or neighbours 2i and 2i+1
    with ``rope_pairing="interleaved"``) into "Q_rope", "K_rope".
    """
    turn = rotate_interleaved if rope_pairing == "interleaved" else rotate
    biases = biases or {}
    kv_heads = heads if kv_heads is None else kv_heads
    keys_in = x if context is None else context
    d_k = len(wq[0]) // heads
    d_v = len(wv[0]) // kv_heads
    n, m = len(x), len(keys_in)
    names = ("Q", "K", "V", "scores", "scaled", "masked", "softmax", "output")
    result: dict[str, Any] = {name: [] for name in names}
    result["Q_rope"], result["K_rope"] = [], []
    for h in range(heads):
        g = h // (heads // kv_heads)  # the K/V head that query head h reads
        q = [row[h * d_k : (h + 1) * d_k] for row in add_bias(matmul(x, wq), biases.get("bQ"))]
        k = [
            row[g * d_k : (g + 1) * d_k] for row in add_bias(matmul(keys_in, wk), biases.get("bK"))
        ]
        v = [
            row[g * d_v : (g + 1) * d_v] for row in add_bias(matmul(keys_in, wv), biases.get("bV"))
        ]
        if rope_base is not None:
            result["Q"].append(q)
            result["K"].append(k)
            q = [turn(row, p, rope_base) for p, row in enumerate(q)]
            k = [turn(row, p, rope_base) for p, row in enumerate(k)]
            result["Q_rope"].append(q)
            result["K_rope"].append(k)
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
            if rope_base is None or name not in ("Q", "K"):
                result[name].append(value)
    result["concat"] = [[c for h in range(heads) for c in result["output"][h][i]] for i in range(n)]
    result["projected"] = (
        add_bias(matmul(result["concat"], wo), biases.get("bO")) if wo is not None else None
    )
    return result


def add_bias(rows: Rows, bias: list[float] | None) -> Rows:
    return (
        rows if bias is None else [[a + b for a, b in zip(row, bias, strict=True)] for row in rows]
    )


def rotate(row: list[float], position: int, base: float) -> list[float]:
    """RoPE of one row: each pair (x_i, x_{i+d/2}) turned by position · base^(−2i/d)."""
    half = len(row) // 2
    out = list(row)
    for i in range(half):
        angle = position * base ** (-2 * i / len(row))
        a, b = row[i], row[i + half]
        out[i] = a * math.cos(angle) - b * math.sin(angle)
        out[i + half] = b * math.cos(angle) + a * math.sin(angle)
    return out


def rotate_interleaved(row: list[float], position: int, base: float) -> list[float]:
    """RoPE of one row as RoFormer writes it (eq. 13-15; GPT-J, Meta's LLaMA): each pair of
    neighbours (x_2i, x_2i+1) turned by position · base^(−2i/d), as a 2 × 2 rotation."""
    out = list(row)
    for i in range(len(row) // 2):
        angle = position * base ** (-2 * i / len(row))
        c, s = math.cos(angle), math.sin(angle)
        rotation = [[c, -s], [s, c]]
        pair = [row[2 * i], row[2 * i + 1]]
        for r in range(2):
            out[2 * i + r] = sum(rotation[r][col] * pair[col] for col in range(2))
    return out
