"""Every stage against the independent loop implementation, and the worked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from naive import naive_attention
from tolerances import FLOAT64, printed

from attntrace import trace_attention
from attntrace.errors import InputError
from attntrace.forward.attention import trace_block
from attntrace.kernel.spec import ModelSpec

STAGES = ["X", "Q", "K", "V", "scores", "scaled", "softmax", "output"]


def random_model(
    rng: np.random.Generator, n_vocab: int, d_model: int, d_k: int, d_v: int
) -> ModelSpec:
    vocab = {f"t{i}": rng.normal(size=d_model) for i in range(n_vocab)}
    return ModelSpec(
        embeddings=vocab,
        WQ=rng.normal(size=(d_model, d_k)),
        WK=rng.normal(size=(d_model, d_k)),
        WV=rng.normal(size=(d_model, d_v)),
        name="random",
    )


@pytest.mark.parametrize("seed", range(12))
def test_every_stage_matches_the_loop_implementation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d_model, d_k, d_v = (int(x) for x in rng.integers(1, 9, size=3))
    n = int(rng.integers(1, 12))
    model = random_model(rng, 6, d_model, d_k, d_v)
    tokens = [f"t{int(i)}" for i in rng.integers(0, 6, size=n)]

    trace = trace_block(model, tokens)
    expected = naive_attention(
        [list(model.embeddings[t]) for t in tokens],
        model.WQ.tolist(),
        model.WK.tolist(),
        model.WV.tolist(),
    )
    assert trace.names == STAGES
    for name in STAGES:
        stage = trace[name]
        np.testing.assert_allclose(stage.data, expected[name], **FLOAT64, err_msg=name)
        assert stage.rows == tuple(tokens)
    assert trace["Q"].shape == (n, d_k)
    assert trace["V"].shape == (n, d_v)
    assert trace["scores"].cols == tuple(tokens)
    assert trace["output"].cols == tuple(f"d{i}" for i in range(d_v))


def test_worked_example_exact_numbers() -> None:
    """docs/model-file.md#the-worked-example: the default model on "cat eats fish"."""
    trace = trace_attention("cat eats fish")
    assert trace.model.name == "cat-eats-fish"
    np.testing.assert_array_equal(trace["X"].data, [[1, 2], [3, 1], [2, 4]])
    np.testing.assert_array_equal(trace["scores"].data[2], [10, 10, 20])
    np.testing.assert_allclose(
        trace["scaled"].data[2], np.array([10, 10, 20]) / math.sqrt(2), **FLOAT64
    )
    # Closed form of the fish row: weights e^{a}/(2e^{a} + e^{2a}) with a = 10/√2.
    a = 10 / math.sqrt(2)
    small = 1 / (2 + math.exp(a))
    big = math.exp(a) / (2 + math.exp(a))
    np.testing.assert_allclose(trace["softmax"].data[2], [small, small, big], **FLOAT64)
    assert [round(w, 6) for w in trace["softmax"].data[2]] == [0.000848, 0.000848, 0.998304]
    # output = Σ w_j V_j with V = X·WV (the dimensions swapped): cat [2,1], eats [1,3], fish [4,2]
    expected_output = [small * 2 + small * 1 + big * 4, small * 1 + small * 3 + big * 2]
    np.testing.assert_allclose(trace["output"].data[2], expected_output, **FLOAT64)
    assert [round(x, 6) for x in trace["output"].data[2]] == [3.995761, 2.0]


def test_the_yaml_and_json_default_samples_are_the_same_model() -> None:
    yaml_trace = trace_attention(sample="cat-eats-fish")
    json_trace = trace_attention(sample="cat-eats-fish.json")
    for a, b in zip(yaml_trace, json_trace, strict=True):
        np.testing.assert_array_equal(a.data, b.data)


def test_the_cat_sat_rows() -> None:
    trace = trace_attention(sample="the-cat-sat")
    assert trace.tokens == ("The", "cat", "sat")
    np.testing.assert_array_equal(
        trace["X"].data, [[0.2, 0.5, 0.1, 0.7], [0.8, 0.3, 0.6, 0.2], [0.4, 0.9, 0.5, 0.1]]
    )
    weights = trace["softmax"].data
    # "sat" (the verb) looks for its subject "cat"; "cat" for its determiner "The".
    assert np.argmax(weights[2]) == 1
    assert weights[2, 1] == pytest.approx(0.838, abs=printed(3))
    assert weights[1, 0] == pytest.approx(0.760, abs=printed(3))


