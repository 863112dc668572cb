"""diff_traces against independent expectations: the stages an edit reaches, by how much.

One weight of a model is changed in a copy of its model file; the loops of
tests/naive.py compute both models, so which cells of which stage changed, and by how
much, is known without attntrace. The tolerance rule, the non-finite values and the
order stages are reported in are checked on matrices made by hand.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
from naive import naive_block
from tolerances import FLOAT64, FLOAT64_APPROX

from attntrace import trace_attention
from attntrace.checking.diff import (
    ATOL,
    CHANGED,
    ONLY_IN_A,
    ONLY_IN_B,
    RTOL,
    SAME,
    cell_changes,
    diff_traces,
    merged_order,
)
from attntrace.forward.replay import load_trace
from attntrace.forward.trace_json import dump_bytes
from attntrace.kernel.trace import ModelInfo, Stage, Trace
from attntrace.modelfile.parse import parse_document
from attntrace.modelfile.samples import sample_path

PER_HEAD = ("Q", "K", "V", "scores", "scaled", "softmax", "output")
# |Δ| of a cell the edit reaches is at least some 1e-4 here; of one it does not, exactly
# 0 in the loops (the same inputs, the same arithmetic): anything between tells them apart.
REACHED = 1e-7


def sample_document(name: str) -> dict[str, Any]:
    """A shipped sample's model file as plain data, to edit a copy of."""
    path = sample_path(name)
    document: dict[str, Any] = copy.deepcopy(
        dict(parse_document(path.read_text(encoding="utf-8"), str(path), is_json=False))
    )
    return document


def edited(document: dict[str, Any], matrix: str, row: int, col: int, value: float) -> Any:
    changed = copy.deepcopy(document)
    changed["weights"] = {k: [list(r) for r in v] for k, v in document["weights"].items()}
    changed["weights"][matrix][row][col] = value
    return changed


def loops(document: dict[str, Any]) -> dict[str, Any]:
    """Every stage of the model file's own sentence, by the loops of tests/naive.py."""
    x = [list(map(float, document["embeddings"][t])) for t in document["sentence"].split()]
    weights = document["weights"]
    return naive_block(
        x,
        weights["WQ"],
        weights["WK"],
        weights["WV"],
        heads=document.get("heads", 1),
        kv_heads=document.get("kv_heads"),
    )


def test_one_weight_changed_reaches_exactly_the_cells_the_loops_say() -> None:
    """WQ[pronoun][place] of it-animal: only the query of "it" changes, so X, K and V
    are the same and every later stage changes exactly where the loops' do."""
    document = sample_document("it-animal")
    document["sentence"] = "the animal didn't cross the street because it was tired ."
    changed = edited(document, "WQ", 3, 1, 0.5)
    before, after = loops(document), loops(changed)
    diff = diff_traces(
        trace_attention(document["sentence"], model=document),
        trace_attention(changed["sentence"], model=changed),
    )
    assert [(s.name, s.head) for s in diff.stages] == [("X", None)] + [(n, 0) for n in PER_HEAD]
    by_name = {s.name: s for s in diff.stages}
    assert by_name["X"].status == SAME
    for name in PER_HEAD:
        delta = np.abs(np.array(after[name][0]) - np.array(before[name][0]))
        stage = by_name[name]
        assert stage.changed is not None
        np.testing.assert_array_equal(stage.changed, delta > REACHED, err_msg=name)
        assert stage.status == (CHANGED if (delta > REACHED).any() else SAME), name
        assert stage.max_abs_delta == pytest.approx(delta.max(), **FLOAT64_APPROX), name
    assert [s.name for s in diff.changed_stages] == ["Q", "scores", "scaled", "softmax", "output"]
    # Q changes in one cell: "it"'s query for places, 3.47 → 0.5
    first = diff.first_changed
    assert first is not None
    assert first.name == "Q"
    assert first.changed_cells == 1
    assert first.largest is not None
    assert (first.largest.row_label, first.largest.col_label) == ("it", "d1")
    assert first.largest.a == pytest.approx(3.47, **FLOAT64_APPROX)
    assert first.largest.b == pytest.approx(0.5, **FLOAT64_APPROX)
    # the one learned matrix changed, in that cell
    assert [(w.name, w.changed_cells) for w in diff.changed_weights] == [("WQ", 1)]
    assert diff.changed
    assert not diff.tokens_differ
    assert diff.model_changes == ()


