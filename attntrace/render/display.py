"""A Trace's own display: ``print(trace)``, ``rich.print(trace)`` and Jupyter's.

The hooks :class:`attntrace.core.trace.Trace` calls: the whole document as the tables
draw it, of the trace as shown (its text made visible), at fixed widths.
"""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

from rich.console import Console, RenderableType

from attntrace.core.trace import Trace
from attntrace.render.document import render_trace
from attntrace.render.shown import shown_trace


def shown_renderables(trace: Trace) -> Iterator[RenderableType]:
    """The tables of ``trace`` as shown (its text made visible), for ``rich.print``."""
    yield from render_trace(shown_trace(trace))


def trace_text(trace: Trace, width: int = 80) -> str:
    """The rendered trace as plain text, for ``print(trace)``."""
    console = Console(file=StringIO(), width=width, color_system=None, highlight=False)
    for renderable in shown_renderables(trace):
        console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def trace_mimebundle(trace: Trace) -> dict[str, str]:
    """Plain text and HTML of the rendered trace, for Jupyter's rich display."""
    console = Console(record=True, file=StringIO(), width=100, color_system="truecolor")
    for renderable in shown_renderables(trace):
        console.print(renderable)
    return {
        "text/plain": console.export_text(clear=False),
        "text/html": console.export_html(inline_styles=True),
    }
