"""RoPE and biases (issue 7), RoPE's interleaved pairing (issue 14): the closed forms
rotary positions promise, and the file fields.

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
from naive import naive_block
from randoms import random_block
from tolerances import FLOAT64, FLOAT64_APPROX, OFFSET, OFFSET_APPROX

from attntrace import InputError, trace_attention
from attntrace.decode.decoder import decode
from attntrace.forward.replay import load_trace
from attntrace.forward.words import paragraph
from attntrace.kernel.ops import rope, rope_frequencies
from attntrace.kernel.spec import ModelSpec
from attntrace.modelfile.model_file import load_model, model_from_document
from attntrace.modelfile.samples import sample_path

finite = st.floats(-10, 10, allow_nan=False)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@given(st.integers(1, 4), st.integers(0, 50), st.integers(0, 2**31 - 1))
def test_rope_keeps_lengths_and_depends_only_on_the_offset(
    pairing: str, half: int, shift: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, 2 * half)), rng.normal(size=(1, 2 * half))
    m, n = (int(p) for p in rng.integers(0, 100, size=2))

    def turned(row: npt.NDArray[Any], p: int) -> npt.NDArray[Any]:
        turned_row: npt.NDArray[Any] = rope(
            row, np.array([p]), rope_frequencies(2 * half, 10000.0), pairing
        )[0]
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
    turned = rope(np.array([[1.0, 0.0]]), np.array([1]), rope_frequencies(2, 10000.0))[0]
    np.testing.assert_allclose(turned, [np.cos(1.0), np.sin(1.0)], **FLOAT64)


TINY = {
    "embeddings": {"a": [1.0, 0.0], "b": [0.0, 1.0]},
    "weights": {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[1, 0], [0, 1]]},
}


def test_a_tiny_rope_model_with_biases_from_a_document() -> None:
    model = model_from_document(
        {
            **TINY,
            "positions": "rope",
            "rope_base": 100,
            "biases": {"bQ": [0.5, 0.0], "bK": [0.0, 0.0], "bV": [1.0, 2.0]},
        }
    )
    trace = trace_attention("a b", model=model)
    assert trace.names == [
        "X",
        "Q",
        "K",
        "V",
        "Q_rope",
        "K_rope",
        "scores",
        "scaled",
        "softmax",
        "output",
    ]
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
    document = {
        **TINY,
        "positions": "rope",
        "weights": {"WQ": [[1], [0]], "WK": [[1], [0]], "WV": [[1], [0]]},
    }
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


# --------------------------------------------------------------- rope_pairing: interleaved

INTERLEAVED = {
    "embeddings": {"a": [1.0, 0.0, 0.0, 0.0], "b": [0.0, 0.0, 1.0, 0.0]},
    "weights": {"WQ": np.eye(4).tolist(), "WK": np.eye(4).tolist(), "WV": np.eye(4).tolist()},
    "positions": "rope",
    "rope_base": 100,
    "rope_pairing": "interleaved",
}


def test_interleaved_turns_neighbours_by_hand() -> None:
    """d_k = 4, base 100: pair 0 is dimensions (0, 1) at angle p, pair 1 is (2, 3) at
    angle p / 10. Under half the pairs would be (0, 2) and (1, 3)."""
    trace = trace_attention("a b", model=model_from_document(INTERLEAVED))
    c1, s1 = np.cos(1.0), np.sin(1.0)
    c10, s10 = np.cos(0.1), np.sin(0.1)
    np.testing.assert_allclose(trace["Q_rope"].data, [[1, 0, 0, 0], [0, 0, c10, s10]], **FLOAT64)
    half = trace_attention(
        "a b", model=model_from_document({**INTERLEAVED, "rope_pairing": "half"})
    )
    np.testing.assert_allclose(half["Q_rope"].data, [[1, 0, 0, 0], [-s1, 0, c1, 0]], **FLOAT64)
    assert trace.model.rope_pairing == "interleaved"
    assert half.model.rope_pairing == "half"


@pytest.mark.parametrize("seed", range(12))
def test_an_interleaved_model_matches_the_loops(seed: int) -> None:
    """Q_rope, K_rope and everything after them against tests/naive.py's plain loop of
    RoFormer's rotation, on random models (heads, GQA, causal, biases)."""
    model, tokens, _ = random_block(seed, cross=False, rope=True, rope_pairing="interleaved")
    assert model.rope_pairing == "interleaved"
    trace = trace_attention(" ".join(tokens), model=model)
    naive = naive_block(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
        heads=model.heads,
        kv_heads=model.n_kv_heads,
        causal=model.causal,
        biases={name: list(b) for name, b in model.biases.items()},
        rope_base=model.rope_base,
        rope_pairing="interleaved",
    )
    for h in range(model.heads):
        for name in ("Q_rope", "K_rope", "scores", "softmax", "output"):
            np.testing.assert_allclose(
                trace.stage(name, head=h).data,
                naive[name][h],
                **FLOAT64,
                err_msg=f"{name} head {h}",
            )


def test_interleaved_scores_depend_only_on_the_offset() -> None:
    """One token repeated: every Q row is the same, every K row too, so after RoPE the
    score of query i and key j depends on i − j only (a Toeplitz matrix), under either
    pairing; the two pairings give different scores."""
    rng = np.random.default_rng(5)
    embeddings, WQ, WK, WV = {"w": rng.normal(size=3)}, *rng.normal(size=(3, 3, 6))
    scores = {}
    for pairing in ("half", "interleaved"):
        model = ModelSpec(
            embeddings, WQ, WK, WV, positions="rope", rope_base=10.0, rope_pairing=pairing
        )
        scores[pairing] = trace_attention("w " * 7, model=model)["scores"].data
        for offset in range(-6, 7):
            diagonal = np.diagonal(scores[pairing], offset)
            np.testing.assert_allclose(diagonal, np.full_like(diagonal, diagonal[0]), **OFFSET)
    assert not np.allclose(scores["half"], scores["interleaved"], **OFFSET)