def test_a_trace_against_itself_and_its_saved_copy_has_nothing_changed() -> None:
    trace = trace_attention(sample="gqa")
    saved = load_trace(dump_bytes(trace).decode(), "saved")
    for other in (trace, saved):
        diff = diff_traces(trace, other)
        assert not diff.changed
        assert {s.status for s in diff.stages} == {SAME}
        assert all(s.max_abs_delta == 0 and s.changed_cells == 0 for s in diff.stages)
        assert diff.first_changed is None


def test_the_first_change_is_the_earliest_stage_not_the_earliest_head() -> None:
    """gqa, edited in head 0's V (WV column 0) and head 3's Q (WQ column 3): the trace
    lists head 0's V before head 3's Q, but Q comes first in the computation."""
    document = sample_document("gqa")
    changed = edited(edited(document, "WV", 0, 0, 3.0), "WQ", 3, 3, 2.5)
    diff = diff_traces(trace_attention(model=document), trace_attention(model=changed))
    first = diff.first_changed
    assert first is not None
    assert (first.name, first.head) == ("Q", 3)
    names = [s.name for s in diff.stages]
    assert names == ["X"] + [n for n in PER_HEAD for _ in range(4)] + ["concat"]
    assert [(s.name, s.head) for s in diff.changed_stages if s.name in ("Q", "V")] == [
        ("Q", 3),
        ("V", 0),
        ("V", 1),  # V head 1 reads K/V head 0 as well
    ]


def test_the_same_cells_change_either_way_round() -> None:
    document = sample_document("two-heads")
    changed = edited(document, "WK", 0, 0, 7.0)
    a, b = trace_attention(model=document), trace_attention(model=changed)
    forward, backward = diff_traces(a, b), diff_traces(b, a)
    for one, other in zip(forward.stages, backward.stages, strict=True):
        assert (one.name, one.head, one.status) == (other.name, other.head, other.status)
        assert one.changed is not None
        assert other.changed is not None
        np.testing.assert_array_equal(one.changed, other.changed)
    # where B alone holds the stage's largest value, its scale is B's both ways round
    small, large = np.array([[1.0, 0.0]]), np.array([[1.0 + 5e-4, 1e6]])
    assert cell_changes(small, large)[0].tolist() == [[False, True]]
    assert cell_changes(large, small)[0].tolist() == [[False, True]]


def matrix_stage(values: list[list[float]], name: str = "scores") -> Stage:
    rows = tuple(f"t{i}" for i in range(len(values)))
    cols = tuple(f"d{j}" for j in range(len(values[0])))
    return Stage(name, f"{name} = ...", rows, cols, np.array(values, dtype=np.float64), head=0)


@pytest.mark.parametrize("size", [1.0, 1e6])
def test_a_cell_changes_beyond_the_stated_tolerance(size: float) -> None:
    """|Δ| ≤ 1e-9·max(1, largest |value|) + 1e-9·|value|: the stage of values near
    ``size`` is held to the same number of digits whatever its size."""
    scale = max(1.0, size)
    bound = ATOL * scale + RTOL * size
    a = np.array([[size, size, size]])
    b = a + np.array([[0.0, 0.9 * bound, 1.1 * bound]])
    changed, gap = cell_changes(a, b)
    assert changed.tolist() == [[False, False, True]]
    np.testing.assert_allclose(gap, np.abs(b - a), **FLOAT64)


