"""The backward pass against PyTorch's autograd, where torch is installed.

The block is written again in torch (float64 tensors, every option: heads, GQA/MQA,
causal, cross-attention, RoPE in both pairings, biases, WO, positions), the loss is
L = Σ d_block ∘ out + Σₕ d_softmaxₕ ∘ Aₕ (or the attend and mse losses as the contract
writes them), and ``backward()`` fills every intermediate's ``.grad``: each must equal
``grad_block``'s (and ``grad_trace``'s stage) within tolerances.BACKWARD_ORACLE of the
magnitude of the terms summed (tests/naive_backward.py's magnitudes). Skipped cleanly
without torch, as the SDPA test is.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from backward_cases import (
    FIXED,
    assert_equal,
    attend_objective,
    fixed_model,
    loss_upstream,
    oracle,
    oracle_stage,
    random_upstream,
    rows_of,
    upstream_magnitude,
    with_target,
)
from tolerances import BACKWARD_ORACLE

from attntrace.kernel.spec import ModelSpec
from attntrace.learning.backward import grad_block
from attntrace.learning.grad_trace import grad_trace
from attntrace.learning.objective import Objective

torch = pytest.importorskip("torch", reason="PyTorch is not installed: autograd not compared")


def turned(torch: Any, rows: Any, base: float, pairing: str) -> Any:
    """RoPE in torch: each row's pairs turned by position · base^(−2i/d)."""
    n, d = rows.shape
    angles = torch.arange(n, dtype=torch.float64)[:, None] * base ** (
        -torch.arange(0, d, 2, dtype=torch.float64) / d
    )
    cos, sin = torch.cos(angles), torch.sin(angles)
    if pairing == "half":
        a, b = rows[:, : d // 2], rows[:, d // 2 :]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=1)
    a, b = rows[:, 0::2], rows[:, 1::2]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=2).reshape(n, d)


def autograd(
    model: ModelSpec,
    tokens: list[str],
    context: list[str] | None,
    loss_of: Any,
) -> dict[str, Any]:
    """The block in torch, L = loss_of(out, weights per head), and every .grad."""
    leaf = {"X": torch.tensor(rows_of(model, tokens), dtype=torch.float64, requires_grad=True)}
    if context:
        leaf["X_context"] = torch.tensor(
            rows_of(model, context), dtype=torch.float64, requires_grad=True
        )
    for name in ("WQ", "WK", "WV", "WO"):
        if getattr(model, name) is not None:
            leaf[name] = torch.tensor(getattr(model, name), requires_grad=True)
    for name, vector in model.biases.items():
        leaf[name] = torch.tensor(vector, requires_grad=True)
    keys_in = leaf.get("X_context", leaf["X"])

    def project(rows: Any, name: str, bias: str) -> Any:
        out = rows @ leaf[name]
        return out + leaf[bias] if bias in leaf else out

    full = {
        "Q": project(leaf["X"], "WQ", "bQ"),
        "K": project(keys_in, "WK", "bK"),
        "V": project(keys_in, "WV", "bV"),
    }
    for value in full.values():
        value.retain_grad()
    d_k, d_v, group = model.d_k, model.d_v, model.group
    n, m = len(tokens), len(context or tokens)
    kept: dict[str, list[Any]] = {}

    def keep(name: str, tensor: Any) -> Any:
        tensor.retain_grad()
        kept.setdefault(name, []).append(tensor)
        return tensor

    outputs, weights = [], []
    hidden = torch.triu(torch.ones(n, m, dtype=torch.bool), diagonal=1 + m - n)
    for h in range(model.heads):
        g = h // group
        q = keep("Q", full["Q"][:, h * d_k : (h + 1) * d_k])
        k = keep("K", full["K"][:, g * d_k : (g + 1) * d_k])
        v = keep("V", full["V"][:, g * d_v : (g + 1) * d_v])
        if model.position_kind == "rope":
            q = keep("Q_rope", turned(torch, q, model.rope_base, model.rope_pairing))
            k = keep("K_rope", turned(torch, k, model.rope_base, model.rope_pairing))
        scores = keep("scores", q @ k.T)
        scaled = keep("scaled", scores / math.sqrt(d_k))
        masked = scaled.masked_fill(hidden, -math.inf) if model.causal else scaled
        a = keep("softmax", torch.softmax(masked, dim=-1))
        outputs.append(keep("output", a @ v))
        weights.append(a)
    concat = torch.cat(outputs, dim=1)
    concat.retain_grad()
    out = concat
    if "WO" in leaf:
        out = concat @ leaf["WO"] + leaf.get("bO", 0)
        out.retain_grad()
    loss = loss_of(out, weights)
    loss.backward()
    grads = {name: grad_of(tensor) for name, tensor in leaf.items()}
    grads.update({f"{name}_full": grad_of(tensor) for name, tensor in full.items()})
    for name, tensors in kept.items():
        grads[name] = [grad_of(t) for t in tensors]
    grads["concat"], grads["out"], grads["loss"] = grad_of(concat), grad_of(out), loss.item()
    return grads


def grad_of(tensor: Any) -> Any:
    """A tensor's .grad; zeros where no path reaches the loss (V under the attend loss)."""
    return np.zeros(tuple(tensor.shape)) if tensor.grad is None else tensor.grad.numpy()


