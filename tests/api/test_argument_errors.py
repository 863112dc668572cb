"""A mistake at the Python API is one line about it: a TypeError naming the argument and
what it must be, an InputError saying where, what was expected and what was found.

The same for the real models' layer functions (attntrace.real.layer), where their
weights are installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import needs_weights
from tiny_model import (
    WQ,
    one_line,
    tiny_spec,
)

from attntrace import InputError, Stage, Trace, load_model, trace_attention
from attntrace.kernel.trace import ModelInfo

# --------------------------------------------------------------------- wrong types


def _trace() -> Trace:
    return trace_attention("cat eats fish")


WRONG_TYPES: list[tuple[str, Callable[[], object], str]] = [
    (
        "sentence int",
        lambda: trace_attention(5),  # type: ignore[arg-type]
        "sentence must be a str or None, got int",
    ),
    (
        "sentence bytes",
        lambda: trace_attention(b"cat"),  # type: ignore[arg-type]
        "sentence must be a str or None, got bytes",
    ),
    (
        "sentence list",
        lambda: trace_attention(["cat", "eats"]),  # type: ignore[arg-type]
        "sentence must be a str or None, got list",
    ),
    (
        "model a file name",
        lambda: trace_attention("cat", model="ok.yaml"),  # type: ignore[arg-type]
        "model must be a ModelSpec or a mapping of model fields, got str: give a model file "
        "as config='ok.yaml'",
    ),
    (
        "model a Path",
        lambda: trace_attention("cat", model=Path("ok.yaml")),  # type: ignore[arg-type]
        "model must be a ModelSpec or a mapping of model fields, got PosixPath: give a model "
        "file as config=PosixPath('ok.yaml')",
    ),
    (
        "model a real model's name",
        lambda: trace_attention("cat", model="smollm2"),  # type: ignore[arg-type]
        "model must be a ModelSpec or a mapping of model fields, got str: a trained model's "
        "layer is attntrace.real.layer.trace_layer('smollm2', sentence, layer)",
    ),
    (
        "model a list",
        lambda: trace_attention("cat", model=[1]),  # type: ignore[arg-type]
        "model must be a ModelSpec or a mapping of model fields, got list",
    ),
    (
        "config int",
        lambda: trace_attention("cat", config=5),  # type: ignore[arg-type]
        "config must be a file name (str or pathlib.Path) or None, got int",
    ),
    (
        "sample int",
        lambda: trace_attention("cat", sample=5),  # type: ignore[arg-type]
        "sample must be a str or None, got int",
    ),
    (
        "causal str",
        lambda: trace_attention("cat", causal="yes"),  # type: ignore[arg-type]
        "causal must be a bool or None, got str",
    ),
    (
        "causal int",
        lambda: trace_attention("cat", causal=1),  # type: ignore[arg-type]
        "causal must be a bool or None, got int",
    ),
    (
        "context int",
        lambda: trace_attention("cat", context=5),  # type: ignore[arg-type]
        "context must be a str or None, got int",
    ),
    (
        "load_model int",
        lambda: load_model(5),  # type: ignore[arg-type]
        "path must be a file name (str or pathlib.Path), got int",
    ),
    (
        "load_model None",
        lambda: load_model(None),  # type: ignore[arg-type]
        "path must be a file name (str or pathlib.Path), got NoneType",
    ),
    (
        "load_model source",
        lambda: load_model("x.yaml", source=5),  # type: ignore[arg-type]
        "source must be a str or None, got int",
    ),
    (
        "ModelSpec lists",
        lambda: tiny_spec(WQ=WQ),
        "ModelSpec.WQ must be a numpy array of real numbers (a matrix), got list",
    ),
    (
        "ModelSpec int matrix",
        lambda: tiny_spec(WK=5),
        "ModelSpec.WK must be a numpy array of real numbers (a matrix), got int",
    ),
    (
        "ModelSpec complex",
        lambda: tiny_spec(WV=np.eye(2) * 1j),
        "ModelSpec.WV must be a numpy array of real numbers (a matrix), got ndarray of complex128",
    ),
    (
        "ModelSpec vector list",
        lambda: tiny_spec(embeddings={"a": [1.0, 2.0]}),
        "ModelSpec.embeddings['a'] must be a numpy array of real numbers (a vector), got list",
    ),
    (
        "ModelSpec embeddings list",
        lambda: tiny_spec(embeddings=[np.ones(2)]),
        "ModelSpec.embeddings must be a mapping of str to numpy vectors (a dict), got list",
    ),
    (
        "ModelSpec token int",
        lambda: tiny_spec(embeddings={1: np.ones(2)}),
        "ModelSpec.embeddings keys must be str, got int",
    ),
    (
        "ModelSpec heads float",
        lambda: tiny_spec(heads=2.0),
        "ModelSpec.heads must be an int, got float",
    ),
    (
        "ModelSpec heads str",
        lambda: tiny_spec(heads="2"),
        "ModelSpec.heads must be an int, got str",
    ),
    (
        "ModelSpec causal int",
        lambda: tiny_spec(causal=1),
        "ModelSpec.causal must be a bool, got int",
    ),
    (
        "ModelSpec positions int",
        lambda: tiny_spec(positions=5),
        "ModelSpec.positions must be None, 'sinusoidal', 'rope', 'alibi' or a numpy array of "
        "position vectors, got int",
    ),
    (
        "ModelSpec rope_base str",
        lambda: tiny_spec(rope_base="10000"),
        "ModelSpec.rope_base must be a real number (int or float), got str",
    ),
    (
        "ModelSpec rope_pairing None",
        lambda: tiny_spec(rope_pairing=None),
        "ModelSpec.rope_pairing must be a str, got NoneType",
    ),
    (
        "ModelSpec biases list",
        lambda: tiny_spec(biases=[np.ones(2)]),
        "ModelSpec.biases must be a mapping of str to numpy vectors (a dict), got list",
    ),
    ("ModelSpec name int", lambda: tiny_spec(name=5), "ModelSpec.name must be a str, got int"),
    (
        "ModelSpec given array",
        lambda: tiny_spec(given=np.ones((2, 2))),
        "ModelSpec.given must be a GivenInputs or None, got ndarray of float64",
    ),
    (
        "Stage data list",
        lambda: Stage("X", "X", ("a",), ("d0",), [[1.0]]),  # type: ignore[arg-type]
        "Stage.data must be a numpy array of real numbers, got list",
    ),
    (
        "Stage rows str",
        lambda: Stage("X", "X", "ab", ("d0",), np.ones((2, 1))),  # type: ignore[arg-type]
        "Stage.rows must be a tuple (or list) of str, got str",
    ),
    (
        "Stage rows of ints",
        lambda: Stage("X", "X", (1, 2), ("d0",), np.ones((2, 1))),  # type: ignore[arg-type]
        "Stage.rows[0] must be a str, got int",
    ),
    (
        "Stage head str",
        lambda: Stage("X", "X", ("a",), ("d0",), np.ones((1, 1)), head="0"),  # type: ignore[arg-type]
        "Stage.head must be an int or None, got str",
    ),
    (
        "Trace model",
        lambda: Trace(5, ("a",), ()),  # type: ignore[arg-type]
        "Trace.model must be a ModelInfo, got int",
    ),
    (
        "Trace stages",
        lambda: Trace(ModelInfo("m", 1, 1, 1), ("a",), (5,)),  # type: ignore[arg-type]
        "Trace.stages[0] must be a Stage, got int",
    ),
    (
        "Trace tokens str",
        lambda: Trace(ModelInfo("m", 1, 1, 1), "a", ()),  # type: ignore[arg-type]
        "Trace.tokens must be a tuple (or list) of str, got str",
    ),
    (
        "trace[int]",
        lambda: _trace()[5],  # type: ignore[index]
        "a stage key must be a name or (name, head), as trace['softmax', 0], got int",
    ),
    (
        "stage(int)",
        lambda: _trace().stage(5),  # type: ignore[arg-type]
        "name must be a str, got int",
    ),
    (
        "stage head str",
        lambda: _trace().stage("softmax", head="0"),  # type: ignore[arg-type]
        "head must be an int or None, got str",
    ),
    (
        "only_heads int",
        lambda: _trace().only_heads(0),  # type: ignore[arg-type]
        "heads must be a sequence of head numbers (ints), got int",
    ),
    (
        "weight int",
        lambda: _trace().weight(5),  # type: ignore[arg-type]
        "name must be a str, got int",
    ),
    (
        "weight_for str",
        lambda: _trace().weight_for("Q"),  # type: ignore[arg-type]
        "stage must be a Stage, got str",
    ),
]


@pytest.mark.parametrize(("what", "call", "message"), WRONG_TYPES, ids=[w[0] for w in WRONG_TYPES])
def test_a_wrong_type_is_a_type_error_naming_the_argument(
    what: str, call: Callable[[], object], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        call()
    assert type(caught.value) is TypeError, f"{what}: {caught.value!r}"
    assert one_line(caught.value) == message


# --------------------------------------------------------------------- bad values


def _cut() -> Trace:
    return trace_attention(sample="gqa").only_heads([1])


BAD_VALUES: list[tuple[str, Callable[[], object], str]] = [
    (
        "unknown token",
        lambda: trace_attention("cat wolf"),
        "sample cat-eats-fish: embeddings: unknown token 'wolf' (vocabulary: cat, eats, fish)",
    ),
    (
        "empty sentence",
        lambda: trace_attention("  "),
        "sentence: empty sentence: expected at least one token, got '  '",
    ),
    (
        "empty config",
        lambda: trace_attention("cat", config=""),
        "config: expected a file name, got ''",
    ),
    (
        "two models",
        lambda: trace_attention("cat", config="x.yaml", sample="causal"),
        "give one of model, config and sample, not config and sample",
    ),
    (
        "unknown sample",
        lambda: trace_attention(sample="nope"),
        "unknown sample 'nope' (samples: alibi, cat-eats-fish, causal, cross, gemma-like, gqa, "
        "it-animal, positions, rope, sink-logit, the-cat-sat, two-heads, window)",
    ),
    (
        "causal with a context",
        lambda: trace_attention(sample="cross", causal=True),
        "causal: a causal mask hides later tokens of the same sequence, but this model "
        "cross-attends to a context: expected causal=False (or no context), got causal=True",
    ),
    (
        "context with a causal model",
        lambda: trace_attention(sample="causal", context="the"),
        "context: cross-attention lets every query see every context token, but the model is "
        "causal (a decoder): expected causal=False with context, got context='the'",
    ),
    (
        "unknown context token",
        lambda: trace_attention("cat", context="cat wolf"),
        "context: unknown token 'wolf' (vocabulary: cat, eats, fish)",
    ),
    ("empty load_model", lambda: load_model(" "), "path: expected a file name, got ' '"),
    ("missing file", lambda: load_model("no/such.yaml"), "no/such.yaml: no such file"),
    (
        "NaN",
        lambda: tiny_spec(WQ=np.array([[1.0, np.nan], [0.0, 1.0]])),
        "weights.WQ[0][1]: expected a finite number, got a non-finite number (nan)",
    ),
    (
        "inf in embeddings",
        lambda: tiny_spec(embeddings={"a": np.array([1.0, np.inf])}),
        "embeddings.a[1]: expected a finite number, got a non-finite number (inf)",
    ),
    (
        "3-D weight",
        lambda: tiny_spec(WQ=np.ones((2, 2, 1))),
        "weights.WQ: expected a matrix (2-D array), got a 3-D array of 2 × 2 × 1",
    ),
    (
        "empty weight",
        lambda: tiny_spec(WQ=np.ones((2, 0))),
        "weights.WQ: expected at least one number, got 2 × 0",
    ),
    (
        "token with a space",
        lambda: tiny_spec(embeddings={"a b": np.ones(2)}),
        "embeddings: expected non-empty tokens without spaces (a sentence is split on "
        "whitespace), got a string 'a b'",
    ),
    (
        "ragged embeddings",
        lambda: tiny_spec(embeddings={"a": np.ones(2), "b": np.ones(3)}),
        "embeddings.b: expected a vector of 2 numbers (d_model, the length of 'a'), got 3 numbers",
    ),
    (
        "no embeddings",
        lambda: tiny_spec(embeddings={}),
        "embeddings: expected a non-empty mapping of token -> vector, got an empty mapping",
    ),
    ("heads 0", lambda: tiny_spec(heads=0), "heads: expected a whole number ≥ 1, got 0"),
    (
        "rope base inf",
        lambda: tiny_spec(positions="rope", rope_base=float("inf")),
        "rope_base: expected a number > 1 (10000 in RoFormer and LLaMA), got a non-finite "
        "number (inf)",
    ),
    (
        "rope pairing misspelt",
        lambda: tiny_spec(positions="rope", rope_pairing="interleave"),
        "rope_pairing: expected half or interleaved, got a string 'interleave'",
    ),
    (
        "a head the trace does not hold",
        lambda: _trace().only_heads([5]),
        "heads: expected heads this trace holds (0), got 5",
    ),
    (
        "a head cut away",
        lambda: _cut().only_heads([0]),
        "heads: expected heads this trace holds (1), got 0",
    ),
    (
        "no heads",
        lambda: _trace().only_heads([]),
        "heads: expected at least one of the traced heads (0), got none",
    ),
    (
        "Stage shape",
        lambda: Stage("X", "X", ("a", "b"), ("d0",), np.ones((1, 1))),
        "Stage.data: expected 2 × 1 (len(rows) × len(cols)), got 1 × 1",
    ),
    (
        "Stage head -1",
        lambda: Stage("X", "X", ("a",), ("d0",), np.ones((1, 1)), head=-1),
        "Stage.head: expected None or a whole number ≥ 0, got -1",
    ),
]


@pytest.mark.parametrize(("what", "call", "message"), BAD_VALUES, ids=[w[0] for w in BAD_VALUES])
def test_a_bad_value_is_one_input_error_line(
    what: str, call: Callable[[], object], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert one_line(caught.value) == message


def test_an_unknown_stage_is_a_key_error_naming_those_there_are() -> None:
    trace = _trace()
    with pytest.raises(KeyError, match=r"no stage 'nope' in this trace \(stages: X, Q, K, V,"):
        trace["nope"]
    with pytest.raises(KeyError, match="no stage 'softmax' for head 3 in this trace"):
        trace["softmax", 3]


# --------------------------------------------------------------------- a real model's layer


def _layer(*args: Any, **kwargs: Any) -> object:
    from attntrace.real.layer import trace_layer

    return trace_layer(*args, **kwargs)


def _opened(name: Any) -> object:
    from attntrace.real.layer import open_model

    return open_model(name)


def _run(*args: Any, **kwargs: Any) -> object:
    from attntrace.real.layer import open_model

    return open_model("minilm").run(*args, **kwargs)


def _layer_input(*args: Any) -> object:
    from attntrace.real.layer import open_model

    return open_model("minilm").layer_input(*args)


REAL_ERRORS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("name int", lambda: _layer(5), TypeError, "name must be a str, got int"),
    (
        "sentence int",
        lambda: _layer("minilm", 5),
        TypeError,
        "sentence must be a str or None, got int",
    ),
    ("layer str", lambda: _layer("minilm", None, "1"), TypeError, "layer must be an int, got str"),
    (
        "layer bool",
        lambda: _layer("minilm", None, True),
        TypeError,
        "layer must be an int, got bool",
    ),
    (
        "head float",
        lambda: _layer("minilm", None, 0, 1.0),
        TypeError,
        "head must be an int or None, got float",
    ),
    (
        "unknown model",
        lambda: _layer("gpt5"),
        InputError,
        "name: expected minilm, smollm2, gemma3, a .gguf file, a model folder, ORG/NAME[@REV] "
        "(Hugging Face cache) or ollama:NAME[:TAG], got 'gpt5'",
    ),
    (
        "layer out of range",
        lambda: _layer("minilm", layer=6),
        InputError,
        "layer: expected a layer from 0 to 5 (minilm has 6), got 6",
    ),
    (
        "head out of range",
        lambda: _layer("smollm2", head=9),
        InputError,
        "head: expected a head from 0 to 8 (smollm2 has 9), got 9",
    ),
    (
        "empty sentence",
        lambda: _layer("minilm", " "),
        InputError,
        "sentence: empty sentence: expected at least one token, got none from ' '",
    ),
    ("open_model list", lambda: _opened(["minilm"]), TypeError, "name must be a str, got list"),
    (
        "open_model unknown",
        lambda: _opened("bert"),
        InputError,
        "name: expected minilm, smollm2, gemma3, a .gguf file, a model folder, ORG/NAME[@REV] "
        "(Hugging Face cache) or ollama:NAME[:TAG], got 'bert'",
    ),
    (
        "encode int",
        lambda: _opened("minilm").tokenizer.encode(5),  # type: ignore[attr-defined]
        TypeError,
        "text must be a str, got int",
    ),
    (
        "run ids str",
        lambda: _run("the cat", 1),
        TypeError,
        "ids must be a sequence of token ids (ints), got str",
    ),
    (
        "run id out of range",
        lambda: _run([101, 10**9], 1),
        InputError,
        "ids[1]: unknown token id: expected an integer from 0 to 30521, got 1000000000",
    ),
    (
        "run no ids",
        lambda: _run([], 1),
        InputError,
        "ids: expected 1 to 512 token ids for minilm, got 0",
    ),
    (
        "run too many layers",
        lambda: _run([101], 7),
        InputError,
        "layers: expected a number from 0 to 6 (minilm has 6 layers), got 7",
    ),
    (
        "run rows",
        lambda: _run([101, 102], 1, rows=[2]),
        InputError,
        "rows[0]: expected a query position from 0 to 1, got 2",
    ),
    (
        "layer_input layer",
        lambda: _layer_input([101], 6),
        InputError,
        "layer: expected a number from 0 to 5 (minilm has 6 layers), got 6",
    ),
]


@needs_weights
@pytest.mark.parametrize(
    ("what", "call", "kind", "message"), REAL_ERRORS, ids=[w[0] for w in REAL_ERRORS]
)
def test_the_real_layer_functions_check_their_arguments(
    what: str, call: Callable[[], object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as caught:
        call()
    assert type(caught.value) is kind, f"{what}: {caught.value!r}"
    assert one_line(caught.value) == message


# ------------------------------------------------- keys of a model mapping (issue 29)

_W = {"WQ": [[1, 0], [0, 1]], "WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]}
_EMB = {"cat": [1, 2]}

NON_STRING_KEYS: list[tuple[dict[Any, Any], str]] = [
    ({"embeddings": {1: [1, 2]}, "weights": _W}, "model['embeddings'] keys must be str, got int"),
    (
        {"embeddings": _EMB, "weights": {**_W, 1: [[1, 0]]}},
        "model['weights'] keys must be str, got int",
    ),
    (
        {"embeddings": _EMB, "weights": _W, "biases": {b"bQ": [1, 2]}},
        "model['biases'] keys must be str, got bytes",
    ),
    ({"embeddings": _EMB, "weights": _W, 1: 2}, "model keys must be str, got int"),
    ({"embeddings": _EMB, "weights": _W, ("a",): 2}, "model keys must be str, got tuple"),
    ({"embeddings": _EMB, "weights": _W, None: 2}, "model keys must be str, got NoneType"),
]


@pytest.mark.parametrize(("model", "message"), NON_STRING_KEYS)
def test_a_model_mapping_with_a_key_that_is_no_str_is_a_type_error(
    model: dict[Any, Any], message: str
) -> None:
    """Was an AttributeError from inside the checks ('int' object has no attribute
    'split'); the docstring promises a TypeError for a wrong Python type."""
    with pytest.raises(TypeError) as raised:
        trace_attention("cat", model=model)
    assert str(raised.value) == message
