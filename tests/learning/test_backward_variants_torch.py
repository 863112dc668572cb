"""The backward pass through the variants against PyTorch's autograd, where torch is
installed: the block with every variant written again in torch (float64), the loss
L = Σ d_block ∘ out + Σₕ d_softmaxₕ ∘ Aₕ, and ``backward()``'s gradients of the weights,
X, q_norm, k_norm and the sink logits against :func:`grad_block`'s. Skipped cleanly
without torch (as tests/learning/test_backward_torch.py is)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from tolerances import BACKWARD_ORACLE
from variant_cases import variant_block

from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import block_output_name, grad_block

torch = pytest.importorskip("torch", reason="PyTorch is not installed: autograd not compared")


def rope(rows: Any, base: float) -> Any:
    n, d = rows.shape
    angles = torch.arange(n, dtype=torch.float64)[:, None] * base ** (
        -torch.arange(0, d, 2, dtype=torch.float64) / d
    )
    cos, sin = torch.cos(angles), torch.sin(angles)
    a, b = rows[:, : d // 2], rows[:, d // 2 :]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=1)


def autograd(
    model: ModelSpec, tokens: list[str], d_block: Any, d_soft: list[Any]
) -> dict[str, Any]:
    v = model.variants
    given = {
        "WQ": model.WQ,
        "WK": model.WK,
        "WV": model.WV,
        "WO": model.WO,
        "X": trace_block(model, tokens)["X"].data,
        "q_norm": v.q_norm,
        "k_norm": v.k_norm,
        "sink": v.sink_logits(model.heads),
    }
    leaf = {
        name: torch.tensor(np.array(value), dtype=torch.float64, requires_grad=True)
        for name, value in given.items()
        if value is not None
    }
    n, d_k, d_v = len(tokens), model.d_k, model.d_v
    group = model.heads // model.n_kv_heads
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    hidden = torch.zeros(n, n, dtype=torch.bool)
    if model.causal:
        hidden = j > i
        if v.window is not None:
            hidden = hidden | ((i - j >= v.window) & (j >= v.sinks))
    X, loss, outs = leaf["X"], torch.zeros((), dtype=torch.float64), []
    for h in range(model.heads):
        g = h // group
        Q = X @ leaf["WQ"][:, h * d_k : (h + 1) * d_k]
        K = X @ leaf["WK"][:, g * d_k : (g + 1) * d_k]
        V = X @ leaf["WV"][:, g * d_v : (g + 1) * d_v]
        if v.qk_norm:  # transformers' Gemma3RMSNorm, the weight multiplied as written
            Q = Q * torch.rsqrt(Q.pow(2).mean(-1, keepdim=True) + v.qk_norm_eps)
            K = K * torch.rsqrt(K.pow(2).mean(-1, keepdim=True) + v.qk_norm_eps)
            Q = Q * leaf["q_norm"] if "q_norm" in leaf else Q
            K = K * leaf["k_norm"] if "k_norm" in leaf else K
        if model.position_kind == "rope":
            Q, K = rope(Q, model.rope_base), rope(K, model.rope_base)
        logits = Q @ K.T / math.sqrt(d_k)
        if model.position_kind == "alibi":
            logits = logits - v.slopes(model.heads)[h] * (i - j).abs().to(torch.float64)
        if v.softcap is not None:
            logits = torch.tanh(logits / v.softcap) * v.softcap
        logits = logits.masked_fill(hidden, -math.inf)
        if "sink" in leaf:  # gpt-oss: one more column, softmaxed, dropped
            column = leaf["sink"][h].reshape(1, 1).expand(n, 1)
            weights = torch.softmax(torch.cat([logits, column], dim=1), dim=1)[:, :n]
        else:
            weights = torch.softmax(logits, dim=1)
        loss = loss + (d_soft[h] * weights).sum()
        outs.append(weights @ V)
    block = outs[0] if model.heads == 1 else torch.cat(outs, dim=1)
    if "WO" in leaf:
        block = block @ leaf["WO"]
    (loss + (d_block * block).sum()).backward()
    return {name: tensor.grad.numpy() for name, tensor in leaf.items()}


ALL_ON = {
    "causal": True,
    "window": True,
    "qk_norm": True,
    "weighted": True,
    "softcap": True,
    "sink": True,
}


@pytest.mark.parametrize(
    ("seed", "fixed"),
    [(seed, {}) for seed in range(12)]
    + [(seed, {**ALL_ON, "positions": kind}) for seed in range(2) for kind in ("rope", "alibi")],
)
def test_every_variant_gradient_matches_torch_autograd(seed: int, fixed: dict[str, Any]) -> None:
    model, tokens = variant_block(seed, **fixed)
    rng = np.random.default_rng(seed)
    d_block = rng.normal(size=trace_block(model, tokens)[block_output_name(model)].shape)
    d_soft = [rng.normal(size=(len(tokens), len(tokens))) for _ in range(model.heads)]
    ours = grad_block(model, tokens, d_output=d_block, d_softmax=d_soft)
    theirs = autograd(model, tokens, torch.tensor(d_block), [torch.tensor(d) for d in d_soft])
    pairs = {
        "WQ": ours.d_WQ,
        "WK": ours.d_WK,
        "WV": ours.d_WV,
        "WO": ours.d_WO,
        "X": ours.d_X,
        "q_norm": ours.d_q_norm,
        "k_norm": ours.d_k_norm,
    }
    if "sink" in theirs:
        pairs["sink"] = np.array([hg.d_sink_logit[0, 0] for hg in ours.heads])  # type: ignore[index]
    assert set(theirs) == {name for name, value in pairs.items() if value is not None}
    for name, expected in theirs.items():
        got = pairs[name]
        assert got is not None
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(
            got, expected, rtol=0, atol=BACKWARD_ORACLE * scale, err_msg=name
        )
