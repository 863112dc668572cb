"""Long work drawn on stderr while a person waits: hashing, layers, decoding.

:class:`StderrProgress` is an :class:`attntrace.kernel.progress.Listener`. For its first
``after`` seconds it only takes notes, so work that ends sooner never flashes a bar
and never imports Rich's progress machinery (``progress_bars``); from then on, at each
report, it draws a Rich Progress on stderr: per task a description, a bar, the count
done of the total and the time taken. The display is transient (cleared when the work
ends, before anything is printed) and redrawn only when a report comes in, at most ten
times a second, from the thread doing the work: there is no refresh thread, so nothing
draws after it stops and Ctrl-C unwinds through it like through any other code. A
terminal that cannot be written to turns the display off; it never stops the work.

One display serves a whole command (the CLI installs it before the command runs), so it
is erased whenever its last running task ends: whatever the command prints between its
pieces of work (an error line, the tables) lands on a clean screen, and the next long
piece of work draws a display of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from attntrace.visible import visible

if TYPE_CHECKING:
    from attntrace.ui.progress_bars import Display

REDRAW_EVERY = 0.1  # seconds between redraws while a task advances
DESCRIPTION_LIMIT = 80  # characters of a task's description shown


@dataclass
class Work:
    """What a task has told the listener so far."""

    description: str
    total: int | None  # None: one step, nothing to count
    unit: str
    begun: float
    completed: int = 0
    ended: float | None = None


class StderrProgress:
    """A Rich progress display on stderr, shown once the work has run ``after`` seconds.

    Use it as a context manager around the work (and :func:`attntrace.kernel.progress.reporting_to`
    inside it); leaving the block clears the display. The caller decides that stderr is
    a terminal; one Rich cannot redraw in place (TERM=dumb) gets no display.
    """

    def __init__(self, after: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._after = after
        self._clock = clock
        self._begun = clock()
        self._works: list[Work] = []
        self._display: Display | None = None
        self._drawn = 0.0
        self._first = 0  # the first of _works on the display now (earlier ones were erased)
        self._off = False  # gave up (no terminal to redraw, a failed write) or closed

    def __enter__(self) -> StderrProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # the Listener protocol
    def started(self, description: str, total: int | None, unit: str) -> int:
        # a model file's name may be in it ("decoding <name>"): shown made visible
        self._works.append(
            Work(visible(description, DESCRIPTION_LIMIT), total, unit, self._clock())
        )
        self._show(now=True)
        return len(self._works) - 1

    def advanced(self, key: int, completed: int) -> None:
        self._works[key].completed = completed
        self._show()

    def finished(self, key: int) -> None:
        work = self._works[key]
        work.ended = self._clock()
        if work.total is not None:
            work.completed = max(work.completed, work.total)
        self._show(now=True)  # the count reached, drawn
        if self._display is not None and all(w.ended is not None for w in self._works):
            self._erase()  # nothing runs: the screen is the command's again

    def _erase(self) -> None:
        """Clear the display now on the screen and forget its tasks: the next task
        starts a display of its own."""
        display, self._display = self._display, None
        self._first = len(self._works)
        if display is not None:
            try:
                display.stop()
            except OSError:  # the terminal went away: nothing to clear, nothing to draw
                self._off = True

    def close(self) -> None:
        """Clear the display (if it was shown); reports after this draw nothing."""
        self._erase()
        self._off = True

    @property
    def shown(self) -> bool:
        """Whether the display is on the screen now."""
        return self._display is not None

    def _show(self, *, now: bool = False) -> None:
        if self._off:
            return
        moment = self._clock()
        if self._display is None and moment - self._begun < self._after:
            return
        if not now and moment - self._drawn < REDRAW_EVERY:
            return
        try:
            if self._display is None:
                from attntrace.ui.progress_bars import new_display

                self._display = new_display(self._clock)
                if self._display is None:
                    self._off = True
                    return
            self._display.draw(self._works[self._first :])
        except OSError:  # stderr cannot be written: drop the display, keep working
            self._display, self._off = None, True
        self._drawn = moment