def test_it_animal_row_of_it() -> None:
    trace = trace_attention(sample="it-animal")
    tokens = list(trace.tokens)
    assert tokens == [
        "The",
        "animal",
        "didn't",
        "cross",
        "the",
        "street",
        "because",
        "it",
        "was",
        "tired",
        ".",
    ]
    row = dict(zip(tokens, trace["softmax"].data[tokens.index("it")], strict=False))
    weights = trace["softmax"].data[tokens.index("it")]
    named = {"animal", "street", "tired"}
    rest = sum(w for t, w in zip(tokens, weights, strict=True) if t not in named)
    assert row["animal"] == pytest.approx(0.65, abs=printed(2))
    assert row["street"] == pytest.approx(0.20, abs=printed(2))
    assert row["tired"] == pytest.approx(0.10, abs=printed(2))
    assert rest == pytest.approx(0.05, abs=printed(2))


def test_lookup_is_exact_then_lower_case() -> None:
    model = ModelSpec(
        embeddings={"The": np.array([1.0]), "the": np.array([2.0]), "cat": np.array([3.0])},
        WQ=np.eye(1),
        WK=np.eye(1),
        WV=np.eye(1),
    )
    trace = trace_block(model, ["The", "the", "CAT", "Cat"])
    np.testing.assert_array_equal(trace["X"].data[:, 0], [1.0, 2.0, 3.0, 3.0])
    assert trace.tokens == ("The", "the", "CAT", "Cat")


def test_trace_lookup_by_name_and_unknown_stage() -> None:
    trace = trace_attention("fish")
    assert trace["softmax"] is trace.stage("softmax", head=0)
    with pytest.raises(KeyError, match="no stage 'masked'"):
        trace.stage("masked")


def test_a_single_token_attends_only_to_itself() -> None:
    trace = trace_attention("eats")
    np.testing.assert_array_equal(trace["softmax"].data, [[1.0]])
    np.testing.assert_array_equal(trace["output"].data, trace["V"].data)


def test_docstring_examples() -> None:
    import doctest

    import attntrace.api

    assert doctest.testmod(attntrace.api).failed == 0


def test_weights_travel_with_the_trace() -> None:
    trace = trace_attention(sample="the-cat-sat")
    assert [w.name for w in trace.weights] == ["WQ", "WK", "WV"]
    wq = trace.weight("WQ", head=0)
    assert wq is not None
    # X holds 0.2, 0.5, ...: the product's last bit is the BLAS kernel's, so a tolerance
    np.testing.assert_allclose(trace["Q"].data, trace["X"].data @ wq.data, **FLOAT64)
    assert trace.weight_for(trace["V"]) is trace.weight("WV", kv_head=0)
    assert trace.weight_for(trace["scores"]) is None


def test_python_model_as_a_mapping_is_checked_like_a_file() -> None:
    from attntrace import InputError

    document = {
        "embeddings": {"a": np.array([1.0, 0.0]), "b": [0, 1]},
        "weights": {"WQ": np.eye(2), "WK": np.eye(2), "WV": [[2.0], [3.0]]},
    }
    trace = trace_attention("a b", model=document)
    np.testing.assert_array_equal(trace["V"].data, [[2.0], [3.0]])
    document["weights"]["WK"] = np.ones((2, 3))
    with pytest.raises(InputError, match=r"^model: weights.WK: expected 2 × 2 .*, got 2 × 3$"):
        trace_attention("a b", model=document)


def test_print_and_repr_are_readable() -> None:
    trace = trace_attention("cat eats fish")
    assert repr(trace).startswith("<Trace 'cat-eats-fish' tokens=['cat', 'eats', 'fish'] stages: X")
    assert repr(trace["softmax"]) == (
        "<Stage softmax head=0 3×3: softmax = exp(scaled − row max) / row sum>"
    )
    text = str(trace)
    assert "fish   0.0008   0.0008   0.9983" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    import attntrace

    assert "trace_attention" in dir(attntrace)


def test_large_finite_stages_are_not_mistaken_for_overflow() -> None:
    """The finite check sums a stage first; cells near float64's limit sum to inf, and
    must then be checked one by one, not refused."""
    from attntrace.forward.attention import _require_finite

    tokens, cols = ("a", "b"), ("d0", "d1")
    _require_finite("X", np.array([[1e308, 1e308], [1e308, 1e308]]), tokens, cols)
    with pytest.raises(InputError, match="overflowed to inf at row 'b', column 'd1'"):
        _require_finite("X", np.array([[1e308, 1.0], [2.0, math.inf]]), tokens, cols)
    with pytest.raises(InputError, match="overflowed to nan at row 'a', column 'd0'"):
        _require_finite("X", np.array([[math.nan, 1.0], [2.0, 3.0]]), tokens, cols)
    # the masked stage keeps its −∞ cells, and still refuses +∞
    _require_finite("masked", np.array([[1.0, -math.inf]]), tokens[:1], cols, masked_allowed=True)
    with pytest.raises(InputError, match="overflowed to inf"):
        _require_finite(
            "masked", np.array([[math.inf, -math.inf]]), tokens[:1], cols, masked_allowed=True
        )
