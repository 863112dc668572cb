"""Shading attention weights: a weight in [0, 1] -> a cell style on the viridis scale.

Viridis is perceptually uniform and readable by colour-blind readers; the number stays
in the cell, so the shade only helps the eye (and disappears with NO_COLOR).
"""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color
from rich.color_triplet import ColorTriplet
from rich.style import Style

_VIRIDIS = (
    ColorTriplet(68, 1, 84),
    ColorTriplet(59, 82, 139),
    ColorTriplet(33, 145, 140),
    ColorTriplet(94, 201, 98),
    ColorTriplet(253, 231, 37),
)
_DARK_TEXT = Color.from_rgb(0, 0, 0)
_LIGHT_TEXT = Color.from_rgb(255, 255, 255)


def weight_style(weight: float) -> Style:
    """The background for ``weight``: dark purple near 0, yellow near 1."""
    return _style(round(min(max(weight, 0.0), 1.0), 3))  # 1,001 shades: the eye sees fewer


@lru_cache(maxsize=1024)
def _style(weight: float) -> Style:
    w = weight * (len(_VIRIDIS) - 1)
    low = min(int(w), len(_VIRIDIS) - 2)
    frac = w - low
    a, b = _VIRIDIS[low], _VIRIDIS[low + 1]
    rgb = ColorTriplet(*(round(x + (y - x) * frac) for x, y in zip(a, b, strict=True)))
    text = _DARK_TEXT if weight > 0.55 else _LIGHT_TEXT
    return Style(bgcolor=Color.from_triplet(rgb), color=text)
