"""The explorer's moves, without a screen: stages, numbers, names, heads."""

from __future__ import annotations

from attntrace import trace_attention
from attntrace.explore.walk import Walk


def test_n_and_b_stop_at_the_ends_and_numbers_count_from_one() -> None:
    walk = Walk(trace_attention(sample="it-animal"))
    assert walk.stage.name == "X"
    assert walk.step(-1) == "already at the first stage"
    assert walk.jump("8") == ""
    assert walk.stage.name == "output"
    assert walk.step(1) == "already at the last stage"
    assert walk.jump("9") == "no stage 9: stages are numbered 1 to 8"
    assert walk.jump("0") == "no stage 0: stages are numbered 1 to 8"
    assert walk.jump("SoftMax") == ""
    assert walk.stage.name == "softmax"
    assert "no stage named 'nope'" in walk.jump("nope")


def test_a_head_walk_is_the_shared_stages_and_its_own() -> None:
    trace = trace_attention(sample="two-heads")
    walk = Walk(trace)
    names = [s.name for s in walk.stages]
    assert names == [
        "X",
        "Q",
        "K",
        "V",
        "scores",
        "scaled",
        "softmax",
        "output",
        "concat",
        "projected",
    ]
    assert {s.head for s in walk.stages} == {None, 0}
    walk.jump("softmax")
    walk.cell(2, 1)
    assert walk.other_head(1) == ""
    assert (walk.stage.name, walk.stage.head, walk.row, walk.col) == ("softmax", 1, 2, 1)
    assert walk.other_head(1) == ""  # wraps
    assert walk.stage.head == 0
    assert walk.other_head(-1) == ""
    assert walk.stage.head == 1
    walk.jump("projected")
    said = walk.other_head(1)
    assert said == "projected is shared by all heads: the same for head 0"
    assert walk.stage.name == "projected"
    walk.jump("Q")
    assert walk.stage.head == 0  # the head h moved to


def test_one_head_says_so() -> None:
    walk = Walk(trace_attention(sample="it-animal"))
    assert walk.other_head(1) == "this model has one head"


def test_the_cell_is_kept_inside_a_smaller_stage() -> None:
    walk = Walk(trace_attention(sample="it-animal"))
    walk.jump("softmax")
    walk.cell(7, 9)
    walk.jump("V")  # 11 × 3
    assert (walk.row, walk.col) == (7, 2)


def test_docs_explore_md_lists_every_key_the_help_can_list() -> None:
    from paths import ROOT

    from attntrace.explore.keys import Abilities, key_list

    page = (ROOT / "docs" / "explore.md").read_text(encoding="utf-8")
    every = key_list(Abilities(heads=True, layers=True, decode=True, grad=True))
    assert [what for _, what in every if what not in page] == []
    assert len(every) == 14


def test_a_k_v_heads_gradient_is_jumped_to_by_its_name_in_the_list() -> None:
    """Under GQA grad has two d_K for head 0: its own and its K/V head's sum, listed as
    "d_K kv0". Typed as listed, ":d_K kv0" reaches the sum, not the first d_K."""
    from attntrace.api import prepared
    from attntrace.explore.grad_book import grad_book
    from attntrace.learning.grad_trace import grad_trace
    from attntrace.learning.objective import Objective

    ready = prepared(None, sample="gqa")
    objective = Objective(kind="attend", from_token="down", to_token="cat")
    grad = grad_trace(ready.spec, ready.tokens, None, objective)
    walk = Walk(grad_book(grad).trace, noun="gradient")
    assert walk.jump("d_K kv0") == ""
    assert (walk.stage.name, walk.stage.head, walk.stage.kv_head) == ("d_K", None, 0)
    assert walk.jump("d_K") == ""
    assert walk.stage.head == 0
    assert "d_K, d_K kv0" in walk.jump("nope")
