"""Gaps a fresh-eyes tester found in `check`'s diagnosis (issue 32): a right stage saved
under its neighbour's name, one mistake by several fills said once, and Q saved after
a wrong ``.view(1, n, d, H)``. Each array is made by hand from the trace's inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import numpy.typing as npt
from helpers import invoke, schema

import attntrace
from attntrace.api import prepared

Array = npt.NDArray[np.float64]


def _softmax(rows: Array) -> Array:
    exps = np.exp(rows - rows.max(axis=-1, keepdims=True))
    weights: Array = exps / exps.sum(axis=-1, keepdims=True)
    return weights


def _two_heads() -> dict[str, Array]:
    """two-heads' Q, K, V per head from the trace, the rest computed here by hand."""
    trace = attntrace.trace_attention(sample="two-heads")
    Q = np.stack([trace["Q", h].data for h in range(2)])
    K = np.stack([trace["K", h].data for h in range(2)])
    V = np.stack([trace["V", h].data for h in range(2)])
    scores = Q @ K.transpose(0, 2, 1)
    scaled = scores / math.sqrt(Q.shape[-1])
    attn = _softmax(scaled)
    return {"Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled, "attn": attn}


# --- 1. a right stage saved under the neighbouring stage's name ------------------------


def test_scores_that_hold_the_scaled_scores_are_named_as_such() -> None:
    """Many tutorials call Q·Kᵀ/√d_k "scores": the numbers are right, the name is not."""
    mine = _two_heads()
    report = attntrace.check(
        {"Q": mine["Q"], "scores": mine["scaled"], "attn": mine["attn"]}, sample="two-heads"
    )
    assert report.first_divergent is not None
    assert report.first_divergent.stage == "scores"
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "saved-as-another-stage"
    message = report.diagnosis.message
    assert "scores holds what the trace calls scaled" in message
    assert "÷ √d_k already applied" in message
    assert "save it as `scaled`" in message


def test_the_softmax_saved_as_masked_is_named_as_such() -> None:
    """causal: masked holds the weights, a later stage two steps on."""
    trace = attntrace.trace_attention(sample="causal")
    Q, K = trace["Q"].data, trace["K"].data
    scaled = Q @ K.T / math.sqrt(Q.shape[-1])
    n = len(scaled)
    hidden = np.triu(np.ones((n, n), dtype=bool), 1)
    weights = _softmax(np.where(hidden, -np.inf, scaled))
    report = attntrace.check({"scaled": scaled, "masked": weights}, sample="causal")
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "saved-as-another-stage"
    assert "masked holds what the trace calls softmax" in report.diagnosis.message


def test_a_catalogue_mistake_comes_before_another_stage() -> None:
    """scaled given the unscaled scores is no-scaling, not scores saved as scaled."""
    mine = _two_heads()
    report = attntrace.check({"scaled": mine["scores"]}, sample="two-heads")
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "no-scaling"


def test_check_names_a_stage_saved_as_another_on_the_command_line(tmp_path: Path) -> None:
    mine = _two_heads()
    path = tmp_path / "student.npz"
    np.savez(path, q=mine["Q"], scores=mine["scaled"], attn=mine["attn"])
    result = invoke("check", str(path), "--sample", "two-heads")
    assert result.exit_code == 1, result.stderr
    text = " ".join(result.stdout.split())  # the message wraps at 80 columns
    assert "diagnosis: saved-as-another-stage" in text
    assert "scores holds what the trace calls scaled (÷ √d_k already applied)" in text
    assert "no known mistake" not in text
    as_json = invoke("check", str(path), "--sample", "two-heads", "--json")
    document = json.loads(as_json.stdout)
    jsonschema.validate(document, schema("check-v1.schema.json"))
    assert document["diagnosis"]["cause"] == "saved-as-another-stage"


# --- 2. one mistake by several fills, said once ---------------------------------------


def _deep_model() -> dict[str, Any]:
    """One causal head (WK = −WQ, d_k = 1: score = −x_i·x_j) whose first row's one visible
    score is −10⁶: a fill of −1e4, −1e5 or −65504 lifts its hidden cells far above it,
    −1e9 hides them. The second row's scores are near 0, so a fill of 0 shows there."""
    return {
        "name": "deep",
        "description": "scores near minus a million",
        "sentence": "a b c",
        "causal": True,
        "embeddings": {"a": [1000.0], "b": [0.01], "c": [1.0]},
        "weights": {"WQ": [[1.0]], "WK": [[-1.0]], "WV": [[1.0]]},
    }


def test_a_mistake_by_several_fills_names_each_fill_once() -> None:
    x = np.array([[1000.0], [0.01], [1.0]])
    scores = -(x @ x.T)  # d_k = 1: scaled = scores
    hidden = np.triu(np.ones((3, 3), dtype=bool), 1)
    attn = _softmax(np.where(hidden, -1e4, scores))  # masked_fill(mask, -1e4)
    assert attn[0, 1] == 0.5  # the hidden cells took the weight
    report = attntrace.check({"attn": attn}, model=_deep_model())
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "mask-fill-too-small"
    message = report.diagnosis.message
    for fill in ("−1e4", "−1e5", "−65504"):
        assert message.count(fill) == 1, message
    assert message.count("instead of −∞") == 1, message
    assert "; or" not in message
    assert "−1e9" not in message  # hides the cells: no reproduction


def test_ways_that_differ_in_more_than_a_value_stay_apart() -> None:
    from attntrace.checking.diagnosis import said_once
    from attntrace.checking.mistakes import catalogue

    model = prepared(None, model=_deep_model()).spec
    fills = [m.message for m in catalogue(model, 3, 3) if m.cause == "mask-fill-too-small"]
    said = said_once(fills)
    assert said.count("; or ") == 1  # filled with, then added: two sentences
    filled, added = said.split("; or ")
    assert filled.startswith("the hidden cells were filled with −1e4, −1e5, −1e9 or −65504")
    assert added.startswith("−1e4 or −65504 (float16's finfo.min) was added to the hidden")
    assert said_once(["a b c", "x y z"]) == "a b c; or x y z"


# --- 3. Q saved after the wrong .view(1, n, d, H) --------------------------------------


def _six_wide() -> dict[str, Any]:
    """Two heads of d_k = 3 over four tokens: [n, d, H] = [4, 3, 2] fits no other form."""
    rng = np.random.default_rng(32)
    return {
        "name": "six-wide",
        "description": "two heads of three dimensions",
        "sentence": "a b c d",
        "heads": 2,
        "embeddings": {t: rng.normal(size=6).round(3).tolist() for t in "abcd"},
        "weights": {w: rng.normal(size=(6, 6)).round(3).tolist() for w in ("WQ", "WK", "WV")},
    }


def test_q_saved_after_a_dims_then_heads_view_is_named_heads_split_wrong() -> None:
    """q_proj(x).view(1, n, d, H): head h is [..., h], columns h, h + H, ... of q_proj."""
    document = _six_wide()
    X = np.array([document["embeddings"][t] for t in "abcd"])
    W = {k: np.array(v) for k, v in document["weights"].items()}
    viewed = {k: (X @ W[f"W{k}"]).reshape(1, 4, 3, 2) for k in "QKV"}  # [1, n, d, H]
    heads = {k: np.stack([a[0, :, :, h] for h in range(2)]) for k, a in viewed.items()}
    attn = _softmax(heads["Q"] @ heads["K"].transpose(0, 2, 1) / math.sqrt(3))
    out = attn @ heads["V"]
    report = attntrace.check({"Q": viewed["Q"], "attn": attn, "out": out}, model=document)
    q = next(r for r in report.results if r.name == "Q")
    assert q.status == "differs"
    assert q.shape_found == (1, 4, 3, 2)  # still reported as a shape that fits no form
    assert report.diagnosis is not None
    assert report.diagnosis.cause == "heads-split-wrong"


def test_a_right_q_in_dims_then_heads_order_gets_no_mistake() -> None:
    """The right heads, permuted to [n, d, H]: read so, no mistake reproduces them."""
    document = _six_wide()
    X = np.array([document["embeddings"][t] for t in "abcd"])
    q_proj = X @ np.array(document["weights"]["WQ"])
    right = np.stack([q_proj[:, :3], q_proj[:, 3:]], axis=-1)  # [n, d, H], heads in order
    report = attntrace.check({"Q": right}, model=document)
    assert report.first_divergent is not None
    assert report.diagnosis is None


def test_a_dims_then_heads_shape_that_fits_a_form_is_read_by_the_form() -> None:
    """two-heads: d_k = H = 2, so [n, d, H] is [n, H, d], tokens first (docs/check.md)."""
    X = attntrace.trace_attention(sample="two-heads")["X"].data
    viewed = (X @ prepared(None, sample="two-heads").spec.WQ).reshape(1, 3, 2, 2)
    report = attntrace.check({"Q": viewed}, sample="two-heads")
    q = next(r for r in report.results if r.name == "Q")
    assert q.shape_found is None  # read as [1, n, H, d], its numbers compared
