"""`attntrace grad` on the command line: every flag, every usage error and bad input
(one line, exit 2, no traceback), the view's numbers against an independent
computation, step mode scripted through stdin, --focus's wiring."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from helpers import invoke, needs_weights, one_line_error
from tolerances import FINITE_DIFFERENCE, FINITE_DIFFERENCE_STEP

from attntrace.api import prepared
from attntrace.forward.attention import trace_block

IT_ANIMAL = ["-s", "it-animal", "--from", "it", "--to", "animal"]

CAUSAL_WITH_TARGET = """\
name: tiny-target
sentence: the cat sat
causal: true
embeddings:
  the: [0.5, 0.5]
  cat: [2, 0.5]
  sat: [0.5, 2]
weights:
  WQ: [[1, 0], [0, 1]]
  WK: [[1, 0], [0, 1]]
  WV: [[1, 0], [0, 1]]
target: [[1, 0], [0, 1], [1, 1]]
"""


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([*IT_ANIMAL, "--json", "--step"], ["--json", "--step"]),
        ([*IT_ANIMAL, "--json", "--focus", "it"], ["--json", "--focus"]),
        ([*IT_ANIMAL, "--step", "--focus", "it"], ["--step", "--focus"]),
        (["-s", "it-animal", "--loss", "mse", "--from", "it"], ["--from", "mse"]),
        (["-s", "it-animal", "--loss", "mse", "--to", "it"], ["--to", "mse"]),
        (["-s", "it-animal", "--loss", "mse", "--head", "0"], ["--head"]),
        (["-s", "it-animal", "--loss", "l1"], ["--loss", "l1"]),
        (["-s", "it-animal", "--from", "it"], ["--to"]),
        (["-s", "it-animal", "--to", "it"], ["--from"]),
        (["-s", "it-animal"], ["--from", "--loss mse"]),
        (["-s", "it-animal", "-c", "x.yaml", "--from", "it", "--to", "it"], ["give one"]),
        (["-c", "-", "--step", "--from", "it", "--to", "it"], ["stdin"]),
        ([*IT_ANIMAL, "--layer", "1"], ["--model"]),
        (["-m", "minilm", "--set", "WQ[0][0]=1", "--from", "it", "--to", "it"], ["--set"]),
        (["-m", "minilm", "--causal", "--from", "it", "--to", "it"], ["--causal"]),
        (["-s", "it-animal", "--from", "zebra", "--to", "it"], ["--from", "0:The"]),
        (["-s", "it-animal", "--from", "it", "--to", "99"], ["--to"]),
        ([*IT_ANIMAL, "--head", "1"], ["--head", "0 to 0"]),
        (["-s", "causal", "--from", "the", "--to", "mat"], []),
        (["-s", "nothing-here", "--from", "a", "--to", "b"], ["nothing-here"]),
        ([*IT_ANIMAL, "--focus", "zebra"], ["--focus"]),
    ],
)
def test_what_does_not_go_together_is_one_line_and_exit_2(
    args: list[str], words: list[str]
) -> None:
    one_line_error(invoke("grad", *args, input=""), *words)


def test_mse_without_a_target_is_refused_naming_the_target() -> None:
    one_line_error(invoke("grad", "-s", "it-animal", "--loss", "mse"), "target")


def test_a_target_of_the_wrong_rows_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "m.yaml"
    model.write_text(CAUSAL_WITH_TARGET)
    one_line_error(invoke("grad", "-c", str(model), "the cat"), "rows")


def test_the_loss_value_is_minus_log_of_the_softmax_cell() -> None:
    run = json.loads(invoke("run", "-s", "it-animal", "--json").stdout)
    softmax = next(s for s in run["stages"] if s["name"] == "softmax")
    weight = softmax["data"][run["tokens"].index("it")][run["tokens"].index("animal")]
    result = invoke("grad", *IT_ANIMAL, "--precision", "8")
    assert result.exit_code == 0, result.stderr
    value = re.search(r"L = −log softmax\[it, animal\] = ([0-9.]+)", result.stdout)
    assert value is not None
    assert float(value[1]) == pytest.approx(-math.log(weight), abs=1e-8)


def table_rows(text: str, title: str) -> dict[str, list[float]]:
    """The rows of the table under the first line starting with ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows: dict[str, list[float]] = {}
    for line in lines[start + 3 :]:
        parts = line.split()
        if not parts or not re.fullmatch(r"-?[0-9.]+", parts[-1]):
            break
        rows[parts[0]] = [float(p) for p in parts[1:]]
    return rows


