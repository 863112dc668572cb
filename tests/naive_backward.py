"""The attention block's backward pass, written with plain Python loops.

The backward twin of tests/naive.py: every gradient of docs/learning.md ("The stages") as
a sum written out over its indices, in float64 Python floats, with no matrix product and
nothing from attntrace. It was written from the chain rule alone, before its author read
attntrace/learning/backward.py, so that the two agree only where both are right.

The derivations, for one head h reading K/V head g (Q = X·WQ + bQ, K = Xk·WK + bK,
V = Xk·WV + bV with Xk the context under cross-attention, else X; R_p is RoPE's rotation
at position p; S = scaled; A = softmax; O = A·V):

- O[i][c] = Σⱼ A[i][j]·V[j][c], so dA[i][j] = Σ_c dO[i][c]·V[j][c] (+ what the loss puts
  on A directly) and dV[j][c] = Σᵢ A[i][j]·dO[i][c].
- A[i] = softmax(S[i]) has the Jacobian ∂A[i][k]/∂S[i][j] = A[i][k]·(δₖⱼ − A[i][j]), so
  dS[i][j] = Σₖ J[j][k]·dA[i][k] with J = diag(a) − a·aᵀ (symmetric). A masked key has
  A = 0, so its row and column of J are 0; and a masked score does not reach A at all,
  so dS there is set to 0 outright (the same 0, twice over).
- S = scores / √d_k: d scores = dS / √d_k.
- scores[i][j] = Σ_c Qr[i][c]·Kr[j][c] (Qr, Kr: rotated under RoPE, else Q, K), so
  dQr[i][c] = Σⱼ dscores[i][j]·Kr[j][c] and dKr[j][c] = Σᵢ dscores[i][j]·Qr[i][c].
- RoPE: Qr[p] = R_p·Q[p], a linear map of the row, so dQ[p] = R_pᵀ·dQr[p]: the
  rotation's transpose, which is the rotation by −θ. R_p is written out below as a
  d_k × d_k matrix for each pairing and its transpose applied as a sum over its rows.
- Q = X·WQ + bQ: dWQ[r][col] = Σᵢ X[i][r]·dQ[i][col], dbQ[col] = Σᵢ dQ[i][col],
  dX[i][r] += Σ_col dQ[i][col]·WQ[r][col]; the same for K and V from Xk (whose gradient
  is d_X_context under cross-attention, added into d_X otherwise).
- A K/V head serving several query heads (GQA, MQA) receives each one's contribution:
  its gradient is their sum.
- With WO: projected = concat·WO + bO, so d concat[i][c] = Σₒ dP[i][o]·WO[c][o],
  dWO[c][o] = Σᵢ concat[i][c]·dP[i][o], dbO[o] = Σᵢ dP[i][o]. Head h's d output is its
  d_v columns of d concat.
"""

from __future__ import annotations

import math
from typing import Any

from naive import Rows, naive_block


def zeros(rows: int, cols: int) -> Rows:
    return [[0.0] * cols for _ in range(rows)]


