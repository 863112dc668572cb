"""The explorer driven by Textual's Pilot at 80×24 and 120×40: what is on screen, what
the keys do, what the cell pane says (held to tests/naive.py's loops), and q."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from explorer import TOKENS, driven, it_animal, pane, screen_text, status

from attntrace import trace_attention
from attntrace.explore.app import ExploreApp
from attntrace.explore.help import HelpScreen
from attntrace.explore.keys import key_list
from attntrace.explore.stage_table import StageTable


def has_number(told: str, value: float) -> bool:
    """Whether ``told`` writes ``value`` (to the 4 places a table shows, at least)."""
    numbers = re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+", told)
    return any(abs(float(n) - value) <= 5e-5 * max(1.0, abs(value)) for n in numbers)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_it_opens_on_softmax_with_animal_and_street_in_view(size: tuple[int, int]) -> None:
    shots: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        shots.append(screen_text(app.export_screenshot()))

    driven(trace_attention(sample="it-animal"), drive, size)
    text = shots[0]
    assert "Stage 7 of 8 · softmax" in text
    assert "softmax = exp(scaled − row max)" in text
    assert "[11 × 11]" in text
    header = next(line for line in text.splitlines() if "animal" in line and "street" in line)
    assert header.index("animal") < header.index("street")
    # the row of "it", its weights for animal and street, as the loops compute them
    weights = it_animal()["softmax"][TOKENS.index("it")]
    row = next(line for line in text.splitlines() if re.search(r" it +0\.", line))
    assert f"{weights[1]:.4f}" in row
    assert f"{weights[5]:.4f}" in row
    assert "0.6486" in row
    assert "0.2013" in row


def test_arrows_move_the_cell_and_the_pane_tells_its_number() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press(*["down"] * 7, *["right"] * 5)  # it, street

    seen = driven(trace_attention(sample="it-animal"), drive)
    assert (seen.app.walk.row, seen.app.walk.col) == (7, 5)
    assert "softmax[it, street]" in seen.pane
    weight = it_animal()["softmax"][7][5]
    assert f"{weight:.4f}" == "0.2013"
    assert has_number(seen.pane, weight)


@pytest.mark.parametrize(
    ("keys", "stage"),
    [
        (["n"], "output"),
        (["pagedown"], "output"),
        (["b"], "scaled"),
        (["pageup", "pageup"], "scores"),
        (["3"], "K"),
        (["colon", *"scores", "enter"], "scores"),
        (["colon", *"2", "enter"], "Q"),
        (["colon", *"sco", "escape"], "softmax"),
    ],
)
@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_keys_move_between_stages(keys: list[str], stage: str) -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press(*keys)

    seen = driven(trace_attention(sample="it-animal"), drive)
    assert seen.app.walk.stage.name == stage
    assert not seen.command_shown
    assert f"· {stage}" in seen.where


@pytest.mark.long  # slow: CI's long leg runs it (docs/development.md)
def test_each_stage_cell_matches_the_loops_after_moving() -> None:
    """Every stage of it-animal, at the cell (it, last column): the pane's heading and
    the table's value as the loops compute it."""
    oracle = it_animal()
    seen: dict[str, str] = {}

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("1", *["down"] * 7, "end")
        for number in range(1, 9):
            await pilot.press(str(number))
            await pilot.pause()
            walk = app.walk
            await pilot.press(*["right"] * (walk.stage.shape[1] - 1 - walk.col), "enter")
            await pilot.pause()
            seen[app.walk.stage.name] = pane(app)

    driven(trace_attention(sample="it-animal"), drive)
    assert set(seen) == set(oracle)
    for name, told in seen.items():
        value = oracle[name][7][-1]
        assert f"{name}[it, " in told
        assert has_number(told, value), (name, value, told)


def test_h_changes_head_and_says_when_a_stage_is_shared() -> None:
    statuses: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        assert app.walk.stage.head == 0
        await pilot.press("h")
        statuses.append(status(app))
        await pilot.press("9")  # concat: shared by both heads
        await pilot.press("h")
        statuses.append(status(app))
        assert app.walk.head == 0  # h wrapped, though concat is the same for both
        await pilot.press("H")
        await pilot.press("6")

    seen = driven(trace_attention(sample="two-heads"), drive)
    assert statuses[0] == "n/b stage · arrows cell · h/H head · :name jump · ? help · q quit"
    assert statuses[1] == "concat is shared by all heads: the same for head 0"
    assert (seen.app.walk.stage.name, seen.app.walk.head) == ("scaled", 1)
    assert "scaled  head 1" in seen.where
    assert "softmax[" not in seen.pane
    assert "head 1" in seen.pane


def test_h_on_one_head_and_l_without_a_real_model_say_why() -> None:
    said: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("h")
        said.append(status(app))
        await pilot.press("l")
        said.append(status(app))

    driven(trace_attention(sample="it-animal"), drive)
    assert said == [
        "this model has one head",
        "l and L change the layer of a real model (explore --model MODEL)",
    ]


