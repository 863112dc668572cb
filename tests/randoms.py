"""Random attention blocks for property tests: every shape, option and position kind."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from attntrace.kernel.spec import ModelSpec


def random_block(seed: int, **fixed: Any) -> tuple[ModelSpec, list[str], list[str] | None]:
    rng = np.random.default_rng(seed)
    heads = fixed.get("heads", int(rng.choice([1, 2, 3, 4])))
    divisors = [k for k in range(1, heads + 1) if heads % k == 0]
    kv_heads = fixed.get("kv_heads", int(rng.choice(divisors)))
    d_model, d_k, d_v = (int(x) for x in rng.integers(1, 6, size=3))
    cross = fixed.get("cross", bool(rng.integers(0, 2)))
    causal = fixed.get("causal", (not cross) and bool(rng.integers(0, 2)))
    with_wo = fixed.get("wo", bool(rng.integers(0, 2)))
    with_rope = fixed.get("rope", (not cross) and bool(rng.integers(0, 2)))  # one sequence
    if with_rope:
        d_k = 2 * (d_k // 2 + 1)  # RoPE turns pairs of dimensions
    vocab = {f"t{i}": rng.normal(size=d_model) for i in range(6)}
    widths = {"bQ": heads * d_k, "bK": kv_heads * d_k, "bV": kv_heads * d_v, "bO": d_model}
    biases = {
        name: rng.normal(size=width)
        for name, width in widths.items()
        if fixed.get("biases", bool(rng.integers(0, 2))) and (name != "bO" or with_wo)
    }
    model = ModelSpec(
        vocab,
        rng.normal(size=(d_model, heads * d_k)),
        rng.normal(size=(d_model, kv_heads * d_k)),
        rng.normal(size=(d_model, kv_heads * d_v)),
        WO=rng.normal(size=(heads * d_v, d_model)) if with_wo else None,
        heads=heads,
        kv_heads=kv_heads,
        causal=causal,
        context="x" if cross else None,
        biases=biases,
        positions="rope" if with_rope else None,
        rope_base=float(rng.choice([10.0, 10000.0])),
    )
    n, m = (int(x) for x in rng.integers(1, 7, size=2))
    tokens = [f"t{int(i)}" for i in rng.integers(0, 6, size=n)]
    context = [f"t{int(i)}" for i in rng.integers(0, 6, size=m)] if cross else None
    # drawn last, so that each seed's other draws are what they were before it existed
    pairing = fixed.get("rope_pairing", str(rng.choice(["half", "interleaved"])))
    if with_rope and pairing != "half":
        model = replace(model, rope_pairing=pairing)
    return model, tokens, context
