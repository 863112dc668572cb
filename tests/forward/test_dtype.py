"""run --dtype's trace (forward/dtype): every stage against an independent computation
by the casting rule written here with numpy's float16/float32 arithmetic (numpy's float16
add, multiply and divide are correctly rounded, and float64 -> float16 conversion too),
the errors against float64, the first overflow, and float64 left as it was."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntrace.api import trace_attention
from attntrace.kernel.precision import round_to
from attntrace.kernel.trace import Trace

ROOT = Path(__file__).resolve().parents[2]
OVERFLOW = ROOT / "docs" / "examples" / "float16-overflow.yaml"
F16, F32, F64 = np.float16, np.float32, np.float64


def _matmul(a: Any, b: Any, accumulate: str) -> Any:
    """Σ_k a_ik·b_kj left to right: in float16 (each step rounded), or in float32 and
    rounded to float16 once."""
    into: Any = F16 if accumulate == "dtype" else F32
    x: Any = np.asarray(a, F64).astype(F16).astype(into)
    y: Any = np.asarray(b, F64).astype(F16).astype(into)
    total: Any = np.zeros((x.shape[0], y.shape[1]), into)
    for k in range(x.shape[1]):
        total = total + x[:, k : k + 1] * y[k : k + 1, :]
    return total.astype(F16).astype(F64)


def _softmax(x: Any, softmax_dtype: str) -> Any:
    """Stable softmax with every step rounded to softmax_dtype, weights to float16."""
    into = F16 if softmax_dtype == "float16" else F32
    s = np.asarray(x, F64).astype(into)
    with np.errstate(invalid="ignore", over="ignore"):
        z = s - s.max(axis=1, keepdims=True)
        e = np.exp(z.astype(F64)).astype(into)
        total = np.zeros(e.shape[0], into)
        for j in range(e.shape[1]):
            total = total + e[:, j]
        weights = e / total[:, None]
    return weights.astype(F16).astype(F64)


def _by_hand(
    emb: Any, WQ: Any, WK: Any, WV: Any, softmax_dtype: str, accumulate: str, causal: bool = False
) -> dict[str, Any]:
    X = np.asarray(emb, F64).astype(F16).astype(F64)
    Q, K, V = (_matmul(X, w, accumulate) for w in (WQ, WK, WV))
    scores = _matmul(Q, K.T, accumulate)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = (scores / math.sqrt(Q.shape[1])).astype(F16).astype(F64)
    stages = {"X": X, "Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled}
    into = scaled
    if causal:
        into = np.where(np.triu(np.ones(scaled.shape, bool), 1), -np.inf, scaled)
        stages["masked"] = into
    stages["softmax"] = _softmax(into, softmax_dtype)
    stages["output"] = _matmul(stages["softmax"], V, accumulate)
    return stages


MODEL: dict[str, Any] = {
    "name": "small",
    "embeddings": {"cat": [1.3, -0.7, 2.1], "eats": [0.31, 1.7, -1.1], "fish": [-2.2, 0.9, 0.4]},
    "weights": {
        "WQ": [[0.7, -1.3], [1.1, 0.2], [-0.4, 0.9]],
        "WK": [[0.3, 0.8], [-1.2, 0.5], [0.6, -0.9]],
        "WV": [[1.0, 0.1], [-0.3, 0.7], [0.2, -1.4]],
    },
}


def _same(trace: Trace, expected: dict[str, Any]) -> None:
    assert trace.names == list(expected)
    for name, values in expected.items():
        np.testing.assert_array_equal(trace[name].data, values, err_msg=name)


@pytest.mark.parametrize("softmax_dtype", ["float32", "float16"])
@pytest.mark.parametrize("accumulate", ["float32", "dtype"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_stage_is_the_rule_in_float16(
    softmax_dtype: str, accumulate: str, causal: bool
) -> None:
    trace = trace_attention(
        "cat eats fish",
        model=MODEL,
        dtype="float16",
        causal=causal,
        softmax_dtype=softmax_dtype,
        accumulate=accumulate,
    )
    w = MODEL["weights"]
    emb = [MODEL["embeddings"][t] for t in ("cat", "eats", "fish")]
    _same(trace, _by_hand(emb, w["WQ"], w["WK"], w["WV"], softmax_dtype, accumulate, causal))
    assert trace.precision is not None
    assert trace.precision.dtype == "float16"
    assert trace.precision.softmax_dtype == softmax_dtype
    assert trace.precision.accumulate == accumulate


def test_weights_are_held_in_the_dtype() -> None:
    trace = trace_attention("cat eats fish", model=MODEL, dtype="float16")
    wq = trace.weight("WQ", head=0)
    assert wq is not None
    np.testing.assert_array_equal(wq.data, np.asarray(MODEL["weights"]["WQ"]).astype(F16))


def test_errors_are_against_float64() -> None:
    low = trace_attention("cat eats fish", model=MODEL, dtype="float16")
    exact = trace_attention("cat eats fish", model=MODEL)
    assert low.precision is not None
    for stage, twin in zip(low.stages, exact.stages, strict=True):
        error = low.precision.error_of(stage.name, stage.head)
        assert error is not None
        delta = np.abs(stage.data - twin.data)
        assert error.max_abs == float(delta.max())
        assert error.max_rel == float((delta / np.abs(twin.data)).max())
        assert (error.inf, error.nan) == (0, 0)
    assert low.precision.overflow is None


def test_the_first_overflow_is_found_and_explained() -> None:
    trace = trace_attention(config=OVERFLOW, dtype="float16")
    scores = trace["scores"].data
    # cat·fish = 10·24·10·26 + 10·8·10·10 = 70,400 > 65,504: inf, as is fish·fish
    assert scores[1, 4] == math.inf
    assert scores[4, 4] == math.inf
    assert scores[1, 1] == 64000
    assert np.isnan(trace["softmax"].data[1]).all()
    assert trace.precision is not None
    first = trace.precision.overflow
    assert first is not None
    assert (first.stage, first.head) == ("scores", 0)
    for part in (
        "70,400",
        "'cat'",
        "'fish'",
        "65,504",
        "float16",
        "rounds to inf",
        "softmax of that row is NaN",
    ):
        assert part in first.sentence
    error = trace.precision.error_of("softmax", 0)
    assert error is not None
    assert error.nan == 10
    # in float64 nothing overflows: the same file is an ordinary trace
    assert np.isfinite(trace_attention(config=OVERFLOW)["softmax"].data).all()


def test_an_overflow_on_the_way_through_a_sum_is_said_so() -> None:
    """Q = 60,000 + 10,000 − 10,000 = 60,000 fits float16, but summed in float16 the
    partial 70,000 is inf, and inf − 10,000 stays inf: not "past 65,504" (the review)."""
    model = {
        "embeddings": {"a": [60000.0, 10000.0, -10000.0]},
        "weights": {
            "WQ": [[1.0], [1.0], [1.0]],
            "WK": [[0.0], [0.0], [0.0]],
            "WV": [[1.0], [0.0], [0.0]],
        },
    }
    trace = trace_attention("a", model=model, dtype="float16", accumulate="dtype")
    assert trace["Q"].data[0, 0] == math.inf
    assert trace.precision is not None
    first = trace.precision.overflow
    assert first is not None
    assert first.stage == "Q"
    assert "= 60,000 at row 'a', column 'd0' fits float16" in first.sentence
    assert (
        "summed in float16 from its inputs as float16 holds them, its running sum passed "
        "65,504 and became inf" in first.sentence
    )
    assert "is past" not in first.sentence
    # summed in float32 (the default), the same product is 60,000 exactly
    assert trace_attention("a", model=model, dtype="float16")["Q"].data[0, 0] == 60000


@pytest.mark.parametrize("accumulate", ["float32", "dtype"])
def test_an_overflow_from_the_rounded_inputs_blames_no_partial_sum(accumulate: str) -> None:
    """255.7 · 256.2 = 65,510.3 fits float16, but float16 holds the operands as 255.75
    and 256.25, whose product 65,535.9 is past the boundary 65,520: the result rounds
    to inf. Summed in float32 no partial sum came near float32's largest (the second
    review's case)."""
    model = {
        "embeddings": {"bee": [255.7], "ant": [256.2]},
        "weights": {"WQ": [[1.0]], "WK": [[1.0]], "WV": [[1.0]]},
    }
    trace = trace_attention("bee ant", model=model, dtype="float16", accumulate=accumulate)
    assert trace.precision is not None
    first = trace.precision.overflow
    assert first is not None
    assert first.stage == "scores"
    assert "= 65,510 at row 'bee', column 'ant' fits float16" in first.sentence
    if accumulate == "float32":
        assert (
            "from its inputs as float16 holds them (summed in float32) the result is "
            "past 65,504: it rounds to inf" in first.sentence
        )
    assert "3.40e38" not in first.sentence
    assert "partial sum" not in first.sentence


