"""``run --set PATH=VALUE``: each edit changes the traced numbers as the loops of
tests/naive.py say the edited model computes them, edits are made in order and before
--causal/--context, and nothing on disk changes.

How an edit is read and every way one is refused: tests/modelfile/test_edits.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import invoke, load_valid_trace, whole_runs
from hypothesis import given
from hypothesis import strategies as st
from naive import naive_block
from tolerances import FLOAT64

from attntrace.modelfile.samples import samples_dir

# cat-eats-fish, the worked example and the model `run` traces without a model flag
EMBEDDINGS = {"cat": [1.0, 2.0], "eats": [3.0, 1.0], "fish": [2.0, 4.0]}
WQ = [[1.0, 0.0], [0.0, 1.0]]
WK = [[1.0, 0.0], [0.0, 1.0]]
WV = [[0.0, 1.0], [1.0, 0.0]]
SENTENCE = ["cat", "eats", "fish"]


def traced(*args: str, input: str | None = None) -> dict[str, Any]:
    """``run ARGS --json``, validated, as {stage name: data} and the model's fields."""
    result = invoke("run", *args, "--json", input=input)
    assert result.exit_code == 0, result.stderr
    document = load_valid_trace(result.stdout)
    stages: dict[str, Any] = {s["name"]: s["data"] for s in document["stages"]}
    return {"stages": stages, "model": document["model"], "tokens": document["tokens"]}


def assert_trace_is(trace: dict[str, Any], naive: dict[str, Any], *, causal: bool) -> None:
    """Every stage of the one-head trace equals the loops' (head 0), within FLOAT64."""
    stages = trace["stages"]
    names = ["Q", "K", "V", "scores", "scaled", "softmax", "output"]
    if causal:
        names.append("masked")
    assert ("masked" in stages) == causal
    for name in names:
        expected = np.array(naive[name][0], dtype=float)
        found = np.array([[-np.inf if v is None else v for v in row] for row in stages[name]])
        np.testing.assert_allclose(found, expected, **FLOAT64, err_msg=name)


def naive_of(
    embeddings: dict[str, list[float]] = EMBEDDINGS,
    tokens: list[str] = SENTENCE,
    wq: list[list[float]] = WQ,
    *,
    causal: bool = False,
) -> dict[str, Any]:
    x = [embeddings[t] for t in tokens]
    return naive_block(x, wq, WK, WV, causal=causal)


# ------------------------------------------------------------ the examples


def test_set_one_number_of_wq() -> None:
    """``--set WQ[0][1]=0.5``: Q's column d1 becomes X·WQ' (0.5·d0 + d1), and every
    stage after it follows."""
    trace = traced("--set", "WQ[0][1]=0.5")
    edited = [[1.0, 0.5], [0.0, 1.0]]
    assert_trace_is(trace, naive_of(wq=edited), causal=False)
    # by hand: Q = X · WQ', row by row
    assert trace["stages"]["Q"] == [[1.0, 2.5], [3.0, 2.5], [2.0, 5.0]]
    # and not the unedited model's numbers
    assert trace["stages"]["softmax"] != traced()["stages"]["softmax"]


def test_set_a_tokens_embedding() -> None:
    """``--set embeddings.cat=[1,0]``: cat's row of X, and all that X feeds."""
    trace = traced("--set", "embeddings.cat=[1,0]")
    edited = {**EMBEDDINGS, "cat": [1.0, 0.0]}
    assert trace["stages"]["X"][0] == [1.0, 0.0]
    assert_trace_is(trace, naive_of(edited), causal=False)


def test_set_causal() -> None:
    """``--set causal=true``: the model is a decoder: masked appears, later keys weigh 0."""
    trace = traced("--set", "causal=true")
    assert trace["model"]["causal"] is True
    assert_trace_is(trace, naive_of(causal=True), causal=True)
    assert trace["stages"]["softmax"][0] == [1.0, 0.0, 0.0]  # cat sees only itself


def test_set_a_new_token() -> None:
    trace = traced("cat", "dog", "--set", "embeddings.dog=[0.5, 0.25]")
    assert trace["tokens"] == ["cat", "dog"]
    edited = {**EMBEDDINGS, "dog": [0.5, 0.25]}
    assert_trace_is(trace, naive_of(edited, ["cat", "dog"]), causal=False)


