"""What ``run`` and ``render`` print: one of the views of a trace, chosen by flags.

- the tables (default): every stage, each after the weight it used;
- ``focus``: one token's row as hand arithmetic;
- ``map``: where each token looks, as bars;
- ``overview``: every stage of a small trace on one screen.

Step mode (:mod:`attntrace.render.step`) is the interactive form of the tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.text import Text

from attntrace.render.attention_map import DEFAULT_TOP, AttentionMap
from attntrace.render.tables import View, header, render_trace
from attntrace.trace import Trace


@dataclass(frozen=True)
class Presentation:
    """The display flags of ``run`` and ``render``; none of them changes a number."""

    view: View = field(default_factory=View)
    focus: str | None = None
    map: bool = False
    top: int = DEFAULT_TOP
    overview: bool = False


def renderables(trace: Trace, how: Presentation) -> Iterator[RenderableType]:
    """The chosen view of ``trace``, for ``console.print`` one after another."""
    if how.focus is not None:
        from attntrace.focus import focus_row
        from attntrace.render.focus import focus_panel

        yield focus_panel(focus_row(trace, how.focus), trace, how.view)
    elif how.map:
        yield header(trace)
        yield Text("Where each token looks: its top keys by attention weight", style="dim")
        yield AttentionMap(trace["softmax"], top=how.top)
    elif how.overview:
        from attntrace.render.overview import overview

        yield from overview(trace, how.view)
    else:
        yield from render_trace(trace, how.view)
