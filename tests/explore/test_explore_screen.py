"""What the tester found on screen (issue 30, i30-explore3): the cursor's cell in view when
a table first appears, `:NAME` typed in one burst, the story pane's share of the height,
repeated tokens told apart, tokenizer marks explained, one head for every view."""

from __future__ import annotations

import re
from typing import Any

import pytest
from explorer import driven, screen_text, settled

from attntrace import trace_attention
from attntrace.api import prepared
from attntrace.decode.decoder import Decode, decode
from attntrace.explore.app import ExploreApp
from attntrace.explore.sources import Sources


def sources(sample: str = "it-animal") -> Sources:
    """decode offered for ``sample``."""
    ready = prepared(None, sample=sample)

    def decoded(layer: int) -> Decode:
        return decode(ready.spec, ready.tokens)

    return Sources(decode=decoded)


def table_lines(screen: str) -> list[str]:
    """The screen's lines right of the stage list (14 columns)."""
    return [line[14:] for line in screen.splitlines()]


def test_d_shows_the_cursor_cell_whole_on_a_new_table() -> None:
    """decode's first table at 80 columns: the header once read `0` (the last character of
    `k0`) and the row `4`, the table scrolled before its pane had a width."""

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("d")
        await settled(app, pilot)

    seen = driven(trace_attention(sample="it-animal"), drive, sources=sources())
    walk = seen.app.walk
    assert (walk.row, walk.col) == (0, 0)
    header = next(line for line in table_lines(seen.screen) if re.search(r"\bk\d\b", line))
    assert re.search(r"\bk0\b", header), header
    value = f"{walk.stage.data[0, 0]:.4f}"
    assert any(value in line for line in table_lines(seen.screen)), seen.screen


def burst(app: ExploreApp, keys: str) -> None:
    """``keys`` as a terminal delivers them typed fast (tmux send-keys): all queued before
    the first is handled, none waited for."""
    from textual import events

    for char in keys:
        key = {":": "colon", "\r": "enter", "\x1b": "escape", "\x7f": "backspace"}.get(char, char)
        app.post_message(events.Key(key, None if len(key) > 1 else char))


@pytest.mark.parametrize(
    ("typed", "stage"),
    [(":scores\r", "scores"), (":concat\r", "concat"), (":2\r", "Q"), (":bsd\x1b", "softmax")],
)
def test_a_name_typed_in_one_burst_goes_to_the_command_line(typed: str, stage: str) -> None:
    """Every key after `:` is the name's, however fast it comes: the letters once reached
    the table before the line had the focus (`d` of `:d_K` opened decode, `n` of
    `:concat` moved a stage), and Enter was lost."""

    async def drive(app: ExploreApp, pilot: Any) -> None:
        burst(app, typed)
        await pilot.pause()
        await pilot.pause()

    seen = driven(trace_attention(sample="two-heads"), drive, sources=sources("two-heads"))
    assert seen.app.view == "trace"
    assert seen.app.walk.stage.name == stage
    assert not seen.command_shown


def test_backspace_mends_a_name_typed_after_colon() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        burst(app, ":scx\x7fores\r")
        await pilot.pause()

    seen = driven(trace_attention(sample="it-animal"), drive)
    assert seen.app.walk.stage.name == "scores"


def test_a_tall_screen_gives_the_table_its_rows_and_the_story_the_rest() -> None:
    """At 120 × 50 the story pane once kept a fixed third: the table's pane had blank
    lines under its eleven rows while the story below was cut."""
    from attntrace.explore.stage_table import StageTable
    from attntrace.explore.story import StoryPane

    heights: list[tuple[int, int, int]] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press(*["down"] * 7, "right")  # softmax[it, animal]: a long story
        await pilot.pause()
        story = app.query_one(StoryPane)
        table = app.query_one("#table", StageTable)
        heights.append((table.region.height, story.region.height, story.body.size.height))

    driven(trace_attention(sample="it-animal"), drive, (120, 50))
    table, pane, told = heights[0]
    assert 12 <= table <= 13  # the header and 11 rows (and a scrollbar, if wide)
    assert told + 1 <= pane  # the whole story under its border line


@pytest.mark.parametrize("size", [(40, 15), (80, 24)])
def test_a_small_screen_shows_three_rows_of_the_table(size: tuple[int, int]) -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        pass

    seen = driven(trace_attention(sample="it-animal"), drive, size)
    rows = [line for line in table_lines(seen.screen) if re.match(r" ?(The|animal|didn't) ", line)]
    assert len(rows) == 3, seen.screen


