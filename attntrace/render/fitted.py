"""A line with shorter fallbacks: the first form that fits the width is shown."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text


@dataclass(frozen=True)
class Fitted:
    """The first of ``variants`` whose every line fits the width; else the last.

    Text wrapped wherever the terminal ends is hard to follow (an equation split inside
    a term, ``4.00`` on one line and ``GiB`` on the next); a shorter form, or the same
    words broken where they should be, reads better.
    """

    variants: tuple[str | Text, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        def width(variant: str | Text) -> int:
            lines = (variant if isinstance(variant, Text) else Text(variant)).split("\n")
            return max(Text(line.plain.rstrip()).cell_len for line in lines)  # pad is free

        fits = [v for v in self.variants if width(v) <= options.max_width]
        chosen = fits[0] if fits else self.variants[-1]
        yield chosen if isinstance(chosen, Text) else Text(chosen)
