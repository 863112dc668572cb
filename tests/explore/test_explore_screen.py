"""What the tester found on screen (issue 30, i30-explore3): the cursor's cell in view when
a table first appears, `:NAME` typed in one burst, the story pane's share of the height,
repeated tokens told apart, tokenizer marks explained, one head for every view."""

from __future__ import annotations

import re
from typing import Any

import pytest
from explorer import driven, settled
from test_explore_views import sources

from attntrace import trace_attention
from attntrace.explore.app import ExploreApp


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