def test_equal_non_finite_values_are_the_same_and_others_change_infinitely() -> None:
    inf, nan = math.inf, math.nan
    a = np.array([[-inf, nan, inf, -inf, nan, 1.0]])
    b = np.array([[-inf, nan, inf, 0.5, 1.0, inf]])
    changed, gap = cell_changes(a, b)
    assert changed.tolist() == [[False, False, False, True, True, True]]
    assert gap.tolist() == [[0.0, 0.0, 0.0, inf, inf, inf]]
    diff = diff_traces(one_stage_trace(a), one_stage_trace(b))
    stage = diff.stages[0]
    assert stage.max_abs_delta == inf
    assert stage.changed_cells == 3
    assert stage.largest is not None
    assert (stage.largest.col, stage.largest.delta) == (3, inf)


def one_stage_trace(values: Any, name: str = "scores") -> Trace:
    info = ModelInfo("m", d_model=1, d_k=1, d_v=1)
    stage = matrix_stage(np.asarray(values).tolist(), name)
    return Trace(model=info, tokens=stage.rows, stages=(stage,))


def test_other_tokens_change_the_shapes_and_are_said() -> None:
    a = trace_attention("cat eats fish")
    b = trace_attention("cat eats")
    diff = diff_traces(a, b)
    assert diff.tokens_differ
    assert diff.changed
    x = diff.stages[0]
    assert (x.name, x.status, x.changed_cells, x.max_abs_delta) == ("X", CHANGED, None, None)
    assert x.notes == ("shape 3×2 in A, 2×2 in B",)
    # the same number of tokens in another order: the same shapes, other labels
    swapped = diff_traces(a, trace_attention("fish eats cat"))
    x = swapped.stages[0]
    assert x.status == CHANGED
    assert "its rows are labelled differently" in x.notes
    assert x.changed_cells == 4  # rows 0 and 2 swap, each of their 2 cells changes


def test_a_stage_only_one_trace_holds_and_a_changed_setting() -> None:
    a = trace_attention(sample="causal")
    b = trace_attention(sample="causal", causal=False)
    diff = diff_traces(a, b)
    statuses = {s.name: s.status for s in diff.stages}
    assert statuses["masked"] == ONLY_IN_A
    assert statuses["scaled"] == SAME
    assert statuses["softmax"] == CHANGED
    assert [(c.field, c.a, c.b) for c in diff.model_changes] == [("causal", True, False)]
    first = diff.first_changed
    assert first is not None
    assert first.name == "masked"
    assert first.largest is None
    backward = diff_traces(b, a)
    assert {s.name: s.status for s in backward.stages}["masked"] == ONLY_IN_B
    assert [s.name for s in backward.stages].index("masked") == [s.name for s in diff.stages].index(
        "masked"
    )  # placed where the computation has it, either way round


def test_keys_only_b_holds_are_placed_after_the_key_before_them() -> None:
    def key(name: str) -> tuple[str, int | None, int | None, int]:
        return name, None, None, 0

    a = [key("X"), key("Q"), key("softmax")]
    b = [key("X"), key("Q"), key("masked"), key("softmax"), key("projected")]
    assert merged_order(a, b) == [
        key("X"),
        key("Q"),
        key("masked"),
        key("softmax"),
        key("projected"),
    ]
    assert merged_order([key("Q")], [key("X"), key("Q")]) == [key("X"), key("Q")]


def test_learned_matrices_are_compared_only_when_both_traces_carry_them() -> None:
    trace = trace_attention()
    bare = Trace(model=trace.model, tokens=trace.tokens, stages=trace.stages)
    diff = diff_traces(trace, bare)
    assert not diff.weights_compared
    assert diff.weights == ()
    assert not diff.changed


def test_other_arguments_than_traces_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="a Trace"):
        diff_traces(trace_attention(), "b.json")  # type: ignore[arg-type]
