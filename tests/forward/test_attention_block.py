"""The attention block (issue 4) against an independent loop implementation.

Multi-head, grouped-query and multi-query attention, causal masks, cross-attention,
positions and WO, on random shapes; the repeat-interleave convention checked by
building the equivalent full multi-head model; PyTorch's SDPA where it is installed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive import naive_block
from randoms import random_block
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace import InputError, trace_attention
from attntrace.forward.attention import trace_block
from attntrace.kernel.ops import sinusoidal_positions
from attntrace.kernel.spec import ModelSpec
from attntrace.kernel.trace import Trace

PER_HEAD = ["Q", "K", "V", "scores", "scaled", "softmax", "output"]


def expected(model: ModelSpec, tokens: list[str], context: list[str] | None) -> dict[str, Any]:
    rows = [list(model.embeddings[t]) for t in tokens]
    return naive_block(
        rows,
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        context=[list(model.embeddings[t]) for t in context] if context else None,
        wo=model.WO.tolist() if model.WO is not None else None,
        biases={name: list(vector) for name, vector in model.biases.items()},
        rope_base=model.rope_base if model.position_kind == "rope" else None,
        rope_pairing=model.rope_pairing,
    )


def assert_matches(trace: Trace, naive: dict[str, Any], model: ModelSpec) -> None:
    rope = ["Q_rope", "K_rope"] if model.position_kind == "rope" else []
    for h in range(model.heads):
        for name in PER_HEAD + rope:
            stage = trace.stage(name, head=h)
            assert stage.kv_head == h // model.group
            np.testing.assert_allclose(
                stage.data, naive[name][h], **FLOAT64, err_msg=f"{name} head {h}"
            )
        if model.causal:
            np.testing.assert_allclose(
                trace.stage("masked", head=h).data,
                naive["masked"][h],
                **FLOAT64,
                err_msg="masked",
            )
    if model.heads > 1:
        np.testing.assert_allclose(trace["concat"].data, naive["concat"], **FLOAT64)
    if model.WO is not None:
        np.testing.assert_allclose(trace["projected"].data, naive["projected"], **FLOAT64)


@pytest.mark.parametrize("seed", range(40))
def test_every_configuration_matches_the_loops(seed: int) -> None:
    model, tokens, context = random_block(seed)
    trace = trace_block(model, tokens, context)
    assert_matches(trace, expected(model, tokens, context), model)


@pytest.mark.parametrize(
    "fixed",
    [
        {"heads": 4, "kv_heads": 4},  # plain multi-head
        {"heads": 4, "kv_heads": 2},  # grouped-query
        {"heads": 4, "kv_heads": 1},  # multi-query
        {"heads": 3, "kv_heads": 1, "causal": True, "cross": False},
        {"heads": 2, "cross": True, "causal": False},
    ],
    ids=["MHA", "GQA", "MQA", "MQA-causal", "cross"],
)
def test_named_configurations(fixed: dict[str, Any]) -> None:
    for seed in range(5):
        model, tokens, context = random_block(seed, **fixed)
        assert_matches(trace_block(model, tokens, context), expected(model, tokens, context), model)


def test_gqa_equals_mha_with_each_kv_head_repeated_for_its_group() -> None:
    """The repeat-interleave convention: GQA is MHA whose K/V heads are copied per group."""
    model, tokens, _ = random_block(
        7, heads=4, kv_heads=2, cross=False, causal=True, wo=True, rope=False, biases=False
    )
    d_k, d_v = model.d_k, model.d_v

    def repeat(matrix: npt.NDArray[Any], width: int) -> npt.NDArray[Any]:
        blocks = [matrix[:, g * width : (g + 1) * width] for g in range(model.n_kv_heads)]
        return np.concatenate([b for b in blocks for _ in range(model.group)], axis=1)

    mha = ModelSpec(
        model.embeddings,
        model.WQ,
        repeat(model.WK, d_k),
        repeat(model.WV, d_v),
        WO=model.WO,
        heads=4,
        kv_heads=4,
        causal=True,
    )
    gqa_trace, mha_trace = trace_block(model, tokens), trace_block(mha, tokens)
    for h in range(4):
        for name in PER_HEAD:
            np.testing.assert_allclose(
                gqa_trace.stage(name, head=h).data, mha_trace.stage(name, head=h).data, **FLOAT64
            )
    np.testing.assert_allclose(gqa_trace["projected"].data, mha_trace["projected"].data)


def test_causal_with_one_token_sees_itself() -> None:
    model, _, _ = random_block(3, heads=2, causal=True, cross=False)
    trace = trace_block(model, ["t1"])
    for h in range(2):
        np.testing.assert_array_equal(trace.stage("softmax", head=h).data, [[1.0]])


def test_cross_attention_is_n_by_m() -> None:
    model, _, _ = random_block(5, heads=2, cross=True, causal=False)
    trace = trace_block(model, ["t0", "t1"], ["t2", "t3", "t4", "t5", "t0"])
    assert trace.stage("scores", head=1).shape == (2, 5)
    assert trace.stage("K", head=0).rows == ("t2", "t3", "t4", "t5", "t0")
    assert trace.context_tokens == ("t2", "t3", "t4", "t5", "t0")
    assert trace["X_context"].shape == (5, model.d_model)


def test_sinusoidal_positions_closed_form() -> None:
    table = sinusoidal_positions(7, 6)
    for p in range(7):
        for i in range(3):
            angle = p / 10000 ** (2 * i / 6)
            assert table[p, 2 * i] == pytest.approx(math.sin(angle), **FLOAT64_APPROX)
            assert table[p, 2 * i + 1] == pytest.approx(math.cos(angle), **FLOAT64_APPROX)
    odd = sinusoidal_positions(3, 5)
    assert odd[2, 4] == pytest.approx(math.sin(2 / 10000 ** (4 / 5)), **FLOAT64_APPROX)


def test_positions_are_added_and_make_order_matter() -> None:
    a = trace_attention("dog bites man", sample="positions")
    b = trace_attention("man bites dog", sample="positions")
    np.testing.assert_allclose(a["X"].data, a["embeddings"].data + a["positions"].data)
    np.testing.assert_allclose(a["positions"].data, sinusoidal_positions(3, 4))
    assert not np.allclose(a["softmax"].data[1], b["softmax"].data[1])
    learned = trace_attention(
        "a b",
        model={
            "embeddings": {"a": [1, 0], "b": [0, 1]},
            "positions": [[10, 0], [0, 10], [5, 5]],
            "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
        },
    )
    np.testing.assert_array_equal(learned["X"].data, [[11, 0], [0, 11]])
    assert learned.model.positions == "learned"


finite = st.floats(-30, 30, allow_nan=False)


@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_masked_weights_are_zero_and_rows_sum_to_one(n: int, seed: int) -> None:
    model, _, _ = random_block(seed % 1000, causal=True, cross=False)
    rng = np.random.default_rng(seed)
    tokens = [f"t{int(i)}" for i in rng.integers(0, 6, size=n)]
    trace = trace_block(model, tokens)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    for h in range(model.heads):
        weights = trace.stage("softmax", head=h).data
        assert np.all(weights[upper] == 0.0)
        assert np.all(np.isneginf(trace.stage("masked", head=h).data[upper]))
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, **FLOAT64)


def test_the_samples() -> None:
    causal = trace_attention(sample="causal")
    assert causal["softmax"].data[0].tolist() == [1.0, 0, 0, 0, 0, 0]
    gqa = trace_attention(sample="gqa")
    assert [gqa.stage("K", head=h).kv_head for h in range(4)] == [0, 0, 1, 1]
    np.testing.assert_array_equal(gqa.stage("K", head=0).data, gqa.stage("K", head=1).data)
    cross = trace_attention(sample="cross")
    assert np.argmax(cross["softmax"].data, axis=1).tolist() == [0, 1, 2]  # each its translation
    two = trace_attention(sample="two-heads")
    np.testing.assert_allclose(
        two.stage("softmax", head=0).data, trace_attention("cat eats fish")["softmax"].data
    )
    np.testing.assert_allclose(two["projected"].data, two["concat"].data)


def test_an_ambiguous_stage_name_says_which_heads() -> None:
    trace = trace_attention(sample="two-heads")
    with pytest.raises(KeyError, match=r"traced for heads 0, 1: say which"):
        trace.stage("softmax")
    assert trace["softmax", 1] is trace.stage("softmax", head=1)


def test_causal_override_and_its_refusal_with_a_context() -> None:
    trace = trace_attention("cat eats fish", causal=True)
    assert trace.model.causal
    assert trace["softmax"].data[0].tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(InputError, match="causal: a causal mask hides later tokens"):
        trace_attention(sample="cross", causal=True)


def test_pytorch_sdpa_agrees_where_it_is_installed() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: SDPA not compared")
    sdpa = torch.nn.functional.scaled_dot_product_attention

    for seed in range(10):
        model, tokens, _ = random_block(seed, cross=False, rope=False, biases=False)
        trace = trace_block(model, tokens)
        x = np.stack([model.embeddings[t] for t in tokens])
        d_k, d_v = model.d_k, model.d_v
        q = _heads_first(torch, x @ model.WQ, model.heads, d_k)
        k = _heads_first(torch, x @ model.WK, model.n_kv_heads, d_k)
        v = _heads_first(torch, x @ model.WV, model.n_kv_heads, d_v)
        out = sdpa(q, k, v, is_causal=model.causal, enable_gqa=model.group > 1)[0]
        for h in range(model.heads):
            np.testing.assert_allclose(
                trace.stage("output", head=h).data, out[h].numpy(), **FLOAT64
            )


def _heads_first(torch: Any, projected: npt.NDArray[Any], count: int, width: int) -> Any:
    """[n, count·width] -> torch [1, count, n, width], the layout SDPA takes."""
    tensor = torch.tensor(projected)
    return tensor.reshape(projected.shape[0], count, width).transpose(0, 1)[None]
