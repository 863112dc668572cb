"""The attention variants of docs/variants.md, a second time, with plain loops and floats.

Written from that page (the contract) and issue 17 alone, before reading how attntrace
computes them (attntrace/kernel/ops.py, masks.py, attention.py): a sliding window (itself
and the N − 1 keys before it), attention sinks, ALiBi (Press et al. 2022), QK-norm
(RMSNorm of each query and key row), logit soft-capping and a learned sink logit. Nothing
here calls attntrace or numpy: lists of floats, ``math.exp``, ``math.tanh``, ``math.fsum``
and loops, so that a test compares two implementations, not the code with itself.

Every stage is returned under the contract's name (docs/variants.md, "The order of a
head's stages"), in its order; a stage whose option is off is absent, as it is absent
from a trace.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from naive import Rows, add_bias, matmul, rotate, rotate_interleaved

if TYPE_CHECKING:
    from attntrace.kernel.spec import ModelSpec

# The contract's order of a head's stages, every option on.
ORDER = (
    "Q",
    "K",
    "V",
    "Q_norm",
    "K_norm",
    "Q_rope",
    "K_rope",
    "scores",
    "scaled",
    "alibi",
    "biased",
    "capped",
    "masked",
    "softmax",
    "sink",
    "output",
)


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's slope of each head (0-based h of H), by the paper's rule.

    Press, Smith and Lewis 2022, *Train Short, Test Long*, section 3: for H heads, a power
    of two, the slopes are the geometric sequence that starts at 2^(−8/H) with ratio
    2^(−8/H): m_h = 2^(−8(h + 1)/H) (8 heads: 1/2 … 1/256). Otherwise (the authors' code,
    ``get_slopes`` in ofirpress/attention_with_linear_biases, fairseq/models/transformer.py,
    and BLOOM's ``build_alibi_tensor``): with P the largest power of two below H, the P
    slopes of P heads, then every other slope of 2P heads, from the first: the slopes of 2P
    heads are 2^(−8(i + 1)/2P) = 2^(−4(i + 1)/P), and i = 2k gives 2^(−4(2k + 1)/P) for
    k = 0 … H − P − 1.
    """
    assert heads >= 1
    if heads & (heads - 1) == 0:
        return [2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)]
    p = 1
    while 2 * p < heads:
        p *= 2
    return alibi_slopes(p) + [2.0 ** (-4.0 * (2 * k + 1) / p) for k in range(heads - p)]


def visible(i: int, j: int, *, causal: bool, window: int | None, sinks: int) -> bool:
    """Whether the query at position i may look at the key at position j.

    docs/variants.md, ``window`` and ``sinks``: ``j ≤ i and (i − j < N or j < S)``; without
    a window, ``j ≤ i`` (causal) or every key (not causal).
    """
    if not causal:
        return True
    if j > i:
        return False
    return window is None or i - j < window or j < sinks


def hidden_reason(i: int, j: int, *, window: int | None, sinks: int) -> str | None:
    """Why a causal (windowed) mask hides key j from query i: the contract's words for
    ``--focus`` (``the future``, ``out of the window``), or None where it is seen."""
    if j > i:
        return "the future"
    if window is not None and i - j >= window and j >= sinks:
        return "out of the window"
    return None


def rms_norm(row: list[float], weight: list[float] | None, eps: float) -> list[float]:
    """QK-norm of one row (docs/variants.md, ``qk_norm``): row / √(mean(row²) + ε), times
    the weight as written (1 where there is none)."""
    mean_square = math.fsum(x * x for x in row) / len(row)
    scale = 1.0 / math.sqrt(mean_square + eps)
    weights = weight if weight is not None else [1.0] * len(row)
    return [x * scale * w for x, w in zip(row, weights, strict=True)]


def softmax_with_sink(row: list[float], sink_logit: float | None) -> tuple[list[float], float]:
    """A row's softmax, the −∞ cells 0, and the weight the sink logit takes (0 without one).

    docs/variants.md, ``sink_logit``: M = max(max_k x_k, s); each weight is
    exp(x_j − M) / (Σ_k exp(x_k − M) + exp(s − M)) and the sink exp(s − M) over the same.
    """
    finite = [x for x in row if x != -math.inf]
    top = max(finite) if sink_logit is None else max([*finite, sink_logit])
    exps = [0.0 if x == -math.inf else math.exp(x - top) for x in row]
    sink_exp = 0.0 if sink_logit is None else math.exp(sink_logit - top)
    total = math.fsum([*exps, sink_exp])
    return [e / total for e in exps], sink_exp / total


