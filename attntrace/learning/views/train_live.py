"""`train`'s live display: the from-token's row of weights as bars, redrawn as it learns.

    step 37 of 100 · loss 0.0213 · it → animal 0.9790
    loss █▆▄▃▂▂▁▁▁▁▁   2.3734 → 0.0213
    the      0.0021 ▏
    animal ◀ 0.9790 ███████████████████████▌

:func:`frame` draws one step (a function of the step's numbers alone, so it is tested
without a terminal); :class:`LiveTraining` paces the frames so a person can watch: the
whole run takes at most :data:`LONGEST` seconds and frames come at most :data:`FPS` a
second (frames are skipped, never steps: every step is computed). Ctrl-C between
steps stops it; the last frame drawn stays on the screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from attntrace.forward.views.attention_map import bar
from attntrace.kernel.trace import Trace
from attntrace.learning.objective import Resolved
from attntrace.learning.train import StepRecord
from attntrace.learning.views.train import cell_name, header, key_labels
from attntrace.ui.numbers import ARROW, format_number
from attntrace.ui.shown import pad
from attntrace.ui.view import View

FPS = 25
LONGEST = 3.0  # seconds for the whole run, at most (a slower machine: as long as it takes)
MAX_KEYS = 16  # bars per head; more keys: the largest weights and the to-token
MAX_HEADS = 4  # heads drawn, of those the loss reads
_SPARKS = "▁▂▃▄▅▆▇█"
_MARK = " ◀"


def sparkline(values: Sequence[float], width: int) -> str:
    """``values`` as at most ``width`` bars of eighths, the lowest ``▁``, the highest
    ``█`` (a longer history is sampled evenly, its last value always shown)."""
    if not values or width < 1:
        return ""
    count = len(values)
    if count <= width:
        picked = list(values)
    elif width == 1:
        picked = [values[-1]]
    else:
        picked = [values[round(k * (count - 1) / (width - 1))] for k in range(width)]
    low, high = min(picked), max(picked)
    if not high > low:
        return _SPARKS[0] * len(picked)
    top = len(_SPARKS) - 1
    return "".join(_SPARKS[round((v - low) / (high - low) * top)] for v in picked)


def frame(
    record: StepRecord,
    steps: int,
    losses: Sequence[float],
    trace: Trace,
    loss: Resolved,
    view: View,
    width: int,
) -> RenderableType:
    """The display at ``record``'s step of ``steps``: the step, the loss and its history
    (``losses``, steps 0 … now), and under the attend loss the from-token's row of each
    head the loss reads, as bars with the to-token marked."""
    p = view.precision
    first = Text(no_wrap=True, overflow="ellipsis")
    first.append(f"step {record.step:>{len(str(steps))}} of {steps}", style="bold")
    first.append(f" · loss {format_number(record.loss, p)}")
    if loss.cell is not None:
        weights = "; ".join(format_number(w, p) for w in record.to_weights)
        first.append(f" · {cell_name(trace, loss)} ")
        first.append(weights, style="bold cyan")
    start = f" {format_number(losses[0], p)} {ARROW} {format_number(losses[-1], p)}"
    spark = sparkline(losses, max(1, min(60, width - 5 - len(start))))
    history = Text(no_wrap=True, overflow="ellipsis")
    history.append("loss ", style="dim")
    history.append(spark, style="yellow")
    history.append(start, style="dim")
    lines: list[RenderableType] = [first, history]
    if loss.cell is None:
        return Group(*lines)
    keys = key_labels(trace)
    to = loss.cell[1]
    shown_heads = loss.heads[:MAX_HEADS]
    for index, head in enumerate(shown_heads):
        row = record.rows[index]
        if len(loss.heads) > 1:
            lines.append(Text(f"head {head}", style="dim"))
        lines.extend(_bars(row, keys, to, p, width))
    if len(loss.heads) > MAX_HEADS:
        lines.append(
            Text(
                f"and {len(loss.heads) - MAX_HEADS} more heads (the line after "
                "the run has every head's weight)",
                style="dim",
            )
        )
    return Group(*lines)


def _bars(
    row: Sequence[float], keys: Sequence[str], to: int, precision: int, width: int
) -> list[Text]:
    """One line per key (in sentence order): label, the to-token's mark, weight, bar."""
    chosen = list(range(len(row)))
    hidden = 0
    if len(row) > MAX_KEYS:
        ranked = [int(j) for j in np.argsort(-np.asarray(row), kind="stable")]
        kept = set(ranked[: MAX_KEYS - 1]) | {to}
        chosen = sorted(kept)
        hidden = len(row) - len(chosen)
    label_width = min(24, max(len(keys[j]) for j in chosen))
    number = len(format_number(1.0, precision))
    full = max(8, min(50, width - label_width - len(_MARK) - number - 3))
    lines = []
    for j in chosen:
        line = Text(no_wrap=True, overflow="ellipsis")
        marked = j == to
        line.append(pad(keys[j][:label_width], label_width), style="bold" if marked else "")
        line.append(_MARK if marked else " " * len(_MARK), style="bold cyan")
        line.append(" " + format_number(row[j], precision).rjust(number), style="cyan")
        line.append(" " + bar(row[j], full), style="bold magenta" if marked else "magenta")
        lines.append(line)
    if hidden:
        lines.append(Text(f"and {hidden} keys of smaller weight", style="dim"))
    return lines


class LiveTraining:
    """The live display on ``console``: :meth:`on_step` is :func:`attntrace.learning.train.
    train`'s callback. At step 0 it prints the header and starts the display; it waits
    where the run is ahead of its pace and draws a frame where one is due."""

    def __init__(
        self,
        console: Console,
        steps: int,
        settings: str,
        view: View,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.console = console
        self.steps = steps
        self.settings = settings
        self.view = view
        self.clock = clock
        self.sleep = sleep
        self.duration = min(LONGEST, steps / FPS)
        self.losses: list[float] = []
        self.live: Live | None = None
        self.began = 0.0
        self.drawn = -1.0

    def on_step(self, record: StepRecord, trace: Trace, loss: Resolved) -> None:
        self.losses.append(record.loss)
        if self.live is None:
            for line in header(trace, loss, self.settings):
                self.console.print(line)
            self.console.print()
            self.live = Live(
                console=self.console,
                auto_refresh=False,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()
            self.began = self.clock()
        due = self.began + self.duration * record.step / self.steps
        ahead = due - self.clock()
        if ahead > 0:
            self.sleep(ahead)
        now = self.clock()
        if record.step == self.steps or record.step == 0 or now - self.drawn >= 1 / FPS:
            self.drawn = now
            shown = frame(
                record, self.steps, self.losses, trace, loss, self.view, self.console.width
            )
            self.live.update(shown, refresh=True)

    def stop(self) -> None:
        """End the display, leaving the last frame on the screen."""
        if self.live is not None:
            self.live.stop()
            self.live = None
