"""d and g: decode's steps and grad's gradients in the explorer, held to the loops."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from explorer import TOKENS, driven, it_animal, settled
from naive import naive_softmax_row
from textual.geometry import Region

from attntrace import trace_attention
from attntrace.api import prepared
from attntrace.decode.decoder import Decode, decode
from attntrace.explore.app import ExploreApp
from attntrace.explore.decode_book import decode_book
from attntrace.explore.sources import Sources
from attntrace.explore.stage_table import StageTable
from attntrace.learning.grad_trace import GradTrace, grad_trace
from attntrace.learning.objective import Objective


def has_number(told: str, value: float) -> bool:
    numbers = re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+", told)
    return any(abs(float(n) - value) <= 5e-5 * max(1.0, abs(value)) for n in numbers)


def sources() -> Sources:
    ready = prepared(None, sample="it-animal")

    def decoded(layer: int) -> Decode:
        return decode(ready.spec, ready.tokens)

    def gradients(layer: int) -> GradTrace:
        objective = Objective(kind="attend", from_token="it", to_token="animal")
        return grad_trace(ready.spec, ready.tokens, None, objective)

    return Sources(decode=decoded, grad=gradients)


def test_d_shows_the_cache_at_a_step_and_the_weight_of_a_cached_row() -> None:
    """Step 8 ("it"): eight rows cached; the weight on "animal" is the causal softmax of
    the loops' scaled scores over the first eight keys."""

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("d")
        await settled(app, pilot)
        await pilot.press("8", "down", "end")  # the last column: the weight

    seen = driven(trace_attention(sample="it-animal"), drive, sources=sources())
    walk = seen.app.walk
    assert seen.app.view == "decode"
    assert walk.stage.shape[0] == 8  # the cache holds the first eight tokens
    assert walk.stage.rows == (*TOKENS[:7], "it ◀ new")  # as decode's terminal marks it
    scaled = it_animal()["scaled"][7][:8]
    weight = naive_softmax_row(scaled)[1]
    assert "Step 8 of 11 · it" in seen.where
    assert "weight[animal]" in seen.pane
    assert has_number(seen.pane, weight)
    assert "joins the cache: 8 rows" in seen.screen


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_g_shows_each_gradient_beside_its_forward_stage() -> None:
    """d_softmax[it, animal] of −log softmax[it, animal] is −1 / softmax[it, animal]."""

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("g")
        await settled(app, pilot)
        await pilot.press("colon", *"d_softmax", "enter", *["down"] * 7, "right")

    seen = driven(trace_attention(sample="it-animal"), drive, (120, 40), sources=sources())
    weight = it_animal()["softmax"][7][1]
    assert seen.app.walk.stage.name == "d_softmax"
    assert "d_softmax[it, animal]" in seen.pane
    assert has_number(seen.pane, -1 / weight)
    assert has_number(seen.pane, weight)  # the forward weight beside it
    assert "beside: softmax = exp(scaled − row max)" in seen.screen
    assert math.isclose(-1 / weight, -1.5418, abs_tol=5e-5)


def test_t_goes_back_to_the_trace_where_it_was() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("n")  # output
        await pilot.press("d")
        await settled(app, pilot)
        await pilot.press("t")

    seen = driven(trace_attention(sample="it-animal"), drive, sources=sources())
    assert (seen.app.view, seen.app.walk.stage.name) == ("trace", "output")


def test_d_and_g_without_them_say_why() -> None:
    said: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        for key in ("d", "g"):
            await pilot.press(key)
            said.append(app.message)

    why = Sources(why_not_decode="no decode here")
    driven(trace_attention(sample="it-animal"), drive, sources=why)
    assert said[0] == "no decode here"
    assert said[1].startswith("g shows the gradients of a loss")


