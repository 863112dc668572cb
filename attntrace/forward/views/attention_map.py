"""The attention map: where each token looks, as bars with the top keys named.

    it      → animal 0.65 █████████████  street 0.20 ████  tired 0.10 ██

One line per query token, so it reads for a 3-token example and a 200-token sentence
alike; the bar of a weight of 1 is as long as the terminal width allows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

from attntrace.kernel.labels import unique_labels
from attntrace.kernel.trace import Stage
from attntrace.ui.numbers import OVERFLOWED, format_number
from attntrace.ui.shown import pad, shortened
from attntrace.ui.wrap import Wrapped

_EIGHTHS = " ▏▎▍▌▋▊▉"
_MAX_BAR = 24
_MIN_BAR = 4
_PACKED_BAR = 10
_SORTED_CELLS = 1 << 18  # cells of the weights sorted at once by ``ranked``


def bar(weight: float, full: int) -> str:
    """A bar ``full`` cells long for weight 1, in eighths of a cell: ``██▌``."""
    eighths = round(max(0.0, min(1.0, weight)) * full * 8)
    whole, rest = divmod(eighths, 8)
    return "█" * whole + (_EIGHTHS[rest] if rest else "")


@dataclass(frozen=True)
class AttentionMap:
    """The softmax stage drawn as one line of bars per query token.

    ``masked`` (from a causal mask) marks keys a query cannot see: they are never listed
    among its top keys, even where few keys remain.
    """

    weights: Stage
    top: int  # keys listed per query token: --top, default 3 (present.DEFAULT_TOP)
    precision: int = 2
    masked: npt.NDArray[np.bool_] | None = None

    @cached_property
    def ranked(self) -> npt.NDArray[np.intp]:
        """Per query, its first :meth:`_asked` keys by weight, largest first; masked keys
        last. Sorted once: the layout asks for it per candidate width. Sorted a block of
        rows at a time, keeping only the keys a line can name: the whole n × m order (and
        the negated copy it sorts) took two more matrices of a 9,300-token map's size."""
        data, asked = self.weights.data, self._asked()
        ranked = np.empty((data.shape[0], asked), dtype=np.intp)
        block = max(1, _SORTED_CELLS // max(1, data.shape[1]))
        for start in range(0, data.shape[0], block):
            rows = slice(start, start + block)
            part = -data[rows]  # a copy of the block: -weight, so the largest sorts first
            if self.masked is not None:
                part[self.masked[rows]] = 1.0  # after every weight (each is at most 1)
            ranked[rows] = np.argsort(part, axis=1, kind="stable")[:, :asked]
        return ranked

    @cached_property
    def queries(self) -> list[str]:
        return unique_labels(self.weights.rows)

    @cached_property
    def keys(self) -> list[str]:
        return unique_labels(self.weights.cols)

    def _visible(self, i: int, top: int) -> list[int]:
        keys = [int(j) for j in self.ranked[i, :top]]
        return [j for j in keys if self.masked is None or not self.masked[i, j]]

    def _fixed_width(self, top: int) -> tuple[int, int]:
        """The line's width without its bars, and the widest key among the top ``top``."""
        key_width = max(cell_len(self.keys[j]) for j in np.unique(self.ranked[:, :top]))
        numbers = sum(self._number_widths(top))
        query_width = max(cell_len(q) for q in self.queries)
        return query_width + 3 + top * (key_width + 4) + numbers, key_width

    def _number_widths(self, top: int) -> list[int]:
        """The widest weight written at each rank of the top ``top``: ``0.65``, or
        ``1.2e-03`` where the places would write a weight that is not 0 as 0.00
        (ui/numbers.py). By rank, so that a tiny third weight widens the third alone."""
        narrow = len(f"{1:.{self.precision}f}")
        top_weights = np.take_along_axis(self.weights.data, self.ranked[:, :top], axis=1)
        # only a weight near 0 can be written wider than 1.00: those are formatted
        small = (top_weights != 0) & (np.abs(top_weights) < 10.0**-self.precision)
        return [
            max([narrow, *(len(format_number(float(w), self.precision)) for w in column)])
            for column in (top_weights[small[:, r], r] for r in range(top))
        ]

    def _line_width(self, top: int, bar_width: int) -> int:
        """query, " → ", then per key: name, weight, bar, separators."""
        return self._fixed_width(top)[0] + top * bar_width

    def _asked(self) -> int:
        return max(1, min(self.top, len(self.weights.cols)))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """Compact bars (_PACKED_BAR cells) when placed beside other maps."""
        widest = min(options.max_width, self._line_width(self._asked(), _PACKED_BAR))
        return Measurement(min(widest, self._line_width(1, _MIN_BAR)), widest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        data, queries, keys = self.weights.data, self.queries, self.keys
        asked = self._asked()
        width = options.max_width
        # As many of the asked-for keys as fit; the map says when some had to go.
        top = next((t for t in range(asked, 0, -1) if self._line_width(t, _MIN_BAR) <= width), 1)
        fixed, key_width = self._fixed_width(top)
        number_widths = self._number_widths(top)
        query_width = max(cell_len(q) for q in queries)
        full = max(_MIN_BAR, min(_MAX_BAR, (width - fixed) // top))
        if fixed + top * full > width:  # not even one key with a short bar: no bar, then
            full = 0  # labels shortened in their middle; a weight is never cut
            room = width - len(" → ") - number_widths[0] - 1
            if query_width + key_width > room:
                query_width = key_width = max(4, room // 2)
                queries = [shortened(q, query_width) for q in queries]
                keys = [shortened(k, key_width) for k in keys]
        for i, query in enumerate(queries):
            line = Text(no_wrap=True, overflow="ignore")
            line.append(pad(query, query_width), style="bold")
            line.append(" → ")
            if np.isnan(data[i]).all():  # an overflow before softmax (run --dtype)
                line.append("NaN", style=OVERFLOWED)
                line.append(
                    " in every weight: an overflow before softmax (the tables, "
                    "without --map, show where)",
                    style="dim",
                )
                yield line
                continue
            shown = self._visible(i, top)
            for rank, j in enumerate(shown):
                weight = float(data[i, j])
                line.append(pad(keys[j], key_width) + " ", style="bold" if rank == 0 else "")
                if math.isnan(weight):  # a NaN among numbers: no bar for it
                    written = "NaN".rjust(number_widths[rank])
                    line.append(written, style=OVERFLOWED)
                    weight = 0.0
                else:
                    written = format_number(weight, self.precision)
                    line.append(written.rjust(number_widths[rank]), style="cyan")
                drawn = bar(weight, full)
                if rank < len(shown) - 1:
                    line.append(" " + drawn.ljust(full) + "  ", style="magenta")
                elif drawn:
                    line.append(" " + drawn, style="magenta")
            yield line
        if top < asked:
            yield Wrapped(
                Text(
                    f"showing the top {top} of the {asked} keys asked for: a wider terminal "
                    "shows more",
                    style="dim",
                )
            )
