"""The attention map: where each token looks, as bars with the top keys named.

    it      → animal 0.65 █████████████  street 0.20 ████  tired 0.10 ██

One line per query token, so it reads for a 3-token example and a 200-token sentence
alike; the bar of a weight of 1 is as long as the terminal width allows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from attntrace.labels import unique_labels
from attntrace.trace import Stage

DEFAULT_TOP = 3
_EIGHTHS = " ▏▎▍▌▋▊▉"
_MAX_BAR = 24
_MIN_BAR = 4


def bar(weight: float, full: int) -> str:
    """A bar ``full`` cells long for weight 1, in eighths of a cell: ``██▌``."""
    eighths = round(max(0.0, min(1.0, weight)) * full * 8)
    whole, rest = divmod(eighths, 8)
    return "█" * whole + (_EIGHTHS[rest] if rest else "")


@dataclass(frozen=True)
class AttentionMap:
    """The softmax stage drawn as one line of bars per query token."""

    weights: Stage
    top: int = DEFAULT_TOP
    precision: int = 2

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        data = self.weights.data
        queries = unique_labels(self.weights.rows)
        keys = unique_labels(self.weights.cols)
        asked = max(1, min(self.top, len(keys)))
        ranked = np.argsort(-data, axis=1, kind="stable")
        query_width = max(len(q) for q in queries)
        number_width = len(f"{1:.{self.precision}f}")

        def line_width(top: int) -> int:
            """query, " → ", then per key: name, weight, bar of _MIN_BAR, separators."""
            key_width = max(len(keys[j]) for j in np.unique(ranked[:, :top]))
            return query_width + 3 + top * (key_width + number_width + _MIN_BAR + 4)

        # As many of the asked-for keys as fit; the line says when some had to go.
        top = next((t for t in range(asked, 0, -1) if line_width(t) <= options.max_width), 1)
        order = ranked[:, :top]
        key_width = max(len(keys[j]) for j in np.unique(order))
        fixed = query_width + 3 + top * (key_width + number_width + 4)
        full = max(_MIN_BAR, min(_MAX_BAR, (options.max_width - fixed) // top))
        for i, query in enumerate(queries):
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{query:<{query_width}}", style="bold")
            line.append(" → ")
            for rank, j in enumerate(order[i]):
                weight = float(data[i, j])
                line.append(f"{keys[j]:<{key_width}} ", style="bold" if rank == 0 else "")
                line.append(f"{weight:.{self.precision}f}", style="cyan")
                drawn = bar(weight, full)
                if rank < top - 1:
                    line.append(" " + drawn.ljust(full) + "  ", style="magenta")
                elif drawn:
                    line.append(" " + drawn, style="magenta")
            yield line
        if top < asked:
            yield Text(
                f"showing the top {top} of the {asked} keys asked for: a wider terminal shows more",
                style="dim",
            )
