"""What the explorer tests (tests/explore/) share: the app driven by Textual's Pilot,
its screenshot read as text, and it-animal's stages computed apart (tests/naive.py's
loops on the sample's own YAML)."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml
from naive import naive_attention
from paths import ROOT
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from attntrace.explore.app import ExploreApp
from attntrace.explore.sources import Layers, Sources
from attntrace.explore.story import StoryPane
from attntrace.kernel.trace import Trace

Drive = Callable[[ExploreApp, Any], Awaitable[None]]


@dataclass
class Seen:
    """What the explorer showed once ``drive`` was done, before it closed."""

    app: ExploreApp
    pane: str = ""
    status: str = ""
    where: str = ""
    command_shown: bool = False
    screen: str = ""


def pane(app: ExploreApp) -> str:
    return str(app.query_one(StoryPane).body.render())


def status(app: ExploreApp) -> str:
    return str(app.query_one("#status", Static).render())


def driven(
    trace: Trace,
    drive: Drive,
    size: tuple[int, int] = (80, 24),
    *,
    layers: Layers | None = None,
    sources: Sources | None = None,
) -> Seen:
    """Run the explorer on ``trace`` at ``size``, let ``drive(app, pilot)`` press keys,
    and look at the screen before it closes."""
    seen = Seen(ExploreApp(trace, layers, sources))
    app = seen.app

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await drive(app, pilot)
            await pilot.pause()
            if app.is_running and not isinstance(app.screen, ModalScreen):
                seen.pane, seen.status = pane(app), status(app)
                seen.where = str(app.query_one("#where", Static).render())
                seen.command_shown = bool(app.query_one("#command", Input).display)
                seen.screen = screen_text(app.export_screenshot())

    asyncio.run(main())
    return seen


def screen_text(svg: str) -> str:
    """The characters of an exported screenshot, line by line: each span is placed at
    its ``x`` (Rich's SVG cells are 12.2 units wide) on its line (its ``clip-path``
    names the line), so the spaces between spans come back."""
    lines: dict[int, dict[int, str]] = {}
    spans = re.findall(r'<text[^>]*?x="([0-9.]+)"[^>]*line-(\d+)\)"[^>]*>(.*?)</text>', svg)
    for x, number, span in spans:
        lines.setdefault(int(number), {})[round(float(x) / CELL)] = html.unescape(span)
    rows = []
    for number in range(max(lines, default=-1) + 1):
        row = ""
        for column, text in sorted(lines.get(number, {}).items()):
            row = row.ljust(column) + text.replace("\xa0", " ")
        rows.append(row)
    return "\n".join(rows)


CELL = 12.2  # the width of a cell in Rich's SVG export


async def settled(app: ExploreApp, pilot: Any) -> None:
    """Wait for the worker (a layer, decode, grad) to hand its result to the screen."""
    for _ in range(600):
        await pilot.pause(0.05)
        if not app.busy:
            return
    raise AssertionError("the worker did not finish in 30 s")


@cache
def it_animal() -> dict[str, list[list[float]]]:
    """it-animal's stages by the textbook loops, from the sample file itself."""
    sample = yaml.safe_load((ROOT / "attntrace/samples/it-animal.yaml").read_text("utf-8"))
    embeddings = {str(k): v for k, v in sample["embeddings"].items()}
    words = ["the", "animal", "didn't", "cross", "the", "street", "because", "it", "was"]
    x = [[float(v) for v in embeddings[w]] for w in [*words, "tired", "."]]
    weights = sample["weights"]
    return naive_attention(x, weights["WQ"], weights["WK"], weights["WV"])


TOKENS = ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "tired", "."]