def test_a_model_with_its_own_context_offers_no_d() -> None:
    """-s cross cross-attends to the context its file gives: no cache to grow, so d is in
    neither the status line nor the help, and pressing it says why (not decode's error)."""
    from attntrace.cli.explore import other_views
    from attntrace.cli.model_flags import ModelFlags
    from attntrace.explore.keys import key_list

    trace = trace_attention(sample="cross")
    assert trace.context_tokens is not None
    views = other_views(ModelFlags(sample="cross"), None, None, None, None, crossed=True)
    said: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        said.append(app.message or str(app.query_one("#status").render()))
        await pilot.press("d")
        said.append(app.message)

    seen = driven(trace, drive, sources=views)
    assert views.decode is None
    assert "t/d" not in said[0]
    assert all(keys != "d" for keys, _ in key_list(seen.app.abilities))
    assert (
        said[1] == "decode grows a cache over one sentence: this model cross-attends to a context"
    )
    assert seen.app.view == "trace"


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
@pytest.mark.parametrize(("size", "stacked"), [((80, 24), True), ((120, 40), False)])
def test_grad_stacks_its_two_tables_on_a_narrow_screen(
    size: tuple[int, int], stacked: bool
) -> None:
    """Side by side at 80 columns each table had some 30 columns: two numbers and a
    half. Below 110 columns the forward stage goes under the gradient, each table as
    wide as the pane; the cursor's row in view in both."""
    regions: list[tuple[Region, Region]] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("g")
        await settled(app, pilot)
        await pilot.press("3", *["down"] * 7, "right")  # d_softmax[it, animal]
        await pilot.pause()
        table, mirror = (app.query_one(f"#{n}", StageTable) for n in ("table", "mirror"))
        regions.append((table.region, mirror.region))

    seen = driven(trace_attention(sample="it-animal"), drive, size, sources=sources())
    table, mirror = regions[0]
    if stacked:
        assert mirror.y >= table.bottom
        assert mirror.width == table.width >= 60
    else:
        assert mirror.x >= table.right
        assert mirror.y == table.y
    weight = f"{it_animal()['softmax'][7][1]:.4f}"
    rows = [line for line in seen.screen.splitlines() if re.search(r"\bit +", line)]
    assert any("-1.5418" in line for line in rows)  # d_softmax[it, animal]
    assert any(weight in line for line in rows)  # softmax[it, animal], beside or below


def test_a_long_step_name_ends_in_an_ellipsis_in_the_list() -> None:
    """decode's steps are named by their tokens: one longer than the list is cut with …,
    neither wrapped onto the next line nor run into the heading beside it."""
    from attntrace import ModelSpec

    words = ["a", "supercalifragilistic"]
    spec = ModelSpec(
        embeddings={w: np.eye(2)[i] for i, w in enumerate(words)},
        WQ=np.eye(2),
        WK=np.eye(2),
        WV=np.eye(2),
    )

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("d")
        await settled(app, pilot)

    views = Sources(decode=lambda layer: decode(spec, words))
    seen = driven(trace_attention(" ".join(words), model=spec), drive, sources=views)
    lines = seen.screen.splitlines()
    assert lines[2].startswith("2 supercalif… ")
    assert lines[3].startswith(" " * 14)  # no rest of the name on the next line


@pytest.mark.parametrize("head", [0, 1])
def test_decode_tells_a_weight_with_the_sink_logit_in_its_sum(head: int) -> None:
    """sink-logit's step 3: the weight on "eats" is exp(x − M) over the cached rows' exps
    and the sink's; the story's figures divide out to the cell (it once took the sink's
    weight for its logit, and its division disagreed with the cell it told)."""
    ready = prepared(None, sample="sink-logit")
    book = decode_book(decode(ready.spec, ready.tokens))
    walk = book.walk()
    walk.head = head
    walk.go(2)
    walk.cell(1, walk.stage.shape[1] - 1)
    story = book.story(walk)
    assert story.heading == f"step 3 (fish): weight[eats], head {head}"
    sink = [1.0, -2.0][head]  # the sample file's sink logits
    logits = [float(x) for x in walk.stage.data[:, -2]]
    top = max([*logits, sink])
    expected = math.exp(logits[1] - top) / math.fsum(
        [*(math.exp(x - top) for x in logits), math.exp(sink - top)]
    )
    assert math.isclose(story.value, expected, rel_tol=1e-12)
    said = next(line for line in story.lines if line.startswith("weight = "))
    a, b, c = (float(x) for x in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", said))
    assert math.isclose(a / b, story.value, rel_tol=1e-5)
    assert math.isclose(c, story.value, rel_tol=1e-5)