def test_the_interleaved_formulas_say_so_and_the_default_ones_do_not() -> None:
    interleaved = trace_attention("a b", model=model_from_document(INTERLEAVED))
    assert interleaved["Q_rope"].formula == (
        "Q_rope = Q turned by position (RoPE, base 100, neighbours paired)"
    )
    assert interleaved["K_rope"].formula == (
        "K_rope = K turned by position (RoPE, base 100, neighbours paired)"
    )
    document = dict(INTERLEAVED)
    del document["rope_pairing"]
    default = trace_attention("a b", model=model_from_document(document))
    assert default["Q_rope"].formula == "Q_rope = Q turned by position (RoPE, base 100)"
    assert "pairs of numbers (i, i + 2) and" in paragraph(default["Q_rope"], default)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"positions": "sinusoidal"},
            "tiny.yaml: rope_pairing: rope_pairing says which dimensions rotary positions "
            "turn together: expected positions: rope with rope_pairing, got positions: "
            "sinusoidal",
        ),
        (
            {"rope_pairing": "adjacent"},
            "tiny.yaml: rope_pairing: expected half or interleaved, got a string 'adjacent'",
        ),
        (
            {"rope_pairing": None},
            "tiny.yaml: rope_pairing: expected half or interleaved, got nothing (null)",
        ),
        (
            {"rope_pairing": True},
            "tiny.yaml: rope_pairing: expected half or interleaved, got a boolean (true)",
        ),
    ],
    ids=["without-rope", "unknown", "null", "boolean"],
)
def test_bad_rope_pairing_fields(extra: dict[str, object], message: str) -> None:
    document = {**INTERLEAVED, **extra}
    del document["rope_base"]  # which would be refused first without rope
    with pytest.raises(InputError) as caught:
        model_from_document(document, "tiny.yaml")
    assert str(caught.value) == message


def test_rope_pairing_without_positions_is_refused_on_the_command_line(
    tmp_path: Any,
) -> None:
    document = {
        key: value for key, value in INTERLEAVED.items() if key not in ("positions", "rope_base")
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = invoke("run", "-c", str(path), "a b")
    assert result.exit_code == 2
    assert result.stderr == (
        f"attntrace: error: {path}: rope_pairing: rope_pairing says which dimensions rotary "
        "positions turn together: expected positions: rope with rope_pairing, got "
        "positions: none\n"
    )


def test_an_interleaved_trace_round_trips_through_json(tmp_path: Any) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(INTERLEAVED), encoding="utf-8")
    result = invoke("run", "-c", str(path), "a b a", "--json")
    assert result.exit_code == 0, result.output
    document = load_valid_trace(result.stdout)
    assert document["model"]["rope_pairing"] == "interleaved"
    replayed = load_trace(result.stdout, "t.json")
    assert replayed.model.rope_pairing == "interleaved"
    assert replayed["Q_rope"].formula.endswith("neighbours paired)")
    rendered = invoke("render", "-", input=result.stdout)
    assert rendered.exit_code == 0, rendered.output
    assert rendered.stdout == invoke("run", "-c", str(path), "a b a").stdout
    # step mode's paragraph names the pairs the model turned
    words = paragraph(replayed["Q_rope"], replayed)
    assert "cut into pairs of numbers (2i, 2i + 1) and each pair" in words


def test_a_saved_rope_trace_says_its_pairing_or_was_half() -> None:
    document = load_valid_trace(invoke("run", "-s", "rope", "--json").output)
    assert document["model"]["rope_pairing"] == "half"
    del document["model"]["rope_pairing"]  # a trace saved before the field existed
    assert load_trace(json.dumps(document), "t.json").model.rope_pairing == "half"
    document["model"]["rope_pairing"] = "neighbours"
    result = invoke("render", "-", input=json.dumps(document))
    assert result.exit_code == 2
    assert "model.rope_pairing: expected half or interleaved, got a string 'neighbours'" in (
        result.stderr
    )


def test_a_model_without_rope_writes_no_pairing() -> None:
    document = load_valid_trace(invoke("run", "cat eats fish", "--json").stdout)
    assert "rope_pairing" not in document["model"]
    assert trace_attention("cat eats fish").model.rope_pairing is None


@pytest.mark.parametrize("seed", range(6))
def test_decoding_an_interleaved_model_matches_the_full_trace(seed: int) -> None:
    """Each step turns its q and k by the model's pairing: the last step's weights and
    output are the full causal trace's last row, and the cache holds K_rope's rows."""
    model, tokens, _ = random_block(seed, cross=False, rope=True, rope_pairing="interleaved")
    run = decode(model, tokens)
    assert run.matches
    last = run.steps[-1]
    full = trace_attention(" ".join(tokens), model=model, causal=True)
    for h in range(model.heads):
        np.testing.assert_allclose(
            last.weights[h], full.stage("softmax", head=h).data[-1], **FLOAT64
        )
        np.testing.assert_allclose(last.output[h], full.stage("output", head=h).data[-1], **FLOAT64)
        g = h // model.group  # the K/V head query head h reads
        np.testing.assert_allclose(last.keys[g], full.stage("K_rope", head=h).data, **FLOAT64)
