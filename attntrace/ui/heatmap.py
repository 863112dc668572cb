"""Shading cells: a weight in [0, 1] on the viridis scale, a change on a diverging one.

Viridis is perceptually uniform and readable by colour-blind readers; the number stays
in the cell, so the shade only helps the eye (and disappears with NO_COLOR).
"""

from __future__ import annotations

import math
from functools import lru_cache

from rich.color import Color
from rich.color_triplet import ColorTriplet
from rich.style import Style

from attntrace.kernel.display import DARK_TEXT_ABOVE, WEIGHT_DECIMALS, weight_rgb

_DARK_TEXT = Color.from_rgb(0, 0, 0)
_LIGHT_TEXT = Color.from_rgb(255, 255, 255)


def weight_style(weight: float) -> Style:
    """The background for ``weight``: dark purple near 0, yellow near 1 (the page's
    heatmap takes the same colour: kernel/display.py's weight_rgb)."""
    return _style(round(min(max(weight, 0.0), 1.0), WEIGHT_DECIMALS))


@lru_cache(maxsize=1024)
def _style(weight: float) -> Style:
    text = _DARK_TEXT if weight > DARK_TEXT_ABOVE else _LIGHT_TEXT
    return Style(bgcolor=Color.from_triplet(ColorTriplet(*weight_rgb(weight))), color=text)


# A diverging scale for a change (attntrace diff): blue where a value fell, red where it
# rose, pale near no change (the ends of the "coolwarm" map).
_FELL = ColorTriplet(59, 76, 192)
_NONE = ColorTriplet(221, 221, 221)
_ROSE = ColorTriplet(180, 4, 38)


def delta_style(delta: float, largest: float) -> Style:
    """The background for a change ``delta`` among changes up to ``largest`` in size:
    the deepest blue or red for the largest fall or rise. A non-finite change (a cell
    masked in one trace only) takes the end of its side; NaN, the rise's end."""
    finite = math.isfinite(delta) and math.isfinite(largest) and largest > 0
    share = min(1.0, abs(delta) / largest) if finite else 1.0
    signed = -share if delta < 0 else share
    return _delta_style(round(signed, 3))


@lru_cache(maxsize=2048)
def _delta_style(signed: float) -> Style:
    end = _FELL if signed < 0 else _ROSE
    frac = abs(signed)
    rgb = ColorTriplet(*(round(x + (y - x) * frac) for x, y in zip(_NONE, end, strict=True)))
    text = _LIGHT_TEXT if frac > 0.55 else _DARK_TEXT
    return Style(bgcolor=Color.from_triplet(rgb), color=text)