def test_the_views_d_wq_is_the_finite_difference_of_the_loss() -> None:
    """d_WQ as printed (8 digits) against (L(WQ + h) − L(WQ − h)) / 2h, L from the
    forward trace alone."""
    from dataclasses import replace

    ready = prepared(None, sample="it-animal")
    spec, tokens = ready.spec, list(ready.tokens)
    row, col = tokens.index("it"), tokens.index("animal")

    def loss(WQ: npt.NDArray[np.float64]) -> float:
        trace = trace_block(replace(spec, WQ=WQ), tokens, None)
        return float(-np.log(trace.stage("softmax").data[row, col]))

    h, base = FINITE_DIFFERENCE_STEP, np.array(spec.WQ)
    expected = np.zeros(base.shape)
    for index in np.ndindex(base.shape):
        up, down = base.copy(), base.copy()
        up[index] += h
        down[index] -= h
        expected[index] = (loss(up) - loss(down)) / (2 * h)
    result = invoke("grad", *IT_ANIMAL, "--precision", "8", columns=80)  # stacked tables
    shown = table_rows(result.stdout, "d_WQ = ")
    got = np.array([shown[f"d{i}"] for i in range(base.shape[0])])
    np.testing.assert_allclose(got, expected, atol=1e-7 + FINITE_DIFFERENCE["atol"])
    assert np.abs(expected).max() > 0.1  # the loss does reach WQ


@pytest.mark.parametrize("columns", [80, 160])
def test_no_line_is_wider_than_the_terminal_or_padded(columns: int) -> None:
    for args in (
        IT_ANIMAL,
        ["-s", "gqa", "--from", "the", "--to", "cat"],
        ["-s", "cross", "--from", "0", "--to", "0"],
    ):
        result = invoke("grad", *args, columns=columns)
        assert result.exit_code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert max(len(line) for line in lines) <= columns
        assert [line for line in lines if line != line.rstrip()] == []  # side by side too
        assert "\x1b" not in result.stdout  # NO_COLOR: no escape codes at all


def test_side_by_side_where_wide_enough_else_forward_first() -> None:
    wide = invoke("grad", *IT_ANIMAL, columns=160).stdout
    assert re.search(r"^Q = X · WQ .* {4}d_Q = d_scores · K", wide, re.M)
    narrow = invoke("grad", *IT_ANIMAL, columns=80).stdout
    assert not re.search(r"^Q = X · WQ .*d_Q = ", narrow, re.M)
    assert narrow.index("Q = X · WQ") < narrow.index("d_Q = d_scores · K")


def test_the_header_says_what_the_attend_loss_leaves_at_zero() -> None:
    out = invoke("grad", *IT_ANIMAL).stdout
    assert "it-animal · 11 tokens · d_model 6" in out
    assert "The animal didn't cross the street because it was tired ." in out
    assert "d_output, d_V and d_WV are exactly 0" in out
    assert "0 under the attend loss" in out


def test_head_h_alone_lists_the_heads_not_reached() -> None:
    out = invoke("grad", "-s", "gqa", "--from", "the", "--to", "cat", "--head", "2").stdout
    assert "(head 2 alone)" in out
    assert "heads 0, 1, 3: not reached by the loss" in out
    assert "head 2 · K/V head 1" in out
    assert "head 0 · K/V head 0" not in out
    summed = invoke("grad", "-s", "gqa", "--from", "the", "--to", "cat").stdout
    assert "Σ over heads 0…3" in summed
    assert "not reached" not in summed


def test_max_heads_shows_the_first_and_last() -> None:
    out = invoke("grad", "-s", "gqa", "--from", "the", "--to", "cat", "--max-heads", "2").stdout
    assert "heads 1 and 2 not shown" in out or "heads 1, 2 not shown" in out
    assert "head 3 · K/V head 1" in out
    every = invoke("grad", "-s", "gqa", "--from", "the", "--to", "cat", "--max-heads", "0")
    assert "not shown" not in every.stdout


def test_precision_rows_and_columns() -> None:
    out = invoke("grad", *IT_ANIMAL, "--precision", "2").stdout
    assert "= 0.43" in out
    assert "0.4329" not in out
    rows = invoke("grad", *IT_ANIMAL, "--max-rows", "4").stdout
    assert "showing 4 of 11 rows" in rows
    cols = invoke("grad", *IT_ANIMAL, "--max-cols", "2", columns=160).stdout
    assert "showing 2 of 11 columns" in cols


def test_mse_is_the_default_with_a_target_and_reaches_the_values(tmp_path: Path) -> None:
    model = tmp_path / "m.yaml"
    model.write_text(CAUSAL_WITH_TARGET)
    result = invoke("grad", "-c", str(model))
    assert result.exit_code == 0, result.stderr
    assert "L = mean((output − target)²)" in result.stdout
    document = json.loads(invoke("grad", "-c", str(model), "--json").stdout)
    out = np.array(
        next(
            s
            for s in json.loads(invoke("run", "-c", str(model), "--json").stdout)["stages"]
            if s["name"] == "output"
        )["data"]
    )
    target = np.array([[1, 0], [0, 1], [1, 1]])
    assert document["loss"]["value"] == pytest.approx(float(np.mean((out - target) ** 2)))
    d_output = np.array(next(s for s in document["stages"] if s["name"] == "d_output")["data"])
    np.testing.assert_allclose(d_output, 2 * (out - target) / out.size, rtol=1e-12)
    d_scaled = next(s for s in document["stages"] if s["name"] == "d_scaled")["data"]
    assert d_scaled[0][1] == 0
    assert d_scaled[0][2] == 0


