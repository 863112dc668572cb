"""`grad`'s view drawn directly: words for every gradient, text from files made visible,
the heads the loss does not reach, the side-by-side choice measured at the width."""

from __future__ import annotations

from io import StringIO

import numpy as np
from helpers import raw_controls
from randoms import random_block
from rich.console import Console

from attntrace.kernel.spec import ModelSpec
from attntrace.learning.grad_trace import GRAD_ORDER, grad_trace
from attntrace.learning.grad_words import CAPTIONS, PARAGRAPHS, caption, paragraph
from attntrace.learning.objective import Objective
from attntrace.learning.views.grad import (
    GradBlock,
    drawn_stages,
    reached_heads,
    render_grad,
    shown_grad,
)
from attntrace.learning.views.grad_step import interpret, walked_stages
from attntrace.ui.stage_table import StageTable
from attntrace.ui.view import View


def drawn(renderables: object, width: int) -> str:
    console = Console(file=StringIO(), width=width, color_system=None, highlight=False)
    for renderable in renderables:  # type: ignore[attr-defined]
        console.print(renderable, crop=False)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def test_every_gradient_has_a_caption_and_a_paragraph() -> None:
    assert set(CAPTIONS) == set(GRAD_ORDER) == set(PARAGRAPHS)
    assert all(CAPTIONS[name] and PARAGRAPHS[name] for name in GRAD_ORDER)
    assert "0 under the attend loss" in caption("d_V", attend=True)
    assert caption("d_V", attend=False) == CAPTIONS["d_V"]


def test_under_cross_attention_d_x_is_said_to_be_the_query_path_alone() -> None:
    model, tokens, context = random_block(5, cross=True, heads=1, kv_heads=1)
    traced = grad_trace(model, tokens, context, Objective("attend", "0", "0"))
    text = drawn(render_grad(shown_grad(traced)), 200)
    assert "the query path alone" in text
    assert "the three paths (Q, K, V) summed" not in text
    assert "d_Q · WQᵀ" in paragraph("d_X", cross=True)
    assert "d_V · WVᵀ" not in paragraph("d_X", cross=True)


def test_tokens_from_a_file_reach_the_terminal_escaped() -> None:
    eye = np.eye(2)
    model = ModelSpec(
        {"\x1b[2Jcat": np.array([1.0, 0.0]), "fish": np.array([0.0, 1.0])},
        eye,
        eye,
        eye,
        name="evil\x07",
    )
    traced = grad_trace(model, ["\x1b[2Jcat", "fish"], None, Objective("attend", "0", "1"))
    text = drawn(render_grad(shown_grad(traced)), 100)
    assert raw_controls(text) == []
    assert "cat" in text
    assert "fish" in text


def test_the_other_heads_of_head_h_are_listed_not_drawn() -> None:
    model, tokens, _ = random_block(11, heads=4, kv_heads=4, cross=False)
    traced = grad_trace(model, tokens, None, Objective("attend", "0", "0", head=2))
    assert reached_heads(traced) == [2]
    heads = {s.head for s in drawn_stages(traced) if s is not None}
    assert heads == {None, 2}
    text = drawn(render_grad(shown_grad(traced)), 120)
    assert "heads 0, 1, 3: not reached by the loss" in text
    assert [s.head for s in walked_stages(traced) if s.head is not None] == [2] * len(
        [s for s in traced.stages if s.head == 2]
    )


def test_max_heads_keeps_the_first_and_last_reached_heads() -> None:
    model, tokens, _ = random_block(12, heads=4, kv_heads=4, cross=False)
    traced = grad_trace(model, tokens, None, Objective("attend", "0", "0"))
    stages = drawn_stages(traced, View(max_heads=2))
    assert {s.head for s in stages if s is not None} == {None, 0, 3}
    assert stages.count(None) == 1
    text = drawn(render_grad(shown_grad(traced), View(max_heads=2)), 120)
    assert "heads 1 and 2 not shown (2 of 4 heads" in text or "heads 1, 2 not shown" in text


def test_side_by_side_only_where_both_tables_fit_whole() -> None:
    model, tokens, _ = random_block(5, heads=1, kv_heads=1, cross=False, rope=False)
    tokens = [*tokens, *tokens, *tokens]  # long enough that the tables need their width
    traced = grad_trace(model, tokens, None, Objective("attend", "0", "0"))
    stage = traced.stage("d_Q", head=0)
    block = GradBlock(stage, traced.mirror(stage), traced.forward.model)
    wide = block.beside(200)
    assert wide is not None
    assert sum(wide) + 4 <= 200
    mirror = traced.mirror(stage)
    assert mirror is not None
    both = StageTable(stage).layout(200).width + StageTable(mirror).layout(200).width
    assert block.beside(both + 4) is not None
    assert block.beside(both + 3) is None  # no room for the gap between them
    lines = drawn([block], 200).splitlines()
    assert lines[0].startswith("Q = ")
    assert "d_Q = d_scores · K" in lines[0]


def test_step_keys_jump_by_name_within_the_head() -> None:
    model, tokens, _ = random_block(13, heads=2, kv_heads=2, cross=False, rope=False)
    traced = grad_trace(model, tokens, None, Objective("attend", "0", "0"))
    stages, heads = walked_stages(traced), reached_heads(traced)
    here = next(i for i, s in enumerate(stages) if s.name == "d_softmax" and s.head == 1)
    jump = interpret("d_Q", here, stages, heads).index
    assert jump is not None
    assert (stages[jump].name, stages[jump].head) == ("d_Q", 1)
    other = interpret("h", here, stages, heads).index
    assert other is not None
    assert (stages[other].name, stages[other].head) == ("d_softmax", 0)
    whole = next(i for i, s in enumerate(stages) if s.name == "d_WQ")
    assert "whole model" in (interpret("h", whole, stages, heads).error or "")