@pytest.mark.long  # a whole CLI run an example: a long property run
@whole_runs
@given(
    matrix=st.sampled_from(["WQ", "WK", "WV"]),
    row=st.integers(0, 1),
    column=st.integers(0, 1),
    value=st.floats(-8, 8, allow_nan=False),
)
def test_any_one_cell_edit_traces_as_the_loops_say(
    matrix: str, row: int, column: int, value: float
) -> None:
    trace = traced("--set", f"{matrix}[{row}][{column}]={value!r}")
    weights = {"WQ": [r[:] for r in WQ], "WK": [r[:] for r in WK], "WV": [r[:] for r in WV]}
    weights[matrix][row][column] = value
    x = [EMBEDDINGS[t] for t in SENTENCE]
    naive = naive_block(x, weights["WQ"], weights["WK"], weights["WV"])
    assert_trace_is(trace, naive, causal=False)


# ------------------------------------------------------------------------- order


def test_edits_are_made_in_the_order_given() -> None:
    whole, cell = "WQ=[[2, 0], [0, 2]]", "WQ[0][1]=3"
    trace = traced("--set", whole, "--set", cell)
    assert_trace_is(trace, naive_of(wq=[[2.0, 3.0], [0.0, 2.0]]), causal=False)
    trace = traced("--set", cell, "--set", whole)  # the whole matrix, set last, wins
    assert_trace_is(trace, naive_of(wq=[[2.0, 0.0], [0.0, 2.0]]), causal=False)
    trace = traced("--set", "WQ[0][1]=1", "--set", "WQ[0][1]=0.5")  # the last value stays
    assert_trace_is(trace, naive_of(wq=[[1.0, 0.5], [0.0, 1.0]]), causal=False)


@pytest.mark.parametrize(
    ("args", "causal"),
    [
        (("--set", "causal=true", "--no-causal"), False),
        (("--no-causal", "--set", "causal=true"), False),  # where the flag is written: no matter
        (("--set", "causal=false", "--causal"), True),
        (("--set", "causal=true"), True),
    ],
)
def test_causal_flags_override_the_edited_model(args: tuple[str, ...], causal: bool) -> None:
    trace = traced(*args)
    assert trace["model"]["causal"] is causal
    assert_trace_is(trace, naive_of(causal=causal), causal=causal)


def test_context_overrides_an_edited_context() -> None:
    """cross's context is the file's; --set changes it, --context overrides both."""
    edited = traced("--sample", "cross", "--set", "context=the cat")
    flagged = traced("--sample", "cross", "--context", "the cat")
    assert len(edited["stages"]["X_context"]) == 2
    assert edited["stages"] == flagged["stages"]
    both = traced("--sample", "cross", "--set", "context=the cat", "--context", "cat")
    assert len(both["stages"]["X_context"]) == 1
    assert "X_context" not in traced("--sample", "cross", "--set", "context=null")["stages"]


def test_a_sentence_given_is_traced_instead_of_an_edited_one() -> None:
    assert traced("--set", "sentence=fish cat")["tokens"] == ["fish", "cat"]
    assert traced("eats", "--set", "sentence=fish cat")["tokens"] == ["eats"]


# ------------------------------------------------------------- files, and stdin


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_the_model_file_on_disk_is_not_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.yaml").write_text(
        "sentence: cat eats fish\nembeddings:\n  cat: [1, 2]\n  eats: [3, 1]\n  fish: [2, 4]\n"
        "weights:\n  WQ: [[1, 0], [0, 1]]\n  WK: [[1, 0], [0, 1]]\n  WV: [[0, 1], [1, 0]]\n",
        encoding="utf-8",
    )
    before = _digests(tmp_path)
    samples = _digests(samples_dir())
    edited = traced("--config", "model.yaml", "--set", "WQ[0][1]=0.5", "--set", "causal=true")
    assert_trace_is(edited, naive_of(wq=[[1.0, 0.5], [0.0, 1.0]], causal=True), causal=True)
    traced("--sample", "it-animal", "--set", "WQ[3][0]=0")
    assert _digests(tmp_path) == before
    assert _digests(samples_dir()) == samples
    # and the next run without --set traces the file as it is
    assert_trace_is(traced("--config", "model.yaml"), naive_of(), causal=False)


def test_set_edits_a_model_on_stdin() -> None:
    text = (
        '{"embeddings": {"a": [1, 2]}, "weights": {"WQ": [[1], [0]], "WK": [[1], [1]], '
        '"WV": [[1], [0]]}}'
    )
    trace = traced("a", "--config", "-", "--set", "WQ[1][0]=3", input=text)
    assert trace["stages"]["Q"] == [[7.0]]  # 1·1 + 2·3


def test_help_names_the_flag() -> None:
    result = invoke("run", "--help", columns=200)
    assert result.exit_code == 0
    line = next(line for line in result.stdout.splitlines() if "--set" in line)
    assert line.split()[1:4] == ["--set", "PATH=VALUE", "Edit"]
