"""A Trace's own display: ``print(trace)``, ``rich.print(trace)`` and Jupyter's.

:class:`attntrace.kernel.trace.Trace` asks :mod:`attntrace.kernel.display`, which
``attntrace/__init__.py`` points at :func:`show` here: the kernel names no renderer. Each
form is the whole document as the tables draw it, of the trace as shown (its text made
visible), at a fixed width.
"""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from typing import Any

from rich.console import Console, RenderableType

from attntrace.checking.report import CheckReport
from attntrace.forward.views.document import render_trace
from attntrace.kernel.display import Form
from attntrace.kernel.trace import Trace
from attntrace.ui.shown import shown_trace


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
    """The rendered trace as plain text, 100 columns wide, for Jupyter's rich display
    (``attntrace/__init__.py`` adds the explorer page as its HTML)."""
    return {"text/plain": trace_text(trace, width=100)}


def show(trace: Trace | CheckReport, form: Form) -> Any:
    """``trace`` as ``form``: text (80 columns), Rich renderables, or a Jupyter bundle;
    a check report as its text (``print(report)``) or its view (``rich.print``)."""
    if isinstance(trace, CheckReport):
        from attntrace.checking.views.report import check_text, check_view

        return check_text(trace, width=80) if form == "text" else iter([check_view(trace)])
    if form == "text":
        return trace_text(trace)
    if form == "rich":
        return shown_renderables(trace)
    return trace_mimebundle(trace)
