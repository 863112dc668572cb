"""The variant keys of a model file (docs/variants.md) from the file to the trace and back.

Each key read to its :class:`Variants` field; ``--set window=3``; ``train --save``'s
document read back to the same model; the trace's ``model`` object holding exactly the
keys docs/variants.md's JSON section lists (and none for a model without them); a saved
trace read back by ``render`` with its variant stages checked. Expectations are written
here from the docs (loops over i and j, the closed forms), never read off the code.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from helpers import invoke, load_valid_trace, one_line_error
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace.forward.attention import trace_block
from attntrace.kernel.variants import Variants
from attntrace.modelfile.model_file import model_from_document
from attntrace.modelfile.model_writer import model_document

EMB = {"cat": [1.0, 2.0], "eats": [3.0, 1.0], "fish": [2.0, 4.0], "dog": [0.5, 1.5]}
EYE = [[1.0, 0.0], [0.0, 1.0]]
BASE: dict[str, Any] = {"embeddings": EMB, "weights": {"WQ": EYE, "WK": EYE, "WV": EYE}}


def model(**keys: Any) -> Any:
    return model_from_document({**BASE, **keys}, "model.yaml")


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"causal": True, "window": 2}, Variants(window=2)),
        ({"causal": True, "window": 2, "sinks": 1}, Variants(window=2, sinks=1)),
        ({"positions": "alibi"}, Variants()),
        ({"positions": "alibi", "alibi_slopes": [0.25]}, Variants(alibi_slopes=[0.25])),
        ({"qk_norm": True}, Variants(qk_norm=True)),
        ({"qk_norm": True, "qk_norm_eps": 1e-5}, Variants(qk_norm=True, qk_norm_eps=1e-5)),
        (
            {"qk_norm": True, "q_norm": [2, 1], "k_norm": [1, 3]},
            Variants(qk_norm=True, q_norm=np.array([2.0, 1.0]), k_norm=np.array([1.0, 3.0])),
        ),
        ({"softcap": 30}, Variants(softcap=30.0)),
        ({"sink_logit": 0.5}, Variants(sink_logit=0.5)),
        ({"sink_logit": [0.5]}, Variants(sink_logit=[0.5])),
    ],
)
def test_each_key_is_its_variants_field(keys: dict[str, Any], expected: Variants) -> None:
    spec = model(**keys)
    assert spec.variants == expected
    assert (spec.position_kind == "alibi") == (keys.get("positions") == "alibi")


def test_no_key_is_no_variant() -> None:
    assert model().variants == Variants()
    assert not model().variants.any


@pytest.mark.parametrize(
    "keys",
    [
        {"causal": True, "window": 3, "sinks": 1},
        {"positions": "alibi", "alibi_slopes": [0.125]},
        {"qk_norm": True, "qk_norm_eps": 1e-5, "q_norm": [2.0, 0.5], "k_norm": [1.0, 3.0]},
        {"softcap": 2.5},
        {"sink_logit": -1.25},
        {"sink_logit": [0.75]},
    ],
)
def test_train_save_writes_the_keys_back(keys: dict[str, Any]) -> None:
    """model_document (train --save's document) read back is the same model."""
    spec = model(**keys)
    document = model_document(spec)
    for key in keys:
        assert key in document, key
    again = model_from_document(document, "saved.yaml")
    assert again.variants == spec.variants
    assert again.position_kind == spec.position_kind


def test_a_model_without_variants_writes_none_of_the_keys() -> None:
    document = model_document(model())
    for key in (
        "window",
        "sinks",
        "alibi_slopes",
        "qk_norm",
        "qk_norm_eps",
        "q_norm",
        "k_norm",
        "softcap",
        "sink_logit",
    ):
        assert key not in document


def _write(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**BASE, **document}), encoding="utf-8")
    return str(path)