def test_huge_values_read_in_e_notation() -> None:
    """float32's largest is 3.40e38 in a sentence, not 39 digits."""
    model = {"embeddings": {"a": [1e30]}, "weights": {"WQ": [[1e10]], "WK": [[1.0]], "WV": [[1.0]]}}
    first = trace_attention("a", model=model, dtype="float32").precision
    assert first is not None
    assert first.overflow is not None
    assert (
        "Q: X · WQ = 1.00e40 at row 'a', column 'd0' is past 3.40e38, the largest "
        "float32: it rounds to inf" in first.overflow.sentence
    )


def test_bfloat16_by_round_to() -> None:
    """bfloat16 with float32 sums: the float32 loop, then precision's rounding."""
    trace = trace_attention("cat eats fish", model=MODEL, dtype="bfloat16")
    X = round_to([MODEL["embeddings"][t] for t in ("cat", "eats", "fish")], "bfloat16")
    WQ = round_to(MODEL["weights"]["WQ"], "bfloat16").astype(F32)
    total = np.zeros((3, 2), F32)
    for k in range(3):
        total = total + X.astype(F32)[:, k : k + 1] * WQ[k : k + 1, :]
    np.testing.assert_array_equal(trace["Q"].data, round_to(total.astype(F64), "bfloat16"))


