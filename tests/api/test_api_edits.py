"""``trace_attention(..., edits=[...])`` and ``prepared``/``traced``/``choose_model``'s
``edits=``: the CLI's ``--set`` from Python, for a model file, a sample or a mapping.

The numbers an edit changes are checked against tests/naive.py in
tests/cli/test_set_flag.py; here, which models take edits and how mistakes read.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_model import EMBEDDINGS, MODEL_FILE, WK, WQ, WV, one_line, tiny_spec

from attntrace import InputError, trace_attention
from attntrace.api import CLI_NAMES, choose_model, prepared, traced

EDITED_WQ = [[1.0, 0.5], [0.5, -1.0]]  # the tiny model's WQ with [0][1] = 0.5


def _q(x: list[list[float]], wq: list[list[float]]) -> list[list[float]]:
    """Q = X · WQ, by loops (small halves and quarters: exact in float64)."""
    return [
        [sum(row[k] * wq[k][j] for k in range(len(wq))) for j in range(len(wq[0]))] for row in x
    ]


def _mapping() -> dict[str, Any]:
    return {
        "sentence": "a b c",
        "embeddings": {t: list(v) for t, v in EMBEDDINGS.items()},
        "weights": {"WQ": [r[:] for r in WQ], "WK": WK, "WV": WV},
    }


X = [EMBEDDINGS[t] for t in ("a", "b", "c")]


def test_edits_apply_to_a_model_file(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(MODEL_FILE, encoding="utf-8")
    trace = trace_attention(config=path, edits=["WQ[0][1]=0.5", "causal=true"])
    assert trace["Q"].data.tolist() == _q(X, EDITED_WQ)
    assert trace.model.causal
    assert path.read_text(encoding="utf-8") == MODEL_FILE


def test_edits_apply_to_a_mapping_and_leave_it_as_it_was() -> None:
    model = _mapping()
    before = copy.deepcopy(model)
    trace = trace_attention(model=model, edits=("WQ[0][1]=0.5",))
    assert trace["Q"].data.tolist() == _q(X, EDITED_WQ)
    assert model == before


def test_edits_apply_to_a_sample() -> None:
    trace = trace_attention(sample="cat-eats-fish", edits=["embeddings.cat=[1, 0]"])
    assert trace["X"].data.tolist()[0] == [1.0, 0.0]
    assert trace_attention(sample="cat-eats-fish")["X"].data.tolist()[0] == [1.0, 2.0]


def test_prepared_traced_and_choose_model_take_the_same_edits() -> None:
    """What `check` and `diff` call: the CLI's names, the --set strings."""
    edits = ["WQ[0][1]=0.5"]
    spec = choose_model(None, None, _mapping(), CLI_NAMES, edits=edits)
    assert spec.WQ.tolist() == EDITED_WQ
    inputs = prepared(None, model=_mapping(), edits=edits)
    assert inputs.spec.WQ.tolist() == EDITED_WQ
    assert inputs.tokens == ("a", "b", "c")
    assert traced(None, model=_mapping(), edits=edits)["Q"].data.tolist() == _q(X, EDITED_WQ)
    with pytest.raises(InputError) as caught:
        prepared(None, model=_mapping(), edits=["WQ[0][9]=1"])
    assert one_line(caught.value).startswith("--set WQ[0][9]: ")


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ("WQ[0][1]=0.5", "edits must be a tuple (or list) of str, got str"),
        ([1], "edits[0] must be a str, got int"),
        (None, "edits must be a tuple (or list) of str, got NoneType"),
    ],
)
def test_edits_of_the_wrong_type_are_a_type_error(edits: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        trace_attention(edits=edits)
    assert one_line(caught.value) == message


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (
            ["WQ[0][9]=1"],
            "edits WQ[0][9]: expected an index from 0 to 1 (weights.WQ[0] has 2 numbers), got 9",
        ),
        (
            ["WQ[0][1]=x"],
            "model (with edits WQ[0][1]): weights.WQ[0][1]: expected a number, got a string 'x'",
        ),
        (["WQ"], "edits: expected PATH=VALUE, as in WQ[0][1]=0.5, got 'WQ' (no '=')"),
    ],
)
def test_a_bad_edit_names_edits(edits: list[str], message: str) -> None:
    with pytest.raises(InputError) as caught:
        trace_attention(model=_mapping(), edits=edits)
    assert one_line(caught.value) == message


def test_a_model_spec_takes_no_edits() -> None:
    with pytest.raises(InputError) as caught:
        trace_attention("a b", model=tiny_spec(), edits=["causal=true"])
    assert one_line(caught.value).startswith("edits: a ModelSpec is already checked: ")
    # no edits: a spec is traced as always
    assert trace_attention("a b", model=tiny_spec(), edits=[])["X"].data.shape == (2, 2)


def test_numpy_arrays_in_a_mapping_are_edited_in_a_copy() -> None:
    wq = np.array(WQ)
    model = {"embeddings": EMBEDDINGS, "weights": {"WQ": wq, "WK": WK, "WV": WV}}
    trace = trace_attention("a b c", model=model, edits=["WQ[0][1]=0.5"])
    assert trace["Q"].data.tolist() == _q(X, EDITED_WQ)
    assert wq.tolist() == WQ