def test_a_repeated_token_is_told_apart_in_the_table_as_run_tells_it() -> None:
    """`a b a`: the header and the row labels read a#0, b, a#2 (the story's and run's
    names), not `a` twice."""
    import numpy as np

    from attntrace import ModelSpec

    spec = ModelSpec(
        embeddings={"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])},
        WQ=np.eye(2),
        WK=np.eye(2),
        WV=np.eye(2),
    )

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("down", "down")

    seen = driven(trace_attention("a b a", model=spec), drive)
    lines = table_lines(seen.screen)
    assert any(re.search(r"^ +a#0 +b +a#2\s*$", line) for line in lines), seen.screen
    assert [line.split()[0] for line in lines if re.match(r"(a#|b )", line)] == ["a#0", "b", "a#2"]
    assert "softmax[a#2, a#0]" in seen.pane


def marked_trace() -> Any:
    import numpy as np

    from attntrace import ModelSpec

    spec = ModelSpec(
        embeddings={"Ġcat": np.array([1.0, 0.0]), "##s": np.array([0.0, 1.0])},
        WQ=np.eye(2),
        WK=np.eye(2),
        WV=np.eye(2),
    )
    return trace_attention("Ġcat ##s", model=spec)


def test_tokenizer_marks_are_explained_on_opening_and_in_help() -> None:
    from textual.widgets import Static

    said: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        said.append(str(app.query_one("#status", Static).render()))
        await pilot.press("question_mark")
        await pilot.pause()
        said.append(screen_text(app.export_screenshot()))

    driven(marked_trace(), drive, (120, 40))
    assert "Ġ = a space before the token" in said[0]
    assert "## = the token continues the word before it" in said[1]
    assert "Ġ = a space before the token" in said[1]


def test_no_note_where_the_tokens_have_no_marks() -> None:

    said: list[str] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("question_mark")
        await pilot.pause()
        said.append(screen_text(app.export_screenshot()))
        await pilot.press("x")

    seen = driven(trace_attention(sample="it-animal"), drive)
    assert "? help" in seen.status
    assert "Ġ" not in said[0]
    assert "a space before" not in said[0]


def test_one_head_for_every_view() -> None:
    """`d`, `h` showed decode's head 1, then `t` the trace's head 0: the head is the
    explorer's, not each view's."""
    heads: list[tuple[str, int | None]] = []

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("d")
        await settled(app, pilot)
        await pilot.press("h")
        heads.append((app.view, app.walk.head))
        await pilot.press("t")
        heads.append((app.view, app.walk.head))
        await pilot.press("h")
        await pilot.press("d")
        heads.append((app.view, app.walk.head))

    seen = driven(trace_attention(sample="two-heads"), drive, sources=sources("two-heads"))
    assert heads == [("decode", 1), ("trace", 1), ("decode", 0)]
    assert seen.app.walk.stage.head == 0
    assert "head 0" in seen.where


def test_l_in_decode_keeps_decodes_head() -> None:
    from attntrace.explore.sources import Layers

    trace = trace_attention(sample="two-heads")
    layers = Layers("two-heads", 2, 0, lambda layer: trace)

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("d")
        await settled(app, pilot)
        await pilot.press("h", "l")
        await settled(app, pilot)

    seen = driven(trace, drive, layers=layers, sources=sources("two-heads"))
    assert (seen.app.view, seen.app.walk.head) == ("trace", 1)


def test_decode_under_a_dtype_names_it_in_the_top_line() -> None:
    from attntrace.kernel.casting import Cast

    ready = prepared(None, sample="it-animal")
    cast = Cast.of("float16")
    views = Sources(decode=lambda layer: decode(ready.spec, ready.tokens, cast))

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("d")
        await settled(app, pilot)

    seen = driven(trace_attention(sample="it-animal", dtype="float16"), drive, sources=views)
    assert seen.app.view == "decode"
    assert "Step 1 of 11 · The · float16" in seen.where


@pytest.mark.parametrize("width", [80, 50])
def test_a_long_message_is_whole(width: int) -> None:
    """`g` without a loss said "… --to TOKEN (or" and stopped at the edge: shorter
    now, and wrapped onto a second line where the screen is narrower still."""
    from attntrace.cli.explore import other_views
    from attntrace.cli.model_flags import ModelFlags

    views = other_views(ModelFlags(sample="it-animal"), None, None, None, None)

    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("g")

    seen = driven(trace_attention(sample="it-animal"), drive, (width, 24), sources=views)
    said = seen.app.message
    assert said.startswith("g ")
    bottom = " ".join(seen.screen.splitlines()[-2:]).split()
    assert bottom[-len(said.split()) :] == said.split(), seen.screen


def test_ctrl_c_quits_like_q() -> None:
    async def drive(app: ExploreApp, pilot: Any) -> None:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running

    driven(trace_attention(sample="it-animal"), drive)
