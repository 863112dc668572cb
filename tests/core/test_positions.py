"""RoPE and biases (issue 7): the closed forms rotary positions promise, and the file fields.

The loops of tests/naive.py check every stage on random models (test_block, test_decode);
here are the properties that make RoPE worth having, checked directly.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from helpers import invoke, load_valid_trace
from hypothesis import given
from hypothesis import strategies as st
from tolerances import FLOAT64, FLOAT64_APPROX, OFFSET_APPROX

from attntrace import InputError, trace_attention
from attntrace.core.kvcache import decode
from attntrace.core.ops import rope
from attntrace.files.model_file import load_model, model_from_document
from attntrace.files.samples import sample_path

finite = st.floats(-10, 10, allow_nan=False)


@given(st.integers(1, 4), st.integers(0, 50), st.integers(0, 2**31 - 1))
def test_rope_keeps_lengths_and_depends_only_on_the_offset(
    half: int, shift: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, 2 * half)), rng.normal(size=(1, 2 * half))
    m, n = (int(p) for p in rng.integers(0, 100, size=2))

    def turned(row: npt.NDArray[Any], p: int) -> npt.NDArray[Any]:
        turned_row: npt.NDArray[Any] = rope(row, np.array([p]), 10000.0)[0]
        return turned_row

    # a rotation: lengths unchanged
    assert np.linalg.norm(turned(q, m)) == pytest.approx(np.linalg.norm(q), **FLOAT64_APPROX)
    # q'(m)·k'(n) depends on m − n only: shifting both positions changes nothing
    assert turned(q, m) @ turned(k, n) == pytest.approx(
        turned(q, m + shift) @ turned(k, n + shift), **OFFSET_APPROX
    )
    # position 0 is no rotation at all
    np.testing.assert_array_equal(turned(q, 0), q[0])


def test_rope_by_hand_for_one_pair() -> None:
    # d = 2: one pair, θ = p · base^0 = p radians
    turned = rope(np.array([[1.0, 0.0]]), np.array([1]), 10000.0)[0]
    np.testing.assert_allclose(turned, [np.cos(1.0), np.sin(1.0)], **FLOAT64)


TINY = {
    "embeddings": {"a": [1.0, 0.0], "b": [0.0, 1.0]},
    "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
}


def test_a_tiny_rope_model_with_biases_from_a_document() -> None:
    model = model_from_document(
        {**TINY, "positions": "rope", "rope_base": 100,
         "biases": {"bQ": [0.5, 0.0], "bK": [0.0, 0.0], "bV": [1.0, 2.0]}}
    )  # fmt: skip
    trace = trace_attention("a b", model=model)
    assert trace.names == ["X", "Q", "K", "V", "Q_rope", "K_rope", "scores", "scaled", "softmax",
                           "output"]  # fmt: skip
    np.testing.assert_allclose(trace["Q"].data, [[1.5, 0.0], [0.5, 1.0]])
    np.testing.assert_allclose(trace["V"].data, [[2.0, 2.0], [1.0, 3.0]])
    # b at position 1 is turned by 1 radian: (0.5, 1) -> (0.5 cos 1 − sin 1, cos 1 + 0.5 sin 1)
    c, s = np.cos(1.0), np.sin(1.0)
    np.testing.assert_allclose(trace["Q_rope"].data[1], [0.5 * c - s, c + 0.5 * s], **FLOAT64)
    assert trace["scores"].formula == "scores = Q_rope · K_ropeᵀ"
    assert trace["Q"].formula == "Q = X · WQ + bQ"
    assert trace.model.positions == "rope"
    assert trace.model.rope_base == 100


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"positions": "rope", "rope_base": 1}, "rope_base: expected a number > 1"),
        (
            {"rope_base": 500},
            "rope_base: rope_base sets the angles of rotary positions: expected "
            "positions: rope with rope_base, got positions: none",
        ),
        (
            {"biases": {"bQ": [1.0]}},
            "biases.bQ: expected 2 numbers (one per column of WQ), got 1 number",
        ),
        (
            {"biases": {"bO": [1.0, 2.0]}},
            "biases.bO: bO is added after WO: expected weights.WO with bO, got no WO",
        ),
        ({"biases": {"bq": [1.0, 2.0]}}, "biases: unknown bias 'bq' (did you mean 'bQ'?)"),
        ({"biases": [1, 2]}, "biases: expected a mapping of bQ, bK, bV, bO to vectors"),
    ],
)
def test_bad_rope_and_bias_fields(extra: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as caught:
        model_from_document({**TINY, **extra}, "tiny.yaml")
    assert message in str(caught.value)


def test_empty_biases_are_no_biases() -> None:
    model = model_from_document({**TINY, "biases": {}})
    assert model.biases == {}


def test_an_odd_head_width_cannot_rotate() -> None:
    document = {**TINY, "positions": "rope",
                "weights": {"WQ": [[1], [0]], "WK": [[1], [0]], "WV": [[1], [0]]}}  # fmt: skip
    with pytest.raises(InputError, match="expected an even d_k with rope, got d_k = 1"):
        model_from_document(document, "tiny.yaml")


def test_the_rope_sample_runs_and_decodes() -> None:
    result = invoke("run", "-s", "rope", "--json")
    assert result.exit_code == 0, result.output
    document = load_valid_trace(result.output)
    assert document["model"]["positions"] == "rope"
    assert document["model"]["rope_base"] == 100
    assert [w["name"] for w in document["weights"]][-3:] == ["bQ", "bK", "bV"]
    # decoding rotates each new q and k by its own position: the cache agrees with the
    # full causal trace
    run = decode(load_model(sample_path("rope")), ["dog", "bites", "man"])
    assert run.matches
    result = invoke("decode", "-s", "rope")
    assert result.exit_code == 0, result.output
    assert "decode matches full causal attention" in result.output


def test_rope_with_a_context_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        model_from_document({**TINY, "positions": "rope", "context": "a b"}, "tiny.yaml")
    assert str(caught.value) == (
        "tiny.yaml: positions: RoPE turns queries and keys by their positions in one "
        "sequence; a context is another sequence, and offsets between the two mean nothing: "
        "expected none, sinusoidal or learned with a context, got rope"
    )


def test_a_saved_trace_with_rope_stages_must_say_rope() -> None:
    document = load_valid_trace(invoke("run", "-s", "rope", "--json").output)
    document["model"]["positions"] = "none"
    result = invoke("render", "-", input=json.dumps(document))
    assert result.exit_code == 2
    assert "model.positions: expected rope (the trace has Q_rope and K_rope stages)" in (
        result.output
    )