def _trace(tmp_path: Path, sentence: str, *args: str, **keys: Any) -> dict[str, Any]:
    result = invoke("run", "-c", _write(tmp_path, keys), sentence, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return load_valid_trace(result.stdout)


def _stage(trace: dict[str, Any], name: str, head: int = 0) -> npt.NDArray[np.float64]:
    for stage in trace["stages"]:
        if stage["name"] == name and stage["head"] == head:
            return np.array([[-math.inf if c is None else c for c in row] for row in stage["data"]])
    raise AssertionError(f"no stage {name}")


def test_set_window_masks_as_the_rule_says(tmp_path: Path) -> None:
    """``--set window=2 --set sinks=1``: query i sees j when j ≤ i and (i − j < 2 or j < 1)."""
    trace = _trace(
        tmp_path, "cat eats fish dog cat", "--set", "window=2", "--set", "sinks=1", causal=True
    )
    assert trace["model"]["window"] == 2
    assert trace["model"]["sinks"] == 1
    masked = _stage(trace, "masked")
    for i in range(5):
        for j in range(5):
            visible = j <= i and (i - j < 2 or j < 1)
            assert np.isneginf(masked[i, j]) != visible, (i, j)


def test_json_model_keys_are_exactly_the_documented_ones(tmp_path: Path) -> None:
    trace = _trace(
        tmp_path,
        "cat eats fish",
        causal=True,
        window=2,
        positions="alibi",
        qk_norm=True,
        q_norm=[2, 1],
        softcap=3,
        sink_logit=0.5,
    )
    m = trace["model"]
    assert m["window"] == 2
    assert "sinks" not in m  # 0 is off
    assert m["alibi_slopes"] == [2.0**-8]  # one head: m_0 = 2^(−8·1/1)
    assert m["qk_norm"] == {"eps": 1e-6, "q_norm": [2.0, 1.0], "k_norm": None}
    assert m["softcap"] == 3.0
    assert m["sink_logits"] == [0.5]
    names = [s["name"] for s in trace["stages"] if s["head"] == 0]
    assert names == [
        "Q",
        "K",
        "V",
        "Q_norm",
        "K_norm",
        "scores",
        "scaled",
        "alibi",
        "biased",
        "capped",
        "masked",
        "softmax",
        "sink",
        "output",
    ]


def test_a_trace_without_variants_has_none_of_the_keys(tmp_path: Path) -> None:
    m = _trace(tmp_path, "cat eats", causal=True)["model"]
    assert set(m) == {"name", "d_model", "d_k", "d_v", "heads", "kv_heads", "causal", "positions"}


def test_sink_and_softmax_rows_are_the_closed_form(tmp_path: Path) -> None:
    """softmax_j = e^(x_j − M) / (Σ e^(x_k − M) + e^(s − M)); sink the same with s."""
    trace = _trace(tmp_path, "cat eats fish", sink_logit=1.5)
    scaled, softmax, sink = (_stage(trace, n) for n in ("scaled", "softmax", "sink"))
    assert sink.shape == (3, 1)
    for i in range(3):
        top = max(max(scaled[i]), 1.5)
        total = sum(math.exp(x - top) for x in scaled[i]) + math.exp(1.5 - top)
        for j in range(3):
            assert softmax[i, j] == pytest.approx(
                math.exp(scaled[i, j] - top) / total, **FLOAT64_APPROX
            )
        assert sink[i, 0] == pytest.approx(math.exp(1.5 - top) / total, **FLOAT64_APPROX)


def _saved(tmp_path: Path, **keys: Any) -> dict[str, Any]:
    return _trace(tmp_path, "cat eats fish", **keys)


def _render(tmp_path: Path, document: dict[str, Any]) -> Any:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return invoke("render", str(path))


@pytest.mark.parametrize(
    ("keys", "edit", "words"),
    [
        (
            {"causal": True, "window": 2},
            lambda d: d["model"].update(window=0),
            ("model.window", "a whole number ≥ 1"),
        ),
        (
            {"causal": True, "window": 2},
            lambda d: d["model"].update(causal=False),
            ("model.window", "causal: true"),
        ),
        (
            {"causal": True, "window": 2, "sinks": 1},
            lambda d: d["model"].pop("window"),
            ("model.sinks", "a window"),
        ),
        (
            {"positions": "alibi"},
            lambda d: d["model"].pop("alibi_slopes"),
            ("model.alibi_slopes", "1 slopes"),
        ),
        (
            {"positions": "alibi"},
            lambda d: d["model"].update(alibi_slopes=[-1]),
            ("model.alibi_slopes[0]", "> 0"),
        ),
        (
            {"qk_norm": True},
            lambda d: d["model"]["qk_norm"].update(q_norm=[1, 2, 3]),
            ("model.qk_norm.q_norm", "2 numbers"),
        ),
        ({"qk_norm": True}, lambda d: d["model"].pop("qk_norm"), ("model.qk_norm", "Q_norm")),
        ({"softcap": 2}, lambda d: d["model"].update(softcap="big"), ("model.softcap",)),
        (
            {"sink_logit": 1},
            lambda d: d["model"].update(sink_logits=[1, 2]),
            ("model.sink_logits", "1 numbers"),
        ),
        ({"sink_logit": 1}, lambda d: d["model"].pop("sink_logits"), ("model.sink_logits", "sink")),
    ],
)
def test_a_bad_saved_variant_is_one_line(
    tmp_path: Path, keys: dict[str, Any], edit: Any, words: tuple[str, ...]
) -> None:
    document = _saved(tmp_path, **keys)
    edit(document)
    one_line_error(_render(tmp_path, document), *words)


def test_a_sink_column_that_does_not_fill_the_rows_is_refused(tmp_path: Path) -> None:
    """With a sink the softmax row and its sink cell sum to 1: a sink changed breaks it."""
    document = _saved(tmp_path, sink_logit=1)
    sink = next(s for s in document["stages"] if s["name"] == "sink")
    sink["data"][0][0] += 0.25
    one_line_error(_render(tmp_path, document), "softmax", "sum to 1")


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6),
    window=st.integers(1, 7),
    sinks=st.integers(0, 3),
    sink_logit=st.floats(-5, 5),
)
def test_any_window_and_sink_trace_as_the_rules_say(
    n: int, window: int, sinks: int, sink_logit: float
) -> None:
    """For any window N, sinks S and sink logit s read from a file: key j is hidden from
    query i exactly when j > i or (i − j ≥ N and j ≥ S), and each softmax row plus its
    sink cell sums to 1 (docs/variants.md)."""
    tokens = ["cat", "eats", "fish", "dog", "cat", "fish"][:n]
    spec = model(causal=True, window=window, sinks=sinks, sink_logit=sink_logit)
    trace = trace_block(spec, tokens)
    masked = trace.stage("masked").data
    for i in range(n):
        for j in range(n):
            hidden = j > i or (i - j >= window and j >= sinks)
            assert bool(np.isneginf(masked[i, j])) == hidden, (i, j)
    sums = trace.stage("softmax").data.sum(axis=1) + trace.stage("sink").data[:, 0]
    np.testing.assert_allclose(sums, np.ones(n), **FLOAT64)