@pytest.mark.parametrize("example", ["full.yaml", "cross.yaml"])
def test_float64_is_the_ordinary_trace(example: str) -> None:
    path = ROOT / "docs" / "examples" / example
    plain, cast = trace_attention(config=path), trace_attention(config=path, dtype="float64")
    assert cast.precision is None
    assert plain.names == cast.names
    for a, b in zip(plain.stages, cast.stages, strict=True):
        np.testing.assert_array_equal(a.data, b.data)


@pytest.mark.parametrize("example", ["full.yaml", "cross.yaml"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_shape_of_block_keeps_its_stages(example: str, dtype: str) -> None:
    """Heads, GQA, RoPE, biases, causal, cross-attention: the same stages, labels and
    formulas as float64, each value one the dtype holds."""
    path = ROOT / "docs" / "examples" / example
    plain, low = trace_attention(config=path), trace_attention(config=path, dtype=dtype)
    for a, b in zip(plain.stages, low.stages, strict=True):
        assert (a.name, a.head, a.kv_head, a.formula, a.rows, a.cols) == (
            b.name,
            b.head,
            b.kv_head,
            b.formula,
            b.rows,
            b.cols,
        )
        held = b.data[np.isfinite(b.data)]
        np.testing.assert_array_equal(round_to(held, dtype), held)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-30, 30, allow_nan=False), min_size=6, max_size=6),
    st.sampled_from(["float32", "dtype"]),
)
def test_stages_are_the_rule_for_any_embeddings(values: list[float], accumulate: str) -> None:
    model = {**MODEL, "embeddings": {"a": values[:3], "b": values[3:]}}
    trace = trace_attention("a b", model=model, dtype="float16", accumulate=accumulate)
    w = MODEL["weights"]
    _same(
        trace, _by_hand([values[:3], values[3:]], w["WQ"], w["WK"], w["WV"], "float32", accumulate)
    )
