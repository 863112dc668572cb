"""Fitting output to the width: a line with shorter fallbacks (the first form that fits
is shown), and lines without the padding a grid adds (:class:`RightTrimmed`)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from attntrace.ui.wrap import Wrapped


@dataclass(frozen=True)
class Fitted:
    """The first of ``variants`` whose every line fits the width; else the last.

    Text wrapped wherever the terminal ends is hard to follow (an equation split inside
    a term, ``4.00`` on one line and ``GiB`` on the next); a shorter form, or the same
    words broken where they should be, reads better.
    """

    variants: tuple[str | Text, ...]

    def chosen(self, width: int) -> Text:
        """The variant shown at ``width``."""
        fits = [v for v in self.variants if _width(v) <= width]
        chosen = fits[0] if fits else self.variants[-1]
        return chosen if isinstance(chosen, Text) else Text(chosen)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # where even the last form is too wide, it wraps between words, never in a shape
        yield Wrapped(self.chosen(options.max_width))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the variant it shows (so a panel around it fits it)."""
        width = min(_width(self.chosen(options.max_width)), options.max_width)
        return Measurement(width, width)


def _width(variant: str | Text) -> int:
    """The widest line of ``variant``, trailing spaces not counted (they are pad)."""
    lines = (variant if isinstance(variant, Text) else Text(variant)).split("\n")
    return max(cell_len(line.plain.rstrip()) for line in lines)


@dataclass(frozen=True)
class RightTrimmed:
    """``renderable``'s lines without the spaces a grid pads them with to its width.

    Trailing spaces go whatever their style: do not wrap text whose background colour
    should run to the end of the line.
    """

    renderable: RenderableType

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].text.rstrip():
                line.pop()
            if line:
                last = line.pop()
                line.append(Segment(last.text.rstrip(), last.style))
            yield from line
            yield Segment.line()
