"""Random blocks with the variants of docs/variants.md, and their forward pass written
again with loops (its own RMSNorm, RoPE as rotation matrices, ALiBi's −m·|i − j|, the
cap, the window's rule j ≤ i and i − j < N with the sinks j < S kept, the sink's one
more term in the softmax's denominator), perturbable at any intermediate: the oracle of
tests/learning/test_backward_variants.py, test_train_variants.py and test_check_variants.py.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.variants import Variants

Array = npt.NDArray[np.float64]
Point = tuple[str, int]  # where a perturbation is added: ("capped", head)


@functools.cache
def rotation(position: int, width: int, base: float) -> Array:
    """RoPE at ``position`` as a width × width matrix (i paired with i + width/2)."""
    turn = np.eye(width)
    for i in range(width // 2):
        angle = position * base ** (-2 * i / width)
        a, b = i, i + width // 2
        turn[a, a], turn[a, b] = math.cos(angle), -math.sin(angle)
        turn[b, a], turn[b, b] = math.sin(angle), math.cos(angle)
    return turn


def variant_block(seed: int, **fixed: Any) -> tuple[ModelSpec, list[str]]:
    """A random self-attention block with each variant on or off (or as ``fixed`` says)."""
    rng = np.random.default_rng(seed)

    def pick(name: str) -> bool:
        return bool(fixed.get(name, bool(rng.integers(0, 2))))

    heads = int(rng.choice([1, 2, 4]))
    kv_heads = int(rng.choice([k for k in (1, 2, 4) if heads % k == 0]))
    d_model, d_v = (int(x) for x in rng.integers(1, 5, size=2))
    d_k = 2 * int(rng.integers(1, 3))
    positions = str(fixed.get("positions", rng.choice(["none", "rope", "alibi"])))
    causal = pick("causal") or pick("window")
    window = int(rng.integers(1, 4)) if causal and pick("window") else None
    sinks = int(rng.integers(0, 2)) if window is not None else 0
    qk_norm = pick("qk_norm")
    weighted = qk_norm and pick("weighted")
    variants = Variants(
        window=window,
        sinks=sinks,
        qk_norm=qk_norm,
        q_norm=rng.normal(size=d_k) if weighted else None,
        k_norm=rng.normal(size=d_k) if weighted else None,
        qk_norm_eps=float(rng.choice([1e-6, 0.1])),
        softcap=float(rng.uniform(0.5, 3.0)) if pick("softcap") else None,
        sink_logit=[float(x) for x in rng.normal(size=heads)] if pick("sink") else None,
    )
    vocab = {f"t{i}": rng.normal(size=d_model) for i in range(6)}
    model = ModelSpec(
        vocab,
        rng.normal(size=(d_model, heads * d_k)),
        rng.normal(size=(d_model, kv_heads * d_k)),
        rng.normal(size=(d_model, kv_heads * d_v)),
        WO=rng.normal(size=(heads * d_v, d_model)) if pick("wo") else None,
        heads=heads,
        kv_heads=kv_heads,
        causal=causal,
        positions=None if positions == "none" else positions,
        rope_base=10.0,
        variants=variants,
    )
    tokens = [f"t{int(i)}" for i in rng.integers(0, 6, size=int(rng.integers(1, 6)))]
    return model, tokens


def naive_forward(
    model: ModelSpec, p: dict[str, Any], bump: dict[Point, Array]
) -> tuple[Array, list[Array]]:
    """The block output and each head's softmax, computed cell by cell."""

    def at(name: str, head: int, value: Array) -> Array:
        return value + bump[(name, head)] if (name, head) in bump else value

    v = model.variants
    d_k, d_v, group = model.d_k, model.d_v, model.heads // model.n_kv_heads
    X = p["X"]
    n = len(X)
    slopes = v.slopes(model.heads)
    outputs, softmaxes = [], []
    for h in range(model.heads):
        g = h // group

        def project(name: str, index: int, width: int) -> Array:
            cols = slice(index * width, (index + 1) * width)
            bias = p.get("b" + name[1])
            out: Array = X @ p[name][:, cols]
            return out if bias is None else out + bias[cols]

        Q = at("Q", h, project("WQ", h, d_k))
        K = at("K", h, project("WK", g, d_k))
        V = project("WV", g, d_v)
        if v.qk_norm:
            normed = []
            for rows, weight in ((Q, p["q_norm"]), (K, p["k_norm"])):
                out = np.zeros_like(rows)
                for i in range(n):
                    rms = math.sqrt(sum(x * x for x in rows[i]) / d_k + v.qk_norm_eps)
                    for c in range(d_k):
                        out[i, c] = rows[i, c] / rms * (1.0 if weight is None else weight[c])
                normed.append(out)
            Q, K = at("Q_norm", h, normed[0]), at("K_norm", h, normed[1])
        if model.position_kind == "rope":
            base = model.rope_base
            Q = at("Q_rope", h, np.stack([rotation(i, d_k, base) @ Q[i] for i in range(n)]))
            K = at("K_rope", h, np.stack([rotation(j, d_k, base) @ K[j] for j in range(n)]))
        scaled = at("scaled", h, at("scores", h, Q @ K.T) / math.sqrt(d_k))
        logits = scaled.copy()
        if model.position_kind == "alibi":
            bias = np.array([[-slopes[h] * abs(i - j) for j in range(n)] for i in range(n)])
            logits = at("biased", h, logits + bias)
        if v.softcap is not None:
            logits = at("capped", h, v.softcap * np.tanh(logits / v.softcap))
        sink = None if p["sink_logit"] is None else p["sink_logit"][h]
        weights = np.zeros((n, n))
        for i in range(n):
            seen = [
                j
                for j in range(n)
                if not model.causal
                or (j <= i and (v.window is None or i - j < v.window or j < v.sinks))
            ]
            top = max([logits[i, j] for j in seen] + ([] if sink is None else [sink]))
            total = sum(math.exp(logits[i, j] - top) for j in seen)
            total += 0.0 if sink is None else math.exp(sink - top)
            for j in seen:
                weights[i, j] = math.exp(logits[i, j] - top) / total
        weights = at("softmax", h, weights)
        softmaxes.append(weights)
        outputs.append(weights @ V)
    block = outputs[0] if model.heads == 1 else np.concatenate(outputs, 1)
    if p["WO"] is not None:
        block = block @ p["WO"] + (0 if p.get("bO") is None else p["bO"])
    return block, softmaxes


def params(model: ModelSpec, tokens: list[str]) -> dict[str, Any]:
    v = model.variants
    sinks = v.sink_logits(model.heads)
    return {
        "WQ": model.WQ,
        "WK": model.WK,
        "WV": model.WV,
        "WO": model.WO,
        "X": trace_block(model, tokens)["X"].data,
        "q_norm": v.q_norm,
        "k_norm": v.k_norm,
        "sink_logit": None if sinks is None else np.array(sinks),
        **{name: model.bias(name) for name in ("bQ", "bK", "bV", "bO")},
    }
