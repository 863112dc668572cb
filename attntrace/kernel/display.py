"""How a Trace shows itself (``print``, Rich, Jupyter) without the kernel importing a renderer.

Renderers read what the kernel computed, so they import the kernel, never the reverse
(docs/architecture.md). A :class:`~attntrace.kernel.trace.Trace` asks the one function set
here to show it; ``attntrace/__init__.py`` sets one that imports the renderer the first
time a trace is shown. Every import of an attntrace module runs that ``__init__`` first,
so ``print(trace)`` works however the trace was made, and costs nothing until then.

It also holds the heatmap's colour scale (:func:`weight_rgb`), which the terminal's
tables and the explorer page both draw with, so that a weight is one colour on both.

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


# The heatmap's colour scale, one for the terminal (ui/heatmap.py) and the page (build.py
# embeds these stops in its script, common.js's heatShade follows weight_rgb's rule):
# viridis, perceptually uniform and readable by colour-blind readers, dark purple at 0,
# yellow at 1.
WEIGHT_STOPS: tuple[tuple[int, int, int], ...] = (
    (68, 1, 84),
    (59, 82, 139),
    (33, 145, 140),
    (94, 201, 98),
    (253, 231, 37),
)
#: A weight is first rounded to this many decimals: 1,001 shades (the eye sees fewer).
WEIGHT_DECIMALS = 3
#: Above this (rounded) weight a cell's background is light and its text dark.
DARK_TEXT_ABOVE = 0.55


def weight_rgb(weight: float) -> tuple[int, int, int]:
    """The colour of ``weight`` (clamped to [0, 1], then rounded to
    :data:`WEIGHT_DECIMALS`): the stops' straight-line mix, each channel rounded half to
    even. The page computes the same colour from the same stops, so that a weight is
    one colour wherever it is shown."""
    w = round(min(max(weight, 0.0), 1.0), WEIGHT_DECIMALS)
    at = w * (len(WEIGHT_STOPS) - 1)
    low = min(int(at), len(WEIGHT_STOPS) - 2)
    frac = at - low
    a, b = WEIGHT_STOPS[low], WEIGHT_STOPS[low + 1]
    red, green, blue = (round(x + (y - x) * frac) for x, y in zip(a, b, strict=True))
    return red, green, blue