def linear_loss(d_block: Any, d_softmax: Any) -> Any:
    def loss_of(out: Any, weights: list[Any]) -> Any:
        total = (
            (out * torch.tensor(d_block, dtype=torch.float64)).sum()
            if d_block is not None
            else out.sum() * 0
        )
        for a, d in zip(weights, d_softmax or [None] * len(weights), strict=True):
            if d is not None:
                total = total + (a * torch.tensor(d, dtype=torch.float64)).sum()
        return total

    return loss_of


HEAD_NAMES = {
    "d_output": "output",
    "d_V": "V",
    "d_softmax": "softmax",
    "d_scaled": "scaled",
    "d_scores": "scores",
    "d_Q": "Q",
    "d_K": "K",
}


@pytest.mark.parametrize("kind", ["block", "softmax", "both"])
@pytest.mark.parametrize("index", range(len(FIXED)))
def test_grad_block_is_autograds(index: int, kind: str) -> None:
    for seed in range(2):
        model, tokens, context = fixed_model(index, seed)
        d_block, d_softmax = random_upstream(model, tokens, context, seed, kind)
        found = grad_block(
            model,
            tokens,
            context,
            d_output=None if d_block is None else np.array(d_block),
            d_softmax=None
            if d_softmax is None
            else [None if d is None else np.array(d) for d in d_softmax],
        )
        torch_grads = autograd(model, tokens, context, linear_loss(d_block, d_softmax))
        size = oracle(model, tokens, context, d_block, d_softmax, magnitudes=True)
        for h, head in enumerate(found.heads):
            for name, forward in HEAD_NAMES.items():
                assert_equal(
                    getattr(head, name), torch_grads[forward][h], size[name][h], f"head {h} {name}"
                )
            if model.position_kind == "rope":
                for name in ("d_Q_rope", "d_K_rope"):
                    assert_equal(
                        getattr(head, name),
                        torch_grads[name[2:]][h],
                        size[name][h],
                        f"head {h} {name}",
                    )
        for g, kv in enumerate(found.kv_heads):
            d_k, d_v = model.d_k, model.d_v
            assert_equal(
                kv.d_K,
                torch_grads["K_full"][:, g * d_k : (g + 1) * d_k],
                size["d_K_sum"][g],
                f"K/V head {g} d_K",
            )
            assert_equal(
                kv.d_V,
                torch_grads["V_full"][:, g * d_v : (g + 1) * d_v],
                size["d_V_sum"][g],
                f"K/V head {g} d_V",
            )
        whole = {
            "d_WQ": "WQ",
            "d_WK": "WK",
            "d_WV": "WV",
            "d_X": "X",
            "d_WO": "WO",
            "d_X_context": "X_context",
            "d_bQ": "bQ",
            "d_bK": "bK",
            "d_bV": "bV",
            "d_bO": "bO",
        }
        for name, leaf in whole.items():
            if leaf in torch_grads:
                assert_equal(getattr(found, name), torch_grads[leaf], size[name], name)
            else:
                assert getattr(found, name) is None, name
        if model.heads > 1:
            assert_equal(found.d_concat, torch_grads["concat"], size["d_concat"], "d_concat")


@pytest.mark.parametrize("index", range(len(FIXED)))
def test_the_losses_are_autograds(index: int) -> None:
    for seed in range(2):
        model, tokens, context = fixed_model(index, seed)
        attend = attend_objective(tokens, context, model.causal, seed, None)
        row = tokens.index(attend.from_token or "")
        col = (context or tokens).index(attend.to_token or "")

        def attend_loss(out: Any, weights: list[Any], row: int = row, col: int = col) -> Any:
            return sum(-torch.log(a[row, col]) for a in weights)

        target = with_target(model, tokens, seed)

        def mse_loss(out: Any, weights: list[Any], target: ModelSpec = target) -> Any:
            assert target.target is not None
            return ((out - torch.tensor(target.target)) ** 2).mean()

        for spec, objective, loss_of in (
            (model, attend, attend_loss),
            (target, Objective("mse"), mse_loss),
        ):
            traced = grad_trace(spec, tokens, context, objective)
            torch_grads = autograd(spec, tokens, context, loss_of)
            assert traced.loss.loss.value == pytest.approx(
                float(torch_grads["loss"]), rel=BACKWARD_ORACLE
            )
            _, _, d_block, d_softmax = loss_upstream(spec, tokens, context, objective)
            upstream = upstream_magnitude(spec, tokens, context, objective, d_block)
            size = oracle(spec, tokens, context, upstream, d_softmax, magnitudes=True)
            whole = {"d_X": "X", "d_WQ": "WQ", "d_WK": "WK", "d_WV": "WV"}
            for stage in traced.stages:
                what = f"{stage.name} head {stage.head} K/V head {stage.kv_head}"
                magnitude = oracle_stage(size, stage.name, stage.head, stage.kv_head)
                if stage.name in HEAD_NAMES and stage.head is not None:
                    expected = torch_grads[HEAD_NAMES[stage.name]][stage.head]
                elif stage.name in whole:
                    expected = torch_grads[whole[stage.name]]
                else:
                    continue
                assert_equal(stage.data, expected, magnitude, what)