def naive_variant_head(
    q: Rows,
    k: Rows,
    v: Rows,
    *,
    query_positions: list[int] | None = None,
    causal: bool = False,
    window: int | None = None,
    sinks: int = 0,
    slope: float | None = None,
    qk_norm: bool = False,
    q_norm: list[float] | None = None,
    k_norm: list[float] | None = None,
    eps: float = 1e-6,
    rope_base: float | None = None,
    rope_pairing: str = "half",
    softcap: float | None = None,
    sink_logit: float | None = None,
) -> dict[str, Rows]:
    """One head's stages, from its Q, K, V rows, in the contract's order.

    Keys sit at positions 0 … m − 1; queries at ``query_positions`` (by default the last n
    of those, as a causal trace's and a decode step's queries are). ``slope`` turns ALiBi
    on (the head's m_h).
    """
    n, m = len(q), len(k)
    positions = query_positions if query_positions is not None else list(range(m - n, m))
    d_k = len(k[0]) if k else len(q[0])
    stages: dict[str, Rows] = {"Q": q, "K": k, "V": v}
    if qk_norm:
        q = [rms_norm(row, q_norm, eps) for row in q]
        k = [rms_norm(row, k_norm, eps) for row in k]
        stages["Q_norm"], stages["K_norm"] = q, k
    if rope_base is not None:
        turn = rotate_interleaved if rope_pairing == "interleaved" else rotate
        q = [turn(row, p, rope_base) for p, row in zip(positions, q, strict=True)]
        k = [turn(row, p, rope_base) for p, row in enumerate(k)]
        stages["Q_rope"], stages["K_rope"] = q, k
    scores = [
        [math.fsum(a * b for a, b in zip(q[i], k[j], strict=True)) for j in range(m)]
        for i in range(n)
    ]
    stages["scores"] = scores
    current = [[s / math.sqrt(d_k) for s in row] for row in scores]
    stages["scaled"] = current
    if slope is not None:
        bias = [[-slope * abs(positions[i] - j) for j in range(m)] for i in range(n)]
        current = [
            [s + b for s, b in zip(row, brow, strict=True)]
            for row, brow in zip(current, bias, strict=True)
        ]
        stages["alibi"], stages["biased"] = bias, current
    if softcap is not None:
        current = [[softcap * math.tanh(s / softcap) for s in row] for row in current]
        stages["capped"] = current
    if causal:
        current = [
            [
                s
                if visible(positions[i], j, causal=True, window=window, sinks=sinks)
                else -math.inf
                for j, s in enumerate(row)
            ]
            for i, row in enumerate(current)
        ]
        stages["masked"] = current
    weights: Rows = []
    sink: Rows = []
    for row in current:
        w, s = softmax_with_sink(row, sink_logit)
        weights.append(w)
        sink.append([s])
    stages["softmax"] = weights
    if sink_logit is not None:
        stages["sink"] = sink
    d_v = len(v[0]) if v else 0
    stages["output"] = [
        [math.fsum(weights[i][j] * v[j][c] for j in range(m)) for c in range(d_v)] for i in range(n)
    ]
    return stages


def naive_variant_block(
    x: Rows,
    wq: Rows,
    wk: Rows,
    wv: Rows,
    *,
    heads: int = 1,
    kv_heads: int | None = None,
    biases: dict[str, list[float]] | None = None,
    wo: Rows | None = None,
    causal: bool = False,
    window: int | None = None,
    sinks: int = 0,
    alibi: bool = False,
    slopes: list[float] | None = None,
    qk_norm: bool = False,
    q_norm: list[float] | None = None,
    k_norm: list[float] | None = None,
    eps: float = 1e-6,
    rope_base: float | None = None,
    rope_pairing: str = "half",
    softcap: float | None = None,
    sink_logit: float | list[float] | None = None,
) -> dict[str, Any]:
    """A self-attention block head by head: each stage a list over heads (index = head),
    plus "concat" and "projected" (None without ``wo``).

    ``alibi`` turns ALiBi on with the rule's slopes, or ``slopes`` (one per head) when
    given; ``sink_logit`` is one number for every head or one per head; ``q_norm`` and
    ``k_norm`` are shared by every head (docs/variants.md: as Gemma 3's are).
    """
    biases = biases or {}
    kv_heads = heads if kv_heads is None else kv_heads
    d_k = len(wq[0]) // heads
    d_v = len(wv[0]) // kv_heads
    q_all = add_bias(matmul(x, wq), biases.get("bQ"))
    k_all = add_bias(matmul(x, wk), biases.get("bK"))
    v_all = add_bias(matmul(x, wv), biases.get("bV"))
    head_slopes = (slopes if slopes is not None else alibi_slopes(heads)) if alibi else None
    logits = [sink_logit] * heads if isinstance(sink_logit, (int, float)) else sink_logit
    result: dict[str, Any] = {}
    for h in range(heads):
        g = h // (heads // kv_heads)  # the K/V head that query head h reads
        stages = naive_variant_head(
            [row[h * d_k : (h + 1) * d_k] for row in q_all],
            [row[g * d_k : (g + 1) * d_k] for row in k_all],
            [row[g * d_v : (g + 1) * d_v] for row in v_all],
            causal=causal,
            window=window,
            sinks=sinks,
            slope=None if head_slopes is None else head_slopes[h],
            qk_norm=qk_norm,
            q_norm=q_norm,
            k_norm=k_norm,
            eps=eps,
            rope_base=rope_base,
            rope_pairing=rope_pairing,
            softcap=softcap,
            sink_logit=None if logits is None else float(logits[h]),
        )
        for name, value in stages.items():
            result.setdefault(name, []).append(value)
    n = len(x)
    result["concat"] = [[c for h in range(heads) for c in result["output"][h][i]] for i in range(n)]
    result["projected"] = (
        add_bias(matmul(result["concat"], wo), biases.get("bO")) if wo is not None else None
    )
    return result


def naive_block_of(model: ModelSpec, x: Rows) -> dict[str, Any]:
    """:func:`naive_variant_block` over ``model``'s own matrices and options (read from
    the model, nothing the trace computed), from ``x``."""
    v = model.variants
    return naive_variant_block(
        x,
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        biases={name: list(b) for name, b in model.biases.items()},
        wo=None if model.WO is None else model.WO.tolist(),
        causal=model.causal,
        window=v.window,
        sinks=v.sinks,
        alibi=model.position_kind == "alibi",
        slopes=None if v.alibi_slopes is None else list(v.alibi_slopes),
        qk_norm=v.qk_norm,
        q_norm=None if v.q_norm is None else v.q_norm.tolist(),
        k_norm=None if v.k_norm is None else v.k_norm.tolist(),
        eps=v.qk_norm_eps,
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
        softcap=v.softcap,
        sink_logit=v.sink_logit
        if v.sink_logit is None or isinstance(v.sink_logit, float)
        else list(v.sink_logit),
    )
