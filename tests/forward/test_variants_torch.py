"""The attention variants against PyTorch's scaled_dot_product_attention, where installed.

SDPA takes a mask either as booleans (True where a key *takes part*: the opposite of
attntrace's ``hidden``) or as a float added to the scaled scores. ALiBi is such a float
(−m_h·|i − j|, Press et al. 2022), a sliding window such a boolean mask (transformers'
``sliding_window_overlay``: ``kv_idx > q_idx − sliding_window``), and the two together a
float mask with −∞ outside the window. A sink logit is SDPA over one more key whose K and
V rows are zero: its scaled score is 0, the float mask adds s_h to it, and its value adds
nothing, so the output is the sink softmax's (docs/variants.md, ``sink_logit``).

Each is held to tests/naive_variants.py's loops, and to attntrace's trace, in float64
(tolerances.FLOAT64, as the plain SDPA test in test_attention_block.py is). Skipped
cleanly without torch.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from naive_variants import alibi_slopes, naive_variant_head, visible
from randoms import random_block
from tolerances import FLOAT64

from attntrace.forward.attention import trace_block
from attntrace.kernel.variants import Variants

torch = pytest.importorskip("torch", reason="PyTorch is not installed: SDPA not compared")


def _sdpa(q: Any, k: Any, v: Any, mask: Any) -> Any:
    """SDPA of one head: [n, d] tensors in, [n, d_v] out."""
    attend = torch.nn.functional.scaled_dot_product_attention
    return attend(q[None, None], k[None, None], v[None, None], attn_mask=mask)[0, 0]


def _allowed(n: int, window: int | None, sinks: int) -> Any:
    """SDPA's boolean mask (True where a key takes part), built from the contract's rule
    with torch's own index arithmetic, not from the oracle's ``visible``."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    allowed = j <= i
    if window is not None:
        allowed = allowed & ((i - j < window) | (j < sinks))
    return allowed


def _alibi(n: int, slope: float) -> Any:
    """ALiBi's float bias as BLOOM and the paper's code build it, in torch: −m·|i − j|."""
    i = torch.arange(n, dtype=torch.float64)[:, None]
    j = torch.arange(n, dtype=torch.float64)[None, :]
    return -slope * (i - j).abs()


CASES = [
    # (n, window, sinks, alibi heads or None, sink logit)
    (6, 1, 0, None, None),
    (6, 2, 0, None, None),
    (7, 3, 2, None, None),
    (5, 9, 0, None, None),
    (6, None, 0, 8, None),
    (6, 3, 0, 3, None),
    (7, 2, 1, 6, None),
    (6, None, 0, None, 0.0),
    (6, 2, 1, 4, 1.5),
    (5, 4, 0, None, -2.0),
]


@pytest.mark.parametrize(("n", "window", "sinks", "alibi_heads", "sink"), CASES)
@pytest.mark.parametrize("seed", range(3))
def test_sdpa_with_alibi_and_windowed_masks_agrees_with_the_loops(
    seed: int, n: int, window: int | None, sinks: int, alibi_heads: int | None, sink: float | None
) -> None:
    rng = np.random.default_rng(seed)
    d_k, d_v = 4, 3
    q, k, v = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))
    heads = alibi_heads or 1
    for h, slope in enumerate(alibi_slopes(heads) if alibi_heads else [None]):
        loops = naive_variant_head(
            q.tolist(),
            k.tolist(),
            v.tolist(),
            causal=True,
            window=window,
            sinks=sinks,
            slope=slope,
            sink_logit=sink,
        )
        allowed = _allowed(n, window, sinks)
        tq, tk, tv = (torch.tensor(a) for a in (q, k, v))
        if slope is None and sink is None:
            mask: Any = allowed  # the boolean form
        else:
            bias = _alibi(n, slope) if slope is not None else torch.zeros(n, n, dtype=torch.float64)
            mask = bias.masked_fill(~allowed, float("-inf"))
        if sink is not None:  # one more key, K = V = 0, its score 0 + s
            tk = torch.cat([tk, torch.zeros(1, d_k, dtype=torch.float64)])
            tv = torch.cat([tv, torch.zeros(1, d_v, dtype=torch.float64)])
            mask = torch.cat([mask, torch.full((n, 1), sink, dtype=torch.float64)], dim=1)
        out = _sdpa(tq, tk, tv, mask).numpy()
        np.testing.assert_allclose(out, loops["output"], **FLOAT64, err_msg=f"head {h}")


def test_the_boolean_window_is_the_loops_visibility() -> None:
    """The torch mask above and the oracle's ``visible`` are the same rule, cell by cell."""
    for n in range(1, 12):
        for window in (None, 1, 2, 3, 5, 11):
            for sinks in range(0, 4) if window else (0,):
                allowed = _allowed(n, window, sinks).tolist()
                expected = [
                    [visible(i, j, causal=True, window=window, sinks=sinks) for j in range(n)]
                    for i in range(n)
                ]
                assert allowed == expected, (n, window, sinks)


TRACE_CASES = [
    # (heads, kv_heads, window, sinks, alibi, sink logit)
    (1, 1, 2, 0, False, None),
    (2, 1, 3, 1, False, None),
    (4, 2, None, 0, True, None),
    (3, 1, 2, 0, True, None),
    (4, 4, 3, 2, True, 0.5),
    (2, 2, None, 0, False, -1.0),
]


@pytest.mark.parametrize(("heads", "kv_heads", "window", "sinks", "alibi", "sink"), TRACE_CASES)
@pytest.mark.parametrize("seed", range(3))
def test_sdpa_agrees_with_the_trace(
    seed: int,
    heads: int,
    kv_heads: int,
    window: int | None,
    sinks: int,
    alibi: bool,
    sink: float | None,
) -> None:
    model, _, _ = random_block(
        seed, cross=False, causal=True, rope=False, biases=False, heads=heads, kv_heads=kv_heads
    )
    model = replace(
        model,
        positions="alibi" if alibi else model.positions,
        variants=Variants(window=window, sinks=sinks, sink_logit=sink),
    )
    tokens = [f"t{i % 6}" for i in range(7)]
    trace = trace_block(model, tokens)
    n = len(tokens)
    x = np.stack([model.embeddings[t] for t in tokens])
    q_all, k_all, v_all = x @ model.WQ, x @ model.WK, x @ model.WV
    d_k, d_v = model.d_k, model.d_v
    slopes = alibi_slopes(heads)
    for h in range(heads):
        g = h // (heads // kv_heads)
        tq = torch.tensor(q_all[:, h * d_k : (h + 1) * d_k])
        tk = torch.tensor(k_all[:, g * d_k : (g + 1) * d_k])
        tv = torch.tensor(v_all[:, g * d_v : (g + 1) * d_v])
        allowed = _allowed(n, window, sinks)
        bias = _alibi(n, slopes[h]) if alibi else torch.zeros(n, n, dtype=torch.float64)
        mask = bias.masked_fill(~allowed, float("-inf"))
        if sink is not None:
            tk = torch.cat([tk, torch.zeros(1, d_k, dtype=torch.float64)])
            tv = torch.cat([tv, torch.zeros(1, d_v, dtype=torch.float64)])
            mask = torch.cat([mask, torch.full((n, 1), sink, dtype=torch.float64)], dim=1)
        out = _sdpa(tq, tk, tv, mask).numpy()
        np.testing.assert_allclose(
            trace.stage("output", head=h).data, out, **FLOAT64, err_msg=f"head {h}"
        )
