"""How a Trace shows itself (``print``, Rich, Jupyter) without the kernel importing a renderer.

Renderers read what the kernel computed, so they import the kernel, never the reverse
(docs/architecture.md). A :class:`~attntrace.kernel.trace.Trace` asks the one function set
here to show it; ``attntrace/__init__.py`` sets one that imports the renderer the first
time a trace is shown. Every import of an attntrace module runs that ``__init__`` first,
so ``print(trace)`` works however the trace was made, and costs nothing until then.

This module imports nothing heavy (no numpy): the package's ``__init__`` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

# text: a str of the tables at 80 columns, for print(trace); rich: the Rich renderables,
# for rich.print(trace); jupyter: a MIME bundle, {"text/plain": ..., "text/html": ...};
# html: that bundle's HTML alone (the explorer page in a frame), for _repr_html_.
Form = Literal["text", "rich", "jupyter", "html"]
Show = Callable[[Any, Form], Any]

_SHOW: list[Show] = []  # the function set, once set


def set_show(show: Show) -> None:
    """Make ``show(trace, form)`` what a trace calls to be shown as ``form``."""
    _SHOW[:] = [show]


def show(trace: Any, form: Form) -> Any:
    """``trace`` shown as ``form``, by the function :func:`set_show` was given."""
    if not _SHOW:
        raise RuntimeError("no renderer is set: attntrace/__init__.py sets one on import")
    return _SHOW[0](trace, form)