def rope_rotation(width: int, position: int, base: float, pairing: str) -> Rows:
    """RoPE at ``position`` as the matrix R with turned = R · row (row as a column):
    pairs (i, i + width/2) for ``"half"``, neighbours (2i, 2i+1) for ``"interleaved"``,
    each turned by position · base^(−2i/width)."""
    rotation = zeros(width, width)
    for i in range(width // 2):
        angle = position * base ** (-2 * i / width)
        a, b = (i, i + width // 2) if pairing == "half" else (2 * i, 2 * i + 1)
        rotation[a][a] = math.cos(angle)
        rotation[a][b] = -math.sin(angle)
        rotation[b][a] = math.sin(angle)
        rotation[b][b] = math.cos(angle)
    return rotation


def unrotate(
    gradient: list[float], position: int, base: float, pairing: str, sign: float = -1.0
) -> list[float]:
    """The gradient of a row before RoPE from the gradient after it: Rᵀ · gradient
    (|R|ᵀ · gradient with ``sign`` +1, for the magnitudes)."""
    rotation = rope_rotation(len(gradient), position, base, pairing)
    size = abs if sign > 0 else float
    return [
        sum(size(rotation[r][c]) * gradient[r] for r in range(len(gradient)))
        for c in range(len(gradient))
    ]


def naive_block_backward(
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
    d_block: Rows | None = None,
    d_softmax: list[Rows | None] | None = None,
    magnitudes: bool = False,
) -> dict[str, Any]:
    """Every gradient of the block from dL/d(block output) and/or dL/d softmax per head.

    The block is :func:`naive.naive_block`'s, with the same keyword arguments. ``d_block``
    is dL/d of the block's output: ``projected`` (n × d_model) with ``wo``, else
    ``concat`` (n × heads·d_v, which is ``output`` with one head); None is 0.
    ``d_softmax[h]`` is what the loss puts on head h's weights directly (n × m; None,
    or the list None, is 0).

    Returns per query head lists (index h) under "d_output", "d_V", "d_softmax",
    "d_scaled", "d_scores", "d_Q", "d_K" (with RoPE also "d_Q_rope", "d_K_rope"),
    where "d_K" and "d_V" are head h's contributions; per K/V head lists (index g)
    "d_K_sum" and "d_V_sum"; and the whole-model "d_WQ", "d_WK", "d_WV", "d_X",
    "d_X_context" (None without a context), "d_concat", "d_projected", "d_WO", "d_bO"
    (None without WO) and "d_bQ", "d_bK", "d_bV", "d_bO" for the biases given. Also
    "forward", naive_block's result, which the gradients were computed from.

    ``magnitudes=True`` computes instead, for each gradient entry, the sum of the
    absolute values of every term that reached it, through the whole chain: the same
    loops on |inputs|, |weights|, |rotation| and the softmax Jacobian with its minus
    turned plus (a·(δ + a)). Float64 rounding of a computation of the same terms in any
    order is bounded by a small multiple of 2⁻⁵³ times that (Higham, "Accuracy and
    Stability of Numerical Algorithms", §3.1), which is what a tolerance scales by.
    """
    biases = biases or {}
    if magnitudes:
        return _magnitudes(
            x,
            wq,
            wk,
            wv,
            heads=heads,
            kv_heads=kv_heads,
            causal=causal,
            context=context,
            wo=wo,
            biases=biases,
            rope_base=rope_base,
            rope_pairing=rope_pairing,
            d_block=d_block,
            d_softmax=d_softmax,
        )
    return _backward(
        x,
        wq,
        wk,
        wv,
        heads=heads,
        kv_heads=kv_heads,
        causal=causal,
        context=context,
        wo=wo,
        biases=biases,
        rope_base=rope_base,
        rope_pairing=rope_pairing,
        d_block=d_block,
        d_softmax=d_softmax,
        forward=None,
        sign=-1.0,
    )


def _magnitudes(
    x: Rows,
    wq: Rows,
    wk: Rows,
    wv: Rows,
    *,
    biases: dict[str, list[float]],
    d_block: Rows | None,
    d_softmax: list[Rows | None] | None,
    **options: Any,
) -> dict[str, Any]:
    """The backward pass on absolute values (see :func:`naive_block_backward`)."""
    forward = naive_block(x, wq, wk, wv, biases=biases, **options)

    def size(rows: Rows | None) -> Rows | None:
        return None if rows is None else [[abs(v) for v in row] for row in rows]

    context, wo, rope_base = options["context"], options["wo"], options["rope_base"]
    heads = options["heads"]
    # |X|·|W| + |b|: the magnitudes of Q, K and V's sums, before RoPE
    sized = naive_block(
        size(x) or [],
        size(wq) or [],
        size(wk) or [],
        size(wv) or [],
        heads=heads,
        kv_heads=options["kv_heads"],
        context=size(context),
        biases={name: [abs(v) for v in b] for name, b in biases.items()},
    )
    magnitude: dict[str, Any] = {"softmax": forward["softmax"]}  # weights are ≥ 0
    for name in ("Q", "K", "V"):
        magnitude[name] = sized[name]
    if rope_base is not None:
        for name in ("Q", "K"):
            magnitude[f"{name}_rope"] = [
                [
                    [
                        sum(abs(r) * v for r, v in zip(turn, row, strict=True))
                        for turn in rope_rotation(len(row), p, rope_base, options["rope_pairing"])
                    ]
                    for p, row in enumerate(rows)
                ]
                for rows in sized[name]
            ]
    outputs = [
        [
            [sum(a[i][j] * v[j][c] for j in range(len(v))) for c in range(len(v[0]))]
            for i in range(len(a))
        ]
        for a, v in zip(forward["softmax"], sized["V"], strict=True)
    ]
    magnitude["concat"] = [[c for h in range(heads) for c in outputs[h][i]] for i in range(len(x))]
    return _backward(
        size(x) or [],
        size(wq) or [],
        size(wk) or [],
        size(wv) or [],
        biases=biases,
        d_block=size(d_block),
        d_softmax=None if d_softmax is None else [size(d) for d in d_softmax],
        forward=magnitude,
        sign=1.0,
        **{**options, "context": size(context), "wo": size(wo)},
    )


def _backward(
    x: Rows,
    wq: Rows,
    wk: Rows,
    wv: Rows,
    *,
    heads: int,
    kv_heads: int | None,
    causal: bool,
    context: Rows | None,
    wo: Rows | None,
    biases: dict[str, list[float]],
    rope_base: float | None,
    rope_pairing: str,
    d_block: Rows | None,
    d_softmax: list[Rows | None] | None,
    forward: dict[str, Any] | None,
    sign: float,
) -> dict[str, Any]:
    """The loops of :func:`naive_block_backward`; ``forward`` (None: computed here) and
    ``sign`` (−1; +1 for the magnitudes) are what the magnitudes replace."""
    kv_heads = heads if kv_heads is None else kv_heads
    group = heads // kv_heads
    keys_in = x if context is None else context
    if forward is None:
        forward = naive_block(
            x,
            wq,
            wk,
            wv,
            heads=heads,
            kv_heads=kv_heads,
            causal=causal,
            context=context,
            wo=wo,
            biases=biases,
            rope_base=rope_base,
            rope_pairing=rope_pairing,
        )
    n, m, d_model = len(x), len(keys_in), len(x[0])
    d_k, d_v = len(wq[0]) // heads, len(wv[0]) // kv_heads
    concat = forward["concat"]
    width = heads * d_v

    # the block's output back to concat
    result: dict[str, Any] = {"forward": forward}
    if wo is not None:
        d_projected = d_block if d_block is not None else zeros(n, d_model)
        d_concat = [
            [sum(d_projected[i][o] * wo[c][o] for o in range(d_model)) for c in range(width)]
            for i in range(n)
        ]
        result["d_WO"] = [
            [sum(concat[i][c] * d_projected[i][o] for i in range(n)) for o in range(d_model)]
            for c in range(width)
        ]
        result["d_bO"] = (
            [sum(d_projected[i][o] for i in range(n)) for o in range(d_model)]
            if "bO" in biases
            else None
        )
        result["d_projected"] = d_projected
    else:
        d_concat = d_block if d_block is not None else zeros(n, width)
        result["d_WO"] = result["d_bO"] = result["d_projected"] = None
    result["d_concat"] = d_concat

    per_head = ("d_output", "d_V", "d_softmax", "d_scaled", "d_scores", "d_Q", "d_K")
    for name in (*per_head, "d_Q_rope", "d_K_rope"):
        result[name] = []
    scale = math.sqrt(d_k)
    for h in range(heads):
        a = forward["softmax"][h]
        v = forward["V"][h]
        q_used = forward["Q_rope" if rope_base is not None else "Q"][h]
        k_used = forward["K_rope" if rope_base is not None else "K"][h]
        d_out = [[d_concat[i][h * d_v + c] for c in range(d_v)] for i in range(n)]
        d_v_h = [
            [sum(a[i][j] * d_out[i][c] for i in range(n)) for c in range(d_v)] for j in range(m)
        ]
        direct = d_softmax[h] if d_softmax is not None else None
        d_a = [
            [
                sum(d_out[i][c] * v[j][c] for c in range(d_v))
                + (direct[i][j] if direct is not None else 0.0)
                for j in range(m)
            ]
            for i in range(n)
        ]
        d_s = zeros(n, m)
        for i in range(n):
            for j in range(m):
                if causal and j > i + (m - n):
                    continue  # a masked score reaches nothing: 0
                jacobian_row = [
                    a[i][j] * ((1.0 if k == j else 0.0) + sign * a[i][k]) for k in range(m)
                ]
                d_s[i][j] = sum(jacobian_row[k] * d_a[i][k] for k in range(m))
        d_sc = [[d_s[i][j] / scale for j in range(m)] for i in range(n)]
        d_q_used = [
            [sum(d_sc[i][j] * k_used[j][c] for j in range(m)) for c in range(d_k)] for i in range(n)
        ]
        d_k_used = [
            [sum(d_sc[i][j] * q_used[i][c] for i in range(n)) for c in range(d_k)] for j in range(m)
        ]
        if rope_base is not None:
            result["d_Q_rope"].append(d_q_used)
            result["d_K_rope"].append(d_k_used)
            d_q = [
                unrotate(row, p, rope_base, rope_pairing, sign) for p, row in enumerate(d_q_used)
            ]
            d_kk = [
                unrotate(row, p, rope_base, rope_pairing, sign) for p, row in enumerate(d_k_used)
            ]
        else:
            d_q, d_kk = d_q_used, d_k_used
        for name, value in zip(per_head, (d_out, d_v_h, d_a, d_s, d_sc, d_q, d_kk), strict=True):
            result[name].append(value)

    # a K/V head's gradient: the sum of its query heads' contributions
    result["d_K_sum"] = [
        [
            [
                sum(result["d_K"][h][j][c] for h in range(g * group, (g + 1) * group))
                for c in range(d_k)
            ]
            for j in range(m)
        ]
        for g in range(kv_heads)
    ]
    result["d_V_sum"] = [
        [
            [
                sum(result["d_V"][h][j][c] for h in range(g * group, (g + 1) * group))
                for c in range(d_v)
            ]
            for j in range(m)
        ]
        for g in range(kv_heads)
    ]

    # whole-model gradients: each head's block of columns, as in the weights
    d_q_full = [
        [result["d_Q"][col // d_k][i][col % d_k] for col in range(heads * d_k)] for i in range(n)
    ]
    d_k_full = [
        [result["d_K_sum"][col // d_k][j][col % d_k] for col in range(kv_heads * d_k)]
        for j in range(m)
    ]
    d_v_full = [
        [result["d_V_sum"][col // d_v][j][col % d_v] for col in range(kv_heads * d_v)]
        for j in range(m)
    ]
    for name, rows_in, grad in (
        ("Q", x, d_q_full),
        ("K", keys_in, d_k_full),
        ("V", keys_in, d_v_full),
    ):
        cols = len(grad[0])
        result[f"d_W{name}"] = [
            [sum(rows_in[i][r] * grad[i][col] for i in range(len(rows_in))) for col in range(cols)]
            for r in range(d_model)
        ]
        if f"b{name}" in biases:
            result[f"d_b{name}"] = [
                sum(grad[i][col] for i in range(len(grad))) for col in range(cols)
            ]

    def back_through(grad: Rows, weight: Rows) -> Rows:  # grad · weightᵀ
        return [
            [
                sum(grad[i][col] * weight[r][col] for col in range(len(weight[0])))
                for r in range(d_model)
            ]
            for i in range(len(grad))
        ]

    from_q = back_through(d_q_full, wq)
    from_k, from_v = back_through(d_k_full, wk), back_through(d_v_full, wv)
    keys_path = [[from_k[j][r] + from_v[j][r] for r in range(d_model)] for j in range(m)]
    if context is None:
        result["d_X"] = [[from_q[i][r] + keys_path[i][r] for r in range(d_model)] for i in range(n)]
        result["d_X_context"] = None
    else:
        result["d_X"] = from_q
        result["d_X_context"] = keys_path
    return result