def test_model_flags_change_the_gradients(tmp_path: Path) -> None:
    base = json.loads(invoke("grad", *IT_ANIMAL, "--json").stdout)["loss"]["value"]
    edited = invoke("grad", *IT_ANIMAL, "--set", "WQ[3][0]=0", "--json")
    assert json.loads(edited.stdout)["loss"]["value"] != base
    causal = invoke("grad", *IT_ANIMAL, "--causal", "--json")
    assert json.loads(causal.stdout)["model"]["causal"] is True
    cross = invoke(
        "grad",
        "-s",
        "it-animal",
        "--context",
        "the animal was tired",
        "--from",
        "it",
        "--to",
        "tired",
        "--json",
    )
    document = json.loads(cross.stdout)
    assert document["context_tokens"] == ["the", "animal", "was", "tired"]
    assert document["loss"]["to"] == {"index": 3, "token": "tired"}
    assert "d_X_context" in [s["name"] for s in document["stages"]]
    sentence = invoke(
        "grad", "-s", "it-animal", "the", "animal", "it", "--from", "it", "--to", "animal", "--json"
    )
    assert json.loads(sentence.stdout)["tokens"] == ["the", "animal", "it"]
    copy = tmp_path / "it.yaml"
    copy.write_text(invoke("samples", "it-animal").stdout)
    piped = invoke(
        "grad", "-c", "-", "--from", "it", "--to", "animal", "--json", input=copy.read_text()
    )
    assert json.loads(piped.stdout)["loss"]["value"] == base


def test_step_mode_walks_the_gradients_by_key() -> None:
    result = invoke("grad", *IT_ANIMAL, "--step", input="n\nb\nd_X\nh\nxyz\n?\nq\n")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    screens = re.findall(r"Gradient (\d+) of (\d+) · (\w+)", out)
    assert [(n, name) for n, _, name in screens] == [
        ("1", "d_output"),
        ("2", "d_V"),
        ("1", "d_output"),
        ("11", "d_X"),
    ]
    assert "this model has one head" in out or "the loss reaches no other" in out
    assert "unknown key 'xyz'" in out
    assert "Enter or n: next gradient" in out
    assert "X reaches the loss three ways" in out  # d_X's paragraph


def test_step_mode_h_goes_to_the_next_head_and_end_of_input_ends() -> None:
    result = invoke(
        "grad", "-s", "gqa", "--from", "the", "--to", "cat", "--step", input="d_Q\nh\nh 3\nh 9\n"
    )
    assert result.exit_code == 0, result.stderr
    heads = re.findall(r"Gradient \d+ of \d+ · d_Q  head (\d)", result.stdout)
    assert heads == ["0", "1", "3"]
    assert "no head 9 here" in result.stdout


def test_focus_calls_the_softmax_backward_panel() -> None:
    result = invoke("grad", *IT_ANIMAL, "--focus", "it")
    assert result.exit_code == 0, result.stderr
    assert "Softmax backward by hand: it, row 7" in result.stdout
    assert "✓ the same as the d_scaled stage's row" in result.stdout
    assert "Traceback" not in result.stderr
    by_index = invoke("grad", *IT_ANIMAL, "--focus", "7")
    assert by_index.stdout == result.stdout


def test_help_lists_the_loss_flags() -> None:
    out = invoke("grad", "--help", columns=120).stdout
    for flag in (
        "--loss",
        "--from",
        "--to",
        "--head",
        "--step",
        "--focus",
        "--json",
        "--model",
        "--layer",
        "--set",
        "--max-heads",
    ):
        assert flag in out, flag


@needs_weights
def test_a_real_models_layer() -> None:
    result = invoke(
        "grad",
        "-m",
        "minilm",
        "--layer",
        "3",
        "--head",
        "1",
        "the animal was tired because it",
        "--from",
        "it",
        "--to",
        "animal",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["loss"]["heads"] == [1]
    assert document["model"]["heads"] == 12


TWO_HEADS_WITH_TARGET = """\
embeddings: {a: [1, 0], b: [0, 1], c: [1, 1]}
weights:
  WQ: [[1, 0], [0, 2]]
  WK: [[0, 1], [1, 0]]
  WV: [[1, 2], [3, 1]]
heads: 2
sentence: a b c
target: [[1, 0], [0, 1], [1, 1]]
"""


def test_under_mse_head_chooses_the_focus_s_head(tmp_path: Path) -> None:
    model = tmp_path / "m.yaml"
    model.write_text(TWO_HEADS_WITH_TARGET)
    result = invoke("grad", "-c", str(model), "--loss", "mse", "--focus", "b", "--head", "1")
    assert result.exit_code == 0, result.stderr
    assert "head 1" in result.stdout.splitlines()[0]
    assert "✓ the same as the d_scaled stage's row" in result.stdout
    # without --focus, --head still has nothing to choose under mse
    one_line_error(invoke("grad", "-c", str(model), "--loss", "mse", "--head", "1"), "--head")