def test_help_lists_exactly_the_keys_that_work() -> None:
    shots: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shots.append(screen_text(app.export_screenshot()))
        await pilot.press("x")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)

    seen = driven(trace_attention(sample="it-animal"), drive, (120, 40))
    text = shots[0]
    for keys, what in key_list(seen.app.abilities):
        assert keys in text
        assert what in text
    assert "next / previous head" not in text  # one head: h does not work here
    assert "layer" not in text


def test_q_quits() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running

    driven(trace_attention(sample="it-animal"), drive)


def test_a_click_selects_a_stage() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.click("#stages", offset=(3, 1))  # the second line: Q

    seen = driven(trace_attention(sample="it-animal"), drive)
    assert seen.app.walk.stage.name == "Q"


def test_tokens_are_text_never_markup() -> None:
    """A token spelled like Rich markup is shown as typed, in the table and the pane."""
    from attntrace import ModelSpec

    spec = ModelSpec(
        embeddings={"[bold]x": np.array([1.0, 0.0]), "[/]": np.array([0.0, 1.0])},
        WQ=np.eye(2),
        WK=np.eye(2),
        WV=np.eye(2),
    )
    trace = trace_attention("[bold]x [/]", model=spec)
    shots: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        shots.append(screen_text(app.export_screenshot()))

    seen = driven(trace, drive)
    assert "[bold]x" in shots[0]
    assert "[/]" in shots[0]
    assert "softmax[[bold]x, [bold]x]" in seen.pane


def test_no_color_draws_every_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under NO_COLOR Textual filters every segment's style: none may be missing."""
    monkeypatch.setenv("NO_COLOR", "1")
    shots: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("down", "right")
        shots.append(screen_text(app.export_screenshot()))

    driven(trace_attention(sample="it-animal"), drive)
    assert "softmax[animal, animal]" in shots[0]
    assert "0.5421" in shots[0]


def test_a_click_on_a_cell_explains_it() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        table = app.query_one("#table")
        assert isinstance(table, StageTable)
        # the row of "it" (header, then The … it: the 9th line), the column of "street"
        x = table.label_width + table.starts[5] + 3
        await pilot.click("#table", offset=(x, 8))

    seen = driven(trace_attention(sample="it-animal"), drive)
    assert (seen.app.walk.row, seen.app.walk.col) == (7, 5)
    assert "softmax[it, street]" in seen.pane


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_end_shows_the_last_column_whole(size: tuple[int, int]) -> None:
    """The cursor's cell is scrolled fully into view, not under the vertical scrollbar:
    X of 40 tokens × 24 dimensions scrolls both ways at either size."""
    from attntrace import ModelSpec

    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]
    embeddings = {w: rng.normal(size=24) for w in words}
    spec = ModelSpec(embeddings=embeddings, WQ=np.eye(24), WK=np.eye(24), WV=np.eye(24))
    shots: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("1", "end")  # X, the cursor on (w0, d23)
        shots.append(screen_text(app.export_screenshot()))

    seen = driven(trace_attention(" ".join(words), model=spec), drive, size)
    assert (seen.app.walk.stage.name, seen.app.walk.col) == ("X", 23)
    lines = shots[0].splitlines()
    header = next(line for line in lines if "d22" in line)
    assert re.search(r"d22 +d23(\s|$)", header)
    row = next(line for line in lines if re.search(r" w0 +-?\d", line))
    last = re.findall(r"-?\d+\.\d*", row)[-1]
    assert last == f"{embeddings['w0'][23]:.4f}"


def test_a_dtype_trace_says_its_dtype_and_each_stage_error() -> None:
    trace = trace_attention(sample="it-animal", dtype="float16")

    async def drive(app: ExploreApp, pilot: Any) -> None:
        pass

    seen = driven(trace, drive)
    assert "softmax · float16" in seen.where
    assert "float16 · max |Δ|" in seen.screen


@pytest.mark.parametrize("width", [80, 120])
def test_the_status_line_keeps_help_and_quit_at_any_width(width: int) -> None:
    """Every view and key offered (heads, layers, d, g): at 80 columns the hints once ran
    past the edge and "q quit" was cut; the least needed hints now give way instead."""
    from attntrace.explore.sources import Layers, Sources

    trace = trace_attention(sample="two-heads")
    layers = Layers("two-heads", 2, 0, lambda layer: trace)
    sources = Sources(decode=never, grad=never)

    async def drive(app: ExploreApp, pilot: Any) -> None:
        pass

    seen = driven(trace, drive, (width, 24), layers=layers, sources=sources)
    assert len(seen.status) <= width
    assert seen.status.endswith("h/H head · l/L layer · t/d/g view · ? help · q quit") == (
        width == 80
    )
    assert seen.status.endswith(":name jump · ? help · q quit") == (width == 120)


def never(layer: int) -> Any:
    """A view offered but not opened in the test."""
    raise AssertionError("not asked for")
